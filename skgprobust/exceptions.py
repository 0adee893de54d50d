"""Exceptions raised by skgprobust."""


class UnsupportedKernelError(TypeError):
    """The kernel (or one of its parts) has no sound box-bounding adapter.

    Raised instead of ever returning a bound that might be wrong. Register an
    adapter with :func:`skgprobust.kernels.register_adapter` to add support
    for a custom kernel.
    """


class BudgetExhaustedWarning(UserWarning):
    """Some rows hit ``max_iter`` or ``time_limit`` before being decided or converged.

    Their results are still valid bounds; only the answer is less precise
    ("unknown" status or ``converged`` False).
    """
