"""``import gpc`` from the repository root (the source folder first on ``sys.path``)
fails with an ImportError that says what happened and what to do."""

import subprocess
import sys
from pathlib import Path

import pytest

import gpc

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.skipif(not (ROOT / "gpc" / "meson.build").exists(),
                       reason="needs the source tree next to the tests"),
    pytest.mark.skipif(Path(gpc.__file__).resolve().parent == ROOT / "gpc",
                       reason="an editable install imports the source tree itself"),
]


def _import_gpc(*flags):
    """stderr of ``python <flags> -c 'import gpc'`` run in the repository root."""
    proc = subprocess.run([sys.executable, *flags, "-c", "import gpc"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0, "import gpc from the source tree did not fail"
    return proc.stderr


def test_installed_package_shadowed_by_source_tree():
    err = _import_gpc()
    last = err.strip().splitlines()[-1]
    assert last.startswith("ImportError: gpc was imported from its source tree")
    assert str(ROOT / "gpc") in last
    assert "instead of the installed package" in last
    assert "compiled extensions" in last
    assert "run Python from another directory" in last
    assert "No module named" not in err


def test_source_tree_without_an_installed_package():
    # -S: no site-packages, so no installed gpc to point to.
    last = _import_gpc("-S").strip().splitlines()[-1]
    assert last.startswith("ImportError: gpc was imported from its source tree")
    assert "python -m pip install ." in last
    assert "run Python from another directory" in last


def test_installed_import_is_not_refused(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "import gpc; print(gpc.__file__)"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
