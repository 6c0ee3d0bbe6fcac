"""The README's quick start runs as written."""

import os
import re
import warnings

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "README.md")


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
