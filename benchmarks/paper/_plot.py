"""Figure helpers shared by the figure modules."""

import os

NOT_OFFLINE = "not reproduced (data not available offline)"


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def missing_panel(ax, title, reason=NOT_OFFLINE):
    """An empty panel saying what is not there and why."""
    ax.text(0.5, 0.5, f"{title}:\n{reason}", ha="center", va="center")
    ax.set_axis_off()


def save(fig, out, name, dpi=90):
    """Lay out, write ``out/name.png`` and close."""
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"{name}.png"), dpi=dpi)
    pyplot().close(fig)
