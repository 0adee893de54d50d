"""RobustGaussianProcessClassifier: sklearn's GPC plus certified bounds."""

import numpy as np
from sklearn.gaussian_process import GaussianProcessClassifier

from ._engine._api import ClassifierBoundsMixin, ProbaOnly, fill_doc
from ._engine._common import check_gram, discard_fit, float64_inputs
from ._engine._driver import RangeProblem, range_result
from ._engine._latent import check_variance_bound, classifier_bound_model
from ._engine._objectives import ProbaObjective
from ._engine._solve import Budget, DecisionOutcome, solve_sign


def _certify_row(shared, x0, lo, hi, label, rng):
    """Binary: the sign of the latent mean; one-vs-rest: the argmax margin."""
    bm, predict, variance_bound, max_iter, time_limit = shared
    budget = Budget(max_iter, time_limit)

    def changes_decision(x):
        return predict(x[None])[0] != label

    objective = bm.margin(label, variance_bound)
    if bm.kind == "one_vs_rest":
        objective = objective.restricted(lo, hi)  # only classes that can win in this box
    out = solve_sign(objective, lo, hi, x0, budget, rng, changes_decision)
    if (
        out.status == "robust"
        and bm.kind == "one_vs_rest"
        and not bm.probabilities_finite(lo, hi, variance_bound, deadline=budget.deadline)
    ):
        # predict is the argmax of predict_proba: a NaN column decides it
        # whatever the margin, and the margin's bounds do not cover NaN.
        return DecisionOutcome("unknown", out.bound, out.counterexample, out.n_iter, budget.elapsed())
    return out


def _certify_ovo_row(shared, x0, lo, hi, label, rng):
    """One-vs-one: a proven lower bound of the vote margin.

    sklearn's one-vs-one decision is ``argmax_k votes_k(x) + t_k(x)`` with
    ``|t_k| < 1/3`` (its transformed confidences), so a class that leads every
    other by at least one vote wins whatever the confidences. Each pair
    (i, j) votes by the sign of its latent mean f_ij; a pair whose sign is
    proven constant on the box (:func:`solve_sign`) has a fixed winner there,
    any other pair may vote either way. With c the predicted class,
    ``lower_c`` = pairs proven won by c and ``upper_k`` = pairs of k not
    proven lost by k, every x of the box has ``votes_c(x) - votes_k(x) >=
    lower_c - upper_k``, so the row is robust when ``lower_c - max_k
    upper_k >= 1`` (the returned ``bound``). A pair whose sign flips in the
    box without changing the winner (the audit's case: a pair of two
    losing classes) no longer blocks the proof. Only the pairs that can
    raise this bound are attempted: c's pairs that c wins at x*, then pairs
    (k, l) that k wins at x* while l's upper count still reaches lower_c.
    A counterexample from any pair is kept only when ``predict`` confirms
    the decision changes (else :func:`solve_sign` returns unknown for it).
    Rows whose votes tie at x* (sklearn breaks them by the confidences) are
    'unknown': the vote margin there is 0. The confidences are the pairs'
    ``predict_proba``, so a robust row also needs them finite on the box
    (:meth:`BoundModel.probabilities_finite`): sklearn's five-erf integral is
    NaN where its computed variance is <= 0 (amplitudes ~1e14 and more with
    duplicated inputs), and a NaN confidence decides ``argmax`` whatever the
    votes.
    """
    bm, predict, _, max_iter, time_limit = shared
    budget = Budget(max_iter, time_limit)
    nan = np.full(len(x0), np.nan)
    pairs = bm.pairwise()
    n = len(bm.classes)
    c = bm.class_index(label)
    winner = [j if f.value(x0[None])[0] > 0 else i for i, j, f in pairs]
    votes = np.bincount(winner, minlength=n)
    others = [k for k in range(n) if k != c]
    proven = np.zeros(len(pairs), dtype=bool)

    def vote_bound():
        lower = sum(1 for p, (i, j, _) in enumerate(pairs) if proven[p] and winner[p] == c)
        upper = np.zeros(n)
        for p, (i, j, _) in enumerate(pairs):
            for k in (i, j):
                if not (proven[p] and winner[p] != k):
                    upper[k] += 1
        return float(lower - upper[others].max()), lower, upper

    if np.sum(votes == votes.max()) > 1 or votes[c] < votes.max():
        # Tied votes are broken by summed confidences: not covered, say so.
        return DecisionOutcome("unknown", vote_bound()[0], nan, 0, budget.elapsed())

    def changes_decision(x):
        return predict(x[None])[0] != label

    own = [p for p, (i, j, _) in enumerate(pairs) if winner[p] == c]
    rest = [p for p, (i, j, _) in enumerate(pairs) if c not in (i, j)]
    n_iter = 0
    for p in own + rest:
        bound, lower, upper = vote_bound()
        if bound >= 1:
            break
        i, j, f = pairs[p]
        loser = i if winner[p] == j else j
        if p in rest and upper[loser] < lower:
            continue  # the loser cannot catch up with c whatever this pair votes
        out = solve_sign(f if winner[p] == j else f.negated(), lo, hi, x0, budget, rng, changes_decision)
        n_iter += out.n_iter
        if out.status == "not_robust":
            return DecisionOutcome("not_robust", vote_bound()[0], out.counterexample, n_iter, budget.elapsed())
        proven[p] = out.status == "robust"
    bound = vote_bound()[0]
    # The confidences are the pairs' predict_proba: |t_k| < 1/3 needs them
    # finite (a NaN makes sklearn's argmax return its column).
    robust = bound >= 1 and bm.probabilities_finite(lo, hi, deadline=budget.deadline)
    return DecisionOutcome("robust" if robust else "unknown", bound, nan, n_iter, budget.elapsed())


