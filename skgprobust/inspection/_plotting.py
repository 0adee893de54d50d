"""Plots of certified results (matplotlib, an optional dependency).

Every function draws on ``ax`` (a new figure's axes when None) and returns
the axes, so plots compose and can be tested under the Agg backend.

* :func:`plot_robustness_curve`: certified bounds of pi_min / pi_max over
  gamma with an attack curve (paper Fig. 2);
* :func:`plot_explanation`: Delta per feature with certified whiskers;
* :func:`plot_explanation_heatmap`: Delta of image-shaped inputs;
* :func:`plot_decision_map`: a 2-D model's probability map with the
  certification status of test points.
"""

import numbers

import numpy as np
from sklearn.base import is_classifier

from ..exceptions import UnsupportedModelError

STATUS_STYLE = {
    "robust": {"color": "tab:green", "marker": "o", "label": "certified robust"},
    "not_robust": {"color": "tab:red", "marker": "X", "label": "counterexample found"},
    "unknown": {"color": "tab:gray", "marker": "s", "label": "unknown (budget)"},
}


def _axes(ax):
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("skgprobust.inspection plotting needs matplotlib: pip install matplotlib.") from exc
    return plt.subplots()[1]


def robustness_curve(estimator, x, gammas, *, target=None, epsilon=1e-2, attack="pgd", random_state=0, **range_params):
    """The numbers behind :func:`plot_robustness_curve`.

    Parameters
    ----------
    estimator : fitted robust classifier or regressor
        Any estimator with ``prediction_range``; an attack other than a
        callable needs a RobustGaussianProcessClassifier or
        RobustGaussianProcessRegressor.
    x : array-like of shape (n_features,)
        The row (a pandas Series keeps its feature names).
    gammas : array-like of float
        Box half-widths, one point of the curve each.
    target : label or int, default=None
        Class (classifier; default the predicted one) or output index in
        [0, n_outputs) (regressor; default 0).
    epsilon : float, default=1e-2
        Passed to ``prediction_range``.
    attack : {"pgd", "gpfgs", "gpjm"}, callable or None, default="pgd"
        ``attack(estimator, x, gamma) -> point``; None runs no attack.
    random_state : int, default=0
        Seeds ``prediction_range`` and the "pgd" attack.
    **range_params
        Passed to ``prediction_range`` (e.g. ``max_iter``, ``features``).

    Returns
    -------
    curve : dict of ndarray of shape (len(gammas),)
        ``gamma``; ``min_lower``, ``min_upper``, ``max_lower``,
        ``max_upper`` of the explained column; ``attack`` (the column's
        value at the attack's point, NaN without an attack); and
        ``column`` (int) and ``label`` (the class or output explained).
    """
    from .._engine._common import check_output_index
    from ._explain import quiet_feature_names, validate_row

    x = validate_row(estimator, x)
    gammas = np.asarray(gammas, dtype=np.float64).reshape(-1)
    if attack is not None and not callable(attack):
        if attack not in ("gpfgs", "gpjm", "pgd"):
            raise ValueError(f"attack must be 'gpfgs', 'gpjm', 'pgd', a callable or None, got {attack!r}.")
        from ._attacks import check_attack_model

        check_attack_model(estimator)  # before any prediction_range
    # x was validated with its feature names: the calls below on float arrays
    # must not warn that it has none.
    with quiet_feature_names():
        if is_classifier(estimator):
            label = estimator.predict(x[None])[0] if target is None else target
            if label not in list(estimator.classes_):
                raise ValueError(f"target {target!r} is not in classes_ {estimator.classes_.tolist()}.")
            col = list(estimator.classes_).index(label)
            value = lambda P: estimator.predict_proba(P)[:, col]  # noqa: E731
        else:
            n_outputs = np.asarray(estimator.predict(x[None])).reshape(1, -1).shape[1]
            col = label = check_output_index(0 if target is None else target, n_outputs)
            value = lambda P: np.asarray(estimator.predict(P)).reshape(len(P), -1)[:, col]  # noqa: E731
        keys = ("min_lower", "min_upper", "max_lower", "max_upper")
        out = {k: np.empty(len(gammas)) for k in keys}
        out["attack"] = np.full(len(gammas), np.nan)
        for j, g in enumerate(gammas):
            r = estimator.prediction_range(x[None], g, epsilon=epsilon, random_state=random_state, **range_params)
            for k in keys:
                out[k][j] = getattr(r, k)[0, col]
            if attack is not None:
                out["attack"][j] = value(_attack_point(estimator, x, g, attack, random_state)[None])[0]
    out["gamma"], out["column"], out["label"] = gammas, col, label
    return out


