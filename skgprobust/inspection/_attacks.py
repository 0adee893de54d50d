"""Adversarial attacks on the robust GP estimators: the empirical side of ``certify``.

The attacks search the l_inf boxes that ``certify`` reasons about (the same
``gamma``, ``features`` and ``domain``, built by the same code) and descend the same objectives: the latent
margin towards the predicted class for classifiers (> 0 keeps the
decision), the predictive mean of a target for regressors. They find
counterexamples, never proofs: a row that an attack does not break may
still be non-robust, while a row that ``certify`` proves robust is never
broken.

* :func:`gpfgs`: one fast-gradient-sign step (GPFGS);
* :func:`gpjm`: greedy Jacobian-saliency steps, one feature at a time (GPJM);
* :func:`pgd`: multi-start projected gradient descent, the strong attack;
* :func:`attack_succeeded`: judges attacked points with the model's own predict.

GPFGS and GPJM are Grosse et al.'s attacks (2018), as used by Patane et al.,
"Adversarial Robustness Guarantees for Gaussian Processes" (JMLR 2022), Sec. 7.
One-vs-one multi-class classifiers are not supported: their decision is a
vote of pairwise models, with no single margin to descend.
"""

import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline

from .._engine._common import bound_model_of, prepare, quiet_feature_names, row_seeds
from .._engine._search import local_search, polish, random_starts, sign_corner
from ..exceptions import UnsupportedModelError

__all__ = ["gpfgs", "gpjm", "pgd", "attack_succeeded"]


# --------------------------------------------------------------------------
# Shared plumbing
# --------------------------------------------------------------------------


def check_attack_model(estimator):
    """Refuse, naming why, what the attacks cannot descend: anything but one
    of this package's GP estimators (they descend its bound model's
    objectives), a Pipeline, and one-vs-one classifiers (checked once fitted,
    in :class:`_Problem`)."""
    if isinstance(estimator, Pipeline):
        raise UnsupportedModelError(
            "Attacks take the GP estimator itself, not a Pipeline: attack pipeline[-1] on "
            "pipeline[:-1].transform(X) (certify, prediction_range and explain accept pipelines)."
        )
    if not hasattr(estimator, "_bound_model") or not hasattr(estimator, "_fitted_attributes"):
        raise UnsupportedModelError(
            "Attacks need one of skgprobust's Gaussian-process estimators (they descend the objectives "
            f"that certify bounds), got {type(estimator).__name__}."
        )


def _predict(estimator, X):
    """The estimator's own ``predict`` on validated float arrays."""
    with quiet_feature_names():
        return estimator.predict(X)


def _as_rows(X):
    """X as a 2-D input (a single 1-D row becomes one row) and whether it was 1-D."""
    if np.ndim(X) != 1:
        return X, False
    if hasattr(X, "to_frame"):  # a pandas Series: one row, keeping the feature names
        return X.to_frame().T, True
    return np.asarray(X).reshape(1, -1), True


def _own_predict(estimator, X):
    """The regressor's own ``predict`` as (n, n_targets), for arrays of points."""
    X = np.atleast_2d(X)
    with quiet_feature_names():
        y = estimator.predict(X)
    return np.asarray(y, dtype=np.float64).reshape(len(X), -1)


def _check_int(value, name, minimum):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")


def _check_delta(estimator, delta, required):
    if is_classifier(estimator):
        if delta is not None:
            raise ValueError("delta applies to regressors; a classifier attack targets its predicted class.")
        return
    if delta is None:
        if required:
            raise ValueError("A regressor attack succeeds when the mean moves by more than delta: give delta.")
        return
    if not isinstance(delta, numbers.Real) or isinstance(delta, (bool, np.bool_)) or not np.isfinite(delta) or delta < 0:
        raise ValueError(f"delta must be a non-negative finite number, got {delta!r}.")


