"""Sphinx configuration of gpc's documentation.

Build (from the repository root, with ``pip install ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Warnings are errors (``-W``) and every gallery example runs. Add
``-D plot_gallery=0`` to build the pages without running the examples.
"""

import os
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCS)
# The installed gpc is documented, never the source folder (which has no compiled
# extensions): `python -m sphinx` from the repository root puts it on sys.path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != ROOT]

import gpc  # noqa: E402

project = "gpc"
author = "the gpc developers"
copyright = "2026, the gpc developers"
version = release = gpc.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# -- API reference -----------------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {}
# A class's page documents its own public methods and properties in full (the
# autosummary template's ``:members:``), so every reference to one has a target;
# numpydoc's tables of them would only repeat those entries.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_show_inherited_class_members = False
numpydoc_xref_param_type = False

intersphinx_mapping = {}     # no network while building: no cross-project links

# Every cross-reference must resolve: a reference to a gpc object that is not
# documented (or no longer exists) fails the build.  Without intersphinx there is
# nothing to resolve other projects' objects against, so references to them (in
# docstrings, and the types of signatures) are let through unchecked; gpc's own
# names never are.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|scipy|sklearn|dask|collections\.abc)(\..+)?"),
]

# -- Gallery -----------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(ROOT, "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "within_subsection_order": "FileNameSortKey",
}

# -- HTML --------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"gpc {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = []
templates_path = ["_templates"]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "sg_execution_times.rst"]


def _skip_request_methods(app, what, name, obj, skip, options):
    """A class's page documents the members it inherits from gpc's own bases
    (the estimators' shared skeleton), but not those of scikit-learn's
    (``get_params``, ``score``, the ``set_<method>_request`` methods of its
    metadata routing): their docstrings are scikit-learn's, written for its own
    documentation."""
    if what != "class":
        return None
    function = getattr(obj, "fget", obj)
    if (getattr(function, "__module__", None) or "").startswith("sklearn."):
        return True
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_request_methods)