class RobustGaussianProcessClassifier(ClassifierBoundsMixin, GaussianProcessClassifier):
    """Gaussian process classifier with certified robustness.

    A drop-in subclass of :class:`sklearn.gaussian_process.GaussianProcessClassifier`
    (same parameters, fitting and predictions) that adds :meth:`certify` and
    :meth:`prediction_range`. The two-class decision is the sign of the
    latent mean, so its certification needs mean bounds only and solves no
    LP/QP. One-vs-rest multi-class decisions (argmax of the per-class
    probabilities) use mean and variance bounds; one-vs-one decisions are
    certified through a lower bound of the vote margin from the pairwise
    latent signs proven on the box, and such models have no
    ``predict_proba`` / ``prediction_range``, as in sklearn.

    Parameters
    ----------
    kernel : kernel instance, default=None
        The covariance of the latent GP (sklearn's default
        ``ConstantKernel(1.0, constant_value_bounds="fixed") * RBF(1.0,
        length_scale_bounds="fixed")`` when None); its free hyperparameters
        are optimised at fit unless ``optimizer=None``. Certification
        needs an adapter for every part of the fitted kernel
        (:func:`skgprobust.kernels.make_adapter`); others raise
        :class:`~skgprobust.exceptions.UnsupportedKernelError` at the first
        bound.
    optimizer : 'fmin_l_bfgs_b', callable or None, default='fmin_l_bfgs_b'
        Maximiser of the log-marginal likelihood over the kernel's
        hyperparameters, as in sklearn; None keeps the kernel fixed.
    n_restarts_optimizer : int, default=0
        Extra optimiser starts from hyperparameters drawn log-uniformly
        within their bounds.
    max_iter_predict : int, default=100
        Newton iterations of the Laplace approximation at fit. The bounds
        hold for the fitted model whatever its convergence.
    warm_start : bool, default=False
        Start the Newton iterations from the previous fit's latent mode.
    copy_X_train : bool, default=True
        Store a copy of the training inputs (otherwise a reference).
    random_state : int, RandomState instance or None, default=None
        Seeds the optimiser restarts.
    multi_class : {'one_vs_rest', 'one_vs_one'}, default='one_vs_rest'
        How more than two classes are handled, as in sklearn; certified
        through the decision rule of the fitted wrapper.
    n_jobs : int, default=None
        Jobs for fitting the binary models (sklearn's meaning). The bound
        methods take their own ``n_jobs``.

    Attributes
    ----------
    base_estimator_ : Estimator instance
        sklearn's fitted binary Laplace model, or its one-vs-rest /
        one-vs-one wrapper.
    kernel_ : kernel instance
        The fitted kernel (of the binary model; a
        :class:`~sklearn.gaussian_process.kernels.CompoundKernel` for
        several classes).
    log_marginal_likelihood_value_ : float
        Log-marginal likelihood of ``kernel_.theta``.
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    n_classes_ : int
        The number of classes.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names seen during fit, when X has string column names.

    See Also
    --------
    sklearn.gaussian_process.GaussianProcessClassifier : the parent class.
    EPGaussianProcessClassifier : probit likelihood with Expectation Propagation.
    SoftmaxGaussianProcessClassifier : one latent GP per class, softmax likelihood.

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

    # certify / prediction_range / explain: ClassifierBoundsMixin's, with
    # these docstring parts (skgprobust/_engine/_api.py); the probability
    # methods are absent on one-vs-one models (ProbaOnly).
    _variance_bound_methods = ("certify", "prediction_range", "explain")
    _proba_only_methods = ("prediction_range", "explain")
    _method_docs = {
        "certify": "Prove that ``predict`` gives the same class everywhere in the box.",
        "certify_result": """\