class _Problem:
    """Validated rows, their boxes and the objectives whose descent attacks them.

    ``columns`` lists candidate objectives, each as ``(objectives, keys)``:
    row i descends ``objectives[keys[i]]``. A classifier has one column, the
    margin towards each row's predicted class (the objective of ``certify``);
    a regressor has two per attacked target, +mean and -mean (lowering or
    raising it), and keeps per row the candidate that moves ``predict`` most.
    """

    def __init__(self, estimator, X, gamma, features, domain, target):
        check_attack_model(estimator)
        X, self.single = _as_rows(X)
        self.X, self.lo, self.hi = prepare(estimator, X, gamma, features, domain, None, None)
        self.estimator, self.labels = estimator, None
        self.is_classifier = is_classifier(estimator)
        if self.is_classifier:
            if target is not None:
                raise ValueError("target applies to regressors; leave it at None for a classifier.")
            self.target = None
            self.columns = [self._margins()]
        else:
            pairs = bound_model_of(estimator).mean_pairs()
            if target is not None and (
                not isinstance(target, numbers.Integral) or isinstance(target, bool) or not 0 <= target < len(pairs)
            ):
                raise ValueError(f"target must be None or an integer in [0, {len(pairs) - 1}], got {target!r}.")
            self.target = target
            zeros = np.zeros(len(self.X), dtype=int)
            picked = pairs if target is None else [pairs[target]]
            self.columns = [({0: f}, zeros) for pair in picked for f in pair]

    def _margins(self):
        clf = self.estimator
        self.labels = _predict(clf, self.X)
        bm = bound_model_of(clf)
        if bm.kind == "one_vs_one":
            raise UnsupportedModelError(
                "Attacks on one-vs-one multi-class classifiers are not supported: their decision is a vote "
                "of pairwise models, with no single margin to descend. Use multi_class='one_vs_rest'."
            )
        keys = np.searchsorted(clf.classes_, self.labels)
        return {k: bm.margin(clf.classes_[k]) for k in np.unique(keys)}, keys

    def grad(self, column, rows, X):
        """Gradients (len(rows), d) of the column's objectives at X (the points
        of ``rows``), zero on the features that cannot move."""
        objectives, keys = column
        g = np.zeros_like(X)
        for k, f in objectives.items():
            m = keys[rows] == k
            if m.any():
                g[m] = f.value_and_grad(X[m])[1]
        return np.where(self.hi[rows] > self.lo[rows], np.nan_to_num(g), 0.0)

    def changed(self, rows, X):
        """Whether the model's own decision at X differs from that at the rows."""
        return _predict(self.estimator, X) != self.labels[rows]

    def deviation(self, rows, X):
        """|change of predict| at X relative to the rows: max over targets, or the target's."""
        dev = np.abs(_own_predict(self.estimator, X) - _own_predict(self.estimator, self.X[rows]))
        return dev.max(axis=1) if self.target is None else dev[:, self.target]

    def best(self, candidates):
        """Per row, the candidate that moves a regressor's predict most."""
        if len(candidates) == 1:
            return candidates[0]
        rows = np.arange(len(self.X))
        dev = np.column_stack([self.deviation(rows, C) for C in candidates])
        return np.stack(candidates)[np.argmax(dev, axis=1), rows]

    def result(self, X_adv):
        X_adv = np.clip(X_adv, self.lo, self.hi)
        return X_adv[0] if self.single else X_adv


# --------------------------------------------------------------------------
# Attacks
# --------------------------------------------------------------------------

_PARAMS = """estimator : fitted estimator of this package
        Any of its Gaussian-process classifiers or regressors (not a Pipeline:
        attack its last step on the transformed X); one-vs-one multi-class
        classifiers are not supported.
    X : array-like of shape (n_samples, n_features) or (n_features,)
        Points to attack (a DataFrame or Series is accepted as in ``certify``).
    gamma : float or array-like of shape (n_features,)
        Half-width of the l_inf box per feature, in the units of X.
    features : array-like of int, bool or str, default=None
        Features allowed to move; the others stay fixed. None: all.
    domain : tuple (low, high), default=None
        Valid input range; every returned point lies inside it.
    target : int, default=None
        Regressors only: the target whose mean to move; None attacks every
        target and keeps the largest change over targets."""

