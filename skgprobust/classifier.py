"""RobustGaussianProcessClassifier: sklearn's GPC plus certified bounds."""

import numpy as np
from sklearn.gaussian_process import GaussianProcessClassifier

from ._common import certification_result, check_epsilon, map_rows, prepare, range_result, row_seeds
from .bounds import AffineMean
from .latent import from_binary_classifier
from .solve import Budget, solve_range, solve_sign


def _certify_row(shared, x0, lo, hi, positive, rng):
    f, base, max_iter, time_limit = shared
    label = base.classes_[int(positive)]
    g = f if positive else f.negated()

    def changes_decision(x):
        return base.predict(x[None])[0] != label

    return solve_sign(g, lo, hi, x0, Budget(max_iter, time_limit), rng, changes_decision)


def _range_row(shared, x0, lo, hi, rng):
    objectives, epsilon, max_iter, time_limit = shared
    return solve_range(objectives, lo, hi, x0, epsilon, Budget(max_iter, time_limit), rng)


class RobustGaussianProcessClassifier(GaussianProcessClassifier):
    """Gaussian process classifier with certified robustness.

    A drop-in subclass of :class:`sklearn.gaussian_process.GaussianProcessClassifier`
    (same parameters, fitting and predictions) that adds :meth:`certify` and
    :meth:`prediction_range`. Two-class models are supported; the binary
    decision is the sign of the latent mean, so certification needs mean
    bounds only and solves no LP/QP.

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

    def _binary_base(self):
        if len(self.classes_) != 2:
            raise NotImplementedError(
                f"Certification of a {len(self.classes_)}-class GaussianProcessClassifier needs variance "
                "bounds, which are not implemented yet; two-class models are supported."
            )
        return self.base_estimator_

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
        base = self._binary_base()
        model = from_binary_classifier(base)
        f = AffineMean(model.adapter, model.weights[:, 0], 0.0)
        n, d = X.shape
        labels = base.predict(X) if n else np.empty(0, dtype=self.classes_.dtype)
        positive = labels == self.classes_[1]
        rows = list(zip(X, lo, hi, positive, row_seeds(random_state, n)))
        outs = map_rows(_certify_row, (f, base, max_iter, time_limit), rows, n_jobs)
        # Re-check every counterexample with the model before reporting it.
        flagged = [i for i, o in enumerate(outs) if o.status == "not_robust"]
        if flagged:
            preds = base.predict(np.array([outs[i].counterexample for i in flagged]))
            for i, p in zip(flagged, preds):
                if p == labels[i]:
                    outs[i].status, outs[i].counterexample = "unknown", np.full(d, np.nan)
        return certification_result(outs, d)

    def prediction_range(
        self,
        X,
        gamma,
        *,
        epsilon=1e-2,
        statistic="latent_mean",
        features=None,
        domain=None,
        max_iter=None,
        time_limit=None,
        n_jobs=None,
        random_state=None,
    ):
        """Certified range of the latent mean over the box around each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        gamma : float or array-like of shape (n_features,)
        epsilon : float, default=1e-2
            Refine until both gaps are <= epsilon, or the budget is spent.
        statistic : {"latent_mean"}, default="latent_mean"
            The latent mean of the two-class Laplace model, as
            ``latent_mean_and_variance`` returns it (k = 1 column).
            Probability ranges ("proba") need variance bounds (not yet).
        features, domain, max_iter, time_limit, n_jobs, random_state
            As in :meth:`certify`.

        Returns
        -------
        result : RangeResult
        """
        if statistic == "proba":
            raise NotImplementedError("statistic='proba' needs posterior variance bounds, not implemented yet.")
        if statistic != "latent_mean":
            raise ValueError(f"statistic must be 'latent_mean', got {statistic!r}.")
        check_epsilon(epsilon)
        X, lo, hi = prepare(self, X, gamma, features, domain, max_iter, time_limit)
        base = self._binary_base()
        model = from_binary_classifier(base)
        f = AffineMean(model.adapter, model.weights[:, 0], 0.0)
        n, d = X.shape
        rows = list(zip(X, lo, hi, row_seeds(random_state, n)))
        outs = map_rows(_range_row, ([f, f.negated()], epsilon, max_iter, time_limit), rows, n_jobs)
        lower = np.array([o.lower for o in outs]).reshape(n, 2)
        points = np.array([o.argmin for o in outs]).reshape(n, 2, d)
        vals = base.latent_mean_and_variance(points.reshape(-1, d))[0].reshape(n, 2) if n else np.empty((0, 2))
        return range_result(
            lower[:, :1],
            vals[:, :1],
            points[:, :1],
            vals[:, 1:],
            -lower[:, 1:],
            points[:, 1:],
            epsilon,
            [o.n_iter for o in outs],
            [o.time for o in outs],
        )
