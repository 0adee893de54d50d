"""Kernel-decomposition adapters: sound bounds of k(x, Xs) over input boxes.

Adapters are looked up by the *exact* type of each kernel node; a subclass
of a supported kernel is not assumed to share its formula and must be
registered explicitly with :func:`register_adapter`.
"""

import numpy as np
from sklearn.gaussian_process import kernels as K

from ..exceptions import UnsupportedKernelError
from ._base import KernelAdapter, Relaxation, TaylorModel
from .basic import ConstantAdapter, DotProductAdapter, ExpSineSquaredAdapter, WhiteAdapter
from .composite import (
    ExponentiationAdapter,
    ProductAdapter,
    ScaledPowerAdapter,
    SumAdapter,
    constant_times_one_kernel,
)
from .polynomial import DotProductPowerAdapter, is_dot_product_power
from .stationary import (
    MaternAdapter,
    PoweredStationaryAdapter,
    RationalQuadraticAdapter,
    RBFAdapter,
    StationaryAdapter,
)

__all__ = [
    "KernelAdapter",
    "Relaxation",
    "TaylorModel",
    "StationaryAdapter",
    "make_adapter",
    "register_adapter",
    "supported_kernels",
]

_REGISTRY = {}


def register_adapter(kernel_type, factory, *, composite=False):
    """Register ``factory(kernel, Xs)`` as the adapter for ``kernel_type``.

    Parameters
    ----------
    kernel_type : type
        A sklearn ``Kernel`` subclass (matched exactly, not by inheritance).
    factory : callable
        Usually a :class:`KernelAdapter` subclass. With ``composite=True`` it
        is called as ``factory(kernel, Xs, make_adapter)`` so it can build
        adapters for its sub-kernels.
    composite : bool, default=False
        Whether ``factory`` takes ``make_adapter`` as its third argument.

    Raises
    ------
    TypeError
        ``kernel_type`` is not a ``Kernel`` subclass (e.g. its name as a
        string), or ``factory`` is not callable. Checked here, because a bad
        entry would otherwise break :func:`supported_kernels` and with it
        every later ``UnsupportedKernelError`` message.
    """
    if not (isinstance(kernel_type, type) and issubclass(kernel_type, K.Kernel)):
        raise TypeError(
            f"register_adapter: kernel_type must be a sklearn Kernel subclass (the class, not its name), "
            f"got {kernel_type!r}."
        )
    if not callable(factory):
        raise TypeError(f"register_adapter: factory must be callable, got {factory!r}.")
    _REGISTRY[kernel_type] = (factory, bool(composite))


def supported_kernels():
    """Names of the kernel types that currently have an adapter.

    Returns
    -------
    names : list of str
        Sorted class names (sklearn's kernels and any registered with
        :func:`register_adapter`).
    """
    return sorted(t.__name__ for t in _REGISTRY)


def _matern(kernel, Xs):
    if float(kernel.nu) not in MaternAdapter.SUPPORTED_NU:
        raise UnsupportedKernelError(
            f"Matern with nu={kernel.nu} has no sound bounds here; supported nu: 0.5, 1.5, 2.5, inf."
        )
    return MaternAdapter(kernel, Xs)


def _exponentiation(kernel, Xs, make):
    if is_dot_product_power(kernel):
        # (sigma_0^2 + x . x_i)^p: the mean is an exact polynomial in x.
        return DotProductPowerAdapter(kernel, Xs)
    base = make(kernel.kernel, Xs)
    e = float(kernel.exponent)

    def relaxable(b):
        # psi^e stays convex and decreasing (0 < e < 1: a log-convex base,
        # evaluated in the log domain; PoweredStationaryAdapter's docstring).
        return isinstance(b, StationaryAdapter) and (e >= 1 or (e > 0 and b._has_log_psi))

    if relaxable(base):
        return PoweredStationaryAdapter(kernel, base)
    split = constant_times_one_kernel(kernel.kernel)
    if split is not None and np.isfinite(e) and e > 0:
        consts, core = split
        c = float(np.prod(consts))
        core_adapter = make(core, Xs)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            ce = np.float64(c) ** e  # numpy: inf / 0 on over- / underflow (Python's ** raises)
        # c^e a normal positive number: log(c^e) is what the adapter evaluates in
        # the exponent (an underflowed 0 would make every bound infinite).
        if np.isfinite(c) and c > 0 and 2.0**-1000 < ce < np.inf and e * (len(consts) - 1) <= 1e6 \
                and relaxable(core_adapter) and core_adapter._has_log_psi:
            # (c * k) ** e = c^e k^e: the powered relaxation, sklearn's numbers
            # from the tree as written (ScaledPowerAdapter's docstring).
            powered = PoweredStationaryAdapter(K.Exponentiation(core, e), core_adapter)
            return ScaledPowerAdapter(kernel, Xs, make, powered)
    return ExponentiationAdapter(kernel, Xs, make)


def make_adapter(kernel, Xs):
    """Build the adapter tree for a fitted sklearn kernel and support inputs Xs.

    Parameters
    ----------
    kernel : sklearn Kernel
        The fitted kernel (``kernel_``); its type, and those of its
        sub-kernels, must have a registered adapter.
    Xs : ndarray of shape (n_support, n_features)
        The support inputs the kernel is evaluated against.

    Returns
    -------
    adapter : KernelAdapter
        The root of the adapter tree (sound value, interval and
        relaxation bounds of ``kernel(x, Xs)``).

    Raises
    ------
    UnsupportedKernelError
        No adapter is registered for a kernel type in the tree.
    """
    entry = _REGISTRY.get(type(kernel))
    if entry is None:
        raise UnsupportedKernelError(
            f"No sound bounds for kernel {type(kernel).__name__} ({kernel!r}). "
            f"Supported kernels: {', '.join(supported_kernels())}. "
            "Use skgprobust.kernels.register_adapter to add one."
        )
    factory, composite = entry
    adapter = factory(kernel, Xs, make_adapter) if composite else factory(kernel, Xs)
    if not isinstance(adapter, KernelAdapter):
        raise TypeError(
            f"The adapter factory {getattr(factory, '__qualname__', factory)!r} registered for "
            f"{type(kernel).__name__} returned {type(adapter).__name__}, not a KernelAdapter."
        )
    return adapter


register_adapter(K.RBF, RBFAdapter)
register_adapter(K.Matern, _matern)
register_adapter(K.RationalQuadratic, RationalQuadraticAdapter)
register_adapter(K.ExpSineSquared, ExpSineSquaredAdapter)
register_adapter(K.DotProduct, DotProductAdapter)
register_adapter(K.ConstantKernel, ConstantAdapter)
register_adapter(K.WhiteKernel, WhiteAdapter)
register_adapter(K.Sum, SumAdapter, composite=True)
register_adapter(K.Product, ProductAdapter, composite=True)
register_adapter(K.Exponentiation, _exponentiation, composite=True)
