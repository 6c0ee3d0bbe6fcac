"""Smoke test of an installed gpc, run as a script: ``python -I smoke_installed.py``.

It checks a built package as a user gets it: gpc and its declared dependencies
installed, nothing else, Python run outside the source tree.  cibuildwheel runs it
on every wheel it builds (``test-command`` in pyproject.toml), and
tests/test_release.py on the repaired Linux wheel, installed in a fresh virtual
environment without a compiler.  A failed check ends it with an AssertionError
that says what was found; on success it prints one line, ``gpc <version> from
<package folder>``.  It reads one file of the checkout, src_c/meson.build, for the
list of compiled modules the package must hold.
"""

import importlib
import importlib.machinery
import re
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import numpy as np

MESON_BUILD = Path(__file__).resolve().parents[1] / "src_c" / "meson.build"


def _declared_extensions():
    """The extension modules src_c/meson.build builds, by name."""
    text = MESON_BUILD.read_text(encoding="utf-8")
    found = re.search(r"foreach name : \[(.*?)\]", text, re.S)
    assert found, f"no list of extension modules in {MESON_BUILD}"
    return sorted(re.findall(r"'(\w+)'", found.group(1)))


def check_location(gpc):
    """gpc is the installed package of this interpreter, not a source folder."""
    package = Path(gpc.__file__).resolve().parent
    site = {Path(sysconfig.get_path(k)).resolve() for k in ("platlib", "purelib")}
    assert any(package.is_relative_to(s) for s in site), \
        f"gpc imported from {package}, outside this interpreter's {sorted(site)}"
    assert not (package / "meson.build").exists(), \
        f"gpc imported from a source tree: {package}"
    assert gpc.__version__ == metadata.version("gpc"), \
        (gpc.__version__, metadata.version("gpc"))
    return package


def check_extensions(package):
    """Every compiled module is installed, imports, and is the release build."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    installed = sorted(p.name.split(".")[0] for p in package.iterdir()
                       if p.name.endswith(suffixes))
    declared = _declared_extensions()
    assert installed == declared, \
        f"compiled modules in {package}: {installed}; src_c/meson.build: {declared}"
    for name in declared:
        importlib.import_module(f"gpc.{name}")
    from gpc import _checks
    assert not _checks.BOUNDS_CHECKED, "the bounds-checked build was installed"
    assert not _checks.C_ASSERTS, "a build with the C asserts on was installed"
    assert not _checks.PLAIN_C, "the plain-C build was installed"


def check_data():
    """Every bundled data set loads, and Pima has Ripley's split."""
    from gpc import datasets

    for name in datasets.available_datasets():
        X, y = datasets.load_dataset(name)
        assert X.ndim == 2 and X.shape[0] == y.shape[0] > 100, (name, X.shape)
        assert np.isfinite(X).all(), name
    X_train, y_train, X_test, y_test = datasets.load_pima()
    assert X_train.shape == (200, 7) and X_test.shape == (332, 7)
    assert int(y_train.sum()) == 68 and int(y_test.sum()) == 109


def check_probabilities(P, n_classes, what):
    assert P.shape[1] == n_classes, (what, P.shape)
    assert np.isfinite(P).all(), f"{what}: probabilities not finite"
    assert ((P >= 0) & (P <= 1)).all(), f"{what}: probabilities outside [0, 1]"
    err = np.abs(P.sum(axis=1) - 1).max()
    assert err < 1e-10, f"{what}: rows sum to 1 only within {err:.2e}"


def check_fits(gpc):
    """A binary fit that learns its kernel, and a joint three-class EP fit."""
    from sklearn.datasets import load_iris
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    X_train, y_train, X_test, y_test = gpc.datasets.load_pima()
    mu, sd = X_train.mean(0), X_train.std(0)
    X_train, X_test = (X_train - mu) / sd, (X_test - mu) / sd
    clf = gpc.GaussianProcessClassifier(ConstantKernel(1.0) * RBF(1.0))
    clf.fit(X_train, y_train)
    P = clf.predict_proba(X_test)
    check_probabilities(P, 2, "Laplace on Pima")
    accuracy = float((P.argmax(1) == y_test).mean())
    assert accuracy > 0.7, f"Laplace on Pima: test accuracy {accuracy:.3f}"
    assert np.isfinite(clf.log_marginal_likelihood_value_)

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    joint = gpc.GaussianProcessClassifier(
        ConstantKernel(4.0) * RBF(1.0), optimizer=None, multi_class="multinomial",
        method="ep", likelihood="probit").fit(X, y)
    P = joint.predict_proba(X)
    check_probabilities(P, 3, "multinomial EP on iris")
    accuracy = float((P.argmax(1) == y).mean())
    assert accuracy > 0.9, f"multinomial EP on iris: training accuracy {accuracy:.3f}"


def check_threads():
    """gpc's tiled Cholesky on two of its own threads (none off POSIX) equals
    LAPACK's, through SciPy's BLAS."""
    from gpc import _checks

    rng = np.random.RandomState(0)
    n = 300                           # above the size that runs in one thread
    B = rng.randn(n, n)
    A = np.asfortranarray(B @ B.T / n + np.eye(n))
    expected = np.linalg.cholesky(A)
    assert _checks._tiled("cholesky", A, 2) == 0
    err = np.abs(np.tril(A) - expected).max()
    assert err < 1e-10, f"tiled Cholesky differs from LAPACK's by {err:.2e}"


def main():
    import gpc

    package = check_location(gpc)
    check_extensions(package)
    check_data()
    check_fits(gpc)
    check_threads()
    print(f"gpc {gpc.__version__} from {package}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
