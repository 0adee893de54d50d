"""Figure 2 (Sec. 7.1, local adversarial safety): certified bounds on pi_min(T)
and pi_max(T) over gamma next to the GPFGS attack, one test point per data set.

Models: Laplace GPC (sklearn's, as ``RobustGaussianProcessClassifier``) with
``ConstantKernel * RBF`` (anisotropic on Spambase, isotropic elsewhere),
hyper-parameters by sklearn's L-BFGS-B. T is the l_inf ball of radius gamma
around the point (MNIST: only its 10 SIFT pixels move, domain [0, 1]).
The curves show the probability of the point's predicted class: the point
is unsafe at gamma iff pi_min(T) < 0.5. The point is the test point whose
predicted probability is closest to 0.85 (confident, not saturated).

Per gamma (CSV): the four certified ends (``min_lower <= pi_min <=
min_upper``, ``max_lower <= pi_max <= max_upper``; ``min_upper`` and
``max_lower`` are values the model attains), the GPFGS point's probability,
seconds. Table: first gamma where a counterexample is proven (min_upper <
0.5), where safety is no longer proven (min_lower < 0.5), and where GPFGS
crosses 0.5 (never = GPFGS misses it). Synthetic2D is run a second time with
``variance_bound="paper"`` (the paper's QP/LP variance bounds) for the speed
ratio.
"""

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgprobust import RobustGaussianProcessClassifier
from skgprobust.inspection import gpfgs, robustness_curve

from . import _data
from ._common import fit, quiet, report
from ._plot import missing_panel, pyplot, save


def _pick(clf, X_test, target=0.85):
    p = clf.predict_proba(X_test).max(axis=1)
    return int(np.argmin(np.abs(p - target)))


def _first(g, mask):
    hit = np.flatnonzero(mask)
    return float(g[hit[0]]) if len(hit) else float("nan")


def _gpfgs_misses(clf, name, Xt, raw, gamma, domain, cfg):
    """Over ``cfg.rows`` test points at one gamma: how often the certified
    bounds prove safety, prove a counterexample (min_upper of the predicted
    class < 0.5: a point of the box the model itself classifies otherwise),
    and how often GPFGS finds one / misses a proven one."""
    pick = np.random.default_rng(1).choice(len(Xt), size=min(cfg.rows, len(Xt)), replace=False)
    safe = cex = found = missed = 0
    for i in pick:
        feats = None if raw is None else _data.sift_pixels(raw[i])[0]
        col = int(np.argmax(clf.predict_proba(Xt[i:i + 1])[0]))
        r, _ = quiet(clf.prediction_range, Xt[i:i + 1], gamma, epsilon=0.01, time_limit=cfg.time_limit,
                     features=feats, domain=domain, random_state=0)
        p_att = clf.predict_proba(gpfgs(clf, Xt[i], gamma, features=feats, domain=domain)[None])[0, col]
        safe += r.min_lower[0, col] >= 0.5
        is_cex = r.min_upper[0, col] < 0.5
        cex += is_cex
        found += p_att < 0.5
        missed += is_cex and p_att >= 0.5
    return [name, f"{gamma:.3g}", len(pick), int(safe), int(cex), int(found), int(missed)]


def _setups(cfg):
    X, y, Xt, yt = _data.synthetic(cfg.n_synth)
    yield "Synthetic2D", X, y, Xt, ConstantKernel(1.0) * RBF(1.0), np.linspace(0.05, 1.5, cfg.n_gammas), None, None
    X, y, Xt, yt = _data.spambase(cfg.n_spam)
    yield "Spambase", X, y, Xt, ConstantKernel(1.0) * RBF(np.ones(X.shape[1])), np.linspace(0.05, 1.5, cfg.n_gammas), \
        None, None
    X, y, Xt, yt, _, raw_te = _data.mnist((3, 8), n_train=cfg.n_mnist)
    yield "MNIST38", X, y, Xt, ConstantKernel(1.0) * RBF(5.0), np.linspace(0.05, 0.6, cfg.n_gammas), (0.0, 1.0), raw_te