def _attack_point(estimator, x, gamma, attack, random_state):
    from . import _attacks as attacks

    if callable(attack):
        return np.asarray(attack(estimator, x, gamma), dtype=np.float64).reshape(-1)
    if attack not in ("gpfgs", "gpjm", "pgd"):
        raise ValueError(f"attack must be 'gpfgs', 'gpjm', 'pgd', a callable or None, got {attack!r}.")
    kw = {"random_state": random_state} if attack == "pgd" else {}
    return getattr(attacks, attack)(estimator, x, gamma, **kw)


def plot_robustness_curve(
    estimator, x, gammas, *, target=None, epsilon=1e-2, attack="pgd", random_state=0, ax=None, **range_params
):
    """Certified bounds on pi_min and pi_max over gamma, and an attack (paper Fig. 2).

    For each gamma, ``prediction_range`` gives intervals containing the
    minimum and the maximum of the prediction over the box; the bands
    show them (their inner edges are values the model attains). The
    attack curve is the prediction at the attack's point: it must stay
    between the outer edges.

    Parameters
    ----------
    estimator : fitted RobustGaussianProcessClassifier or Regressor
        Any fitted estimator of this suite with ``prediction_range``.
    x : array-like of shape (n_features,)
        The centre of the boxes.
    gammas : array-like of float
        Box radii, one point of the curve each.
    target : label or int, default=None
        Class (classifier; default the predicted one) or output index.
    epsilon : float, default=1e-2
        Tolerance of each ``prediction_range`` call.
    attack : {"pgd", "gpfgs", "gpjm"}, callable or None, default="pgd"
        ``attack(estimator, x, gamma) -> point``; None draws no attack.
    random_state : int, default=0
        Seeds the attack and the bounds' local search.
    ax : matplotlib Axes, default=None
        Axes to draw on; a new figure's when None.
    **range_params
        Passed to ``prediction_range`` (e.g. ``max_iter``, ``features``).

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on (``ax`` when given).
    """
    c = robustness_curve(
        estimator, x, gammas, target=target, epsilon=epsilon, attack=attack, random_state=random_state, **range_params
    )
    ax = _axes(ax)
    g = c["gamma"]
    ax.fill_between(g, c["max_lower"], c["max_upper"], color="tab:blue", alpha=0.3, label=r"$\pi_{\max}$ bounds")
    ax.plot(g, c["max_upper"], color="tab:blue")
    ax.fill_between(g, c["min_lower"], c["min_upper"], color="tab:orange", alpha=0.3, label=r"$\pi_{\min}$ bounds")
    ax.plot(g, c["min_lower"], color="tab:orange")
    if attack is not None:
        name = attack if isinstance(attack, str) else getattr(attack, "__name__", "attack")
        ax.plot(g, c["attack"], "k--", marker=".", label=f"{name} attack")
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel(f"prediction ({c['label']})")
    ax.legend(loc="best")
    return ax


def _check_row(row, explanation):
    """``row`` None or an integer index of one of the explanation's rows
    (negative counts from the end, as numpy); raises a ValueError naming it
    otherwise."""
    n = len(explanation.values)
    if row is None:
        return None
    if not isinstance(row, numbers.Integral) or isinstance(row, (bool, np.bool_)) or not -n <= row < n:
        raise ValueError(f"row must be None or an integer index of the explanation's {n} rows, got {row!r}.")
    return int(row)


def plot_explanation(explanation, row=None, *, top=None, ax=None):
    """Bar chart of Delta per feature, whiskers at the certified bounds.

    Parameters
    ----------
    explanation : Explanation
        The result of an estimator's ``explain``.
    row : int or None, default=None
        One row, or (None) the mean over rows (``explanation.global_()``:
        rows explained for one target only).
    top : int, default=None
        Only the ``top`` features of largest ``|Delta|``.
    ax : matplotlib Axes, default=None
        Axes to draw on; a new figure's when None.

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on (``ax`` when given).
    """
    row = _check_row(row, explanation)
    src = explanation.global_() if row is None else None
    vals = src.values if src is not None else explanation.values[row]
    low = src.lower if src is not None else explanation.lower[row]
    high = src.upper if src is not None else explanation.upper[row]
    names = np.asarray(explanation.feature_names).astype(str)
    order = np.argsort(-np.abs(vals), kind="stable")[: top if top is not None else len(vals)]
    ax = _axes(ax)
    pos = np.arange(len(order))[::-1]
    colors = np.where(vals[order] >= 0, "tab:red", "tab:blue")
    ax.barh(pos, vals[order], color=colors, alpha=0.8)
    finite = np.isfinite(low[order]) & np.isfinite(high[order])
    if finite.any():
        err = np.vstack([vals[order] - low[order], high[order] - vals[order]])[:, finite]
        ax.errorbar(vals[order][finite], pos[finite], xerr=np.maximum(err, 0), fmt="none", ecolor="k", capsize=3)
    ax.set_yticks(pos)
    ax.set_yticklabels(names[order])
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_xlabel(r"$\Delta$ (certified bounds)" if finite.any() else r"$\Delta$")
    ax.set_title("mean over rows" if row is None else f"row {row}")
    return ax


