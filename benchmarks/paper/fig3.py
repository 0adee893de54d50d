"""Figure 3 (Sec. 7.2, Laplace vs EP): the distribution of
delta = pi_max^U(T) - pi_min^L(T) at gamma = 0.1 over test points, for 10,
40 and 100 hyper-parameter optimisation iterations.

Models: sklearn's Laplace GPC (logistic, as ``RobustGaussianProcessClassifier``)
and ``EPGaussianProcessClassifier`` (probit EP), both ``ConstantKernel * RBF``
(anisotropic on Spambase, isotropic elsewhere), hyper-parameters by
L-BFGS-B limited to ``it`` iterations (``bench_ep.capped_lbfgsb``; the
paper's "epochs" count marginal-likelihood evaluations). Data: Synthetic2D,
Spambase-11 and MNIST 3-vs-8 (14 x 14, only the 10 SIFT pixels of each test
image move, domain [0, 1]). pi is P(class 1); ``prediction_range`` at
epsilon = 0.01 with ``time_limit`` seconds per row (an unconverged row gives
valid, looser bounds: delta is then an over-estimate; the attained spread
``max_lower - min_upper`` is an under-estimate, the true spread lies
between). Sanity check: predict_proba at 200 sampled points of each box
lies within the certified range (``anomalies`` column, must be 0).
"""

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgprobust import EPGaussianProcessClassifier, RobustGaussianProcessClassifier

from . import _data
from ._common import capped_lbfgsb, fit, quiet, report, sampled_outside
from ._plot import missing_panel, pyplot, save

GAMMA = 0.1
MODELS = (("Laplace", RobustGaussianProcessClassifier), ("EP", EPGaussianProcessClassifier))


def _sets(cfg):
    X, y, Xt, yt = _data.synthetic(cfg.n_synth)
    yield "Synthetic2D", (X, y, Xt, yt), lambda: ConstantKernel(1.0) * RBF(1.0), None
    X, y, Xt, yt = _data.spambase(cfg.n_spam)
    yield "Spambase", (X, y, Xt, yt), lambda: ConstantKernel(1.0) * RBF(np.ones(11)), None
    X, y, Xt, yt, _, raw = _data.mnist((3, 8), n_train=cfg.n_mnist)
    yield "MNIST38", (X, y, Xt, yt), lambda: ConstantKernel(1.0) * RBF(5.0), raw


def _ranges(clf, R, feats, cfg):
    """(delta, attained, converged, seconds, anomalies) per row."""
    dom = None if feats is None else (0.0, 1.0)
    if feats is None:
        groups = [(np.arange(len(R)), None)]
    else:
        groups = [(np.array([i]), f) for i, f in enumerate(feats)]
    n = len(R)
    delta, att, conv, secs, bad = (np.empty(n) for _ in range(5))
    for idx, f in groups:
        r, _ = quiet(clf.prediction_range, R[idx], GAMMA, epsilon=0.01, time_limit=cfg.time_limit, features=f,
                     domain=dom, random_state=0)
        delta[idx] = r.max_upper[:, 1] - r.min_lower[:, 1]
        att[idx] = r.max_lower[:, 1] - r.min_upper[:, 1]
        conv[idx] = r.converged.all(1)
        secs[idx] = r.time
        for k, i in enumerate(idx):
            bad[i] = sampled_outside(clf, R[i], r.min_lower[k, 1], r.max_upper[k, 1], 1, GAMMA, f, dom,
                                     np.random.default_rng(i))
    return delta, att, conv, secs, bad


def run(cfg, out):
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    rows, summary, timing = [], [], []
    for ax, (name, (X, y, Xt, yt), kern, raw) in zip(axes, _sets(cfg)):
        pick = np.random.default_rng(1).choice(len(Xt), size=min(cfg.rows, len(Xt)), replace=False)
        R = Xt[pick]
        feats = None if raw is None else [_data.sift_pixels(raw[i])[0] for i in pick]
        boxes, labels = [], []
        for it in cfg.iterations:
            med = {}
            for label, cls in MODELS:
                clf, fit_s = fit(cls(kernel=kern(), optimizer=capped_lbfgsb(it), random_state=0), X, y)
                acc = float(np.mean(clf.predict(Xt) == yt))
                (delta, att, conv, secs, bad), wall = quiet(_ranges, clf, R, feats, cfg)
                timing.append((f"fig3 {name} {label} it={it}", wall, len(R)))
                for k in range(len(R)):
                    rows.append([name, it, label, int(pick[k]), delta[k], att[k], bool(conv[k]), secs[k], int(bad[k])])
                q1, m, q3 = np.percentile(delta, [25, 50, 75])
                med[label] = m
                summary.append([name, it, label, f"{fit_s:.1f}", f"{acc:.3f}", f"{m:.4f}", f"[{q1:.4f}, {q3:.4f}]",
                                f"{np.mean(delta):.4f}", f"{np.median(att):.4f}", f"{conv.mean():.0%}",
                                f"{np.median(secs):.3f}", int(bad.sum()), "", str(clf.kernel_)])
                print(f"fig3 {name} {label} it={it}: fit {fit_s:.1f} s, accuracy {acc:.3f}, median delta {m:.4f}",
                      flush=True)
                boxes.append(delta)
                labels.append(f"{label[0]}{it}")
            summary[-1][12] = f"{med['Laplace'] / max(med['EP'], 1e-12):.2f}"
        bp = ax.boxplot(boxes, patch_artist=True, medianprops={"color": "black"})
        ax.set_xticks(np.arange(1, len(labels) + 1), labels)
        for patch, lab in zip(bp["boxes"], labels):
            patch.set_facecolor("tab:orange" if lab.startswith("L") else "tab:blue")
        ax.set_title(f"{name}: delta at gamma={GAMMA}" + (" (10 SIFT pixels)" if raw is not None else ""))
        ax.set_xlabel("L = Laplace, E = EP; number = optimiser iterations")
    axes[0].set_ylabel(r"$\delta = \pi_{\max}^U - \pi_{\min}^L$")
    missing_panel(axes[3], "F-MNIST-TS")
    save(fig, out, "fig3")
    report("fig3", ["data", "iterations", "model", "test_index", "delta", "attained_spread", "converged",
                    "seconds", "anomalies"], rows, out)
    report("fig3_summary", ["data", "iterations", "model", "fit_s", "accuracy", "median_delta", "quartiles",
                            "mean_delta", "median_attained", "converged", "median_s_per_row", "anomalies",
                            "Laplace/EP median ratio", "kernel"], summary, out)
    return timing