def run(cfg, out):
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    rows, summary, timing, miss = [], [], [], []
    for ax, (name, X, y, Xt, kernel, gammas, domain, raw) in zip(axes, _setups(cfg)):
        clf, fit_s = fit(RobustGaussianProcessClassifier(kernel, random_state=0), X, y)
        i = _pick(clf, Xt)
        x = Xt[i]
        feats = None
        if raw is not None:
            feats, _ = _data.sift_pixels(raw[i])
        attack = lambda est, z, g, f=feats, dom=domain: gpfgs(est, z, g, features=f, domain=dom)  # noqa: E731
        variants = [("default", "default")]
        if name == "Synthetic2D" and cfg.paper_variance:
            variants.append(("paper", "paper"))
        for label, vb in variants:
            c, secs = quiet(robustness_curve, clf, x, gammas, epsilon=0.01, attack=attack, random_state=0,
                            time_limit=cfg.time_limit, features=feats, domain=domain, variance_bound=vb)
            g = c["gamma"]
            for j in range(len(g)):
                rows.append([name, label, i, g[j], c["min_lower"][j], c["min_upper"][j], c["max_lower"][j],
                             c["max_upper"][j], c["attack"][j]])
            summary.append([name, label, i, c["label"], f"{clf.predict_proba(x[None]).max():.3f}",
                            _first(g, c["min_upper"] < 0.5), _first(g, c["min_lower"] < 0.5),
                            _first(g, c["attack"] < 0.5), f"{np.nanmin(c['attack']):.3f}",
                            f"{np.min(c['min_upper']):.3f}",
                            f"{np.mean(c['min_upper'] - c['min_lower'] + c['max_upper'] - c['max_lower']):.4f}",
                            f"{secs:.2f}", f"{secs / len(g):.3f}"])
            timing.append((f"fig2 {name} ({label} variance)", secs, len(g)))
            if label == "default":
                ax.fill_between(g, c["max_lower"], c["max_upper"], color="tab:blue", alpha=0.3)
                ax.plot(g, c["max_upper"], "b-", label=r"$\pi_{\max}^U$")
                ax.plot(g, c["max_lower"], "b--", label=r"$\pi_{\max}^L$")
                ax.fill_between(g, c["min_lower"], c["min_upper"], color="tab:green", alpha=0.3)
                ax.plot(g, c["min_upper"], "g-", label=r"$\pi_{\min}^U$")
                ax.plot(g, c["min_lower"], "g--", label=r"$\pi_{\min}^L$")
                ax.plot(g, c["attack"], color="m", marker=".", label="GPFGS")
                ax.axhline(0.5, color="grey", lw=0.8, ls=":")
                ax.set_title(f"{name}: test point {i} (class {c['label']})" + (", 10 SIFT pixels" if raw is not None
                                                                                else ""))
                ax.set_xlabel(r"$\gamma$")
                ax.set_ylim(-0.02, 1.02)
        miss.append(_gpfgs_misses(clf, name, Xt, raw, gammas[len(gammas) // 2], domain, cfg))
        print(f"fig2 {name}: fit {fit_s:.1f} s, kernel {clf.kernel_}", flush=True)
    axes[0].set_ylabel("probability of the predicted class")
    axes[0].legend(loc="lower left", fontsize=7)
    missing_panel(axes[3], "F-MNIST-TS")
    save(fig, out, "fig2")
    report("fig2", ["data", "variance_bound", "test_index", "gamma", "min_lower", "min_upper", "max_lower",
                    "max_upper", "gpfgs"], rows, out)
    report("fig2_summary", ["data", "variance_bound", "test_index", "class", "p(x)", "gamma_cex_proven",
                            "gamma_safety_lost", "gamma_gpfgs_cross", "gpfgs_min_p", "min_pi_min_upper",
                            "mean_gaps", "seconds", "s_per_gamma"], summary, out)
    report("fig2_gpfgs", ["data", "gamma", "test points", "proven safe", "counterexample proven",
                          "GPFGS finds one", "GPFGS misses a proven one"], miss, out)
    paper = [s for s in summary if s[1] == "paper"]
    if paper:
        default = [s for s in summary if s[0] == "Synthetic2D" and s[1] == "default"][0]
        ratio = float(paper[0][11]) / max(float(default[11]), 1e-9)
        print(f"fig2: Synthetic2D curve with variance_bound='paper' takes {ratio:.1f}x the default's time")
        timing.append(("fig2 Synthetic2D paper/default time ratio", ratio, 0))
    return timing