_RETURNS = """X_adv : ndarray of shape (n_samples, n_features) or (n_features,)
        Points inside the box around each row (the shape of X)."""


def gpfgs(estimator, X, gamma, *, features=None, domain=None, target=None):
    """GP fast-gradient-sign attack: one signed gradient step of size gamma.

    Each moving feature steps by gamma against the sign of the gradient of
    the margin towards the predicted class (for a binary classifier, the
    latent mean signed towards the predicted class: the step moves it
    towards the other class). A regressor tries the step up and the step
    down the mean and keeps the one that changes ``predict`` most.

    Parameters
    ----------
    {params}

    Returns
    -------
    {returns}
    """
    prob = _Problem(estimator, X, gamma, features, domain, target)
    rows = np.arange(len(prob.X))
    candidates = [sign_corner(prob.X, prob.lo, prob.hi, prob.grad(col, rows, prob.X)) for col in prob.columns]
    return prob.result(prob.best(candidates))


def _saliency_walk(prob, column, max_features):
    """GPJM on one column: move the most salient unmodified feature to the
    descending box edge, one per step, until a classifier's decision changes."""
    X = prob.X.copy()
    free = prob.hi > prob.lo  # movable and not yet modified
    active = np.arange(len(X))
    for _ in range(max_features):
        if not active.size:
            break
        g = prob.grad(column, active, X[active])
        saliency = np.where(free[active], np.abs(g), 0.0)
        j = np.argmax(saliency, axis=1)
        r = np.arange(len(active))
        moves = saliency[r, j] > 0  # rows with nothing informative left stop
        active, j, g = active[moves], j[moves], g[r[moves], j[moves]]
        X[active, j] = np.where(g > 0, prob.lo[active, j], prob.hi[active, j])
        free[active, j] = False
        if prob.is_classifier and active.size:
            active = active[~prob.changed(active, X[active])]
    return X


def gpjm(estimator, X, gamma, *, features=None, domain=None, target=None, max_features=None):
    """GP Jacobian-saliency attack: greedy, one feature at a time.

    Repeatedly moves the not-yet-modified feature with the largest absolute
    gradient of the margin (as in :func:`gpfgs`) to the box edge that
    decreases it, then recomputes the gradient. A classifier row stops as
    soon as the model's ``predict`` changes; a regressor tries lowering and
    raising the mean and keeps the walk that changes ``predict`` most. A row
    also stops when no unmodified feature has a non-zero gradient.

    Parameters
    ----------
    {params}
    max_features : int, default=None
        Most features modified per row; None: every movable feature.

    Returns
    -------
    {returns}
    """
    prob = _Problem(estimator, X, gamma, features, domain, target)
    if max_features is None:
        max_features = prob.X.shape[1]
    _check_int(max_features, "max_features", 0)
    return prob.result(prob.best([_saliency_walk(prob, col, max_features) for col in prob.columns]))


