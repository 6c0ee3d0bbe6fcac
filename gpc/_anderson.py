"""Anderson acceleration of fixed-point iterations, shared by the methods that
iterate one (the variational upper bound, multinomial EP)."""

import numpy as np


class Anderson:
    """Anderson acceleration (type II) of a fixed-point iteration x <- F(x): the next
    iterate mixes the last ``m`` images with weights that minimise the combined
    residual F(x) - x in least squares.

    Parameters
    ----------
    m : int
        The number of past steps mixed.
    """

    def __init__(self, m):
        self.m = m
        self.reset()

    def reset(self):
        """Forget the past steps (the next :meth:`step` returns ``fx``)."""
        self.dF, self.dG, self.prev = [], [], None

    def step(self, x, fx):
        """The next iterate from the current one ``x`` and its image ``fx``."""
        g = fx - x
        if self.prev is not None:
            _, pg, pf = self.prev
            self.dG.append(g - pg)
            self.dF.append(fx - pf)
            if len(self.dG) > min(self.m, g.shape[0]):
                self.dG.pop(0)
                self.dF.pop(0)
        self.prev = (x, g, fx)
        if not self.dG:
            return fx
        G = np.column_stack(self.dG)
        gamma, *_ = np.linalg.lstsq(G, g, rcond=None)
        return fx - np.column_stack(self.dF) @ gamma
