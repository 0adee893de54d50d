"""Data sets shared by the benchmarks (one loader each, all offline).

* **Synthetic2D** (:func:`synthetic2d`, :func:`load_synthetic`): class 0 ~
  N((SHIFT, 0), I), class 1 ~ N((0, SHIFT), I), SHIFT = 1.5 (the paper
  shifts a standard normal "along the first / second dimension" without
  giving the shift); :func:`load_synthetic` draws ``n_train`` training and
  200 test points.
* **Spambase** (:func:`load_spambase`, :func:`load_spam`): the UCI set in
  ``../shared/data/spambase/`` (4601 e-mails, 57 features, label spam).
  :func:`load_spam` splits it 75/25 (seed 0, stratified), standardises on
  the training part, keeps the 11 features :func:`select_l1` picks (an
  l1-penalised logistic regression, liblinear: the smallest C on a log grid
  whose fit has at least 11 non-zero weights, then the 11 largest
  ``|weight|``, as the paper's Sec. 7.4), and subsamples ``n_train``
  training points (stratified, seed 0).

The benchmark scripts import this module by name (``from _data import ...``;
their folder is on ``sys.path`` when they run); ``benchmarks/paper/_data.py``
wraps it for the paper's figures.
"""

import pathlib

import numpy as np

SHIFT = 1.5
SPAMBASE = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "spambase"


def synthetic2d(n, rng):
    """``n`` points of Synthetic2D: (X of shape (n, 2), y in {0, 1})."""
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 2))
    X[y == 0, 0] += SHIFT
    X[y == 1, 1] += SHIFT
    return X, y


def load_synthetic(n_train, rng):
    """Synthetic2D: (X_train, y_train, X_test, y_test), 200 test points."""
    X, y = synthetic2d(n_train, rng)
    X_test, y_test = synthetic2d(200, rng)
    return X, y, X_test, y_test


def load_spambase(path=SPAMBASE):
    """The raw Spambase set: (DataFrame of the 57 named features, labels)."""
    import pandas as pd

    names = []
    for line in (path / "spambase.names").read_text().splitlines():
        if ":" in line and not line.startswith("|") and "continuous" in line:
            names.append(line.split(":")[0].strip())
    data = np.loadtxt(path / "spambase.data", delimiter=",")
    if len(names) != data.shape[1] - 1:
        names = [f"f{j}" for j in range(data.shape[1] - 1)]
    return pd.DataFrame(data[:, :-1], columns=names), data[:, -1].astype(int)


def _l1_logistic(C):
    import sklearn
    from sklearn.linear_model import LogisticRegression

    # sklearn >= 1.8 spells the l1 penalty as l1_ratio=1 (penalty= is deprecated).
    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    kw = {"l1_ratio": 1.0} if (major, minor) >= (1, 8) else {"penalty": "l1"}
    return LogisticRegression(solver="liblinear", C=C, max_iter=2000, **kw)


def select_l1(X, y, k=11):
    """The ``k`` features of an l1 logistic regression: (sorted indices, C)."""
    for C in np.geomspace(1e-3, 10, 60):
        w = _l1_logistic(C).fit(X, y).coef_[0]
        if np.count_nonzero(w) >= k:
            return np.sort(np.argsort(-np.abs(w))[:k]), C
    raise RuntimeError("no C on the grid selects enough features")


def load_spam(n_train, rng=None):
    """Spambase, standardised, 11 l1-selected features, ``n_train``
    training rows: (X_train, y_train, X_test, y_test). Deterministic (seed
    0); ``rng`` is accepted for the loaders' common signature and unused."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_spambase()
    X_tr, X_te, y_tr, y_te = train_test_split(X.to_numpy(), y, test_size=0.25, random_state=0, stratify=y)
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    feats, _ = select_l1(X_tr, y_tr, k=11)
    X_tr, X_te = X_tr[:, feats], X_te[:, feats]
    if n_train < len(X_tr):
        X_tr, _, y_tr, _ = train_test_split(X_tr, y_tr, train_size=n_train, random_state=0, stratify=y_tr)
    return X_tr, y_tr, X_te, y_te
