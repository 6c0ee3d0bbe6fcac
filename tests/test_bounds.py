"""The bounds-checked build (meson option `checks`) really checks: an out-of-bounds or
negative index into a memoryview, or a read from an unassigned one, raises instead of
touching memory. These run only against that build (README's test command installs
it for its second run); in the normal build such reads would be undefined behaviour."""

import numpy as np
import pytest

from gpc import _checks

checked = pytest.mark.skipif(not _checks.BOUNDS_CHECKED,
                             reason="needs the bounds-checked build (-Dchecks=true)")


def test_build_flags_agree():
    # One meson option sets both: the checked build has the C asserts on, and the
    # normal (release) build has them off.
    assert _checks.C_ASSERTS == _checks.BOUNDS_CHECKED


def test_probes_refuse_to_run_unchecked():
    if _checks.BOUNDS_CHECKED:
        pytest.skip("the normal build's behaviour")
    with pytest.raises(RuntimeError, match="bounds-checked build"):
        _checks._test_index_probe(3, 5)
    with pytest.raises(RuntimeError, match="bounds-checked build"):
        _checks._test_uninitialized_probe()


@checked
@pytest.mark.parametrize("n", [0, 1, 7])
def test_in_bounds_reads_are_the_entries(n):
    assert [_checks._test_index_probe(n, i) for i in range(n)] == list(np.arange(n))


@checked
@pytest.mark.parametrize("n, i", [(0, 0), (3, 3), (3, 1000), (3, -1), (3, -4)])
def test_out_of_bounds_read_raises(n, i):
    # Negative indices too: the code is compiled with wraparound=False, where -1 is a
    # bug, not "the last entry".
    with pytest.raises(IndexError):
        _checks._test_index_probe(n, i)


@checked
def test_unassigned_memoryview_raises():
    with pytest.raises(UnboundLocalError):
        _checks._test_uninitialized_probe()
