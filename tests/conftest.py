import os

import numpy as np
import pytest

import gpc
from gpc import _checks


def pytest_report_header(config):
    # The compiled modules exist only in an installed (or editable) build, so the
    # import above already fails for a bare source tree; say which copy is tested.
    # Which build: the normal one, or the bounds-checked one (-Csetup-args=-Dchecks=true).
    build = "bounds-checked" if _checks.BOUNDS_CHECKED else "normal"
    return (f"gpc {gpc.__version__} imported from {os.path.dirname(gpc.__file__)} "
            f"({build} build, C asserts {'on' if _checks.C_ASSERTS else 'off'})")


@pytest.fixture
def global_random_seed():
    """The fixture scikit-learn's imported tests expect (its conftest is not ours)."""
    return 0
