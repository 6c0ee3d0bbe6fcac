"""The documentation builds without a warning (the fast form: the gallery's pages
without running its examples; the full build runs them, see docs/conf.py)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
EXAMPLES = os.path.join(ROOT, "examples")


def _examples():
    return sorted(f for f in os.listdir(EXAMPLES) if f.startswith("plot_"))


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    if not os.path.exists(os.path.join(DOCS, "conf.py")):
        pytest.skip("docs/ not beside the tests")
    for module in ("sphinx", "sphinx_gallery", "numpydoc", "pydata_sphinx_theme"):
        pytest.importorskip(module)
    out = tmp_path_factory.mktemp("docs")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
               "html", "-D", "plot_gallery=0", "-d", str(out / "doctrees"), DOCS,
               str(out / "html")]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    return out / "html"


def test_docs_build_without_warnings(html):
    for page in ("index.html", "api.html", "user_guide/methods.html",
                 "generated/gpc.GaussianProcessClassifier.html",
                 "generated/gpc.backends.gpy.GPCInference.html"):
        assert (html / page).exists(), page
    api = (html / "generated/gpc.GaussianProcessClassifier.html").read_text()
    assert "multi_class" in api and "predict_proba" in api


def test_gallery_has_every_example(html):
    examples = _examples()
    assert len(examples) >= 8
    index = (html / "auto_examples/index.html").read_text()
    for name in examples:
        assert name.replace(".py", ".html") in index, name
        with open(os.path.join(EXAMPLES, name), encoding="utf-8") as f:
            assert f.read().startswith('"""\n==='), f"{name} lacks a titled docstring"
