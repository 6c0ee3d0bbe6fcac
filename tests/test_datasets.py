"""The bundled data sets: every loader against the provenance README's summary."""

import re
from importlib import resources

import numpy as np
import pytest

from gpc import datasets


def _summary():
    """{file stem: (rows, inputs, positives)} from data/README.md's summary table,
    the figures recorded when the files were built and cross-checked."""
    text = resources.files(datasets).joinpath("data", "README.md").read_text("utf-8")
    rows = {}
    for m in re.finditer(r"^\| (\w+)\.csv \| (\d+) \| \d+ \| (\d+) \| [^|]* \| (\d+) ",
                         text, re.M):
        rows[m.group(1)] = tuple(int(m.group(i)) for i in (2, 3, 4))
    return rows


SUMMARY = _summary()
LOADERS = {"crabs": "load_crabs", "sonar": "load_sonar",
           "ionosphere": "load_ionosphere", "breast_cancer": "load_breast_cancer",
           "glass": "load_glass", "thyroid": "load_thyroid", "housing": "load_housing"}


def test_summary_covers_every_file():
    assert set(SUMMARY) == set(datasets.available_datasets())


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_named_loader_matches_the_provenance_summary(name):
    X, y = getattr(datasets, LOADERS[name])()
    rows, inputs, positives = SUMMARY[name]
    assert X.shape == (rows, inputs) and X.dtype == np.float64
    assert set(np.unique(y)) == {0, 1} and int(y.sum()) == positives
    assert np.isfinite(X).all()
    X2, y2 = datasets.load_dataset(name)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_pima_split():
    X, y, Xt, yt = datasets.load_pima()
    assert (X.shape[0], X.shape[1], int(y.sum())) == SUMMARY["pima_train"]
    assert (Xt.shape[0], Xt.shape[1], int(yt.sum())) == SUMMARY["pima_test"]


def test_friedman1_is_scikit_learns():
    from sklearn.datasets import make_friedman1

    X, y = datasets.load_friedman1(50, noise=0.0, random_state=3)
    X2, y2 = make_friedman1(50, noise=0.0, random_state=3)
    np.testing.assert_array_equal(X, X2)
    # The noise-free target is Friedman's function of the first five inputs.
    f = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
         + 10 * X[:, 3] + 5 * X[:, 4])
    np.testing.assert_allclose(y, f, rtol=1e-12)


def test_unknown_name():
    with pytest.raises(ValueError, match="Unknown data set"):
        datasets.load_dataset("usps")


def test_housing_threshold():
    # The data README: the median split has 250 positives (medv == 21.2 counts as
    # negative) and medv > 25 has 124.
    X, y = datasets.load_housing()
    X21, y21 = datasets.load_housing(threshold=21.2)
    np.testing.assert_array_equal(X21, X)
    np.testing.assert_array_equal(y21, y)
    assert int(datasets.load_housing(threshold=25)[1].sum()) == 124
    # Monotone in the threshold.
    counts = [int(datasets.load_housing(threshold=t)[1].sum()) for t in (10, 20, 30, 40)]
    assert counts == sorted(counts, reverse=True)
    with pytest.raises(ValueError, match="finite"):
        datasets.load_housing(threshold=np.nan)


@pytest.mark.parametrize("name, rows, inputs", [("tv16", 37591, 76),
                                                ("cps1988", 28155, 12),
                                                ("lending_club", 9857, 119)])
def test_tabular_tables_match_their_documentation(name, rows, inputs):
    X, y, X_test, y_test, names = datasets.load_tabular(name, return_feature_names=True)
    assert X.shape[0] + X_test.shape[0] == rows
    assert X.shape[1] == X_test.shape[1] == len(names) == inputs
    assert abs(X_test.shape[0] / rows - 1 / 3) < 1e-4
    assert np.isfinite(X).all() and set(np.unique(y)) == {0, 1}
    onehot = [i for i, f in enumerate(names) if "=" in f]
    assert onehot and set(np.unique(X[:, onehot])) == {0.0, 1.0}
    # every row has exactly one level of each categorical column
    columns = {f.split("=")[0] for f in names if "=" in f}
    assert np.allclose(X[:, onehot].sum(1), len(columns))


def test_tabular_split_is_seeded_and_checked():
    a = datasets.load_tabular("cps1988", random_state=3)
    b = datasets.load_tabular("cps1988", random_state=3)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    with pytest.raises(ValueError, match="Unknown data set"):
        datasets.load_tabular("adult")
    with pytest.raises(ValueError, match="test_fraction"):
        datasets.load_tabular("cps1988", test_fraction=1.0)


def _class_counts(name):
    """The original classes' counts in data/README.md's section on ``name``: the
    "(count)" after each class name of its label-column paragraph."""
    text = resources.files(datasets).joinpath("data", "README.md").read_text("utf-8")
    section = text.split(f"## {name}.csv")[1].split("\n## ")[0]
    labels = section.split("**Label column:**")[1].split("**Binarisation")[0]
    return [int(c) for c in re.findall(r"\((\d+)\)", labels)]


@pytest.mark.parametrize("name", ["glass", "thyroid"])
def test_multiclass_labels_are_the_original_classes(name):
    X, y = getattr(datasets, LOADERS[name])(multiclass=True)
    X2, y_binary = datasets.load_dataset(name)
    np.testing.assert_array_equal(X, X2)
    assert y.dtype == np.int64
    assert np.bincount(y).tolist() == _class_counts(name)
    # Every original class falls wholly on one side of the binary split.
    for c in np.unique(y):
        assert np.unique(y_binary[y == c]).size == 1
