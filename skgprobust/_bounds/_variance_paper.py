"""The paper's posterior-variance bounds (Prop. 5 QP, Prop. 6 LP), as a reference.

:class:`PaperLatentVariance` is ``variance_bound="paper"``: the bounds of
Patane et al. (JMLR 2022, Sec. 4.2) solved with cvxpy + ECOS, one box at a
time. It is slow (a convex QP, up to 2N range LPs and one more LP per box)
and is kept as the reference the fast default
(:class:`~skgprobust._bounds._variance.LatentVariance`) is compared with.

Model. ``var(x) = k(x, x) - q(x)``, ``q(x) = ||A r(x)||^2 = r^T S r``,
``r_i(x) = c psi(phi_i(x))``, ``phi_i(x) = sum_j phi_ij(x_j)``,
``phi_ij(x_j) = (x_j - x_ij)^2 / l_j^2``: a stationary kernel (RBF, Matern,
RationalQuadratic; psi convex and decreasing), optionally times a
ConstantKernel c > 0 and plus WhiteKernels (which only change k(x, x)).

The relaxation (the constraints of Prop. 5, shared by every problem), in the
variables u = x - centre (the box centred, for the solver's numerics),
r (N) and P (N x d), P_ij standing for phi_ij:

* ``r_i >= c (psi(t) + psi'(t) (Phi_i - t))`` for ``psi_tangents`` points t
  in [phi_L, phi_U] (Lemma 1 Case 2: the tangent of the convex psi; its
  intercept is psi(t) - psi'(t) t, the paper's App. A.1 has a typo there;
  Prop. 5 prints this constraint as r + a_L + b_L phi <= 0, with the sign
  of r wrong);
* ``r_i <= c (psi(phi_L) + slope (Phi_i - phi_L))``, the chord over
  [phi_L, phi_U] (a constant c psi(phi_L) when the range is a point);
* ``P_ij >= f(t) + f'(t) (x_j - t)``, tangents of the convex parabola
  f = phi_ij at ``phi_tangents`` points of [lo_j, hi_j] (one tangent is a
  relaxation of a convex function too weak to converge well, so two or more);
* ``P_ij <= `` the chord of f over [lo_j, hi_j];
* boxes ``u in [-h, h]``, ``r in [c psi(phi_U), c psi(phi_L)]``,
  ``P_ij in [min f, max f]``.

``Phi_i = sum_j P_ij`` is substituted (the paper keeps phi^(i) as a variable
with this equality; the problems are the same). Every true point
(x, r(x), phi(x)) of the box satisfies all of it.

* Upper bound of var (Prop. 5): ``k(x, x)_max - min ||A r||^2`` over the
  relaxation (a convex QP).
* Lower bound of var (Prop. 6): with ``S ~ V diag(lam) V^T`` (``lam`` clipped
  at 0: a numerically negative eigenvalue would turn the secant below into an
  invalid line) and ``r_hat = V^T r``: ranges ``[r_hat_L, r_hat_U]`` from the
  2N LPs ``min / max v_i . r`` over the relaxation, then the LP (20)
  ``min sum_i lam_i L_i U_i - lam_i (L_i + U_i) r_hat_i`` over the relaxation
  and the r_hat box, the secant of ``-lam_i r_hat_i^2`` on [L_i, U_i].
  ``range_lps=k`` solves the range LPs for the k directions with the largest
  ``lam_i w_i^2`` only (w_i the width of the plain interval range of
  ``v_i . r`` over the r box, where a secant is loosest) and uses that
  interval range for the others; every range used is valid either way.
  ``S - V diag(lam) V^T`` is not 0 in floating point: its Frobenius norm,
  plus a bound of the rounding in computing it, times ``max ||r||^2`` over
  the box, is subtracted (``eig_residual``).

Soundness does not depend on the solver. No objective value reported by the
solver is used. Every bound is the Lagrangian dual function of the problem,
evaluated in float64 at the solver's dual variables after projecting them to
dual feasibility (inequality multipliers clipped to >= 0, NaN -> failure),
with only the relaxation constraints dualised and the box constraints kept
as the domain. By weak duality that value is <= the minimum of the problem
for *any* multipliers, so a solver stopped early or returning garbage gives a
weaker bound, never a wrong one. The inner minimisation over the box is
closed form: linear terms at the box corners, and for the QP the convex
``||A r||^2 + g.r`` is bounded below by its tangent plane at a point ``r0``
minimised over the r box (valid for any r0, tight when r0 is the box
minimiser; the better of the solver's primal r, clipped into the box, and
an L-BFGS-B polish of it is used). Two rounding margins widen the result:

* ``margin_rtol(n_terms, d) * scale`` for evaluating the dual function in
  float64 (``n_terms`` the number of terms summed, ``scale`` the sum of
  their absolute values, the bounding lines' own rounding included);
* :meth:`LatentVariance.margin` (``kappa``-scaled, with the default method's
  kind of scale: ``|k(x, x)| + |q| + |2 S r0| . (|r0| + max |r|)``) for
  sklearn's own rounding and that of ``A`` against ``L^-1``.

If a solve fails (an exception, a status other than optimal, NaN duals, a
non-finite certificate), that box falls back to the default method's bound
(``LatentVariance.bounds``) for the failed side, or to the interval range of
``v_i . r`` for a failed range LP, with a :class:`RuntimeWarning` naming the
failure; never an exception, never NaN. A certificate far below the
solver's own objective (garbage duals with an "optimal" status) also warns,
and the better of it and the default bound is used (both are valid).
"""

