"""Every exception and warning skgprobust raises (as ``sklearn.exceptions``)."""

__all__ = [
    "UnsupportedKernelError",
    "UnsupportedModelError",
    "UnsupportedStepError",
    "BudgetExhaustedWarning",
    "RoundTripWarning",
]


class UnsupportedKernelError(TypeError):
    """The kernel (or one of its parts) has no sound box-bounding adapter.

    Raised instead of ever returning a bound that might be wrong. Register an
    adapter with :func:`skgprobust.kernels.register_adapter` to add support
    for a custom kernel.
    """


class BudgetExhaustedWarning(UserWarning):
    """Some rows were left undecided ("unknown") or not converged.

    Usually they hit ``max_iter`` or ``time_limit``; a certify row also stays
    "unknown" when its bound is within the floating-point margin of the
    decision threshold (e.g. ``gamma = 0``), its one-vs-one votes tie, or the
    model's ``predict`` does not confirm a candidate counterexample. Their
    results are still valid bounds; only the answer is less precise
    ("unknown" status or ``converged`` False).
    """


class UnsupportedModelError(TypeError, NotImplementedError):
    """The estimator (or its fitted state) is not a model this operation can
    bound, e.g. an attack on a one-vs-one multi-class classifier (no single
    margin to descend). Subclass of ``TypeError`` and ``NotImplementedError``."""


class UnsupportedStepError(TypeError, ValueError):
    """A pipeline step cannot be mapped soundly from input boxes to model-input boxes.

    Subclass of both ``TypeError`` and ``ValueError``.
    """


class RoundTripWarning(UserWarning):
    """A counterexample found in the model's input space did not survive the
    mapping back to raw inputs; the row is reported as ``"unknown"``."""