def pgd(
    estimator,
    X,
    gamma,
    *,
    features=None,
    domain=None,
    target=None,
    n_starts=10,
    n_steps=50,
    delta=None,
    random_state=None,
):
    """Multi-start projected gradient descent on the margin: the strong attack.

    Runs :func:`local search <skgprobust._engine._search.local_search>` (the local search of
    ``certify``) per row on the objective of :func:`gpfgs`, from the centre,
    the gpfgs point and ``n_starts - 1`` uniform random points of the box,
    then refines its best point by L-BFGS-B (:func:`~skgprobust._engine._search.polish`,
    at most 40 evaluations; never worse than the point it starts from).
    Since the starts include the gpfgs point, the margin found is never
    higher than gpfgs's. A regressor minimises and maximises the mean of
    each attacked target and keeps the point that changes ``predict`` most.

    Parameters
    ----------
    {params}
    n_starts : int, default=10
        Starts besides the gpfgs point (the centre is one of them); >= 1.
    n_steps : int, default=50
        Projected gradient steps per start.
    delta : float, default=None
        Regressors only: stop a row's search once ``predict`` moves by more
        than delta (a success for :func:`attack_succeeded`).
    random_state : int, RandomState instance or None, default=None
        Seeds the random starts (one independent stream per row).

    Returns
    -------
    X_adv : ndarray of shape (n_samples, n_features) or (n_features,)
        The most adversarial point found per row (lowest margin, or largest
        change of a regressor's predict), even if it does not change the
        decision.
    """
    prob = _Problem(estimator, X, gamma, features, domain, target)
    _check_int(n_starts, "n_starts", 1)
    _check_int(n_steps, "n_steps", 0)
    _check_delta(estimator, delta, required=False)
    X_adv = prob.X.copy()
    for i, rng in enumerate(row_seeds(random_state, len(prob.X))):
        x, lo, hi, row = prob.X[i], prob.lo[i], prob.hi[i], np.array([i])
        randoms = random_starts(lo, hi, n_starts - 1, rng)
        best_dev = -np.inf
        for col in prob.columns:
            objectives, keys = col
            fgs = sign_corner(x, lo, hi, prob.grad(col, row, x[None])[0])
            obj = objectives[keys[i]]
            cand, _ = polish(obj, lo, hi, *local_search(obj, lo, hi, np.vstack([x, fgs, randoms]), n_steps))
            if prob.is_classifier:
                X_adv[i] = cand
                break
            dev = prob.deviation(row, cand[None])[0]
            if dev > best_dev:
                best_dev, X_adv[i] = dev, cand
            if delta is not None and best_dev > delta:
                break
    return prob.result(X_adv)


for _attack in (gpfgs, gpjm, pgd):
    if _attack.__doc__:  # None under python -OO
        _attack.__doc__ = _attack.__doc__.format(params=_PARAMS, returns=_RETURNS)


def attack_succeeded(estimator, X, X_adv, *, delta=None):
    """Whether attacked points change the model's own prediction.

    Parameters
    ----------
    estimator : fitted estimator of this package
        As in :func:`pgd`.
    X : array-like of shape (n_samples, n_features) or (n_features,)
        The original points.
    X_adv : array-like of the shape of X
        The attacked points (e.g. returned by :func:`pgd`).
    delta : float, default=None
        Regressors only, required: the attack succeeds where some target's
        ``predict`` moves by more than delta.

    Returns
    -------
    succeeded : ndarray of bool of shape (n_samples,), or a bool for 1-D X
        Classifier: ``predict(X_adv) != predict(X)``; regressor:
        ``max_p |predict(X_adv)_p - predict(X)_p| > delta``.
    """
    check_attack_model(estimator)
    check_is_fitted(estimator, estimator._fitted_attributes)
    _check_delta(estimator, delta, required=True)
    X, single = _as_rows(X)
    X_adv, _ = _as_rows(X_adv)
    with quiet_feature_names():  # attacks return arrays: no feature names to check against X's
        X = validate_data(estimator, X, reset=False, dtype=np.float64)
        X_adv = validate_data(estimator, X_adv, reset=False, dtype=np.float64)
    if X_adv.shape != X.shape:
        raise ValueError(f"X_adv must have the shape of X, {X.shape}, got {X_adv.shape}.")
    if is_classifier(estimator):
        out = _predict(estimator, X_adv) != _predict(estimator, X)
    else:
        dev = np.abs(_own_predict(estimator, X_adv) - _own_predict(estimator, X)).max(axis=1)
        # An unmoved point never counts (a batched predict may differ in the last bits).
        out = (dev > delta) & np.any(X_adv != X, axis=1)
    return out[0] if single else out
