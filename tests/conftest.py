import os

import numpy as np
import pytest

import gpc


def pytest_report_header(config):
    # The compiled modules exist only in an installed (or editable) build, so the
    # import above already fails for a bare source tree; say which copy is tested.
    return f"gpc {gpc.__version__} imported from {os.path.dirname(gpc.__file__)}"


@pytest.fixture
def global_random_seed():
    """The fixture scikit-learn's imported tests expect (its conftest is not ours)."""
    return 0
