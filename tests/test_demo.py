"""``gpc-demo``: its command-line interface (``--help`` prints help and does not run
the demo)."""

import subprocess
import sys
from pathlib import Path

import pytest

import gpc
import gpc.datasets
from gpc import _demo


@pytest.fixture
def no_demo(monkeypatch):
    """Make running the demo fail, so that a test sees whether it ran."""
    def refuse():
        raise AssertionError("the demo ran")
    monkeypatch.setattr(gpc.datasets, "load_pima", refuse)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_and_does_not_run(flag, no_demo, capsys):
    with pytest.raises(SystemExit) as exc:
        _demo.main([flag])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: gpc-demo")
    words = " ".join(out.split())  # argparse wraps the description
    assert "test error" in words and "Pima" in words


def test_version(no_demo, capsys):
    with pytest.raises(SystemExit) as exc:
        _demo.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpc {gpc.__version__}"


def test_unknown_argument_is_refused(no_demo, capsys):
    with pytest.raises(SystemExit) as exc:
        _demo.main(["--bogus"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_console_script_help():
    script = Path(sys.executable).parent / "gpc-demo"
    if not script.exists():
        pytest.skip("gpc-demo is not installed next to this Python")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: gpc-demo")
    assert "Kernel C * RBF" not in proc.stdout  # the demo's output
