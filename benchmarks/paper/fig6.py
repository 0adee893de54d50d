"""Figure 6 (Sec. 7.4, MNIST 3/5/8 with the softmax GP): Delta heat maps,
adversarial-gap curves pi_gap vs the number of modified pixels beta (ours vs
LIME) and the minimal adversarial examples.

Model: ``SoftmaxGaussianProcessClassifier`` (block Laplace, one latent GP per
class, shared ``ConstantKernel * RBF``) on ``fig6_train`` MNIST 3/5/8 images
(14 x 14, [0, 1]). For each test image: our Delta of the predicted class
(``explain`` with gamma = 1 and domain [0, 1], i.e. the one-sided boxes run
from the pixel's value to 0 and to 1; ``fig6_time`` seconds per one-sided
box, so the certified bounds may be loose: the point values are what rank
the pixels) and LIME's weights of the same class
(``compare_with_lime``). Both rankings drive
``inspection.adversarial_gap_curve``: the beta most important pixels move to
0 or 1 against their weight's sign; pi_gap = p(predicted class) - max of the
others, < 0 is an adversarial example. beta-to-flip per image and method in
the table.

Candidate pixels: all 196 in the full configuration; in the quick / tiny
ones only the ``n`` pixels of highest training variance (the same for both
methods) because each pixel costs two certified one-sided boxes.
"""

import os

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgprobust.inspection import adversarial_gap_curve, compare_with_lime

from . import _data
from ._common import fit, pyplot, quiet, report

GAMMA = 1.0
CANDIDATES = {"tiny": 8, "quick": 30}


def _classifier():
    try:
        from skgprobust import SoftmaxGaussianProcessClassifier
    except ImportError:
        from skgprobust._softmax_gpc import SoftmaxGaussianProcessClassifier
    return SoftmaxGaussianProcessClassifier


def run(cfg, out):
    plt = pyplot()
    X, y, Xt, yt, _, _ = _data.mnist((3, 5, 8), n_train=cfg.fig6_train)
    clf, fit_s = fit(_classifier()(ConstantKernel(1.0) * RBF(5.0), random_state=0), X, y)
    acc = float(np.mean(clf.predict(Xt) == yt))
    print(f"fig6: softmax GPC on {len(X)} MNIST 3/5/8 images: fit {fit_s:.1f} s, accuracy {acc:.3f}, {clf.kernel_}",
          flush=True)
    n_c = CANDIDATES.get(cfg.name.split("-")[0])
    cands = np.arange(X.shape[1]) if n_c is None else np.sort(np.argsort(-X.var(0), kind="stable")[:n_c])
    pick = np.random.default_rng(1).choice(len(Xt), size=min(cfg.fig6_images, len(Xt)), replace=False)
    k = len(pick)
    fig, axes = plt.subplots(4, k, figsize=(3.2 * k, 12), squeeze=False)
    rows, curves, timing = [], [], []
    for j, i in enumerate(pick):
        x = Xt[i]
        ex, secs = quiet(clf.explain, x[None], GAMMA, features=cands, domain=(0.0, 1.0), epsilon=0.01,
                         time_limit=cfg.fig6_time, random_state=0)
        timing.append((f"fig6 image {i} explain ({len(cands)} pixels)", secs, 4 * len(cands)))
        comp, lsecs = quiet(compare_with_lime, clf, X, x[None], GAMMA, explanation=ex, features=cands,
                            num_samples=cfg.fig6_lime, random_state=0)
        timing.append((f"fig6 image {i} LIME", lsecs, 0))
        ours = adversarial_gap_curve(clf, x, GAMMA, ex.values[0], features=cands, domain=(0.0, 1.0))
        lime = adversarial_gap_curve(clf, x, GAMMA, comp.lime_weights[0], features=cands, domain=(0.0, 1.0))
        b_o, b_l = ours.first_adversarial, lime.first_adversarial
        label = clf.predict(x[None])[0]
        rows.append([int(i), int(yt[i]), label, b_o if b_o is not None else "none",
                     b_l if b_l is not None else "none",
                     f"{b_l / b_o:.2f}" if (b_o and b_l) else "", f"{ours.gaps[0]:.3f}",
                     f"{ours.gaps.min():.3f}", f"{lime.gaps.min():.3f}", f"{ex.converged.mean():.0%}",
                     f"{secs:.1f}", f"{lsecs:.1f}"])
        for b, go, gl in zip(ours.betas, ours.gaps, lime.gaps):
            curves.append([int(i), int(b), go, gl])
        axes[0, j].imshow(x.reshape(14, 14), cmap="gray_r", vmin=0, vmax=1)
        axes[0, j].set_title(f"test {i}: true {yt[i]}, predicted {label}")
        heat = np.full(X.shape[1], np.nan)
        heat[cands] = ex.values[0]
        lim = np.nanmax(np.abs(heat)) or 1.0
        axes[1, j].imshow(heat.reshape(14, 14), cmap="RdBu_r", vmin=-lim, vmax=lim)
        axes[1, j].set_title(r"our $\Delta$ (red: raises p)")
        axes[2, j].plot(ours.betas, ours.gaps, "b-", label="ours")
        axes[2, j].plot(lime.betas, lime.gaps, "r-", label="LIME")
        axes[2, j].axhline(0, color="grey", ls="--")
        axes[2, j].set_xlabel(r"$\beta$ (pixels modified)")
        axes[2, j].set_title(f"beta to flip: ours {b_o}, LIME {b_l}")
        adv = ours.points[ours.betas.tolist().index(b_o)] if b_o is not None else ours.points[-1]
        axes[3, j].imshow(adv.reshape(14, 14), cmap="gray_r", vmin=0, vmax=1)
        axes[3, j].set_title(f"ours at beta={b_o}: predicted {clf.predict(adv[None])[0]}")
        for r in (0, 1, 3):
            axes[r, j].set_axis_off()
    axes[2, 0].set_ylabel(r"$\pi_{gap}$")
    axes[2, 0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig6.png"), dpi=80)
    plt.close(fig)
    report("fig6_curves", ["test_index", "beta", "gap_ours", "gap_lime"], curves, out)
    report("fig6", ["test_index", "true", "predicted", "beta_flip_ours", "beta_flip_lime", "lime/ours", "gap_at_0",
                    "min_gap_ours", "min_gap_lime", "explain_converged", "explain_s", "lime_s"], rows, out)
    print(f"fig6: {len(cands)} candidate pixels; accuracy {acc:.3f}")
    return timing
