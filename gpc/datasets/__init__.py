"""The papers' benchmark data sets, bundled as CSV (provenance in ``data/README.md``).

Every loader returns inputs ``X`` (float64, unscaled) and labels ``y`` in {0, 1}; the
"original label" columns of a file (e.g. glass ``type``) are never inputs.

Examples
--------
>>> from gpc.datasets import load_dataset
>>> X, y = load_dataset("sonar")
>>> X.shape, int(y.sum())
((208, 60), 111)
"""

import csv
from importlib import resources

import numpy as np

# Columns that are labels of the source data, not inputs (see data/README.md).
_LABEL_COLUMNS = {
    "breast_cancer": (),
    "crabs": ("sp", "sex"),
    "glass": ("type",),
    "housing": ("medv",),
    "ionosphere": (),
    "pima_train": (),
    "pima_test": (),
    "sonar": (),
    "thyroid": ("class",),
}


def available_datasets():
    """Names accepted by :func:`load_dataset`."""
    return sorted(_LABEL_COLUMNS)


def load_dataset(name, return_feature_names=False):
    """Load a bundled benchmark data set.

    Parameters
    ----------
    name : str
        One of :func:`available_datasets` (``"pima_train"``, ``"sonar"``, ...).
    return_feature_names : bool, default=False
        Also return the input column names.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), int, in {0, 1}
    feature_names : list of str, only if ``return_feature_names``
    """
    if name not in _LABEL_COLUMNS:
        raise ValueError(f"Unknown data set {name!r}; choose one of "
                         f"{available_datasets()}.")
    path = resources.files(__name__).joinpath("data", f"{name}.csv")
    with path.open("r", newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    skip = set(_LABEL_COLUMNS[name]) | {"y"}
    cols = [i for i, h in enumerate(header) if h not in skip]
    X = np.array([[float(r[i]) for i in cols] for r in body], dtype=np.float64)
    y = np.array([int(r[header.index("y")]) for r in body], dtype=np.int64)
    if return_feature_names:
        return X, y, [header[i] for i in cols]
    return X, y


def load_pima():
    """Ripley's Pima split: ``(X_train, y_train, X_test, y_test)`` (200 / 332 cases)."""
    return (*load_dataset("pima_train"), *load_dataset("pima_test"))
