"""Figure 5 (Sec. 7.4, global interpretability): the mean over test points of
the Delta metric, ours at a small gamma and at gamma = 2.0, next to LIME's
mean weight, on Synthetic2D and Spambase (Laplace GPC).

Delta and LIME explain the probability of class 1 on every row (our class 1
of Synthetic2D is the normal shifted along the *second* axis; the paper's
"class 1" is the one shifted along the first axis, i.e. our class 0: its
signs are ours negated). Globally P(class 1) falls with x1 and rises with x2
on Synthetic2D, so the globally correct signs are (-, +). LIME:
``LimeTabularExplainer`` (continuous features not discretised) through
``skgprobust.inspection.compare_with_lime``.

CSV: per data set, method and feature: the mean over rows, the fraction of
rows with a positive value, and (ours) the fraction of rows whose certified
bounds prove the sign; the mean of the certified lower / upper ends.
"""

import os

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgprobust import RobustGaussianProcessClassifier
from skgprobust.inspection import compare_with_lime

from . import _data
from ._common import fit, pyplot, quiet, report

SMALL_GAMMA = 0.05
LARGE_GAMMA = 2.0


def run(cfg, out):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.5))
    rows, summary, timing = [], [], []
    sets = [("Synthetic2D", _data.synthetic(cfg.n_synth), lambda d: ConstantKernel(1.0) * RBF(1.0)),
            ("Spambase", _data.spambase(cfg.n_spam), lambda d: ConstantKernel(1.0) * RBF(np.ones(d)))]
    for ax, (name, (X, y, Xt, yt), kern) in zip(axes, sets):
        clf, _ = fit(RobustGaussianProcessClassifier(kern(X.shape[1]), random_state=0), X, y)
        pick = np.random.default_rng(1).choice(len(Xt), size=min(cfg.rows, len(Xt)), replace=False)
        R = Xt[pick]
        names = [f"x{j + 1}" for j in range(X.shape[1])]
        means = {}
        lime_w = None
        for gamma in (SMALL_GAMMA, LARGE_GAMMA):
            ex, secs = quiet(clf.explain, R, gamma, target=1, epsilon=0.01, time_limit=cfg.time_limit,
                             random_state=0)
            timing.append((f"fig5 {name} explain gamma={gamma}", secs, ex.values.size * 4))
            if lime_w is None:
                comp, lsecs = quiet(compare_with_lime, clf, X, R, gamma, explanation=ex,
                                    num_samples=cfg.lime_samples, random_state=0)
                lime_w = comp.lime_weights
                timing.append((f"fig5 {name} LIME", lsecs, 0))
            proven = (ex.lower > 0) | (ex.upper < 0)
            means[f"ours gamma={gamma}"] = ex.values.mean(0)
            for j, f in enumerate(names):
                rows.append([name, f"ours gamma={gamma}", f, ex.values[:, j].mean(), (ex.values[:, j] > 0).mean(),
                             proven[:, j].mean(), ex.lower[:, j].mean(), ex.upper[:, j].mean(),
                             ex.converged[:, j].mean()])
        means["LIME"] = lime_w.mean(0)
        for j, f in enumerate(names):
            rows.append([name, "LIME", f, lime_w[:, j].mean(), (lime_w[:, j] > 0).mean(), float("nan"),
                         float("nan"), float("nan"), float("nan")])
        for method, m in means.items():
            signs = "".join("+" if v > 0 else "-" if v < 0 else "0" for v in m)
            summary.append([name, method, signs] + ([f"{v:+.3g}" for v in m] if len(m) <= 2 else
                                                    [f"{m[0]:+.3g}", f"{m[1]:+.3g}"]))
        # bar plot: each method scaled by its largest |mean| (LIME weights are not probabilities)
        k = len(names)
        for off, (method, m) in enumerate(means.items()):
            ax.bar(np.arange(k) + (off - 1) * 0.27, m / max(np.abs(m).max(), 1e-12), width=0.27, label=method)
        ax.set_xticks(np.arange(k), names, rotation=45 if k > 2 else 0)
        ax.axhline(0, color="k", lw=0.6)
        ax.set_title(f"{name}: mean Delta for class 1 over {len(R)} test points (scaled per method)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig5.png"), dpi=90)
    plt.close(fig)
    report("fig5", ["data", "method", "feature", "mean", "frac_positive", "frac_sign_proven", "mean_lower",
                    "mean_upper", "frac_converged"], rows, out)
    report("fig5_signs", ["data", "method", "signs (features in order)", "mean x1", "mean x2"], summary, out)
    return timing
