"""RobustGaussianProcessClassifier: sklearn's GPC plus certified bounds."""

import numpy as np
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.utils._available_if import available_if

from ._engine._common import certification_result, check_epsilon, map_rows, prepare, range_result, row_seeds
from ._bounds._mean import AffineMean
from ._engine._delta import Explanation, class_targets, explain_rows, feature_names_of
from ._engine._latent import from_classifier
from ._engine._perturbation import resolve_features
from ._engine._objectives import MarginObjective, ProbaObjective, _ClassProbabilities
from ._engine._solve import Budget, DecisionOutcome, solve_range, solve_sign


def _certify_row(shared, x0, lo, hi, label, rng):
    """Binary: the sign of the latent mean; one-vs-rest: the argmax margin."""
    objective, clf, max_iter, time_limit = shared

    def changes_decision(x):
        return clf.base_estimator_.predict(x[None])[0] != label

    g = objective(label)
    return solve_sign(g, lo, hi, x0, Budget(max_iter, time_limit), rng, changes_decision)


def _certify_ovo_row(shared, x0, lo, hi, label, rng):
    """One-vs-one: prove every pairwise latent sign constant on the box; then
    the votes, hence the (strict) vote winner, cannot change."""
    pairs, clf, max_iter, time_limit = shared
    budget = Budget(max_iter, time_limit)
    nan = np.full(len(x0), np.nan)
    n_classes = len(clf.classes_)
    signs = np.array([1.0 if f.value(x0[None])[0] > 0 else -1.0 for _, _, f in pairs])
    votes = np.zeros(n_classes)
    for (i, j, _), s in zip(pairs, signs):
        votes[j if s > 0 else i] += 1
    if np.sum(votes == votes.max()) > 1:
        # Tied votes are broken by summed confidences: not covered, say so.
        return DecisionOutcome("unknown", -np.inf, nan, 0, budget.elapsed())

    def changes_decision(x):
        return clf.base_estimator_.predict(x[None])[0] != label

    bound, n_iter, undecided = np.inf, 0, False
    for (_, _, f), s in zip(pairs, signs):
        out = solve_sign(f if s > 0 else f.negated(), lo, hi, x0, budget, rng, changes_decision)
        n_iter += out.n_iter
        bound = min(bound, out.bound)
        if out.status == "not_robust":
            return DecisionOutcome("not_robust", bound, out.counterexample, n_iter, budget.elapsed())
        undecided |= out.status != "robust"
    return DecisionOutcome("unknown" if undecided else "robust", bound, nan, n_iter, budget.elapsed())


def _range_row(shared, x0, lo, hi, rng):
    objectives, epsilon, max_iter, time_limit = shared
    return solve_range(objectives, lo, hi, x0, epsilon, Budget(max_iter, time_limit), rng)


class _BinaryMargin:
    """Picklable factory: the latent mean signed towards the label."""

    def __init__(self, f, positive_label):
        self.f, self.positive_label = f, positive_label

    def __call__(self, label):
        return self.f if label == self.positive_label else self.f.negated()


class _OvrMargin:
    def __init__(self, probs, classes):
        self.probs, self.classes = probs, list(classes)

    def __call__(self, label):
        return MarginObjective(self.probs, self.classes.index(label))


def _proba_available(self):
    """predict_proba / prediction_range exist unless the model is a fitted
    (or to-be-fitted) one-vs-one model of more than two classes."""
    if self.multi_class != "one_vs_one":
        return True
    return getattr(self, "n_classes_", None) == 2