def plot_explanation_heatmap(explanation, shape, row=0, *, ax=None, cmap="RdBu_r"):
    """Delta of an image-shaped input as a heat map (paper Fig. 6, second row).

    Parameters
    ----------
    explanation : Explanation
        Features are the flattened pixels (row-major); unexplained pixels
        are blank.
    shape : tuple (height, width)
        The image shape the features are reshaped to.
    row : int or None, default=0
        The row shown, or None for the mean over rows (``explanation.global_()``:
        rows explained for one target only).
    ax : matplotlib Axes, default=None
        Axes to draw on; a new figure's when None.
    cmap : str, default="RdBu_r"
        Diverging, centred at 0 (red: raising the pixel raises the
        probability).

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on (``ax`` when given).
    """
    h, w = shape
    row = _check_row(row, explanation)
    vals = explanation.global_().values if row is None else explanation.values[row]
    img = np.full(h * w, np.nan)
    feats = np.asarray(explanation.features)
    if feats.size and feats.max() >= h * w:
        raise ValueError(f"feature index {feats.max()} does not fit an image of shape {shape}.")
    img[feats] = vals
    ax = _axes(ax)
    vmax = np.nanmax(np.abs(vals)) if np.any(np.isfinite(vals)) else 1.0
    im = ax.imshow(img.reshape(h, w), cmap=cmap, vmin=-vmax, vmax=vmax)
    ax.figure.colorbar(im, ax=ax, label=r"$\Delta$")
    ax.set_xticks([])
    ax.set_yticks([])
    return ax


def plot_decision_map(estimator, X, certification, *, gamma=None, resolution=150, margin=0.5, ax=None):
    """A 2-D classifier's probability map with certified / not-robust / unknown points.

    Parameters
    ----------
    estimator : fitted two-feature classifier with predict_proba
        The classifier whose decision regions form the background.
    X : array-like of shape (n, 2)
        The certified rows.
    certification : CertificationResult
        ``estimator.certify(X, gamma)``.
    gamma : float or array-like of shape (2,), default=None
        Draw each row's box when given.
    resolution : int, default=150
        Grid points per axis of the background.
    margin : float, default=0.5
        Extra room around the points.
    ax : matplotlib Axes, default=None
        Axes to draw on; a new figure's when None.

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on (``ax`` when given).
    """
    if not is_classifier(estimator):
        raise UnsupportedModelError(f"plot_decision_map needs a fitted classifier, got {type(estimator).__name__}.")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"plot_decision_map needs two features, got X of shape {X.shape}.")
    if len(certification) != len(X):
        raise ValueError(f"certification has {len(certification)} rows, X has {len(X)}.")
    ax = _axes(ax)
    (x0, y0), (x1, y1) = X.min(axis=0) - margin, X.max(axis=0) + margin
    gx, gy = np.meshgrid(np.linspace(x0, x1, resolution), np.linspace(y0, y1, resolution))
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    from ._explain import quiet_feature_names

    if hasattr(estimator, "predict_proba") and len(estimator.classes_) == 2:
        with quiet_feature_names():  # the grid is a float array of points
            z = estimator.predict_proba(grid)[:, 1].reshape(gx.shape)
        cs = ax.contourf(gx, gy, z, levels=np.linspace(0, 1, 11), cmap="coolwarm", alpha=0.5)
        ax.contour(gx, gy, z, levels=[0.5], colors="k", linewidths=1.0)
        ax.figure.colorbar(cs, ax=ax, label=f"P({estimator.classes_[1]})")
    else:
        with quiet_feature_names():
            labels = np.searchsorted(estimator.classes_, estimator.predict(grid)).reshape(gx.shape)
        ax.contourf(gx, gy, labels, levels=np.arange(len(estimator.classes_) + 1) - 0.5, cmap="tab10", alpha=0.3)
    g = None if gamma is None else np.broadcast_to(np.asarray(gamma, dtype=np.float64), (2,))
    for status, style in STATUS_STYLE.items():
        sel = certification.status == status
        if sel.any():
            ax.scatter(X[sel, 0], X[sel, 1], c=style["color"], marker=style["marker"], edgecolors="k",
                       label=f"{style['label']} ({int(sel.sum())})", zorder=3)
        if g is not None:
            from matplotlib.patches import Rectangle

            for x in X[sel]:
                ax.add_patch(Rectangle(x - g, 2 * g[0], 2 * g[1], fill=False, ec=style["color"], lw=0.8))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.legend(loc="best", fontsize="small")
    return ax