import warnings

import numpy as np
from scipy.optimize import minimize

from .._fp import UNIT_ROUNDOFF as _U
from .._fp import margin_rtol
from ..exceptions import UnsupportedKernelError
from ..kernels.basic import WhiteAdapter
from ..kernels.composite import ProductAdapter, SumAdapter
from ..kernels.stationary import StationaryAdapter
from ._variance import LatentVariance, VarianceBound

# cvxpy (and the ECOS solver) are imported where the problems are built and
# solved, not here: importing this module stays cheap and solver-free.
# psi(phi) below this phi-range is treated as a point (as the adapters do).
_TINY = 1e-200
# Relative gap between the solver's objective and the certificate above which
# the duals are reported as inaccurate.
_GAP_RTOL = 1e-5


def _stationary_part(adapter):
    """(StationaryAdapter, c) with k(x, x_i) = c psi(phi_i(x)), or raise."""
    if isinstance(adapter, StationaryAdapter) and not getattr(adapter, "log_domain", False):
        # (Fractional powers, evaluated in the log domain, carry their own
        # evaluation error in ``rounding``, which this reference does not read.)
        return adapter, 1.0
    # (type is ProductAdapter: not ScaledPowerAdapter, whose constant is
    # sklearn's rounded c^e, not the product the reference assumes.)
    if type(adapter) is ProductAdapter and adapter.const is not None and adapter.const > 0:
        stat, c = _stationary_part(adapter.other)
        return stat, c * adapter.const
    if isinstance(adapter, SumAdapter):
        parts = [a for a in (adapter.k1, adapter.k2) if not isinstance(a, WhiteAdapter)]
        if len(parts) == 1:
            return _stationary_part(parts[0])
    raise UnsupportedKernelError(
        f"variance_bound='paper' supports a stationary kernel (RBF, Matern, RationalQuadratic), "
        f"optionally times a positive ConstantKernel and plus WhiteKernel, not {adapter.kernel!r}."
    )


def _lin_min(coef, lo, hi):
    """min of coef . z over the box lo <= z <= hi (closed form: a corner per
    coordinate), and the magnitude of the summed terms."""
    vmin = np.minimum(coef * lo, coef * hi)
    mag = np.abs(coef) * np.maximum(np.abs(lo), np.abs(hi))
    return float(vmin.sum()), float(mag.sum())


class _Failure(Exception):
    pass


