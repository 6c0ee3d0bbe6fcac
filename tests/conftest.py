import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

import gpc
from gpc import _checks

# Hypothesis profiles, chosen with GPC_HYPOTHESIS_PROFILE.  "ci" (the default) is
# derandomized, so the suite that CI runs is the same every time (hypothesis then
# uses no database).  "full" (the robustness run of tests/RELIABILITY.md) draws fresh
# random examples, replays first the failing examples kept in tests/hypothesis-db
# (committed, so that a failure found anywhere reproduces everywhere), and adds any
# new ones there.  A failure found and fixed also gets a plain regression test.
_COMMON = {"deadline": None,
           "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
settings.register_profile("ci", max_examples=25, derandomize=True, **_COMMON)
settings.register_profile(
    "full", max_examples=200, derandomize=False, **_COMMON,
    database=DirectoryBasedExampleDatabase(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "hypothesis-db")))
settings.load_profile(os.environ.get("GPC_HYPOTHESIS_PROFILE", "ci"))


def pytest_report_header(config):
    # The compiled modules exist only in an installed (or editable) build, so the
    # import above already fails for a bare source tree; say which copy is tested.
    # Which build: the normal one, or the bounds-checked one
    # (-Csetup-args=-Dchecks=true); the vector or the plain C (-Dsimd=false).
    build = "bounds-checked" if _checks.BOUNDS_CHECKED else "normal"
    c = "plain" if _checks.PLAIN_C else "vector"
    return (f"gpc {gpc.__version__} imported from {os.path.dirname(gpc.__file__)} "
            f"({build} build, {c} C, C asserts {'on' if _checks.C_ASSERTS else 'off'})")


@pytest.fixture
def global_random_seed():
    """The fixture scikit-learn's imported tests expect (its conftest is not ours):
    scikit-learn's default seed, 42, or ``SKLEARN_TESTS_GLOBAL_RANDOM_SEED`` when
    that names one seed."""
    return int(os.environ.get("SKLEARN_TESTS_GLOBAL_RANDOM_SEED", "42"))
