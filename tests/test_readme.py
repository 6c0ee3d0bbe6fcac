"""The README's quick start runs as written, and its test command is the one CI runs."""

import os
import re
import warnings
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
CI = os.path.join(ROOT, ".ci", "run")
OPTIONS = os.path.join(ROOT, "meson.options")


def test_quick_start_runs(capsys):
    if not os.path.exists(README):
        pytest.skip("README.md not beside the tests")
    text = open(README, encoding="utf-8").read()
    code = re.search(r"## Quick start\n\n```python\n(.*?)```", text, re.S).group(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "README quick start", "exec"), {})
    out = capsys.readouterr().out.split()
    assert float(out[0]) > 0.7  # test accuracy on Pima


def test_ci_runs_the_readme_test_command_on_both_builds():
    if not (os.path.exists(README) and os.path.exists(CI) and os.path.exists(OPTIONS)):
        pytest.skip("README.md, .ci/run and meson.options not beside the tests")
    text = Path(README).read_text(encoding="utf-8")
    command = re.search(r"Install and run the test suite.*?```bash\n(.*?)\n```", text,
                        re.DOTALL).group(1)
    ci = Path(CI).read_text(encoding="utf-8")
    after = ci.split("# --- the README's test command ---\n")[1]
    assert after.strip() == command
    # It runs pytest twice: once after the normal install, once after installing a
    # build whose options all differ from their defaults in meson.options (the
    # bounds-checked build of the plain C).
    steps = [s.strip() for s in command.split("&&")]
    assert steps[0] == 'python -m pip install ".[test]"' and steps[1] == "pytest"
    assert steps[3] == "pytest" and len(steps) == 4
    install, *args = steps[2].split(" -Csetup-args=")
    assert install == "python -m pip install ."
    chosen = dict(re.fullmatch(r"-D(\w+)=(true|false)", a).groups() for a in args)
    declared = dict(re.findall(r"option\('(\w+)', type: 'boolean', value: (true|false)",
                               Path(OPTIONS).read_text(encoding="utf-8")))
    assert set(chosen) == {"checks", "simd"}
    assert all(declared[name] != value for name, value in chosen.items())
