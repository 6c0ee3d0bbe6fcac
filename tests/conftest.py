import os

import numpy as np
import pytest

import gpc

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_report_header(config):
    return f"gpc {gpc.__version__} imported from {os.path.dirname(gpc.__file__)}"


def pytest_configure(config):
    # The compiled modules exist only in the installed package: refuse to test a
    # source tree that shadows it.
    here = os.path.dirname(os.path.abspath(gpc.__file__))
    if os.path.commonpath([here, _REPO]) == _REPO and not os.environ.get("GPC_ALLOW_SOURCE"):
        if not os.path.exists(os.path.join(_REPO, "build")):
            raise pytest.UsageError(
                f"gpc was imported from the source tree ({here}); install it "
                "(pip install .) and run pytest so that the installed package is tested.")


@pytest.fixture
def global_random_seed():
    return 0


@pytest.fixture
def rng():
    return np.random.RandomState(0)