``bound`` is a proven lower bound of the margin towards the predicted
class: the latent mean's (two classes) or the per-class probabilities'
(one-vs-rest), robust iff > 0; the vote margin (one-vs-one), robust
needs >= 1 (:class:`~skgprobust.CertificationResult`).""",
        "prediction_range": "Certified range of the predicted probabilities over the box around each row.",
        "statistic": """\
statistic : {"proba", "latent_mean"}, default="proba"
    "proba": ``predict_proba`` (columns ordered as ``classes_``),
    exactly as sklearn computes it (five-erf approximation,
    one-vs-rest normalisation). "latent_mean": the latent mean of
    each binary model (one column for two classes, one per class
    for one-vs-rest), as ``latent_mean_and_variance`` returns it.""",
        "range_result": """\
Arrays of shape (n_samples, n_classes), one column for
``statistic="latent_mean"`` with two classes.""",
        "explain": """\
Per-feature sensitivity of ``predict_proba`` with certified bounds.

The paper's Delta metric (Sec. 7.4): for feature i,
``Delta_i = (pi_max(T+) - pi_max(T-)) + (pi_min(T+) - pi_min(T-))``
over the one-sided boxes ``T+ = [x, x + gamma e_i]`` and
``T- = [x - gamma e_i, x]``, pi the probability of the explained
class. Positive: raising the feature raises the probability.
Deterministic for a given ``random_state`` (the bounds do not depend
on it).""",
    }

    @ProbaOnly
    def predict_proba(self, X):
        """Return probability estimates for the test vectors X.

        As :meth:`sklearn.gaussian_process.GaussianProcessClassifier.predict_proba`;
        absent (``hasattr`` is False) on one-vs-one models of more than two
        classes, which sklearn cannot give probabilities for.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query points.

        Returns
        -------
        C : ndarray of shape (n_samples, n_classes)
        """
        return super().predict_proba(float64_inputs(X, self.kernel))

    def predict(self, X):
        """Perform classification on an array of test vectors X.

        As :meth:`sklearn.gaussian_process.GaussianProcessClassifier.predict`,
        with numeric inputs converted to float64 first (see :meth:`fit`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Query points.

        Returns
        -------
        C : ndarray of shape (n_samples,)
            Predicted target values.
        """
        return super().predict(float64_inputs(X, self.kernel))

    def latent_mean_and_variance(self, X):
        """Latent mean and variance of the binary (or each one-vs-rest) model.

        As sklearn's ``latent_mean_and_variance``, with numeric inputs
        converted to float64 first (see :meth:`fit`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Query points.

        Returns
        -------
        latent_mean, latent_var : ndarray
            As sklearn returns them.
        """
        return super().latent_mean_and_variance(float64_inputs(X, self.kernel))

    @fill_doc
    def fit(self, X, y):
        """Fit the Gaussian process classifier (sklearn's ``fit``, inputs in float64).

        %(fit_float64)s
        y : array-like of shape (n_samples,)
            Target values (class labels).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X = float64_inputs(X, self.kernel)
        try:
            super().fit(X, y)
        except ValueError as err:
            # sklearn's Laplace fit fails unnamed ("array must not contain
            # infs or NaNs") on a kernel whose Gram matrix is not finite, and
            # with a bare LinAlgError ("leading minor not positive definite")
            # on one that is not PSD (DotProduct() ** -1; UX audit, session
            # 26): name the kernel as check_gram does for the other models.
            kernel, K = self.kernel, None
            if kernel is not None and isinstance(X, np.ndarray) and X.dtype.kind == "f":
                with np.errstate(all="ignore"):
                    K = np.asarray(kernel(X))
            if K is not None and K.dtype.kind == "f" and (
                not np.all(np.isfinite(K)) or isinstance(err, np.linalg.LinAlgError)
            ):
                discard_fit(self)
                check_gram(K, kernel, type(self).__name__)  # raises, naming the kernel, unless K is PSD
            raise err
        base = self.base_estimator_
        try:
            for b in getattr(base, "estimators_", [base]):  # one binary model, or one per pair / class
                check_gram(b.kernel_(b.X_train_), b.kernel_, type(self).__name__)
        except np.linalg.LinAlgError:
            discard_fit(self)  # not fitted: certify / predict must not use that model
            raise
        self._skgp_note_fit()  # copy_X_train=False: the inputs' digest (BoundModelMixin)
        return self

    def _fit_token(self):
        return self.base_estimator_

    def _build_bound_model(self):
        return classifier_bound_model(self)

    # -- the hooks of ClassifierBoundsMixin ---------------------------------

    def _predict_labels(self, X):
        return self.base_estimator_.predict(X)

    def _proba_reference(self, X):
        return self.base_estimator_.predict_proba(X)

    def _proba_pairs(self, variance_bound="default"):
        """``c -> (objective, negated objective)`` of ``predict_proba[:, c]``."""
        probs = self._bound_model().probabilities(check_variance_bound(variance_bound))
        return lambda c: (ProbaObjective(probs, c, 1.0), ProbaObjective(probs, c, -1.0))

    def _row_solver(self, X, variance_bound, max_iter, time_limit):
        check_variance_bound(variance_bound)
        bm = self._bound_model()
        if bm.kind == "one_vs_rest" and len(X):
            # Per-fit variance precomputations (factors, spectra) before the
            # rows start, so that no row's time_limit pays for them.
            bm.probabilities(variance_bound)
        elif bm.kind == "one_vs_one" and len(X):
            # The pairs' variances (for the confidences' finiteness check of
            # robust rows): built once per fit, before the rows start.
            bm.variances()
        func = _certify_ovo_row if bm.kind == "one_vs_one" else _certify_row
        return func, (bm, self.base_estimator_.predict, variance_bound, max_iter, time_limit)

    def _proba_problem(self, variance_bound="default"):
        """:class:`RangeProblem` of ``predict_proba``: p1 for two classes
        (class 0 mirrors it), one column per class for one-vs-rest."""
        probs = self._bound_model().probabilities(check_variance_bound(variance_bound))
        binary = probs.binary
        columns = [1] if binary else range(len(self.classes_))
        pairs = [(ProbaObjective(probs, c, 1.0), ProbaObjective(probs, c, -1.0)) for c in columns]

        def reference(P):
            proba = self.base_estimator_.predict_proba(P)
            return proba[:, 1:] if binary else proba

        return RangeProblem(pairs, reference)

    def _range_problem(self, statistic="proba", variance_bound="default"):
        """:class:`RangeProblem` of a statistic (``prediction_range``)."""
        if statistic == "proba":
            return self._proba_problem(variance_bound)
        bm = self._bound_model()
        ests = [self.base_estimator_] if bm.kind == "binary" else list(self.base_estimator_.estimators_)

        def reference(P):
            return np.column_stack([e.latent_mean_and_variance(P)[0] for e in ests])

        return RangeProblem(bm.mean_pairs(), reference)

    def _finish_range(self, res, statistic, epsilon):
        if self._bound_model().kind != "binary" or statistic != "proba":
            return res
        # Class 0 is 1 - p1: its range is the mirror of class 1's.
        return range_result(
            np.hstack([1.0 - res.max_upper, res.min_lower]),
            np.hstack([1.0 - res.max_lower, res.min_upper]),
            np.concatenate([res.argmax, res.argmin], 1),
            np.hstack([1.0 - res.min_upper, res.max_lower]),
            np.hstack([1.0 - res.min_lower, res.max_upper]),
            np.concatenate([res.argmin, res.argmax], 1),
            epsilon, res.n_iter, res.time, warn=False,
        )