class PaperLatentVariance(LatentVariance):
    """Posterior-variance bounds of the paper (Props. 5-6) with certified duals.

    Parameters
    ----------
    adapter, L, col_scale
        As :class:`~skgprobust._bounds._variance.LatentVariance`.
    solver : str or callable, default="ECOS"
        A cvxpy solver name, or a callable ``solver(problem, **solver_opts)``
        that solves the cvxpy problem in place (tests use it to inject
        failures and garbage).
    solver_opts : dict, optional
        Passed to the solve (e.g. ``{"max_iters": 1}``).
    psi_tangents : int, default=1
        Tangent lines of psi per support point (1: the midpoint, as Lemma 1).
    phi_tangents : int, default=2
        Tangent lines of each phi_ij (points (k + 1/2) / n of [lo_j, hi_j]).
    range_lps : int or None, default=None
        How many eigen-directions get their r_hat range from the two LPs of
        Prop. 6 (None: all N, as the paper); the others use the interval range.
    """

    # Its bounds use A, S and the full V: kept from the set-up (not recomputed).
    _KEEP_DENSE = True

    def __init__(
        self,
        adapter,
        L,
        col_scale=None,
        *,
        solver="ECOS",
        solver_opts=None,
        psi_tangents=1,
        phi_tangents=2,
        range_lps=None,
        noise_nonnegative=True,
    ):
        self.stat, self.c = _stationary_part(adapter)
        super().__init__(adapter, L, col_scale, noise_nonnegative=noise_nonnegative)
        self.solver = solver
        self.solver_opts = dict(solver_opts or {})
        self.psi_tangents = int(psi_tangents)
        self.phi_tangents = int(phi_tangents)
        if self.psi_tangents < 1 or self.phi_tangents < 1:
            raise ValueError("psi_tangents and phi_tangents must be >= 1")
        self.range_lps = None if range_lps in (None, "all") else int(range_lps)
        self.eig_residual = self._eig_residual()
        self._absA = np.abs(self.A)
        self._problems = None

    def __getstate__(self):
        # The cvxpy problems are rebuilt lazily (pickling for joblib workers).
        state = self.__dict__.copy()
        state["_problems"] = None
        return state

    # -- set-up ----------------------------------------------------------
    def _eig_residual(self):
        """Upper bound of ||A^T A - V diag(lam) V^T||_2 (exact real matrices)."""
        N = self.n_support
        if N == 0:
            return 0.0
        absA = np.abs(self.A)
        VL = self.V * self.lam
        E = self.S - VL @ self.V.T
        gam = (N + 2) * _U / (1 - (N + 2) * _U)
        rnd = gam * (np.linalg.norm(absA.T @ absA) + np.linalg.norm(np.abs(VL) @ np.abs(self.V).T))
        return 2.0 * (np.linalg.norm(E) + rnd)

    def _build(self):
        """The three cvxpy problems (DPP: built once, re-solved per box)."""
        import cvxpy as cp

        N, d = self.Xs_shape
        Tp, Tf = self.psi_tangents, self.phi_tangents
        u = cp.Variable(d, name="u")
        r = cp.Variable(N, name="r")
        P = cp.Variable((N, d), name="P")
        par = {
            "h": cp.Parameter(d, nonneg=True),
            "rL": cp.Parameter(N),
            "rU": cp.Parameter(N),
            "pL": cp.Parameter((N, d)),
            "pU": cp.Parameter((N, d)),
            "aT": [cp.Parameter(N) for _ in range(Tp)],
            "bT": [cp.Parameter(N) for _ in range(Tp)],
            "aC": cp.Parameter(N),
            "bC": cp.Parameter(N),
            "cT": [cp.Parameter((N, d)) for _ in range(Tf)],
            "eT": [cp.Parameter((N, d)) for _ in range(Tf)],
            "cC": cp.Parameter((N, d)),
            "eC": cp.Parameter((N, d)),
        }
        Phi = cp.sum(P, axis=1)
        U = np.ones((N, 1)) @ cp.reshape(u, (1, d), order="C")
        relax = {
            "psiT": [par["aT"][t] + cp.multiply(par["bT"][t], Phi) - r <= 0 for t in range(Tp)],
            "psiC": [r - par["aC"] - cp.multiply(par["bC"], Phi) <= 0],
            "phiT": [par["cT"][s] + cp.multiply(par["eT"][s], U) - P <= 0 for s in range(Tf)],
            "phiC": [P - par["cC"] - cp.multiply(par["eC"], U) <= 0],
        }
        rel = relax["psiT"] + relax["psiC"] + relax["phiT"] + relax["phiC"]
        box = [u >= -par["h"], u <= par["h"], r >= par["rL"], r <= par["rU"], P >= par["pL"], P <= par["pU"]]

        qp = cp.Problem(cp.Minimize(cp.sum_squares(self.A @ r)), rel + box)
        cobj = cp.Parameter(N)
        rlp = cp.Problem(cp.Minimize(cobj @ r), rel + box)
        rh = cp.Variable(N, name="r_hat")
        beta = cp.Parameter(N)
        hL, hU = cp.Parameter(N), cp.Parameter(N)
        eq = self.V.T @ r - rh == 0
        flp = cp.Problem(cp.Minimize(beta @ rh), rel + box + [eq, rh >= hL, rh <= hU])
        for p in (qp, rlp, flp):
            assert p.is_dcp(dpp=True)
        return {
            "u": u, "r": r, "P": P, "rh": rh, "par": par, "relax": relax,
            "qp": qp, "rlp": rlp, "cobj": cobj, "flp": flp, "beta": beta, "hL": hL, "hU": hU, "eq": eq,
        }

    @property
    def Xs_shape(self):
        return self.stat.Xs.shape

    # -- per-box data ----------------------------------------------------
    def _box_data(self, lo, hi):
        """Coefficients of the relaxation for one box (all in u = x - centre)."""
        st, c = self.stat, self.c
        Xs, ls = st.Xs, st.length_scale
        centre, h = 0.5 * (lo + hi), 0.5 * (hi - lo)
        inv2 = 1.0 / ls**2
        dlo, dhi = (lo - Xs) / ls, (hi - Xs) / ls  # (N, d)
        inside = (Xs >= lo) & (Xs <= hi)
        pL = np.where(inside, 0.0, np.minimum(dlo * dlo, dhi * dhi))
        pU = np.maximum(dlo * dlo, dhi * dhi)
        # phi_ij tangents at t_s, in u: P >= f(t) + f'(t) (u - (t - centre)).
        cT, eT = [], []
        for s in range(self.phi_tangents):
            t = lo + (s + 0.5) / self.phi_tangents * (hi - lo)
            dt = t - Xs
            e = 2.0 * dt * inv2
            cT.append(dt * dt * inv2 - e * (t - centre))
            eT.append(e)
        # chord: f(lo) + (lo + hi - 2 x_ij) / l^2 (x - lo), x - lo = u + h.
        eC = (dlo + dhi) / ls
        cC = dlo * dlo + eC * h
        # psi lines over [PL, PU].
        PL, PU = pL.sum(-1), pU.sum(-1)
        psiL, psiU = st.psi(PL), st.psi(PU)
        width = PU - PL
        point = (width <= 0.0) | (PU <= _TINY)
        aT, bT = [], []
        for k in range(self.psi_tangents):
            t = np.maximum(PL + (k + 0.5) / self.psi_tangents * width, _TINY)
            with np.errstate(all="ignore"):
                b = np.where(point, 0.0, st.dpsi(t))
                a = np.where(point, psiU, st.psi(t) - b * t)
            bad = ~(np.isfinite(a) & np.isfinite(b))
            aT.append(c * np.where(bad, psiU, a))
            bT.append(c * np.where(bad, 0.0, b))
        flat = point | (width <= 1e-12 * np.maximum(1.0, PU))
        with np.errstate(all="ignore"):
            slope = np.where(flat, 0.0, (psiU - psiL) / np.where(flat, 1.0, width))
        aC = c * (psiL - slope * PL)
        bC = c * slope
        return {
            "centre": centre, "h": h, "pL": pL, "pU": pU, "PU": PU,
            "rL": c * psiU, "rU": c * psiL,
            "aT": aT, "bT": bT, "aC": aC, "bC": bC, "cT": cT, "eT": eT, "cC": cC, "eC": eC,
        }

    def _set(self, bd):
        par = self._problems["par"]
        for k in ("h", "rL", "rU", "pL", "pU", "aC", "bC", "cC", "eC"):
            par[k].value = bd[k]
        for k in ("aT", "bT", "cT", "eT"):
            for p, v in zip(par[k], bd[k]):
                p.value = v

    # -- solving ---------------------------------------------------------
    def _solve(self, prob):
        """Solve; raise _Failure with a reason unless the status is optimal."""
        import cvxpy as cp

        try:
            with warnings.catch_warnings():
                # cvxpy's own "may be inaccurate" warning: the status is checked below.
                warnings.simplefilter("ignore", UserWarning)
                if callable(self.solver):
                    self.solver(prob, **self.solver_opts)
                else:
                    prob.solve(solver=self.solver, **self.solver_opts)
        except Exception as exc:  # any solver error becomes a fallback
            raise _Failure(f"{type(exc).__name__}: {exc}") from exc
        if prob.status != cp.OPTIMAL:
            raise _Failure(f"solver status {prob.status!r}")

    def _duals(self):
        """Dual variables of the relaxation constraints, projected to >= 0."""
        relax = self._problems["relax"]
        out = {}
        for k, cons in relax.items():
            vals = []
            for con in cons:
                v = con.dual_value
                if v is None:
                    raise _Failure(f"no dual values for the {k} constraints")
                v = np.asarray(v, dtype=np.float64)
                if not np.all(np.isfinite(v)):
                    raise _Failure(f"non-finite dual values for the {k} constraints")
                vals.append(np.maximum(v, 0.0))
            out[k] = vals
        return out

    def _dual_linear(self, bd, du):
        """Lagrangian of the relaxation with multipliers du, as
        const + g.r + hP.P + w.u; returns (const, g, hP, w, mag)."""
        mu, nu = du["psiT"], du["psiC"][0]
        ka, eta = du["phiT"], du["phiC"][0]
        PU = bd["PU"]
        const, mag = 0.0, 0.0
        g = nu.copy()
        hrow = -nu * bd["bC"]
        const -= float(nu @ bd["aC"])
        mag += float(nu @ (np.abs(bd["aC"]) + np.abs(bd["bC"]) * PU))
        for m, a, b in zip(mu, bd["aT"], bd["bT"]):
            const += float(m @ a)
            mag += float(m @ (np.abs(a) + np.abs(b) * PU))
            g = g - m
            hrow = hrow + m * b
        hP = hrow[:, None] + eta
        h = bd["h"]
        w = -(eta * bd["eC"]).sum(0)
        const -= float((eta * bd["cC"]).sum())
        mag += float((eta * (np.abs(bd["cC"]) + np.abs(bd["eC"]) * h)).sum())
        for k, cc, e in zip(ka, bd["cT"], bd["eT"]):
            const += float((k * cc).sum())
            mag += float((k * (np.abs(cc) + np.abs(e) * h)).sum())
            hP = hP - k
            w = w + (k * e).sum(0)
        return const, g, hP, w, mag

    def _certify(self, bd, du, g_extra=None):
        """Dual function of the LP ``min g_extra . r`` over the relaxation
        (without the r part when g_extra is None): (value, mag, g)."""
        const, g, hP, w, mag = self._dual_linear(bd, du)
        if g_extra is not None:
            g = g + g_extra
        v1, m1 = _lin_min(hP, bd["pL"], bd["pU"])
        v2, m2 = _lin_min(w, -bd["h"], bd["h"])
        return const + v1 + v2, mag + m1 + m2, g

    def _n_terms(self):
        N, d = self.Xs_shape
        return N * d * (self.phi_tangents + 2) + N * (self.psi_tangents + 3)

    def _cert_margin(self, scale):
        """Rounding in evaluating the dual function itself (no kappa: the
        certificate is about the float matrix A held here, exactly)."""
        d = self.Xs_shape[1]
        return margin_rtol(self._n_terms(), d) * scale

    def _model_margin(self, kd, q, r0, rL, rU):
        """sklearn's own rounding and that of A against L^-1, as the default
        method's margin: :meth:`LatentVariance.margin` (kappa-scaled, proven
        for every N in the module doc of :mod:`._variance`, "Soundness
        margin"), with the scale of its terms ``|k(x, x)| + |q| + |2 S r0| .
        (|r0| + max|r|)`` at a point r0; plus, explicitly, the distance
        between the float matrix A the certificates are about and the exact
        L^-1 D: ``| ||A r||^2 - ||L^-1 D r||^2 | <= 2 ||A|| dA ||r||^2 + dA^2
        ||r||^2`` with dA >= ||A - L^-1 D||_2 (the set-up's residual bound,
        also behind ``s_err``), ||A|| <= ||L^-1 D|| + dA <= sqrt(lam_max) + dA,
        and ||r||^2 <= sum max(rL^2, rU^2)."""
        d = self.Xs_shape[1]
        g0 = np.abs(2.0 * (self.S @ r0))
        scale = abs(kd) + abs(q) + float(g0 @ (np.abs(r0) + np.maximum(np.abs(rL), np.abs(rU))))
        R2 = float(np.maximum(rL * rL, rU * rU).sum())
        dA = self._dA
        nA = float(np.sqrt(self.lam_max)) + dA
        return self.margin(scale, d) + (2.0 * nA * dA + dA * dA) * R2 * (1.0 + 1e-10)

    def _qp_lower(self, bd):
        """Certified lower bound of min q over the box; (bound, x incumbent, gap info)."""
        pb = self._problems
        self._solve(pb["qp"])
        du = self._duals()
        base, mag, g = self._certify(bd, du)
        rL, rU = bd["rL"], bd["rU"]
        r0 = pb["r"].value
        r0 = np.clip(np.nan_to_num(np.asarray(r0, dtype=np.float64)) if r0 is not None else 0.5 * (rL + rU), rL, rU)
        if not (np.isfinite(base) and np.isfinite(mag) and np.all(np.isfinite(g))):
            raise _Failure("non-finite QP certificate")
        # The inner minimum of ||A r||^2 + g.r over the r box, bounded below
        # by the tangent plane at r0; valid for any r0, so the solver's r and
        # a polished minimiser (L-BFGS-B on the same box QP) are both tried.
        best = None
        for cand in (r0, self._polish(g, r0, rL, rU)):
            val, m = self._quad_lower(g, cand, rL, rU)
            if np.isfinite(val) and (best is None or val - self._cert_margin(m) > best[0] - self._cert_margin(best[1])):
                best = (val, m, cand)
        if best is None:
            raise _Failure("non-finite QP certificate")
        value, mag, r0 = base + best[0], mag + best[1], best[2]
        u = pb["u"].value
        x = bd["centre"] if u is None else np.clip(bd["centre"] + np.nan_to_num(u), bd["centre"] - bd["h"], bd["centre"] + bd["h"])
        return value - self._cert_margin(mag), mag, x, pb["qp"].value, r0

    def _quad_lower(self, g, r0, rL, rU):
        """Lower bound of min ||A r||^2 + g.r over [rL, rU] (convexity: the
        tangent plane at r0 minimised at the box corners), and its magnitude."""
        Ar0 = self.A @ r0
        G = 2.0 * (self.A.T @ Ar0) + g
        f0 = float(Ar0 @ Ar0 + g @ r0)
        lin = float(np.minimum(G * (rL - r0), G * (rU - r0)).sum())
        aAr = self._absA @ np.abs(r0)
        span = np.maximum(rU - r0, r0 - rL)
        mag = float(2.0 * aAr @ aAr + np.abs(g) @ np.abs(r0))
        mag += float((2.0 * (self._absA.T @ aAr) + np.abs(G)) @ span)
        return f0 + lin, mag

    def _polish(self, g, r0, rL, rU):
        """A more accurate minimiser of ||A r||^2 + g.r over the box (only
        used as the tangent point of a valid bound)."""
        S = self.S

        def fg(r):
            Sr = S @ r
            return float(r @ Sr + g @ r), 2.0 * Sr + g

        try:
            res = minimize(fg, r0, jac=True, method="L-BFGS-B", bounds=list(zip(rL, rU)),
                           options={"maxiter": 200, "ftol": 1e-15, "gtol": 1e-14})
            return np.clip(res.x, rL, rU)
        except Exception:  # only a candidate: the solver's r0 stays
            return r0

    def _range_lp(self, bd, v):
        """Certified lower bound of min v . r over the relaxation."""
        pb = self._problems
        pb["cobj"].value = v
        self._solve(pb["rlp"])
        du = self._duals()
        base, mag, g = self._certify(bd, du, g_extra=v)
        v3, m3 = _lin_min(g, bd["rL"], bd["rU"])
        value = base + v3
        if not np.isfinite(value):
            raise _Failure("non-finite range-LP certificate")
        return value - self._cert_margin(mag + m3)

    def _final_lp(self, bd, lam, hL, hU):
        """Certified lower bound of min sum_i -lam_i rh_i^2 via LP (20)."""
        pb = self._problems
        alpha = lam * hL * hU
        beta = -lam * (hL + hU)
        pb["beta"].value = beta
        pb["hL"].value, pb["hU"].value = hL, hU
        self._solve(pb["flp"])
        du = self._duals()
        om = pb["eq"].dual_value
        if om is None or not np.all(np.isfinite(om)):
            raise _Failure("no finite dual values for r_hat = V^T r")
        om = np.asarray(om, dtype=np.float64)
        # Lagrangian term om . (V^T r - rh) (cvxpy's sign for equalities).
        base, mag, g = self._certify(bd, du, g_extra=self.V @ om)
        v3, m3 = _lin_min(g, bd["rL"], bd["rU"])
        v4, m4 = _lin_min(beta - om, hL, hU)
        # The secants' own rounding: lam (|L U| + |L + U| max|rh|).
        sec = float((lam * (np.abs(hL * hU) + np.abs(hL + hU) * np.maximum(np.abs(hL), np.abs(hU)))).sum())
        value = float(alpha.sum()) + base + v3 + v4
        mag = mag + m3 + m4 + sec + float(np.abs(self.V) @ np.abs(om) @ np.maximum(np.abs(bd["rL"]), np.abs(bd["rU"])))
        if not np.isfinite(value) or not np.isfinite(mag):
            raise _Failure("non-finite LP (20) certificate")
        u = pb["u"].value
        x = bd["centre"] if u is None else np.clip(bd["centre"] + np.nan_to_num(u), bd["centre"] - bd["h"], bd["centre"] + bd["h"])
        r0 = pb["r"].value
        r0 = bd["rL"] if r0 is None else np.clip(np.nan_to_num(np.asarray(r0, dtype=np.float64)), bd["rL"], bd["rU"])
        return value - self._cert_margin(mag), mag, x, pb["flp"].value + float(alpha.sum()), r0

    def _ranges(self, bd, b, warn):
        """[r_hat_L, r_hat_U] for every eigen-direction (see module doc)."""
        N = self.n_support
        rL, rU = bd["rL"], bd["rU"]
        V = self.V
        iL = np.minimum(V * rL[:, None], V * rU[:, None]).sum(0)
        iU = np.maximum(V * rL[:, None], V * rU[:, None]).sum(0)
        mg = margin_rtol(N, 1) * (np.abs(V) * np.maximum(np.abs(rL), np.abs(rU))[:, None]).sum(0)
        hL, hU = iL - mg, iU + mg
        k = N if self.range_lps is None else min(N, self.range_lps)
        order = np.argsort(-(self.lam * (hU - hL) ** 2), kind="stable")
        chosen = [i for i in order[:k] if self.lam[i] > 0]
        fails = []
        for i in chosen:
            for sgn in (1.0, -1.0):
                try:
                    lb = self._range_lp(bd, sgn * V[:, i])
                except _Failure as f:
                    fails.append(str(f))
                    continue
                if sgn > 0:
                    hL[i] = max(hL[i], lb)
                else:
                    hU[i] = min(hU[i], -lb)
        if fails:
            warn(f"box {b}: {len(fails)} of {2 * len(chosen)} range LPs failed ({fails[0]}); "
                 "their interval ranges are used")
        bad = hL > hU  # cannot happen in exact arithmetic; keep the hull
        if np.any(bad):
            hL, hU = np.minimum(hL, hU), np.maximum(hL, hU)
        return hL, hU

    # -- the bounds ------------------------------------------------------
    def bounds(self, lo, hi):
        """Lower and upper bounds of var over each box: Props. 6 and 5."""
        lo = np.atleast_2d(np.asarray(lo, dtype=np.float64))
        hi = np.atleast_2d(np.asarray(hi, dtype=np.float64))
        default = super().bounds(lo, hi)
        B, d = lo.shape
        if B == 0 or self.n_support == 0:
            return default
        if self._problems is None:
            self._problems = self._build()
        dlo, dhi = self.adapter.diag_interval(lo, hi)
        lower, upper = default.lower.copy(), default.upper.copy()
        arg_min, arg_max = default.arg_min.copy(), default.arg_max.copy()
        lam = self.lam
        from_lp, from_qp = np.zeros(B, bool), np.zeros(B, bool)
        for b in range(B):

            def warn(msg):
                warnings.warn(f"variance_bound='paper': {msg}", RuntimeWarning, stacklevel=2)

            bd = self._box_data(lo[b], hi[b])
            self._set(bd)
            R2 = float(np.maximum(bd["rL"] ** 2, bd["rU"] ** 2).sum())
            # Upper bound of var (Prop. 5).
            try:
                qlow, mag, x, obj, r0 = self._qp_lower(bd)
                up = dhi[b] - max(qlow, 0.0) + self._model_margin(dhi[b], qlow, r0, bd["rL"], bd["rU"])
                if obj is not None and np.isfinite(obj) and obj - qlow > _GAP_RTOL * (1.0 + abs(obj)) + self._cert_margin(mag):
                    warn(f"box {b}: QP dual certificate {qlow:.6g} is far below the solver's "
                         f"objective {obj:.6g} (inaccurate duals); the better valid bound is used")
                    up = min(up, default.upper[b])
                upper[b], arg_max[b] = up, x
                from_qp[b] = True
            except _Failure as f:
                warn(f"box {b}: Prop. 5 QP failed ({f}); default upper bound used")
            # Lower bound of var (Prop. 6).
            try:
                hL, hU = self._ranges(bd, b, warn)
                mlow, mag, x, obj, r0 = self._final_lp(bd, lam, hL, hU)
                low = dlo[b] + mlow - self.eig_residual * R2 - self._model_margin(dlo[b], mlow, r0, bd["rL"], bd["rU"])
                if obj is not None and np.isfinite(obj) and obj - mlow > _GAP_RTOL * (1.0 + abs(obj)) + self._cert_margin(mag):
                    warn(f"box {b}: LP (20) dual certificate {mlow:.6g} is far below the solver's "
                         f"objective {obj:.6g} (inaccurate duals); the better valid bound is used")
                    low = max(low, default.lower[b])
                lower[b], arg_min[b] = low, x
                from_lp[b] = True
            except _Failure as f:
                warn(f"box {b}: Prop. 6 LP failed ({f}); default lower bound used")
        # The paper's bounds are for exact kernel values; sklearn's carry
        # input rounding (large feature offsets), as in the default bounds.
        rnd = self.input_rounding(lo, hi, dhi)
        lower = np.where(from_lp, lower - rnd, lower)
        upper = np.where(from_qp, upper + rnd, upper)
        lower = np.where(np.isnan(lower), default.lower, lower)
        upper = np.where(np.isnan(upper), default.upper, upper)
        return VarianceBound(lower, upper, arg_min, arg_max, default.score)


class NonCholeskyPaperLatentVariance(PaperLatentVariance):
    """:class:`PaperLatentVariance` for a factor that is not a Cholesky factor
    of the rounded kernel matrix plus noise (see
    :class:`~skgprobust._bounds._variance.NonCholeskyLatentVariance`)."""

    _LEMMA_CHOLESKY_MODEL = False
