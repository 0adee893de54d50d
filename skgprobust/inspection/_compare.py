"""Side by side with LIME: its weights aligned with our Delta (paper Sec. 7.4).

LIME (``lime.lime_tabular.LimeTabularExplainer``, continuous features not
discretised) fits a weighted linear surrogate on samples around each row;
its weights live in units of the training standard deviation, ours are
changes of the probability (or mean) over the box, so the comparison is by
sign and by rank, not by magnitude. ``lime`` is an optional dependency
(``pip install lime``, or the ``explain`` extra).
"""

from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr
from sklearn.base import is_classifier
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data


def _import_lime():
    try:
        from lime.lime_tabular import LimeTabularExplainer
    except ImportError as exc:  # pragma: no cover - message tested with lime hidden
        raise ImportError(
            "compare_with_lime needs the optional 'lime' package: pip install lime "
            "(or pip install 'skgprobust[explain]')."
        ) from exc
    return LimeTabularExplainer


@dataclass
class LimeComparison:
    """Our Delta and LIME's weights on the same rows and features.

    Attributes
    ----------
    explanation : Explanation
        Ours (``values``, certified ``lower``/``upper``).
    lime_weights : ndarray of shape (n, k)
        LIME's weight per row and explained feature (same column order).
    feature_names : ndarray of str, shape (k,)
    sign_agreement : ndarray of shape (k,)
        Per feature, the fraction of rows where LIME's weight has the sign
        of our Delta (rows where either is exactly 0 count as disagreement).
    rank_correlation : ndarray of shape (n,)
        Per row, Spearman's correlation of ``|Delta|`` and ``|LIME weight|``
        (NaN for fewer than two features).
    certified_sign : ndarray of bool, shape (n, k)
        Where our bounds prove the sign of Delta (``lower > 0`` or
        ``upper < 0``): a LIME weight of the other sign there is wrong.
    """

    explanation: object
    lime_weights: np.ndarray
    feature_names: np.ndarray
    sign_agreement: np.ndarray
    rank_correlation: np.ndarray
    certified_sign: np.ndarray

    def to_frame(self):
        """Per feature: sign agreement, mean Delta and mean LIME weight (pandas).

        Returns
        -------
        frame : pandas.DataFrame
            One row per explained feature.
        """
        import pandas as pd

        return pd.DataFrame(
            {
                "delta_mean": self.explanation.values.mean(axis=0),
                "lime_mean": self.lime_weights.mean(axis=0),
                "sign_agreement": self.sign_agreement,
                "certified_sign_rate": self.certified_sign.mean(axis=0),
            },
            index=list(self.feature_names),
        )


def compare_with_lime(
    estimator,
    X_train,
    X,
    gamma,
    *,
    explanation=None,
    features=None,
    num_samples=5000,
    random_state=None,
    **explain_params,
):
    """Explain rows with our Delta and with LIME, aligned feature by feature.

    Parameters
    ----------
    estimator : RobustGaussianProcessClassifier or RobustGaussianProcessRegressor
        Fitted.
    X_train : array-like of shape (n_train, n_features)
        Data LIME takes its feature scales from (usually the training set).
    X : array-like of shape (n_samples, n_features)
        Rows to explain.
    gamma : float or array-like of shape (n_features,)
        Radius of our one-sided boxes.
    explanation : Explanation, default=None
        A precomputed ``estimator.explain(X, gamma, ...)``; computed here
        (with ``features`` and ``explain_params``) when None.
    features : array-like, default=None
        Features explained (None: all).
    num_samples : int, default=5000
        LIME's samples per row.
    random_state : int or None, default=None
        Seeds LIME (and our local search) for reproducible results.
    **explain_params
        Passed to ``estimator.explain``.

    Returns
    -------
    comparison : LimeComparison
        The certified Delta, LIME's weights and their agreement per row and
        feature.
    """
    LimeTabularExplainer = _import_lime()
    if explanation is None:
        explanation = estimator.explain(X, gamma, features=features, random_state=random_state, **explain_params)
    X = validate_data(estimator, X, reset=False, dtype=np.float64)
    X_train = validate_data(estimator, X_train, reset=False, dtype=np.float64)
    if len(explanation) != len(X):
        raise ValueError(f"explanation has {len(explanation)} rows, X has {len(X)}.")
    feats = np.asarray(explanation.features)
    classifier = is_classifier(estimator)
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    names = [str(n) for n in getattr(estimator, "feature_names_in_", [f"x{j}" for j in range(X.shape[1])])]
    lime = LimeTabularExplainer(
        X_train,
        mode="classification" if classifier else "regression",
        feature_names=names,
        discretize_continuous=False,
        random_state=seed,
    )
    def frame(P):
        # LIME passes arrays; give a model fitted on a DataFrame its column names back.
        if hasattr(estimator, "feature_names_in_"):
            import pandas as pd

            return pd.DataFrame(P, columns=estimator.feature_names_in_)
        return P

    weights = np.empty((len(X), len(feats)))
    for r, x in enumerate(X):
        if classifier:
            label = list(estimator.classes_).index(explanation.target[r])

            def fn(P):
                return estimator.predict_proba(frame(P))

            key = label
        else:
            out = int(explanation.target[r])

            def fn(P, out=out):
                return np.asarray(estimator.predict(frame(P))).reshape(len(P), -1)[:, out]

            # LIME's regression mode keeps the surrogate's weights under key 1.
            label, key = None, 1
        kw = {"labels": (label,)} if classifier else {}
        exp = lime.explain_instance(x, fn, num_features=X.shape[1], num_samples=num_samples, **kw)
        w = dict(exp.as_map()[key])
        weights[r] = [w.get(int(j), 0.0) for j in feats]
    ours = explanation.values
    agree = (np.sign(ours) == np.sign(weights)) & (ours != 0) & (weights != 0)
    if len(feats) >= 2:
        rho = np.array([spearmanr(np.abs(a), np.abs(b)).statistic for a, b in zip(ours, weights)])
    else:
        rho = np.full(len(X), np.nan)
    return LimeComparison(
        explanation=explanation,
        lime_weights=weights,
        feature_names=np.asarray(explanation.feature_names),
        sign_agreement=agree.mean(axis=0),
        rank_correlation=rho,
        certified_sign=(explanation.lower > 0) | (explanation.upper < 0),
    )