class RobustGaussianProcessClassifier(GaussianProcessClassifier):
    """Gaussian process classifier with certified robustness.

    A drop-in subclass of :class:`sklearn.gaussian_process.GaussianProcessClassifier`
    (same parameters, fitting and predictions) that adds :meth:`certify` and
    :meth:`prediction_range`. The two-class decision is the sign of the
    latent mean, so its certification needs mean bounds only and solves no
    LP/QP. One-vs-rest multi-class decisions (argmax of the per-class
    probabilities) use mean and variance bounds; one-vs-one decisions are
    certified through the pairwise latent signs (the vote), and such models
    have no ``predict_proba`` / ``prediction_range``, as in sklearn.

    See :class:`sklearn.gaussian_process.GaussianProcessClassifier` for the
    parameters and fitted attributes.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skgprobust import RobustGaussianProcessClassifier
    >>> X, y = make_classification(n_samples=60, n_features=3, n_redundant=0, random_state=0)
    >>> clf = RobustGaussianProcessClassifier(random_state=0).fit(X, y)
    >>> cert = clf.certify(X[:5], gamma=0.01, random_state=0)
    >>> cert.status.shape
    (5,)
    """

    _fitted_attributes = ("base_estimator_", "classes_")

    @available_if(_proba_available)
    def predict_proba(self, X):
        """Return probability estimates for the test vectors X.

        As :meth:`sklearn.gaussian_process.GaussianProcessClassifier.predict_proba`;
        absent (``hasattr`` is False) on one-vs-one models of more than two
        classes, which sklearn cannot give probabilities for.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        C : ndarray of shape (n_samples, n_classes)
        """
        return super().predict_proba(X)

    def _probabilities(self, variance_bound="default"):
        models = from_classifier(self)
        return _ClassProbabilities(models, [m.variance(variance_bound) for m in models])

    def certify(
        self,
        X,
        gamma,
        *,
        delta=None,
        norm=np.inf,
        features=None,
        domain=None,
        max_iter=None,
        time_limit=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
        variance_bound="default",
    ):
        """Prove that ``predict`` gives the same class everywhere in the box.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Centres of the boxes.
        gamma : float or array-like of shape (n_features,)
            Half-width of the l_inf box per feature, in the units of X.
        delta : None
            Regressors only; must be None here.
        norm : np.inf
            Regressors only; must be left at its default here.
        features : array-like of int, bool or str, default=None
            Features allowed to move; the others stay fixed. None: all.
        domain : tuple (low, high), default=None
            Valid input range; the box is clipped to it.
        max_iter : int, default=None
            Boxes split per row (5000 when both budgets are None).
        time_limit : float, default=None
            Seconds per row.
        n_jobs : int, default=None
            Rows run in parallel with joblib; results do not depend on it.
        random_state : int, RandomState instance or None, default=None
            Seeds the random starts of the local search.
        verbose : int, default=0
            Progress on stderr while rows run (a text bar when serial,
            joblib's messages when ``n_jobs`` runs them in parallel).
        variance_bound : {"default", "paper"}, default="default"
            Variance bounds for one-vs-rest models (unused for two classes
            and one-vs-one): the closed-form default or the paper's QP/LP.

        Returns
        -------
        result : CertificationResult
            ``bound`` is a proven lower bound of the latent margin towards the
            predicted class (robust iff > 0); counterexamples are re-checked
            with ``predict``.
        """
        if delta is not None:
            raise ValueError("delta applies to regressors; a classifier is certified on its predicted class.")
        if norm != np.inf:
            raise ValueError("norm applies to regressors' outputs; leave it at np.inf for a classifier.")
        X, lo, hi = prepare(self, X, gamma, features, domain, max_iter, time_limit)
        n, d = X.shape
        labels = self.base_estimator_.predict(X) if n else np.empty(0, dtype=self.classes_.dtype)
        models = from_classifier(self)
        if len(self.classes_) == 2:
            f = AffineMean(models[0].adapter, models[0].weights[:, 0], 0.0)
            func, shared = _certify_row, (_BinaryMargin(f, self.classes_[1]), self, max_iter, time_limit)
        elif self.multi_class == "one_vs_rest":
            probs = self._probabilities(variance_bound)
            func, shared = _certify_row, (_OvrMargin(probs, self.classes_), self, max_iter, time_limit)
        else:
            pairs, k = [], 0
            for i in range(len(self.classes_)):
                for j in range(i + 1, len(self.classes_)):
                    pairs.append((i, j, AffineMean(models[k].adapter, models[k].weights[:, 0], 0.0)))
                    k += 1
            func, shared = _certify_ovo_row, (pairs, self, max_iter, time_limit)
        rows = list(zip(X, lo, hi, labels, row_seeds(random_state, n)))
        outs = map_rows(func, shared, rows, n_jobs, verbose, "certify")
        # Re-check every counterexample with the model before reporting it.
        flagged = [i for i, o in enumerate(outs) if o.status == "not_robust"]
        if flagged:
            preds = self.base_estimator_.predict(np.array([outs[i].counterexample for i in flagged]))
            for i, p in zip(flagged, preds):
                if p == labels[i]:
                    outs[i].status, outs[i].counterexample = "unknown", np.full(d, np.nan)
        return certification_result(outs, d)

    @available_if(_proba_available)
    def prediction_range(
        self,
        X,
        gamma,
        *,
        epsilon=1e-2,
        statistic="proba",
        features=None,
        domain=None,
        max_iter=None,
        time_limit=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
        variance_bound="default",
    ):
        """Certified range of the predicted probabilities over the box around each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        gamma : float or array-like of shape (n_features,)
        epsilon : float, default=1e-2
            Refine until both gaps are <= epsilon, or the budget is spent.
        statistic : {"proba", "latent_mean"}, default="proba"
            "proba": ``predict_proba`` (columns ordered as ``classes_``),
            exactly as sklearn computes it (five-erf approximation,
            one-vs-rest normalisation). "latent_mean": the latent mean of
            each binary model (one column for two classes, one per class
            for one-vs-rest), as ``latent_mean_and_variance`` returns it.
        features, domain, max_iter, time_limit, n_jobs, random_state, verbose
            As in :meth:`certify`. ``max_iter`` is shared by all columns.
        variance_bound : {"default", "paper"}, default="default"
            The closed-form variance bounds (default) or the paper's QP/LP
            (Props. 5-6, much slower; the reference).

        Returns
        -------
        result : RangeResult
            Arrays of shape (n_samples, k).
        """
        if statistic not in ("proba", "latent_mean"):
            raise ValueError(f"statistic must be 'proba' or 'latent_mean', got {statistic!r}.")
        check_epsilon(epsilon)
        X, lo, hi = prepare(self, X, gamma, features, domain, max_iter, time_limit)
        n, d = X.shape
        models = from_classifier(self)
        binary = len(models) == 1
        if statistic == "latent_mean":
            objectives = []
            for m in models:
                f = AffineMean(m.adapter, m.weights[:, 0], 0.0)
                objectives += [f, f.negated()]
            ests = [self.base_estimator_] if binary else list(self.base_estimator_.estimators_)

            def reference(P):
                return np.column_stack([e.latent_mean_and_variance(P)[0] for e in ests])

        else:
            probs = self._probabilities(variance_bound)
            columns = [1] if binary else range(len(models))
            objectives = [ProbaObjective(probs, c, s) for c in columns for s in (1.0, -1.0)]

            def reference(P):
                proba = self.base_estimator_.predict_proba(P)
                return proba[:, 1:] if binary else proba

        k = len(objectives) // 2
        rows = list(zip(X, lo, hi, row_seeds(random_state, n)))
        outs = map_rows(
            _range_row, (objectives, epsilon, max_iter, time_limit), rows, n_jobs, verbose,
            "prediction_range",
        )
        lower = np.array([o.lower for o in outs]).reshape(n, 2 * k)
        points = np.array([o.argmin for o in outs]).reshape(n, 2 * k, d)
        vals = reference(points.reshape(-1, d)).reshape(n, 2 * k, k) if n else np.empty((0, 2 * k, k))
        idx = np.arange(k)
        min_lo, min_up, max_lo, max_up = lower[:, 0::2], vals[:, 2 * idx, idx], vals[:, 2 * idx + 1, idx], -lower[:, 1::2]
        # A lower bound may be lowered (never raised): absorb rounding of
        # sklearn's value at the incumbent, which is the reported min_upper.
        min_lo, max_up = np.minimum(min_lo, min_up), np.maximum(max_up, max_lo)
        arg_min, arg_max = points[:, 0::2], points[:, 1::2]
        if binary and statistic == "proba":
            # Class 0 is 1 - p1: its range is the mirror of class 1's.
            min_lo, min_up, max_lo, max_up = (
                np.hstack([1.0 - max_up, min_lo]),
                np.hstack([1.0 - max_lo, min_up]),
                np.hstack([1.0 - min_up, max_lo]),
                np.hstack([1.0 - min_lo, max_up]),
            )
            arg_min, arg_max = np.concatenate([arg_max, arg_min], 1), np.concatenate([arg_min, arg_max], 1)
        return range_result(
            min_lo, min_up, arg_min, max_lo, max_up, arg_max,
            epsilon, [o.n_iter for o in outs], [o.time for o in outs],
        )

    @available_if(_proba_available)
    def explain(
        self,
        X,
        gamma,
        *,
        features=None,
        target=None,
        epsilon=1e-2,
        method="bounds",
        domain=None,
        max_iter=None,
        time_limit=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
        variance_bound="default",
    ):
        """Per-feature sensitivity of ``predict_proba`` with certified bounds.

        The paper's Delta metric (Sec. 7.4): for feature i,
        ``Delta_i = (pi_max(T+) - pi_max(T-)) + (pi_min(T+) - pi_min(T-))``
        over the one-sided boxes ``T+ = [x, x + gamma e_i]`` and
        ``T- = [x - gamma e_i, x]``, pi the probability of the explained
        class. Positive: raising the feature raises the probability.
        Deterministic for a given ``random_state`` (the bounds do not depend
        on it).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        gamma : float or array-like of shape (n_features,)
            Half-width of the one-sided boxes per feature.
        features : array-like of int, bool or str, default=None
            Features to explain (None: all).
        target : label or array-like of shape (n_samples,), default=None
            Class explained (a label of ``classes_``), per row or for all
            rows; None: the predicted class of each row.
        epsilon : float, default=1e-2
            Precision of each of the four ranges behind an entry.
        method : {"bounds", "search"}, default="bounds"
            "bounds": certified intervals by branch and bound. "search":
            local search only (fast estimate; ``lower``/``upper`` are NaN).
        domain, max_iter, time_limit, n_jobs, random_state, verbose, variance_bound
            As in :meth:`prediction_range`; ``max_iter`` and ``time_limit``
            apply to each one-sided box.

        Returns
        -------
        explanation : Explanation
            ``values``, ``lower``, ``upper`` of shape (n_samples, n_features
            explained).
        """
        X, lo, hi = prepare(self, X, gamma, None, domain, max_iter, time_limit)
        n, d = X.shape
        feats = np.flatnonzero(resolve_features(features, d, getattr(self, "feature_names_in_", None)))
        labels, idx = class_targets(self.classes_, target, n, lambda: self.base_estimator_.predict(X))
        idx = idx.tolist()
        probs = self._probabilities(variance_bound)
        pairs = {c: (ProbaObjective(probs, c, 1.0), ProbaObjective(probs, c, -1.0)) for c in set(idx)}

        def reference(P, c):
            return self.base_estimator_.predict_proba(P)[:, c]

        values, low, high, converged, times = explain_rows(
            X, lo, hi, feats, idx, pairs, reference, epsilon=epsilon, max_iter=max_iter,
            time_limit=time_limit, n_jobs=n_jobs, random_state=random_state, method=method, verbose=verbose,
        )
        return Explanation(
            values, low, high, converged, feats, feature_names_of(self, feats), np.asarray(labels),
            np.broadcast_to(np.asarray(gamma, dtype=np.float64), (d,))[feats].copy(), times,
        )
