"""Posterior-variance bounds over many boxes at once (paper Sec. 4.2).

Every latent model here has ``var(x) = k(x, x) - q(x)`` with

    q(x) = ||A r(x)||^2 = r^T S r,   r(x) = k(Xs, x),   S = A^T A,

where ``A`` is the triangular factor sklearn itself uses (``L_^-1`` for the
regressor, ``L_^-1 diag(W_sr_)`` for the Laplace classifier). The default
method needs no LP/QP:

* upper bound of var (lower bound of q): q is convex in r, so its tangent
  plane at r0 = r(centre) lies below it everywhere,
  ``q(r) >= q0 + g.(r - r0)`` with ``g = 2 S r0``; the minimum of
  ``g . r(x)`` over the box is a mean-type bound (Prop. 2 / Taylor model,
  :func:`~skgprobust._bounds._mean.affine_lower`). The error is the dropped
  ``||A (r - r0)||^2``, O(h^2) in the box width.
* lower bound of var (upper bound of q): ``q(r) = q0 + g.(r - r0) +
  ||A (r - r0)||^2`` exactly. The linear part is bounded like the mean; the
  quadratic part by the smaller of ``lambda_max(S) ||dr||^2`` (dr from kernel
  intervals) and a spectral split that bounds the projections of r on the top
  eigenvectors of S with mean-type bounds (keeping the cancellation across
  training points that the paper's LP relaxation loses).

Both converge as the box shrinks, so branch and bound reaches any epsilon.

High signal-to-noise: the local RKHS bound
------------------------------------------
With little noise, v(x) is a small difference of large terms and the bounds
above lose it: the dropped ``||A (r - r0)||^2`` is O(kappa0 h^2/l^2), far above
v itself. When the cross-covariance kernel k_c (the fitted kernel without
its WhiteKernel parts: what ``k(x, Xs)`` returns) is a sum of non-negative
multiples of RBF / Matern(nu = 1.5, 2.5, inf) / RationalQuadratic (alpha
<= 1.5e5) terms and constants, plus non-negative multiples of DotProduct
("Linear terms" below), of its integer powers up to 8 ("Dot-product
powers"), of products of an RBF / Matern profile with such a power
("Products with a dot product") and of products of several RBF / Matern
profiles, with such a power or without ("Products of several factors")
(:class:`SmoothCovariance`), each box also gets a bound whose error is
O(sqrt(kappa0 v) h^2/l^2) (Matern 1.5: h^1.5), i.e. relative to v it shrinks
as the noise does not matter. Real arithmetic first.

*Setting.* H is the RKHS of k_c (PSD: sums and non-negative multiples of PSD
kernels; a kernel not known to be PSD, :attr:`KernelAdapter.psd` False, e.g.
a negative constant or white noise, gets no lemma at all: rho = inf and
infinite variance bounds), k_x = k_c(., x), kappa0 = k_c(x, x) (constant: stationary). The
training Gram matrix sklearn factors is ``Kc + D`` (regressor: D = (noise +
alpha) I; WhiteKernel summands, also scaled by constants, add only to the
diagonal) or, for the Laplace GPC, S = Dc (I + Dc (Kc + Dw) Dc)^-1 Dc with
Dc = diag(W_sr_). Define the operator P = sum_ij S_ij k_{x_i} (x) k_{x_j} on H,
so <f, P f> = f_X^T S f_X (f_X = f at the support points), and Q = I - P.
Then q(x) = r^T S r = <k_x, P k_x> and the latent variance is

    v(x) = diag(x) - kappa0 + v_c(x),   v_c(x) = <k_x, Q k_x> = ||Q^1/2 k_x||^2.

*Lemma: 0 <= P <= I.* P >= 0 as S is PSD. For f in H, with
M = I + Dc (Kc + Dw) Dc (PD) and c = Dc z,
f_X^T S f_X = max_z (2 z^T Dc f_X - z^T M z) <= max_c (2 c^T f_X - c^T Kc c)
(drop the PSD terms z^T z and c^T Dw c); and c^T f_X = <f, g_c> with
g_c = sum_i c_i k_{x_i}, ||g_c||^2 = c^T Kc c, so 2 <f, g_c> - ||g_c||^2
<= ||f||^2 (regressor: Dc = I, M = Kc + D). Hence 0 <= Q <= I.

*The lemma for the float factor* (review finding 2). The lemma is about
the exact Kc + D; the bounds use sklearn's float L, with L L^T = fl(K) +
Ea + E3 (Ea: the diagonal additions of white parts and alpha; E3:
Cholesky's backward error, ||E3||_2 <= gamma_(N+1) || |L| ||_2^2, Higham
Thm 10.3), and F = fl(K) - K. L L^T - Kc need not be PSD once the noise is
below these errors (60-digit q*(x) - kappa0 = +1.6e-16 at N = 200, white
3e-16). Repair: let e >= ||F + Ea + E3||_2 and delta <= the smallest
noise entry (regressor: the noise diagonal Dn >= delta I; Laplace GPC:
the I of I + Dc K Dc, delta = 1 and Dc F Dc and the products in e), so
L L^T >= Kc' + (delta - e) I (Kc' = Kc, resp. Dc Kc Dc), and m =
lambda_min(L L^T) >= 1 / nLinv^2 (proven, "Soundness margin"). If e <=
delta, L L^T >= Kc' and the lemma holds as stated (rho = 0). Otherwise,
with e' = e - delta and t = m / (m + e'), L L^T >= t (Kc' - e' I) + (1 -
t) m I = t Kc', and the lemma's maximum gives f_X^T S f_X <= max_c (2 c^T
f_X - t c^T Kc c) = ||f||^2 / t: P <= (1 + rho) I, rho = e' / m <= e'
nLinv^2 (:meth:`LatentVariance._lemma_rho`, rounded up; inf -> the bounds
become infinite). Every use of "P <= I" is scaled: the kappa-scaled
margin's scale (kappa times (1 + rho), which also covers q <= (1 + rho)
k(x, x) in sklearn's evaluation and the polynomial margins), the RKHS
remainder ||A dr||^2 <= (1 + rho) Dh^2, the input rounding's ||A r||, and
the local bound, where Q' = (1 + rho) I - P >= 0 replaces Q: v = diag(x) -
k0 + <k_x, Q' k_x> with k0 = (1 + rho) kappa0, and the expansion below
holds with kappa0, H0 and E replaced by k0, (1 + rho) H0 and sqrt(1 + rho)
E (||Q'^1/2|| <= sqrt(1 + rho)). e: ||E3|| <= gam' nLabs^2 (gam' =
margin_rtol(N + 1, 0) >= 8 gamma_(N+1)); ||F||_2 <= ||F||_F <=
(sqrt(N) ||R|| + N c_val u kmax) (1 + (N^2 + 4) u) (R = rounding over
the hull box of the support points, >= every rounding(x_i, x_j)_j; c_val
as in (a) below, kmax = max k(x_i, x_i)); ||Ea|| <= 8 u max (L L^T)_ii
(GPC: 2 u of the I's addition and 3 u N Dmax^2 kmax for the products).
delta (regressor, computed only when e nLinv^2 > 1e-6: below, the factor
(1 + rho) moves the margins by < 1e-6 relative): Dn_ii = M_ii -
fl(K)_ii - Ea_ii with M the matrix factored, M_ii >= fl(sum_j L_ij^2) (1 -
gam' - (2N + 8) u) (Thm 10.3 on the diagonal, the row sum's rounding),
fl(K)_ii <= Kc_ii + cv_i, Kc_ii <= our computed k_c(x_i, x_i) + cv_i (cv_i =
c_val u kmax + R_i), so delta = min_i of that lower bound (0 if not
positive; Dn >= 0 is the lemma's premise: white parts and alpha are
non-negative). Cost: rho = 0 whenever the noise exceeds the rounding
errors (the usual case); the reviewer's case (white 3e-16, N = 200) gets
rho ~ e / noise > 0 and is now covered.
The bound e above rests on the Cholesky model (L is sklearn's factor of
fl(K) + noise, resp. of I + W^1/2 fl(K) W^1/2). Structure-free
alternative (:meth:`LatentVariance._lemma_certificate`, regressor form):
Hs = fl(fl(L L^T) - fl(Kc)) with L L^T - Kc = Hs + Delta, ||Delta||_2 <=
gamma-bound of the product (margin_rtol(N, 0) nLabs^2) + ||F||_F + 2 u
||tril(Hs)||_F, and lambda_min(Hs) >= lb by a Cholesky certificate, so L
L^T >= Kc - e' I with e' = max(||Delta|| - lb, 0), and the same convex
argument gives rho = e' nLinv^2. It is computed (O(N^3)) when the cheap
bound, with delta, gives rho > 1e-6, and the smaller rho is used; a subclass whose L
is not such a Cholesky factor (``_LEMMA_CHOLESKY_MODEL = False``, e.g. a
QR-built factor) uses only the certificate. Its shift is chosen to certify
lambda_min(Hs) >= ||Delta|| where it can (then e' = 0): the sparse models'
L L^T = Kzz + j I + (PSD) exceeds Kc by their jitter j (1e-8 of the mean
diagonal), which a shift at 0 never credited (Friedman #1, N = 2500, M =
200: FITC rho 2.4e-3 -> 0, VFE 2.8e-4 -> 0). Where a few rows of L are
huge (inducing inputs the data do not inform: mu at its floor, rows ~1e5
sqrt(kappa0)), gam nLabs^2 alone exceeds the jitter; the row-scaled
certificate (:meth:`LatentVariance._scaled_lemma_certificate`: S = diag(1
/ ||L_i||), the product's rounding bounded entrywise by gam_N
||L_i|| ||L_j||, so by gam_N in S . S) certifies S (L L^T - Kc) S >= 0
there (far-inducing models: rho 0.45-8e3 -> 0; 40-digit checks in the
tests); the smaller e' of the two forms is used.
*In extended precision* (session 19). The float product's bound gam_N
nLabs^2 grows with the features' scale: on unscaled trend models (Friedman
#3, features up to ~1700, N = 1000, noise 2e-4) it is 1e-3, so neither the
Cholesky model nor the certificate could credit the noise (rho = 4.2; the
std bounds floored at ~100% of the std) although lambda_min(Hs) = 2.0e-4.
Where the platform's long double is the x87 extended format and its
arithmetic checks out (:func:`~skgprobust._fp.extended_unit_roundoff`) and
N <= ``EXTENDED_MAX_N``, a certificate that left e' > 0 is retried on Hs =
fl64(fl_x(L L^T) - fl(Kc)) (:func:`~skgprobust._fp.gram_minus_extended`,
product and subtraction in long double, u_x = 2^-64): ||Delta|| <= 2
gamma_N(u_x) nLabs^2 + ||F||_F + (u + 2 u_x)(1 + 2 u) 2 ||tril(Hs)||_F + N
2^-1074 (subnormal entries; the float64 path adds it too) (the
error model checked entrywise against exact rationals in the tests), and
the smaller e' is used. On that model rho 4.2 -> 0 (e' = 0), for ~0.7 s
once per fit; the floor of the std bounds drops to the solves' margins
(3-9% of the std; ``bench_std_snr``). Elsewhere (no x87 long double) the
float64 certificate alone applies, as before.

*The per-point lemma* (sharper where rho > 0; :meth:`LatentVariance._local_bounds`).
rho = e nLinv^2 charges every x the worst direction of (L L^T)^-1; the
loss is per point ||a(x)||^2 instead, a(x) = (L L^T)^-1 D r(x) (the
adjoint weights below, ||a|| <= nLinv q^1/2 and usually far smaller). Let e
>= 0 with L L^T >= Kc' - e I (Kc' = D Kc D; the shift behind rho,
``lemma_e``: e - delta, or the certificate's e', whichever gave rho). For
f in H let a_f = (L L^T)^-1 D f_X, c = D a_f, p = <f, P f> = c^T f_X =
<f, g_c> (g_c as in the lemma). Cauchy-Schwarz: p <= ||f|| ||g_c||, and
||g_c||^2 = c^T Kc c = a_f^T Kc' a_f <= a_f^T (L L^T + e I) a_f = p + e
||a_f||^2. So p^2 <= ||f||^2 (p + s), s = e ||a_f||^2, i.e. p <= ||f||^2
/ 2 + (||f||^4 / 4 + ||f||^2 s)^1/2 <= ||f||^2 + s (square both sides;
p >= 0 as S is PSD). With Psi the PSD operator <f, Psi f> = ||a_f||^2:
Q'' = I + e Psi - P >= 0, and at f = k_x: q(x) <= kappa0 + e ||a(x)||^2.
The local bound with Q'' in place of Q': v(x) = diag(x) - kappa0 - e
||a(x)||^2 + ||Q''^1/2 k_x||^2 exactly; with k_x = k_x0 + w + E as below,
||Q''^1/2 k_x|| lies within ||Q''^1/2 E|| of P''(u)^1/2, P''(u) =
||Q''^1/2 (k_x0 + w)||^2 = P(u) + e ||a(k_x0 + w)||^2 with P(u) the
real-arithmetic quadratic (kappa0, H0 unscaled); so P(u) <= P''(u) <=
P(u) + T with T = e a_box^2, a_box >= ||a(k_x0 + w)|| and >= ||a(x)|| over
the box (a_box = the smaller of aR + nLinv^2 dR + nLinv (1 + rho)^1/2 Dh
and the column-wise form, "The weights over the box": ||a_w|| <= nLinv
<w, P w>^1/2 <= nLinv (1 + rho)^1/2 ||w||, the rho-lemma, still valid;
the column-wise form bounds both too). ||Q''^1/2 E||^2 = ||E||^2 + e ||a_E||^2 -
<E, P E> <= ||E||^2 + (e nLinv^2 - 1) <E, P E> (||a_E|| <= nLinv
<E, P E>^1/2), so <= ||E||^2 when rho <= 1, and <= (1 + (rho - 1)(1 +
rho)) ||E||^2 otherwise. Hence, per box, v lies in [dlo - kappa0 - T +
max(sqrt(P_min) - E'', 0)^2, dhi - kappa0 + (sqrt(P_max + T) + E'')^2]
(dropping -e ||a(x)||^2 <= 0 above), with the rounding margins of P and
of sklearn's evaluation as for the rho path (they bound the same computed
quantities; the magnitude of P's Hessian is its own). The rho path stays:
the tighter of the two is taken per box and side. Measured (Friedman #1,
N = 2500, M = 200, FITC with a certificate shift giving rho = 2.4e-3, e =
4e-7): rho kappa0 = 3.7 against v ~ 4e-3 (the rho path's P carries it,
and its error 2 P^1/2 E), while e ||a(x)||^2 <= 3.4e-6 (||a|| <= 2.9 at
100 test points).

*Expansion.* For x = x0 + u (x0 the box centre) let w = D k_x0[u] =
sum_j u_j d/dy_j k_c(., y)|_{y = x0} (in H: the kernels are C^2) and
E = k_x - k_x0 - w. Then, Q^1/2 being linear with norm <= 1 (for the float
factor: Q' and sqrt(1 + rho), "The lemma for the float factor" above),

    sqrt(P(u)) - ||E|| <= sqrt(v_c(x)) <= sqrt(P(u)) + ||E||,
    P(u) = ||Q^1/2 (k_x0 + w)||^2 = v_c(x0) + g.u + u^T H1 u,

with (reproducing property; stationarity gives <k_x0, w> = 0)
g = -2 J^T S r0 (J = d r / d x at x0, the gradient of v_c at x0),
H1 = H0 - J^T S J, H0 = <d_j k_x0, d_k k_x0> = -Hess kappa(0) (diagonal:
sum_t a_t c2_t / l_t^2). The max and min of P over the box come from
:func:`~skgprobust._bounds._mean.taylor_lower` (value, gradient, Hessian 2 H1).

*Remainder.* ||E||^2 = 2 kappa(0) - 2 kappa(u) - 2 D kappa(u)[u] ... is
linear in the kernel; for a radial term a kappa(s), s = ||u / l||, it is
a f(s), f(s) = 2 kappa(0) - 2 kappa(s) + 2 s kappa'(s) - kappa''(0) s^2,
f(0) = 0, f'(s) = 2 s (kappa''(s) - kappa''(0)). With kappa''(s) -
kappa''(0) <= 1.5 s^2 (RBF), 12.5 s^2 (Matern 2.5), 6 sqrt3 s (Matern 1.5)
(elementary: e.g. RBF, t = s^2/2: 1 - e^-t + 2t e^-t <= 3t), f(s) <= C s^p
with (C, p) = (0.75, 4), (6.25, 4), (4 sqrt3, 3); increasing in s, so over the
box s <= ||h / l|| (checked in 50-digit arithmetic in the tests; the ratio
f / (C s^p) stays below 1). Constants contribute nothing to E.

RationalQuadratic (alpha in [1e-100, 1.5e5]) is the scale mixture kappa(s) =
E[exp(-tau s^2 / 2)] over tau ~ Gamma(alpha, rate alpha) (E tau = 1, E
tau^2 = 1 + 1 / alpha: integrate e^(-tau s^2 / 2) against the Gamma
density to get (1 + s^2 / (2 alpha))^-alpha), and everything above is
linear in kappa: each RBF component of precision tau has f_tau(s) = f_rbf(
sqrt(tau) s) <= 0.75 tau^2 s^4 and kappa_tau'' >= -tau, so f <= 0.75 (1 + 1 /
alpha) s^4 and c2 = E tau = 1; sup |kappa'| <= E[sqrt tau] e^-1/2 <= 0.61
(Jensen) and the Jacobian-rounding constants below are those of the RBF
times E tau = 1. Its computed gradient carries the base's alpha-fold
relative error, as its values do (``RationalQuadraticAdapter``):
:meth:`SmoothCovariance.jacobian_rounding` adds it per entry. alpha <= 1.5e5
(sklearn's default upper bound 1e5, reached through exp(log(1e5)) = 1e5 (1 + 1e-16)) keeps the kernel's relative rounding below
the 1e-10 that the softmax model's RKHS constant assumes.

*Linear terms* (``SmoothCovariance.lin``; only :class:`LatentVariance`'s
own parse asks for them). A non-negative multiple c DotProduct(sigma_0) =
c sigma_0^2 + c x . y adds c sigma_0^2 to the constant and lin = sum c to
the linear part lin x . y (a trend next to a smooth part, e.g. ``C * RBF +
DotProduct + White``). Its RKHS section k^lin(., x) = lin (. . x) is linear
in x, so the remainder above is unchanged: ||E||^2, expanded by the
reproducing property of the whole kernel, is linear in the kernel, and
the linear part contributes lin (||u||^2 - 2 ||u||^2 + ||u||^2) = 0. What
changes, by the reproducing
property: ||k_x0||^2 = k_c(x0, x0) = kappa0 + lin ||x0||^2 (no longer
constant), <k_x0, w> = lin x0 . u (stationary parts: 0) and ||w||^2 =
u^T (H0 + lin I) u. So P(u) = (1 + rho) (kappa0 + lin ||x0||^2 + 2 lin x0
. u + u^T H0 u) - ||A (r0 + J u)||^2 (H0 here including lin): g gains 2 (1
+ rho) lin x0. And k_c(x, x) is no longer kappa0: v(x) = diag(x) - (1 +
rho) k_c(x, x) + <k_x, Q' k_x> with diag(x) - k_c(x, x) = white, the
WhiteKernel parts (sklearn's diag of a Sum is the sum of the parts'
diagonals; its rounding is the outer margin's, as for dlo / dhi), so the
constant dlo - k0 becomes white - rho k_c(x, x), in [white - rho kc_hi,
white - rho kc_lo] over the box (``SmoothCovariance.kappa_range``; the
per-point lemma's path: white). The margins use k0 = (1 + rho) kc_hi,
which bounds (1 + rho) k_c(x, x) over the box and (1 + rho) ||k_x0 +
w||^2 <= (1 + rho) (kc_hi + u^T H0 u) for the F of the rounding argument.
Rounding: the linear part's term magnitude is lin |x . x_i| <= lin ||x||
||x_i|| (value_ulps' contract), so the value rounding is relative to
kappa0 + lin xmax max_i ||x_i|| per box; its gradient lin x_i does not
depend on x (no input rounding). The Jacobian's relative rounding term
(32 u ||G_j||) is relative to the computed sum, which may cancel (a
stationary slope against the trend): the stationary terms' own errors are
relative to their magnitudes, |G_stat| <= |G| + |G_lin| entrywise, and
every product and sum node of the tree adds u of a partial sum, so
:meth:`SmoothCovariance.jacobian_rounding` adds (16 + 2 (n_nodes + 2)) 2 u
lin ||X_j|| (referee, session 16: the 2 u lin ||X_j|| first written was
9.9x short on a cancelling entry, covered then only by unallocated slack).

*Dot-product powers* (``SmoothCovariance.poly``; session 22). A
non-negative multiple c DotProduct(sigma_0) ** p, p = 2 .. ``POLY_MAX_P``
(= 8), next to the smooth part (``C * RBF + C * DotProduct ** 2 +
White``: a quadratic trend) is the term c (s + x . y)^p, s = fl(sigma_0^2)
as sklearn computes it (exponent 1 is the linear part above). With S = s
+ ||x0||^2, b = x0 . u and e = ||u||^2 (x = x0 + u), the reproducing
property gives, per term (derivatives of the kernel at x = y = x0):
||k_x0||^2 = c S^p; <k_x0, w> = c p S^(p-1) b; ||w||^2 = u^T (alpha I +
beta x0 x0^T) u with alpha = c p S^(p-1), beta = c p (p - 1) S^(p-2) >= 0
(so H0 becomes a per-box matrix: the diagonal of the stationary and
linear parts plus this, and P's Hessian 2 H1 is a full matrix anyway);
k_c(x, x) = c (S + 2 b + e)^p. ``SmoothCovariance.section`` returns these
(summed over the terms: kc0, gco = lin + sum alpha, alpha, beta), so g
gains 2 (1 + rho) gco x0, as for the linear part.

The remainder. ||E||^2 = k(x, x) + k(x0, x0) + ||w||^2 - 2 k(x, x0) - 2
<k_x, w> + 2 <k_x0, w>, with k(x, x0) = c (S + b)^p and <k_x, w> = c p (S +
b)^(p-1) (b + e) (the derivative of k(x, y) in y at x0, along u, with x .
u = b + e), is linear in the kernel, so the terms add and each power's
share is c F_p(b, e) with F_p = (S + 2b + e)^p + S^p + p S^(p-1) e + p (p -
1) S^(p-2) b^2 - 2 (S + b)^p - 2 p (S + b)^(p-1) (b + e) + 2 p S^(p-1) b, a
polynomial in (S, b, e) with integer coefficients. Expanded exactly in
integers (:func:`power_remainder_table`), every monomial S^k b^i e^j with
i + 2 j <= 3 cancels (the expansion is of second order: b = O(h), e =
O(h^2)), every monomial has k = p - i - j (homogeneity), and every
coefficient gamma_ij is >= 0 (p = 2: F = e^2 exactly; p = 3: 3 S e^2 + 6
b^2 e + 6 b e^2 + e^3). So over the box (|b| <= sum_j |x0_j| h_j, 0 <= e
<= ||h||^2) ||E_t||^2 <= c sum gamma_ij S^(p-i-j) |b|max^i e_max^j, with
S, |b|max, e_max rounded up (each a sum of non-negative terms) and the
sum of non-negative float terms widened by (4 p + 40) u
(``SmoothCovariance.remainder2``). Checked against explicit tensor
feature maps in the tests (ratio of ||E||^2 to the bound up to 0.994,
never above 1).

What else changes. (i) ||k_x0 + w||^2 <= k_c(x, x) + u^T H0 u still
holds (it bounds F and the input-rounding terms of the margins): per
power, ||k_x0 + w||^2 - c S^p - c p S^(p-1) (2 b + e) = c p (p - 1)
S^(p-2) b^2 <= u^T H0 u, and c (S + 2 b + e)^p >= c S^p + c p S^(p-1)
(2 b + e) by convexity of t^p on t >= 0 (S + 2 b + e = s + ||x||^2 >= 0).
(ii) sup ||w||^2 over the box <= sum_j (H0_j + alpha) h_j^2 + beta (|x0| .
h)^2 (Dh), but the increment ||k_x - k_x0||^2 has higher-order terms, so
the weights' bound a_x and the RKHS remainder of the other bounds use
``SmoothCovariance.increment2``: the stationary and linear parts'
sum_j H0_j h_j^2 plus, per power, c (p R^(p-1) ||h||)^2, R^2 = s + sum_j
max(|lo_j|, |hi_j|)^2 (tensor-power telescoping, as
``DotProductPowerAdapter.rkhs_increment``): wherever the sections above
use Dh as a bound of ||k_x - k_x0|| (a_x, a_box: "The per-point lemma",
"The weights over the box", sklearn's evaluation in the margins), the
code uses Dh_inc = max((1 + rho)^1/2 increment2^1/2, Dh), which bounds both
that and ||w|| (a_box must bound the weights of r0 + J u too; for the
powers ||w||^2 = c p S^(p-2) (S e + (p - 1) b^2) <= c p^2 R^(2(p-1))
||h||^2 anyway, as S <= R^2 and b^2 <= ||x0||^2 e). (iii) k_c(x, x) over the box
(``kappa_range``) adds c (s + ||x||^2)^p at the ends of ||x||^2, widened
by (4 p + 24) u for the power's rounding. (iv) Term magnitudes for the
kernel values' rounding (``SmoothCovariance.magnitude``): c |s + x . x_i|^p
<= c (s + ||x|| ||x_i||)^p. (v) The Jacobian's rounding
(``jacobian_rounding``): sklearn's / the adapter's c p t~^(p-1) x_ij
with t~ = fl(x0 . x_i + s), |t~ - t| <= e_i = (d + 2) u (|x0| . |x_i| + s)
(+ d 2^-1074), so |t~^(p-1) - t^(p-1)| <= (p - 1) M_i^(p-2) e_i with M_i =
|x0| . |x_i| + s + e_i >= |t|, |t~| (mean value theorem); the power (8
ulps), the products with p, x_ij and c (3 u) and the tree's sum nodes
relative to the parts' magnitudes ((16 + 2 (n_nodes + 2)) 2 u, as for the
linear part) add (19 + 2 (16 + 2 (n_nodes + 2))) u c p M_i^(p-1) |x_ij|;
column norms over i. (vi) Our own float evaluation of the powers'
contributions to P (S^p, the gradient and Hessian coefficients) errs by
at most p (d + 4) + 24 ulps of each contribution's magnitude to first
order; 8 times that, ``e_poly``, is added to P's margins (the kappa-
scaled margin would cover it too, but its budget is spent elsewhere).
(vii) sklearn's k(x, x) of a power errs by p (d + 2) + 16 ulps
(``diag_ulps``), inside the margins' gam = (8 (N + d) + 256) u for p <=
8, hence ``POLY_MAX_P``. Measured (``bench_std_snr.py --kernels rbf+dp2``):
see that script's docstring.

*Products with a dot product* (``SmoothCovariance.prod``; session 22). A
term a kappa(||(x - y) / l||) (s + x . y)^p, kappa an RBF / Matern (1.5,
2.5, inf) profile (kappa(0) = 1), p = 1 .. 8 (``C * RBF * DotProduct``,
constants on either side), has the feature map phi_k (x) psi with psi the
map of (s + x . y)^p. With phi_k(x) = phi_k0 + w_k + E_k (the stationary
expansion above, unit amplitude) and psi(x) = psi0 + w_psi + E_psi (the
powers' expansion; for p = 1 the map (sqrt s, x) is affine: E_psi =
0):

    phi(x) = phi_k0 (x) psi0 + [w_k (x) psi0 + phi_k0 (x) w_psi]
             + E_k (x) psi(x) + w_k (x) (psi(x) - psi0) + phi_k0 (x) E_psi

(expand the right side: it sums to phi_k(x) (x) psi(x)). The bracket is
the first-order section w, the rest is E. As <phi_k0, w_k> = 0
(stationarity) and ||phi_k0|| = 1: ||k_x0||^2 = a S^p; <k_x0, w> = a p
S^(p-1) b; ||w||^2 = a (u^T H0_k u) S^p + a u^T (p S^(p-1) I + p (p - 1)
S^(p-2) x0 x0^T) u with H0_k = diag(c2 / l^2), i.e. a per-box diagonal
dH0 = a S^p c2 / l^2 next to the powers' alpha and beta (``section``); and
k_c(x, x) = a (s + ||x||^2)^p as for a power (``kappa_range``,
``magnitude``: kappa <= 1). The remainder: ||E|| <= a^1/2 (||E_k|| R^p +
||w_k|| p R^(p-1) ||u|| + ||E_psi||), with ||E_k||^2 <= C z^q (the
profile's constant, z = ||h / l||), ||w_k||^2 <= c2 z^2, ||psi(x)|| <=
R^p, ||psi(x) - psi0|| <= p R^(p-1) ||u|| (telescoping), ||E_psi||^2 the
powers' polynomial (0 for p = 1), R^2 = s + ||(|x0| + h)||^2
(``remainder2``). The increment ||k_x - k_x0||^2 <= a (||phi_k(x) -
phi_k0|| R^p + p R^(p-1) ||h||)^2 with ||phi_k(x) - phi_k0||^2 <= u^T H0_k u
(``increment2``). (i) of the powers holds as well: ||k_x0 + w||^2 - k_c(x,
x) <= a (u^T H0_k u) S^p + a p (p - 1) S^(p-2) b^2 <= u^T H0 u (the tangent
of t^p at S). The Jacobian (``jacobian_rounding``): the adapter computes
fl(K1~ G2~ + K2~ G1~) with K1 = a kappa, G1 = a grad kappa, K2 = t^p, G2 =
p t^(p-1) x_i (``ProductAdapter``); per entry the error is at most |G2|
dK1 + |K1~| dG2 + |G1| dK2 + |K2~| dG1 plus the products', the sum's and
the constants' roundings and the tree's sums relative to the magnitudes,
with kappa <= 1, |d kappa / d x_j| <= SUP_SLOPE / l_j, |t| <= M_i; dK1 from
the scaled distance's input rounding (the 5 u (...) of the stationary
terms), its own rounding (relative (d + 2) u / 2 for the RBF, (d / 2 + 4)
u for Matern's sqrt(3 or 5) r, times s |kappa'(s)| <= 0.74 / 0.54 / 0.60
for RBF / Matern 1.5 / 2.5: <= (d + 2) u + 3 u, charged (d + 26) u with the
profile's 21 ulps) and the profile's 21 ulps; dG1 as
for the stationary terms; dK2 and dG2 as for the powers. Checked against
50-digit values in the tests, and the expansion against the kernel's own
derivatives in 40 digits (RBF, Matern 1.5 / 2.5; p = 1, 2, 3).

*Products of several factors* (``SmoothCovariance.prod``; session 24). A
term a prod_f kappa_f(||(x - y) / l_f||) (s + x . y)^p with m >= 1 RBF /
Matern (1.5, 2.5, inf) / RationalQuadratic (alpha in ``RQ_ALPHA``)
profiles and p = 0 .. 8 (``C * RBF * Matern``, ``C * RBF(l1) * RBF(l2)``,
``C * RBF * RationalQuadratic``, ``C * RBF * Matern * DotProduct ** 2``; constants
anywhere in the product tree; p = 0 needs m >= 2, one profile alone being
a term). The dot-product factors (s_k + x . y)^(q_k) (DotProduct or its
powers, any sigma_0: two free DotProduct hyperparameters of a fitted
kernel differ) multiply into g(x . y) with g(t) = prod_k (s_k + t)^(q_k) =
sum_j c_j t^j, c_j >= 0 (s_k = sigma_0^2 >= 0), of degree p = sum_k q_k <=
8; one sigma_0 gives (s + t)^p as above. The profiles' block is the stationary kernel
Phi = (x)_f phi_f with phi_f(x) = phi_f0 + w_f + E_f (each profile's
expansion above, unit amplitude). Its first-order section W = sum_f w_f (x)
(x)_(g != f) phi_g0 has ||W||^2 = sum_f ||w_f||^2 = sum_f u^T H_f u, H_f =
diag(c2_f / l_f^2) (the cross terms are <w_f, phi_f0> <phi_g0, w_g> = 0 by
stationarity), and by telescoping over the factors

    Phi(x) - Phi0 - W = sum_f [(x)_(g<f) phi_g(x)] (x) E_f (x) [(x)_(g>f) phi_g0]
                      + sum_f [(x)_(g<f) phi_g(x) - (x)_(g<f) phi_g0] (x) w_f (x) [(x)_(g>f) phi_g0]

(the sum over f of [(x)_(g<f) phi_g(x)] (x) (phi_f(x) - phi_f0) (x)
[(x)_(g>f) phi_g0] is Phi(x) - Phi0, and phi_f(x) - phi_f0 = w_f + E_f).
All ||phi_g|| = 1, and ||(x)_(g<f) phi_g(x) - (x)_(g<f) phi_g0||^2 = 2 - 2
prod_(g<f) kappa_g <= sum_(g<f) 2 (1 - kappa_g) <= sum_(g<f) c2_g z_g^2 (1 -
prod a_g <= sum (1 - a_g) for a_g in [0, 1], by induction: (1 - a)(1 - b)
>= 0; the profiles are in (0, 1]; 2 (1 - kappa(s)) <= c2 s^2 as in "The
RKHS remainder"), z_g = ||h / l_g||. So ||E_Phi|| <= sum_f C_f^1/2
z_f^(q_f / 2) + sum_f (sum_(g<f) c2_g z_g^2)^1/2 c2_f^1/2 z_f, and
||W||^2, ||Phi(x) - Phi0||^2 <= sum_f c2_f z_f^2. Everything in "Products
with a dot product" then holds with E_k -> E_Phi, ||w_k||^2 <= c2 z^2 ->
sum_f c2_f z_f^2 and dH0 = a S^p sum_f c2_f / l_f^2 (``section``,
``increment2``, ``remainder2``), and with the power replaced by g: g(t) =
sum_j c_j t^j is the kernel of the feature map psi = (c_j^1/2 x^(x)j)_j
(the powers t^j, sigma_0 = 0, side by side), and every quantity of the
power above is linear in the kernel or a norm of its map, so with T0 =
||x0||^2 and R^2 >= ||x||^2 over the box: ||k_x0||^2 = g(T0), <k_x0, w> =
g'(T0) b, ||w||^2 = u^T (g'(T0) I + g''(T0) x0 x0^T) u, k(x, x) =
g(||x||^2) (increasing: c_j >= 0), ||psi(x)||^2 <= g(R^2), ||psi(x) -
psi0||^2 = sum_j c_j ||x^(x)j - x0^(x)j||^2 <= sum_j c_j j^2 R^(2(j-1))
||u||^2 (<= p^2 (s + R^2)^(p-1) ||u||^2 for one sigma_0: the bound above,
never looser), ||E_psi||^2 = sum_j c_j F_j(T0, b, e) <= sum_j c_j
(F_j's bound at S = T0), |g(x . x_i)| <= g(||x|| ||x_i||) (``_dot_polynomial``,
``_gsum``; the coefficients are sums of products of non-negative floats,
relative error <= 2 p u unless they underflow (absolute effect below
1e-300), and the sums of non-negative terms add (2 p + 4) u: the factors
(4 p + 8) u, (4 p + 24) u and (8 p + 24) u in the code, and the
evaluation error of the section's quantities stays inside e_poly's p (d +
4) + 24 ulps, p <= 8; measured by the referee in 60 digits: at most 0.34,
0.20 and 0.022 of these allowances). p = 0 (no dot product): k(x, x) = a is
constant, the term joins kappa0 (value scale, diagonal) and a sum_f c2_f /
l_f^2 joins H0 (so the increment bound is H0's), ||E|| <= a^1/2 ||E_Phi||;
the term is stationary and uses the stationary code paths. Checked
against the kernel's own derivatives in 40 digits in the tests (two and
three profiles, p = 0, 1, 2).

The Jacobian's rounding (``_product_jacobian_rounding``, general in the
tree's shape): the adapter's Product node computes fl(K1~ G2~ + K2~ G1~),
so by induction over a product tree of m leaves (constants included, their
G = 0) the computed gradient is sum_f G~_f prod_(g != f) K~_g (1 +
theta_f), |theta_f| <= gamma_(2 (m - 1)) (leaf f at depth D: two
roundings per node of its path, and m - 1 - D products inside the
siblings' values; the code charges gamma_(3 (m - 1))); with the leaves'
bounds |K_g| <= MK_g, |K~_g - K_g| <= dK_g, |G_f| <= MG_f, |G~_f - G_f| <=
dG_f (those of the two factors of "Products with a dot product", per leaf)
(the dot-product leaves each with their own s_k) the error is at most sum_f [dG_f prod_(g != f) (MK_g + dK_g) + MG_f
(prod_(g != f) (MK_g + dK_g) - prod_(g != f) MK_g) + gamma (MG_f + dG_f)
prod_(g != f) (MK_g + dK_g)] per entry (a RationalQuadratic leaf adds its
alpha-fold rounding, rel psi to dK and rel 2 |psi'| |x0_j - x_ij| / l_j^2
<= rel fac sqrt(phi) / l_j to dG, with rel, fac as for its terms:
``_rq_slope_rounding``; constants peeled off above the
product node are roundings of the whole term, counted in n_nodes), plus
the tree's sums relative to the term's magnitude a sum_f MG_f prod_(g !=
f) MK_g, as for the linear part. Every leaf's |G_j| and |dG_j| bounds are
a (B, N) coefficient times v_j = 1 / l_j (a profile) or |x_ij| (a dot
product), so column j's 2-norm over i is bounded, by the triangle
inequality over the leaves, by sum_profiles ||A_f|| / l_j + ||A_dp,i
|x_ij|||_i with (B, N) arrays only (B = 64, N = 2000, d = 10: 0.05 s, 24
MB). Checked against 50-digit values in the tests. Not covered (the old bounds serve): Matern 0.5 or ExpSineSquared
factors and products inside powers. One profile times constants that the
sum's walk cannot peel (``(C * C) * RBF``, what sklearn builds from ``2.0 *
C(1.5) * RBF()``) is a plain term a k with a the float product of the
constants, as sklearn computes it (since session 25; before, the old
bounds: 0.3-0.6 s per fitted Friedman #1 row instead of 0.005-0.02 s).

So, per box, v lies in [dlo - kappa0 + max(sqrt(P_min) - E, 0)^2,
dhi - kappa0 + (sqrt(P_max) + E)^2]. The first-order term is exact, so the
gap is the true variation of v plus O(sqrt(kappa0 v) E); the old bounds stay
in use and the tighter of the two is taken per box and side.

*Rounding.* sqrt(P) is computed from z = A [r0, J] by triangular solves, as
sklearn computes q: P(u) = kappa0 + u^T H0 u - ||A (r0 + J u)||^2 (linear
terms: kappa0 there and below is k_c's maximum over the box, kc_hi), whose
rounding (relative to F = kappa0 + u^T H0 u >= ||A (r0 + J u)||^2 by the
lemma, and to the summed terms) is covered by ``margin(scale)`` with the
factor's proven condition bound ("Soundness margin" below), as everywhere
in this module. The inputs' rounding (large feature offsets) perturbs r0 and J by dr0
(:meth:`KernelAdapter.rounding`) and dJ (:meth:`SmoothCovariance.jacobian_rounding`):
|P~ - P| <= 2 sqrt(F) delta + delta^2 with delta = sqrt(lam_max) (||dr0|| +
sum_j h_j ||dJ_j||), added to the margin of P before the square roots. The
outer margin (sklearn's own rounding of v at points of the box) is the one of
:meth:`LatentVariance.bounds`. Both margins are replaced, where smaller, by
the componentwise ones below (the two are valid bounds of the same errors;
the smaller is taken per box).

*The RKHS remainder* (also used by the old bound). For x in the box,
dr = r(x) - r(x0) = (k_x - k_x0)_X, so ||A dr||^2 = <k_x - k_x0, P (k_x - k_x0)>
<= ||k_x - k_x0||_H^2 = sum_t a_t 2 (kappa_t(0) - kappa_t(s_t)) <= sum_t a_t c2_t
s_t^2 = u^T H0 u <= sum_j H0_j h_j^2 =: Dh^2, because kappa_t''(s) >= -c2_t for
all s (so kappa(0) - kappa(s) <= c2 s^2 / 2 by Taylor's theorem with
kappa'(0) = 0): RBF (1 - s^2) e^(-s^2/2) <= 1; Matern 2.5 with t = sqrt5 s,
(1 + t - t^2) e^-t <= 1 (e^t >= 1 + t); Matern 1.5, (1 - t) e^-t <= 1 (checked
in 50 digits in the tests). In :meth:`LatentVariance.bounds` this
replaces the spectral split (2m mean-type bounds per box, within a factor ~2 of
it on the fitted models measured) by ``min(lam_max ||dr||^2, Dh^2)``. There
the expansion is about the *computed* r0~ = r~(x0), so the bound used is
(Dh + sqrt(lam_max) ||E + c_val u A||)^2, E the adapter's rounding over
the box, c_val u A its relative part (|r0~ - r(x0)| <= E + c_val u A, the
adapter's contract; :meth:`LatentVariance.rkhs_remainder`, since session
27). (The
linear part adds lin ||u||^2 exactly, which H0 includes; dot-product
powers add their own increment, ``SmoothCovariance.increment2``, module
doc "Dot-product powers".)

The first inequality, ||A dr||^2 <= (1 + rho) ||k_x - k_x0||_H^2, uses only
P <= (1 + rho) I, so it holds for every PSD kernel (the lemma's premise).
Any upper bound of sup_x ||k_x - k_x0||_H^2 = k(x, x) - 2 k(x, x0) +
k(x0, x0) over the box serves: :meth:`~skgprobust.kernels.KernelAdapter.rkhs_increment`
gives one per kernel from feature maps (stationary: 2 (psi(0) -
psi(phi_max)); ``DotProduct ** p``: (p R^(p-1) ||h||)^2; sums: the sum;
products: (sqrt(D1 A2) + sqrt(A1 D2))^2; integer powers; 1-D periodic;
WhiteKernel parts 0, as their cross-covariance sections vanish), and
:meth:`LatentVariance.rkhs_remainder` takes the smaller of it and Dh^2.
Where it is finite the spectral split is skipped, as for smooth kernels
(measured: an RBF + DotProduct regressor's std range took 4.4 s per row,
3.8 s of it in the split, and 0.2 s without; the CO2 model's std ranges
1 s -> 0.1 s per row).

*The Jacobian remainder* (session 30; :meth:`LatentVariance.jacobian_remainder`,
only where the local RKHS bound is off, ``smooth`` None). For Matern 0.5
the feature map is not differentiable, so sup ||k_x - k_x0||_H^2 = 2 a (1 -
e^-s) is *first* order in the box width, and nothing else here is second
order: a fitted Matern 0.5 regressor at noise / amplitude ~1e-6 needed
~2000 splits per std range (Friedman #1, d = 8, N = 1000: 3.2 s per row).
But the kernel *vectors* r(x) are differentiable on a box that holds no
support point, so with J any float matrix (the adapter's computed
Jacobian at the centre), r(x) - r0~ = (r(x) - r(x0) - J u) + J u + (r(x0) -
r0~) and ||A dr|| <= sum_j h_j ||A J_j|| + sqrt(lam_max) ||delta|| +
sqrt(lam_max) ||r(x0) - r0~||, delta the per-point second-order Taylor
remainder (with J's rounding) of the adapter's
:meth:`~skgprobust.kernels.KernelAdapter.first_order` (RBF, Matern,
RationalQuadratic, constants, sums, constant multiples). The first term
keeps the cancellation inside A J (one solve with d right-hand sides per
box); the second is second order, its factor sqrt(lam_max) moderate where
the Gram matrix is well conditioned (Matern 0.5), large where an RBF term
makes it nearly singular (then the solve is skipped: the ``cap``). The
smaller of the three remainders is used.

Non-constant diagonals
----------------------
For a non-stationary kernel (a DotProduct term or factor) k(x, x) varies
to first order over a box, and so does q(x) = r^T S r, by nearly the same
amount: the bounds above take dlo (the diagonal's minimum) against q's
maximum and lose that cancellation, a gap of first order in the box width
that stalled branch and bound (a 2-D RBF + DotProduct regressor: min-std
lower bound 0 after 5 s). With the tangent-plane and remainder parts of q
as above, v(x) = k(x, x) - q(x) lies in

    [min_x (k(x, x) - g . r(x)) + g . r0 - q0 - e,  max_x (k(x, x) - g . r(x)) + g . r0 - q0]

(the same expansion q = q0 + g . (r - r0) + ||A (r - r0)||^2, 0 <= the
last term <= e), and F(x) = k(x, x) - g . r(x) is bounded as one
Taylor model: the adapter's model of the diagonal
(:meth:`~skgprobust.kernels.KernelAdapter.diag_taylor`: exact polynomial
coefficients for dot-product powers, constants for stationary parts,
scaled for products with a stationary factor, summed over sums) plus its
model of -g . r, minimised by :func:`~skgprobust._bounds._mean.taylor_lower`
(:meth:`LatentVariance._diag_joint`), with the margins of
:func:`~skgprobust._bounds._mean.affine_lower` (relative rtol times both
models' magnitudes, absolute |g| . rounding). The rest of the margin (q's
and sklearn's evaluation, the diagonal's rounding through |dhi| in the
scale) is the one of the separate bound. The tighter of the two is taken
per box and side.

Rounding of the local bound: componentwise solve margins
--------------------------------------------------------
The kappa-scaled margin above bounds the error of a triangular solve by
kappa u ||z||: on fitted high signal-to-noise models (noise / amplitude
~1e-7, kappa ~ 6e4) it was ~10% of v and stalled branch and bound. The
error that matters is much smaller: only the *adjoint weights* a =
(L L^T)^-1 D r (for the regressor a = K_y^-1 k(Xs, x), the interpolation
weights, ||a|| ~ 0.3 on those models) enter it to first order. Notation:
D = col_scale (I for the regressor), r' = D r, z = L^-1 r', q = ||z||^2,
a = L^-T z; nLabs >= || |L| ||_2 (:func:`~skgprobust._fp.nonneg_norm2_upper`,
Collatz-Wielandt, rigorous); nLinv >= ||L^-1||_2 (regressor: sqrt(lam_max);
Laplace GPC: L L^T = fl(I + D fl(K) D) + dB >= (1 - t) I, t = 2 gam nLabs^2
(Cholesky's backward error) + Dmax^2 (||fl(K) - K||_F + 3 u N kappa0) (the
kernel matrix's rounding and the products; D K D >= 0));
gam = ``margin_rtol(N, d)``.

*Solve model* (the one property of BLAS/LAPACK assumed here, and by the
kappa-scaled margin below). Each column z~ of a triangular solve
(sklearn's ``solve_triangular(L_, K_trans.T)``, our
:meth:`LatentVariance._apply_A`; scipy calls LAPACK ``dtrtrs`` -> BLAS
``dtrsm``) satisfies (L + dL) z~ = r' with |dL| <= gamma_(N+1) |L|
componentwise, hence ||dL z~|| <= gamma_(N+1) nLabs ||z~||. This is Higham,
Accuracy and Stability of Numerical Algorithms (2nd ed.), Thm 8.5 (forward
substitution: |dL| <= gamma_N |L|), whose proof (Lemma 8.4) holds for *any*
order of evaluating the inner product sum_j l_ij z_j. That is what makes it
cover blocked and multithreaded trsm with conventional (not Strassen-like)
level-3 kernels: a block of rows subtracts the products with the already
solved blocks by GEMM (partial sums of the same inner product, in another
order; threads split rows or right-hand sides, not the terms of one sum,
and even a split sum is a sum in some order) and solves its diagonal block by
substitution, so every component is one inner product in some order and one
division. OpenBLAS (the BLAS here) stores the reciprocals of the diagonal and
multiplies (two roundings instead of one division): gamma_(N+1) instead of
gamma_N. Not covered: a trsm that multiplies by explicitly inverted diagonal
*blocks* or uses fast matrix multiplication (only normwise stable, Higham
Sec. 13.1 / 23); tests/test_proof_gaps.py measures the componentwise
backward error (Oettli-Prager) of this platform's solve_triangular against
exact rational residuals. The solves' terms below use gs = 2
gamma_(N+1) (``GS_FACTOR``; the model needs gamma_(N+1), the factor 2 is
headroom; the largest backward error measured there, with 1 and 2 BLAS
threads, is 2.1 u against gamma_(N+1) = 601 u at N = 600; on another
BLAS the platform tests there must pass before these bounds are trusted:
a trsm with inverted diagonal blocks is outside the model, and the old
constant's ~8x slack no longer hides it); the other
roundings (sums of squares, the assembly, subtractions) keep gam = (8 (N +
d) + 256) u >= 7.9 gamma_(N+1). Until session 18 the solves used gam as
well: on the unscaled Friedman #3 trend model (``bench_std_snr.py``,
rbf+dp) the two solve terms were 96% of the local bound's margin, 4.6% of
the variance at any box size.

*Lemma (first-order error).* With z = L^-1 r' exact and z~ computed,
z~ - z = -L^-1 dL z~, so

    ||z~||^2 - ||z||^2 = -2 a^T dL z~ + ||L^-1 dL z~||^2,
    | . | <= 2 gs ||a|| nLabs ||z~|| + (nLinv gs nLabs ||z~||)^2,

and ||z~|| <= ||z|| / (1 - rho_s), rho_s = nLinv gs nLabs (< 1/2 required;
otherwise the kappa margin is used). For a perturbation delta of r' (kernel
rounding), q(r' + delta) - q(r') = 2 a^T delta + ||L^-1 delta||^2, bounded by
2 ||a|| ||delta|| + nLinv^2 ||delta||^2 or by 2 ||z|| nLinv ||delta|| +
nLinv^2 ||delta||^2 (the smaller is used).

*The weights over the box.* a(x) = (L L^T)^-1 D r(x). At the centre we
compute a0~ = fl(L^-T z0~) with z0~ = fl(L^-1 fl(D R)), R our kernel values;
by the solve model twice, ||(L L^T)^-1 fl(D R)|| <= ||a0~|| + nLinv gs nLabs
(nLinv ||z0~|| + ||a0~||) =: aR. For any vector f_X of values of f in H,
||(L L^T)^-1 D f_X|| <= nLinv ||L^-1 D f_X|| = nLinv <f, P f>^1/2 <= nLinv
||f||_H (lemma 0 <= P <= I). Hence, with ||fl(D R) - D r0|| <= dR (input
rounding :meth:`KernelAdapter.rounding`, which also carries the distance's
rounding, plus the rounding of each kernel value and of the product with D,
<= cv = c_val u kappa0 per entry, :meth:`SmoothCovariance.value_rounding`,
c_val = :meth:`LatentVariance._value_ulps`: the adapter's proven
:meth:`~skgprobust.kernels.KernelAdapter.value_ulps`, + 1 with D; relative
to the term magnitude A(x, x_i) = k_c(x, x_i) <= kappa0, every term being
>= 0 (mixed sections: c_val u value_scale, see "Mixed sections" below).
The single source of the constant is the adapters' contract (tested against
mpmath in tests/test_rounding.py); the earlier hand-written (2d + 44 + 2T)
u kappa0 is 2-3x larger for the usual trees (c_val 17-26 for C * leaf sums
of up to 3 terms plus constants and White, d-independent, against >= 46 +
2T), but is not a bound for arbitrary trees (every Sum / Product node adds
1 to c_val, also nodes of constants that T does not count):

    ||a(x)|| <= aR + nLinv^2 dR + nLinv ||k_x - k_x0||_H <= aR + nLinv^2 dR + nLinv Dh.

*Column-wise* (session 19; the smaller of the two forms is used, per box
and per use). nLinv Dh charges the box's whole RKHS displacement the
worst direction of (L L^T)^-1; on trend models it is mostly the linear
part (||w||^2 >= lin ||u||^2), which the data pin down, so the actual
weights barely move: on the unscaled Friedman #3 model of
``bench_std_snr.py`` (features up to ~1700, noise 2e-4) nLinv Dh = 646 at
gamma while ||a(x)|| <= 0.8. Instead, with k_x = k_x0 + w + E (the
expansion below), r(x) = r0 + J u + E_X and a(x) = (L L^T)^-1 D r0 + (L
L^T)^-1 D J u + (L L^T)^-1 D E_X. We also solve L^T aJ~_j = ZJ~_j for the
columns of the first-order term (ZJ~ = fl(L^-1 fl(D G)), the columns
already solved for P); by the solve model twice, as for aR,
||(L L^T)^-1 fl(D G)_j|| <= ||aJ~_j|| + nLinv gs nLabs (nLinv ||ZJ~_j|| +
||aJ~_j||) =: aJ_j, so ||(L L^T)^-1 fl(D G) u|| <= aJh = sum_j h_j aJ_j
and, with ||(fl(D G) - D J) u|| <= dGh (the Jacobian's rounding, below),
||(L L^T)^-1 D J u|| <= aJh + nLinv^2 dGh. The remainder: ||(L L^T)^-1 D
E_X|| <= nLinv ||L^-1 D E_X|| = nLinv <E, P E>^1/2 <= nLinv (1 + rho)^1/2
||E||_H <= nLinv E' (E' the remainder bound of the local bound, with its
factor (1 + rho)^1/2). Hence, for every x of the box,

    ||a(x)|| <= aR + nLinv^2 dR + aJh + nLinv^2 dGh + nLinv E',

and ||(L L^T)^-1 D (r0 + J u)|| <= aR + nLinv^2 dR + aJh + nLinv^2 dGh,
||(L L^T)^-1 (fl(D R) + fl(D G) u)|| <= aR + aJh for every |u| <= h (the
a_ex and a_own of the margins below). Each sum is rounded up by (1 + 4 u)
(a_own's single addition) or (1 + 8 u)
and the norms by (1 + 4 (N + d) u). Cost: one more triangular solve per
column of J (d per box), batched with a0's. Measured on that model: the
margins at gamma 1.1e-3 -> 1.8e-6 (v ~ 3.2e-4), and every tested row's std
range converges at gamma instead of 1 in 5 (``bench_std_snr``). Tested:
a_box against ||a(x)|| computed at sampled points and vertices of boxes
up to several length-scales wide (where dropping nLinv E' fails the test),
regressors and a Laplace classifier, near and far from the origin.

*Our evaluation of P* (replaces mP where smaller). P~ is assembled from
z0~, ZJ~; exactly, kappa0 + u^T H0 u - ||y~(u)||^2 with y~(u) = z0~ + ZJ~ u,
while y*(u) = L^-1 (fl(D R) + fl(D G) u) and (L + dL) y~(u) = ... with
||dL-term|| <= gs nLabs s, s = ||z0~|| + sum_j h_j ||ZJ~_j|| (columns solved
separately), so by the lemma |  ||y~||^2 - ||y*||^2 | <= 2 gs a_own nLabs s +
(nLinv gs nLabs s)^2, a_own = min(aR + nLinv (Dh + nLinv dGh), aR + aJh) >=
||L^-T y*(u)|| (dGh >= ||(fl(D G) - D J) u||, the Jacobian's rounding; aJh
column-wise, above). The computed R, G
differ from the exact r0, J by dn = dR + dGh: perturbation term with
||a|| <= a_ex = min(aR + nLinv^2 dR + nLinv Dh, aR + nLinv^2 dR + aJh +
nLinv^2 dGh) and ||z|| <= sqrt(kappa0 + Dh^2). The
assembly (vc0, g, H1) and :func:`taylor_lower` err by <= gam times the summed
magnitudes (``scale``), as before but without kappa.

*sklearn's evaluation* (replaces the outer margin where smaller). At any x
of the box sklearn's kernel values r~'(x) differ from D r(x) by <= dRx
(as dR, over the box), z = L^-1 r~', ||z|| <= sqrt(k0) + nLinv dRx (since
||L^-1 D r(x)||^2 = q(x) <= (1 + rho) k_c(x, x) = k0, the lemma for the
float factor), ||L^-T z|| <= a_x + nLinv^2 dRx with a_x = min(aR +
nLinv^2 dR + nLinv Dh, aR + nLinv^2 dR + aJh + nLinv^2 dGh + nLinv E') >=
||a(x)|| ("The weights over the box"); its v~ = fl(fl(diag) - fl(sum z~_i^2)) errs
from v(x) by at most

    gam ||z~||^2 + 2 gs ||a|| nLabs ||z~|| + (rho_s ||z~||)^2 + gam |dhi|
      + (perturbation term of dRx with ||a|| <= a_x).

On the Friedman #1 Matern models this margin is ~1e-7 of v instead of ~0.1.

Mixed sections (multi-output kernels)
-------------------------------------
Nothing above needs the support points to be points of the same space as
x, nor k(Xs, x) to be bounded by k(x, x): the local bound holds for any PSD
kernel K on any set Z, a query section k_x = K(., z(x)) whose kernel
k_pp(x, x') = K(z(x), z(x')) in x is of the :class:`SmoothCovariance` form,
and support points z_i whose Gram matrix Kc satisfies L L^T = Kc + E + Er, E PSD
(diagonal noise of any non-negative values, white parts) and Er the
rounding, bounded as in "The lemma for the float factor" (P <= (1 + rho) I;
a subclass whose adapter is not the support kernel sets
``_LEMMA_ADAPTER_IS_SUPPORT_KERNEL = False``: no noise credit, kmax from
the factor's rows). The lemma 0 <= P
<= I, the expansion, the remainder E and ``H0`` are then those of k_pp;
only the support sections r(x)_i = K(z_i, z(x)) are different, bounded by
Cauchy-Schwarz instead of by k_pp(x, x). They enter the margins in two
places, both parameters of :class:`SmoothCovariance` (defaults: the single
kernel): the per-entry rounding of the computed values, cv = c_val u
value_scale (:meth:`SmoothCovariance.value_rounding`), value_scale >= the
magnitude of the summed products that form an entry (single kernel: kappa0
>= |k(x, x_i)|), c_val the composite adapter's proven constant plus the
extra roundings of the mixture (the caller's ``_value_ulps``), and
value_terms those extra roundings (the Jacobian's); and the Jacobian's
rounding (:meth:`SmoothCovariance.jacobian_rounding`), with per-term
weights w_ti (entry i holds term t with amplitude a_t w_ti) for the input
rounding and (16 + value_terms) u sum_t a_t w_ti sup|kappa_t'| / l_tj for
its own and the mixture's arithmetic. The caller passes the object to
:class:`LatentVariance` (``smooth=``) and vouches for the structure; the
linear model of coregionalisation (:mod:`skgprobust._multioutput`) is the
user: K = the LMC covariance on (x, output), z(x) = (x, p).

Polynomial kernels: the exact polynomial form
---------------------------------------------
When the cross-covariance is a polynomial kernel, ``const + sum_t a_t (s_t +
x . y)^p_t`` (a_t, s_t, const >= 0, p_t positive integers; WhiteKernel
summands add ``white`` to the diagonal only; see
:class:`~skgprobust.kernels.polynomial.PolynomialCovariance`), with at most
100 monomials of degree <= P = max p_t, each box also gets a bound from the
exact form of v (real arithmetic first):

    k(Xs, x) = F phi(x),  k_c(x, x) = phi(x)^T diag(c) phi(x),
    v(x) = white + phi(x)^T H phi(x),  H = diag(c) - Z*^T Z*,  Z* = A F,

phi(x) = (x^alpha)_{|alpha| <= P}, F[i, alpha] = c_alpha x_i^alpha (binomial
and multinomial theorems). With c the (float) box centre and u = x - c,
phi(c + u) = T(c) psi(u), psi(u) = (u^beta)_{|beta| <= P}, T[alpha, beta] =
prod_j C(alpha_j, beta_j) c_j^(alpha_j - beta_j) (beta <= alpha), so

    v(c + u) = white + psi(u)^T Hc psi(u) = sum_gamma b_gamma u^gamma,
    Hc = T^T H T,  b_gamma = sum_{beta + beta' = gamma} Hc[beta, beta'],

a polynomial of degree 2P, exactly. The box [lo, hi] lies in |u_j| <= h_j,
h = max(hi - c, c - lo) (1 + 4 u) (covers the rounding of c). Over it: the
terms of degree <= 2 form a :class:`TaylorModel` (value b_0 + white,
gradient, Hessian) whose minimum and maximum come from
:func:`~skgprobust._bounds._mean.taylor_lower` (valid lower bounds of a
quadratic on a box); each term of degree >= 3 lies in [-|b| h^gamma,
|b| h^gamma], or in [min(b, 0) h^gamma, max(b, 0) h^gamma] when all
exponents of gamma are even. The gap is O(h^3) beyond the separable bound of
the quadratic part; nothing is lost to the cancellation between k(x, x) and
q(x), which is done in the coefficients.

*Rounding.* Z = fl(solve(L, D F)) is computed once, by the triangular solve
sklearn uses, and H = fl(diag(c) - Z^T Z). Three errors, each bounded:

1. Z vs Z* = A F*: ||Z - Z*||_2 <= ||L^-1|| (||L Z - fl(D F)||_F + its own
   rounding (N + 2) u || |L| |Z| ||_F + 2 (4P + d + 8) u || |D F| ||_F) =: dz
   (F's entries are products of <= P + 1 factors, c_alpha of binomial and
   multinomial factors and powers of s). With q = ||Z phi||^2, q* =
   ||Z* phi||^2 <= k_c(x, x) (the lemma above: 0 <= P <= I), |q - q*| <=
   2 sqrt(k_c) delta + delta^2, delta = dz ||phi||. Over the box |phi_alpha|
   <= t_alpha := (|T| h^beta)_alpha, so k_c <= kmax := t^T diag(c) t and
   ||phi|| <= ||t||. (||L^-1|| is the proven bound of the set-up,
   "Soundness margin" below, used for ``s_err`` too.)
2. Our own evaluation with Z, relative to mag = t^T (diag(c) + |Z|^T |Z|) t
   + sum_gamma |b_gamma| h^gamma, which bounds the sum of the absolute values
   of every product we add up: G = Z^T Z (N terms), H (one subtraction), T
   (a binomial times d powers c_j^k: <= 2d + 1 roundings per entry), T^T H T
   (2n terms), the b_gamma (<= n terms), the evaluation of the bound (<= d^2
   + n2 terms): all below (N + 3n + n2 + d^2 + 4d + 20) u mag (first
   order), covered about 8 times
   by ``margin_rtol(N + 3n + n2 + d^2 + 2P, d) * mag``.
3. sklearn's own rounding of var at the points of the box (the numbers it
   returns): its triangular solve and sums, ``margin(2 kk)`` with kk =
   max(|dhi|, kmax + white) >= k(x, x) >= q* (the kappa-scaled margin of this
   module), and the rounding of its kernel values r~ = r + dr (inner
   products: :meth:`KernelAdapter.rounding`; the power, the constant and the
   sum of terms: (4P + 32) u |r|, |r| <= max(|klo|, |khi|)): |q(r~) - q(r)|
   <= 2 sqrt(kk) a + a^2, a = sqrt(lam_max) ||dr||.

The three margins are added to both sides. The form is used only for n <= 100
monomials and n2 = C(d + 2P, 2P) <= 2000; it is taken per box and side when
tighter than the other bounds (and the spectral split of the other bound is
skipped where it cannot beat it: the choice does not affect soundness).

Soundness margin (the kappa-scaled margin)
------------------------------------------
Rounding model: IEEE double, round to nearest, u = 2^-53, gamma_n = n u /
(1 - n u) (<= 1.01 n u here); dot products of n terms in any order (BLAS
included) err by <= gamma_n times the sum of the absolute products (Higham
Sec. 3.1); the solve model above; Cholesky (LAPACK ``dpotrf``): R R^T = M +
E, |E| <= gamma_(n+1) |R| |R^T| (Higham Thm 10.3, any order, blocked with
conventional level-3 BLAS); underflow is treated where it can matter.
The bounds are exact in real arithmetic for A = L^-1 D with the float L and
D that the model holds; the margin ``margin(scale) = gam kappa scale``
(``gam = margin_rtol(N, d) = (8 (N + d) + 256) u``) covers the distance
between that exact value and the number sklearn returns at any x of the box
(and our own evaluations of q0, g by the same solves), for any ``scale >=
max(q(x), |k(x, x)|)`` (every caller's scale is: it contains |dhi| >= k(x, x)
and a bound of q over the box; where a caller's bound of q rests on the
lemma, q <= (1 + rho) k_c(x, x): ``kappa`` carries the factor (1 + rho),
"The lemma for the float factor").

*Proven norms of the factor* (:meth:`LatentVariance.__init__`). nLabs >=
|| |L| ||_2 >= ||L||_2 by :func:`~skgprobust._fp.nonneg_norm2_upper`
(Collatz-Wielandt). nLinv >= ||L^-1||_2 by
:func:`~skgprobust._fp.tril_inv_norm2_upper`: for the regressor from the
residual of the computed inverse X = fl(L^-1) (``||L^-1|| <= ||X|| / (1 -
||I - L X||)``) and a Cholesky certificate of lambda_max(fl(X^T X)); for the
classifiers (B = I + W^1/2 K W^1/2 >= I) from a Cholesky certificate of
lambda_min(fl(L L^T)) minus gamma_N || |L| ||^2. (A power-iteration
estimate times 1.5 was used before: an estimate, not a bound; on the
fitted models measured the proven nLinv is within 1e-6 relative of the
true norm, so the new kappa is ~0.6x the old one.) lam_max >= ||L^-1 D||^2
is lambda_max(fl(S)) certified the same way plus ``s_err`` (and, regressor,
<= nLinv^2); eigh's eigenvalues are no longer trusted as bounds.

*The margin.* Let r' = D r(x) (exact kernel values at the float x; input
rounding is :meth:`LatentVariance.input_rounding`'s, added separately),
z = L^-1 r', q = ||z||^2; sklearn computes r~' (its kernel values, times D),
z~ = fl(solve(L, r~')), s~ = fl(sum z~_i^2) and v~ = fl(fl(k(x, x)) - s~).

(a) Kernel values: |r~'_i - r'_i| <= |D_i| c_val u sqrt(k(x, x) k(x_i, x_i))
    beyond the adapter's ``rounding`` (added separately), with c_val =
    ``adapter.value_ulps(d)`` (+ 1 with a column scale D: the product
    fl(D_i k~_i)), proven per adapter
    (:meth:`~skgprobust.kernels.KernelAdapter.value_ulps`: relative to the
    term magnitude A <= sqrt(k(x, x) k(x_i, x_i)) for positive semi-definite
    kernels; every error that is not a bounded multiple of the value --
    inputs, distances, a power's amplification of its base's rounding -- is
    in ``rounding``; e.g. 19 for C * RBF + White; an adapter class without
    its own proof falls back to the documented assumption 2d + 64), so with w =
    sqrt(N) c_val u sqrt(kii), kii >= max_i D_i^2 k(x_i, x_i) (the larger
    of Dmax^2 max_i k(x_i, x_i) by the adapter and max_i (L L^T)_ii; the
    first is valid where the adapter's kernel is the support points' own
    (regressor, classifiers, the sparse models' inducing points), the second
    where L L^T = D K D + a non-negative diagonal up to Cholesky's error (the
    multi-output LMC, whose adapter is one output's)): ||r~' - r'|| <=
    w sqrt(k(x, x)) <= w sqrt(scale),
    z1 = L^-1 r~' has ||z1 - z|| <= nLinv w sqrt(scale) and
    | ||z1||^2 - q | <= Vt scale, Vt = 2 nLinv w + (nLinv w)^2.
(b) Solve: z~ - z1 = -L^-1 dL z~, ||z~ - z1|| <= beta ||z~||, beta =
    nLinv gamma_(N+1) nLabs, so with beta' = beta / (1 - beta),
    | ||z~||^2 - ||z1||^2 | <= beta' (2 + beta') ||z1||^2.
(c) Sum of squares: |s~ - ||z~||^2| <= gamma_N (1 + beta')^2 ||z1||^2.
(d) k(x, x): <= c_diag u |k(x, x)| (c_diag = ``adapter.diag_ulps(d)``, proven
    per adapter, :meth:`~skgprobust.kernels.KernelAdapter.diag_ulps`; by the kernel tree:
    1 for stationary leaves and constants, d + 2 for ``DotProduct``, p c + 16
    for ``Exponentiation``, sums max + 1, products c1 + c2 + 1; the earlier
    text's "8 u" was false for DotProduct (~d u) and powers of it) and the
    subtraction (u |v~| <= 3 u scale): <= (c_diag + 3) u scale. The
    derivation below budgets 11 u scale (c_diag <= 8); ``_kappa`` adds
    max(c_diag - 8, 0) u / gam to kappa, i.e. the excess itself.

With kappa_a = nLinv nLabs (>= 1) and the requirement gam kappa_a <= 1
(else kappa = inf: the bounds become infinite, never wrong), beta <= 1.01
(N + 1) u kappa_a <= 0.13, beta' <= 1.15 beta, and (b) + (c) <= 3.9 (N + 1) u
kappa_a ||z1||^2 with ||z1||^2 <= (1 + Vt) scale. Altogether

    |v~ - v| <= scale ((3.9 N + 15) u kappa_a + Vt (1 + 3.9 (N + 1) u kappa_a))
             <= scale (gam kappa_a / 2 + 2 Vt),

for every N >= 1 (3.9 N + 15 <= (8 N + 256) / 2; 3.9 (N + 1) u kappa_a <=
1). The code's ``kappa = nLinv (nLabs + 2 Vt / (gam nLinv))`` gives
gam kappa scale = (gam kappa_a + 2 Vt) scale, 2x headroom on the solve
part. (The earlier constant used the 1.5x estimates and no explicit (a):
with the kernel values' rounding bounded by sqrt(N) c_val u kappa0 in norm,
2 sqrt(N) (2d + 44) <= 8 N + 256 fails for 5 < N < 200 at d = 11, which
was the documented "may fall slightly short for N below about 200".)
Cost on the fitted models measured (Friedman #1, d = 10, N = 250 / 500,
C * RBF-ARD + White, noise 1e-2 .. 1e-7): kappa 0.57-0.61x the old value
(the 1.5 x 1.5 of the estimates is gone; Vt adds a few per cent), Laplace
GPC 0.55x; set-up +0.06 s at N = 500 (0.17 -> 0.23 s, the eigenpairs'
error of the spectral split), +0.08 s at N = 1000 (0.98 -> 1.08 s; load
~10).

That holds because q(r0), its gradient and point values are computed with
triangular solves, as sklearn does; the explicit S (condition kappa^2) is
used only for its spectrum, widened by a computed bound on its error
(``s_err``, with the proven nLinv) and, in the spectral split, by the
eigen-decomposition's own error (:meth:`LatentVariance._eig_error`: loss of
orthogonality eta of the computed V and the residual eps of fl(S) - V
diag(lam) V^T, both computed with their own rounding; the split's remainder
becomes lam_m (1 + eta) + eps + s_err) and by the rounding of the
projections z0 = fl(r0 @ V) ((N + 2) u |r0| @ |V|).

Without the lemma
-----------------
The lemma P <= (1 + rho) I needs a PSD kernel; where it fails (rho =
inf: ExpSineSquared on more than one feature, a regressor's ``alpha``
array with negative entries, a certificate that did not succeed) kappa
is infinite and, before session 25, so were all variance bounds
([0, inf] std ranges, vacuous probability ranges). The margin's
derivation above does not use the lemma: it needs (i) a scale >= q(x)
and >= |k(x, x)| at every x of the box (up to what its headroom
absorbs, below) and (ii) step (a)'s ||r~' - r'|| <= w sqrt(k(x, x)), i.e.
the term magnitude A(x, x_i) <= sqrt(k(x, x) k(x_i, x_i)). (1 + rho)
enters kappa only for callers whose bound of q is q <= (1 + rho) k_c(x,
x). So :meth:`LatentVariance.margin_direct` uses ``kappa_direct`` = the
same expression without (1 + rho) where kappa is infinite (rho infinite,
or so large that kappa overflows: the argument below holds for any rho),
the adapter is ``dominated`` (ii: :attr:`KernelAdapter.dominated`, proven
per leaf and closed under sums, products and powers; an ExpSineSquared
has 0 < k <= 1 = k(x, x) on any number of features), the adapter is the
support points' own kernel (kii from its diagonal) and the class keeps
the base :meth:`margin`; elsewhere it is :meth:`margin` itself, so
nothing changes where the lemma holds. kappa_direct is finite only with
gam kappa_a <= 1 (``_kappa``), so the solve's relative error is beta =
1.01 (N + 1) u kappa_a <= 0.128 below.

Its callers are :meth:`LatentVariance.bounds` and
:func:`~skgprobust._bounds._variance_affine.affine_variance_enclosure`,
with scale = scale0 + e, scale0 = |q0| + sum_i |g_i| rmax_i + ||g|| ||rmax||
+ |dhi|. Proof of (i) (referee, session 25). With r0~ the computed kernel
vector at the centre (a fixed float vector), dr = r(x) - r0~, z = L^-1 D
r0~ exact, z~ and y~ the computed forward and backward solves (q0 =
fl(||z~||^2), g = 2 D y~): q(x) = q(r0~) + g* . dr + ||A dr||^2 exactly,
g* = 2 S r0~. (a) q(r0~) = ||z||^2 <= c1 q0, c1 = (1 + beta)^2 / (1 -
gamma_N) <= 1.28 (step (b)'s ||z~ - z|| <= beta ||z~||, step (c)'s sum).
(b) The error of g enters only paired with A dr: (g* - g) . dr = 2 [(z -
z~) + dL2^T y~] . (A dr) (dL2 the backward solve's perturbation), so
|(g* - g) . dr| <= 2 beta (2 + beta') ||z~|| ||A dr|| <= c2 (q0 e)^1/2
with c2 ~ 4.3 beta. (c) g . dr <= sum_i |g_i| rmax_i (|dr_i| <= rmax_i;
not |dr_i| <= rmax_i - |r0~_i|, which fails for kernels that change sign).
(d) The slack: ||g|| ||rmax|| >= |g . r0~| >= 1.42 q0, as y~ . (D r0~) =
z~ . z - y~^T dL2 z. (e) ||A dr||^2 <= e (lam_max ||dr||^2 or the
spectral split: no lemma; the RKHS remainder is infinite there). Hence
q(x) <= scale + max(0, c2 (q0 e)^1/2 - 1.1 q0) <= scale + 4.2 beta^2 e,
at most 0.07 scale, and |dhi| >= k(x, x). The derivation's 2x headroom on
the solve part absorbs that excess (a factor 1.07 on the (3.9 N + 15) u
kappa_a and Vt terms), and our own evaluation of q0 and g (<= 0.28 gam
kappa_a q0 and 0.275 gam kappa_a (q0 + e), paired with A dr as in (b)),
because scale >= 2.4 q0 + e; the ~1.49 Vt of the derivation becomes ~1.65
Vt <= 2 Vt. (The ||g|| ||rmax|| term was first justified as a bound of
||g* - g|| ||dr|| with ||g* - g|| <= 0.3 ||g||; that is false: the error
of g can exceed ||g|| where kappa_a is large, but it only ever multiplies
A dr, which (b) bounds.)

The input rounding's ||A r|| <= ((1 + rho) k(x, x))^1/2 becomes ||A r(x)||
<= ||A r0~|| + ||A dr|| <= (c1 |q0|)^1/2 + e^1/2 (a), (e), with c1 taken
as 1.3 (:meth:`LatentVariance.input_rounding`'s ``qmax``, computed once
per box with the e before the spectral split, which bounds ||A dr||^2
too). The floor, the local RKHS, polynomial and per-point bounds rest on
the lemma and stay infinite there, and so does the paper's LP / QP method
(its margin is kappa-scaled). sklearn computes such a variance as is (it
may be negative; the regressor clips it to 0 with a warning): the bounds
are of the unclipped value, the std objective takes max(v, 0) as predict
does, and the probability objectives read the range as they do for a
finite rho > 0 (whose lower bounds may be negative too).

Measured (``benchmarks/bench_non_psd.py``, session 25, 10 rows per case,
before = infinite bounds): std ranges of a three-feature ``RBF +
ExpSineSquared + White`` regressor 0% -> 100% converged (5.0 -> 0.33 s per
row), of a negative-alpha regressor 0% -> 100% (0.006 s); probability
ranges of two-feature Laplace classifiers with ``RBF + ExpSineSquared`` /
``RBF * ExpSineSquared`` 0% -> 100% (2.0 -> 0.03 / 0.07 s per row). A
fitted high signal-to-noise Friedman #1 model with an ExpSineSquared term
stays at 0% (gap 0.53 on a std of 0.52): lam_max ||dr||^2 is the
O(kappa0 h^2 / l^2) remainder of the general bounds.
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas, lapack, solve_triangular

from .._fp import UNIT_ROUNDOFF as _U
from .._fp import extended_unit_roundoff, gram_minus_extended
from .._fp import margin_rtol, nonneg_norm2_upper, psd_lower_certificate, sym_lambda_max_upper, tril_inv_norm2_upper
from ..kernels._base import TaylorModel, box_halfwidths
from ..kernels._base import input_rounding as _input_rounding
from ._mean import affine_lower, taylor_lower

# Work per box that the spectral split may spend (m * N * d).
_SPECTRAL_BUDGET = 2e5
# The spectral split is used only when lambda_max(S) k(x, x) exceeds this,
# i.e. for nearly noise-free regressors, where lambda_max(S) ~ 1 / noise
# makes the plain lambda_max ||dr||^2 term useless; elsewhere (e.g. the
# Laplace GPC, lambda_max(S) <= max W <= 1/4) splitting boxes is cheaper.
_SPECTRAL_MIN_GAIN = 50.0
# ... and only when the spectrum of S decays within the m directions kept:
# the remainder is lam_m ||dr||^2, so with lam_m > this fraction of
# lambda_max (a flat spectrum, e.g. a Laplace GPC with a large kernel
# amplitude) the split costs 2m bounds per box and gains almost nothing.
_SPECTRAL_MAX_REST = 0.05


def _poly_mul(P, Q):
    R = {}
    for (a, b, c), x in P.items():
        for (d, e, f), y in Q.items():
            k = (a + d, b + e, c + f)
            R[k] = R.get(k, 0) + x * y
    return R


def _poly_pow(P, n):
    R = {(0, 0, 0): 1}
    for _ in range(n):
        R = _poly_mul(R, P)
    return R


def _poly_lin(*pairs):
    """sum of coefficient * monomial, monomials keyed (k, i, j) = S^k b^i e^j."""
    R = {}
    for c, P in pairs:
        for key, v in P.items():
            R[key] = R.get(key, 0) + c * v
    return R


_POWER_REMAINDERS = {}


def _dot_polynomial(dp_leaves):
    """(p + 1,) coefficients c_j >= 0 of g(t) = prod_k (s_k + t)^(q_k) =
    sum_j c_j t^j for the dot-product factors ``dp_leaves`` = ((s_k, q_k),
    ...) (s_k = sigma_0^2 >= 0): products and sums of non-negative floats,
    so each c_j carries a relative error <= 2 p u ([1.0] without factors)."""
    c = np.array([1.0])
    for s2, q in dp_leaves:
        for _ in range(q):
            c = np.convolve(c, [s2, 1.0])
    return c


def _gsum(c, T, order):
    """(B,) sums of the polynomial g(t) = sum_j c_j t^j at T >= 0 (B,):
    ``order`` 0: g(T); 1: g'(T) = sum_j j c_j T^(j-1); 2: g''(T); "J": sum_j
    j^2 c_j T^(j-1) (>= ||psi(x) - psi(x0)||^2 / ||x - x0||^2 for ||x||^2,
    ||x0||^2 <= T, module doc "Products of several factors"). All terms are
    non-negative: the float sum errs by <= (2 p + 4) u relative (times the
    coefficients' 2 p u)."""
    out = np.zeros(np.shape(T))
    for j, cj in enumerate(c):
        if order == 0:
            out = out + cj * T**j
        elif order == 1 and j >= 1:
            out = out + j * cj * T ** (j - 1)
        elif order == 2 and j >= 2:
            out = out + j * (j - 1) * cj * T ** (j - 2)
        elif order == "J" and j >= 1:
            out = out + j * j * cj * T ** (j - 1)
    return out


def _dot_parts(ax, s2, d):
    """``(e_i, M_i)``, (B, N): |t~_i - t_i| <= e_i and M_i >= |t_i|, |t~_i|
    for t_i = x0 . x_i + s2, ``ax`` = |x0| . |x_i| (the rounding of
    ``DotProductPowerAdapter.rounding``: a sum of d products and s2)."""
    base = (ax + s2) * (1.0 + 1e-12)
    e_i = (d + 2) * _U * base + d * 2.0**-1074
    return e_i, base + e_i


def _rq_slope_rounding(x0, Xs, ls, al):
    """The RationalQuadratic profile's alpha-fold rounding at the points x0
    (B, d) against Xs (N, d) (module doc, "Remainder";
    :meth:`SmoothCovariance.jacobian_rounding`): ``(D, phi, rel, fac,
    fac_v)`` with D (B, N, d) >= |x0 - x_i| (rounded up), phi (B, N) the
    scaled squared distance from D (an upper bound; phi (1 - 1e-12) a lower
    one), rel >= the relative error of the computed slope psi'(phi) and of
    the value psi(phi) beyond the stationary terms' 16 u (the base's
    relative error |e| <= u + t (d + 6) u / (1 + t) raised to the power
    alpha + 1 >= alpha: expm1((alpha + 1) u + (1 + 1 / alpha) (phi / 2) (d
    + 6) u), times 1 + 4 u), fac >= (1 + t)^(-alpha - 1) = 2 |psi'(phi)|
    and fac_v >= (1 + t)^-alpha = psi(phi) (t = phi / (2 alpha), from the
    lower bound of phi; the powers evaluated as exp(-c log1p(t) (1 -
    1e-12)) (1 + 1e-13), which covers the few-ulp errors of log1p, the
    product and exp)."""
    d = x0.shape[1]
    D = np.abs(x0[:, None, :] - Xs[None, :, :]) * (1.0 + 4.0 * _U)  # (B, N, d)
    phi = ((D / ls) ** 2).sum(-1)  # (B, N)
    with np.errstate(over="ignore", invalid="ignore"):
        expo = ((al + 1.0) * _U + (1.0 + 1.0 / al) * 0.5 * phi * (1.0 + 1e-12) * (d + 6) * _U)
        rel = np.expm1(np.minimum(expo * (1.0 + 4.0 * _U), 700.0)) * (1.0 + 4.0 * _U)
        rel = np.where(expo < 700.0, rel, np.inf)
        lg = np.log1p(phi * (1.0 - 1e-12) / (2.0 * al)) * (1.0 - 1e-12)
        fac = np.exp(-(al + 1.0) * lg) * (1.0 + 1e-13) + 1e-300
        fac_v = np.exp(-al * lg) * (1.0 + 1e-13) + 1e-300
    return D, phi, rel, fac, fac_v


def _power_remainder_sum(S, bx, ee, p):
    """(B,) sum_ij |gamma_ij| S^(p-i-j) bx^i ee^j (:func:`power_remainder_table`):
    the bound of F_p over |b| <= bx, 0 <= e <= ee for S, bx, ee >= 0 rounded
    up (every term non-negative and increasing in each); 0 for p = 1."""
    out = np.zeros(np.shape(S))
    if p >= 2:
        for (i, j), gam in power_remainder_table(p).items():
            out = out + abs(gam) * S ** (p - i - j) * bx**i * ee**j
    return out


def power_remainder_table(p):
    """The squared RKHS remainder of ``(S' + x . y)^p`` as a polynomial
    (module doc, "Dot-product powers"): a dict ``(i, j) -> gamma`` with
    ``||E||^2 = sum gamma S^(p - i - j) b^i e^j``, S = s + ||x0||^2, b = x0 .
    u, e = ||u||^2, in exact integer arithmetic; every monomial with i + 2 j
    <= 3 cancels and every monomial has S-degree p - i - j (homogeneity;
    both checked here: a RuntimeError otherwise)."""
    p = int(p)
    if p in _POWER_REMAINDERS:
        return _POWER_REMAINDERS[p]
    S, b, e = {(1, 0, 0): 1}, {(0, 1, 0): 1}, {(0, 0, 1): 1}
    F = _poly_lin(
        (1, _poly_pow(_poly_lin((1, S), (2, b), (1, e)), p)),  # k(x, x)
        (1, _poly_pow(S, p)),  # k(x0, x0)
        (p, _poly_mul(_poly_pow(S, p - 1), e)),  # ||w||^2: p S^(p-1) e + p (p-1) S^(p-2) b^2
        (p * (p - 1), _poly_mul(_poly_pow(S, p - 2), _poly_pow(b, 2))),
        (-2, _poly_pow(_poly_lin((1, S), (1, b)), p)),  # -2 k(x, x0)
        (-2 * p, _poly_mul(_poly_pow(_poly_lin((1, S), (1, b)), p - 1), _poly_lin((1, b), (1, e)))),  # -2 <k_x, w>
        (2 * p, _poly_mul(_poly_pow(S, p - 1), b)),  # +2 <k_x0, w>
    )
    out = {}
    for (k, i, j), v in F.items():
        if v == 0:
            continue
        if not (i + 2 * j >= 4 and k == p - i - j):  # pragma: no cover - an identity, checked for p <= 8
            raise RuntimeError(f"power_remainder_table({p}): unexpected monomial S^{k} b^{i} e^{j} ({v}).")
        out[(i, j)] = out.get((i, j), 0) + v
    _POWER_REMAINDERS[p] = out
    return out


class SmoothCovariance:
    """The cross-covariance part k_c of a fitted kernel, when it is a sum of
    non-negative multiples of RBF / Matern(nu = 1.5, 2.5, inf) /
    RationalQuadratic (alpha in ``RQ_ALPHA``, kind ``("rq", alpha)``) terms and
    constants (with ``linear=True`` also of DotProduct, its integer powers
    <= ``POLY_MAX_P`` and products of RBF / Matern profiles with one of
    them or with each other, module doc "Linear terms", "Dot-product powers",
    "Products with a dot product" and "Products of several factors") (WhiteKernel summands, also scaled, add noise only to the
    training Gram matrix and to k(x, x)): what the local RKHS bound needs
    (module doc, "High signal-to-noise").

    Per term t (amplitude a_t >= 0, length scales l_t, radial profile
    kappa_t(s) with s = ||u / l_t||): ``c2`` = -kappa''(0), and
    ``f(s) = 2 kappa(0) - 2 kappa(s) + 2 s kappa'(s) - kappa''(0) s^2
    <= C s^p`` (unit amplitude).
    """

    # kind: (c2 = -kappa''(0), C, p)
    PROFILES = {
        "rbf": (1.0, 0.75, 4.0),
        "matern2.5": (5.0 / 3.0, 6.25, 4.0),
        "matern1.5": (3.0, 4.0 * np.sqrt(3.0), 3.0),
    }

    # sup_s |kappa'(s)| <= this for every profile (RBF e^-1/2 = 0.607,
    # Matern 2.5 0.626, Matern 1.5 sqrt3 / e = 0.637; checked in the tests).
    SUP_SLOPE = 0.75

    #: RationalQuadratic alphas with a profile here (module doc, "Remainder").
    RQ_ALPHA = (1e-100, 1.5e5)

    @classmethod
    def profile(cls, kind):
        """``(c2, C, p)`` of a term's kind: a name of :attr:`PROFILES`, or
        ``("rq", alpha)`` for RationalQuadratic: (1, 0.75 (1 + 1 / alpha), 4)
        (module doc, "Remainder": the Gamma scale mixture of RBFs), C rounded
        up."""
        if isinstance(kind, tuple):
            alpha = float(kind[1])
            return 1.0, 0.75 * (1.0 + 1.0 / alpha) * (1.0 + 4.0 * _U), 4.0
        return cls.PROFILES[kind]

    #: Largest exponent of a dot-product power term (module doc, "Dot-product
    #: powers": sklearn's diagonal rounding p (d + 2) + 16 u stays inside the
    #: margins' gam for p <= 8).
    POLY_MAX_P = 8

    def __init__(self, terms, const, d, value_scale=None, value_terms=0, weights=None, lin=0.0, white=0.0,
                 xs_norm=0.0, n_nodes=0, poly=(), prod=()):
        self.terms = terms  # [(amp, kind, ls (d,))]
        self.const = float(const)
        # Stationary products (no dot-product factor) have the constant diagonal a.
        self.kappa0 = float(const + sum(a for a, _, _ in terms) + sum(float(a) for a, dpl, *_ in prod if not dpl))
        # Linear part lin x . y (DotProduct terms; their sigma_0^2 is in const):
        # k_c(x, x) = kappa0 + lin ||x||^2 (module doc, "Linear terms").
        self.lin = float(lin)
        # Dot-product powers c (s + x . y)^p, p = 2 .. POLY_MAX_P: [(c, s, p)]
        # (module doc, "Dot-product powers"); s = fl(sigma_0^2) as sklearn
        # and the adapter compute it.
        self.poly = [(float(c), float(s2), int(p)) for c, s2, p in poly]
        # Products a prod_f kappa_f(||(x - y) / l_f||) g(x . y) of RBF /
        # Matern (1.5, 2.5, inf) / RationalQuadratic profiles and dot-product
        # factors, g(t) = prod_k (s_k + t)^(q_k) = sum_j c_j t^j (c_j >= 0),
        # of degree p = sum_k q_k = 0 .. POLY_MAX_P (p = 0: no dot-product
        # factor, then >= 2 profiles). Given as [(a, dp_leaves, ((kind, ls),
        # ...), n_leaves)] with dp_leaves the DotProduct factors (s_k, q_k)
        # as sklearn multiplies them and n_leaves the product tree's leaves,
        # constants included; kept as (a, c, p, profiles, dp_leaves,
        # n_leaves) (module doc, "Products with a dot product" and "Products
        # of several factors").
        self.prod = []
        for a, dpl, stat, nl in prod:
            dpl = tuple((float(s2), int(q)) for s2, q in dpl)
            self.prod.append((float(a), _dot_polynomial(dpl), sum(q for _, q in dpl),
                              tuple((kind, np.asarray(ls, dtype=np.float64)) for kind, ls in stat), dpl, int(nl)))
        # The WhiteKernel parts: k(x, x) = k_c(x, x) + white.
        self.white = float(white)
        # >= max_i ||x_i|| over the support points (the term magnitudes of
        # the linear part, value_rounding).
        self.xs_norm = float(xs_norm)
        # Nodes of the kernel tree (sums, products with constants, leaves):
        # the operations whose rounding the Jacobian's linear part carries.
        self.n_nodes = int(n_nodes)
        self.H0 = np.zeros(d)
        for a, kind, ls in terms:
            self.H0 += a * self.profile(kind)[0] / ls**2
        for a, _, p, stat, _, _ in self.prod:
            if p == 0:  # no dot-product factor
                # ||w||^2 = a sum_f u^T H_f u (module doc, "Products of several factors").
                self.H0 += a * self._stat_c2l2(stat)
        self.H0 += self.lin
        # Rounding of the computed kernel values (module doc, "Rounding of the
        # local bound"): each entry errs, beyond the adapter's rounding(), by
        # <= c_val u value_scale (:meth:`value_rounding`, c_val the adapter's
        # proven constant). A single kernel: value_scale = kappa0 >= the term
        # magnitude A(x, x_i), value_terms = 0. A kernel whose sections at the
        # support points are mixtures of these terms (multi-output, module doc
        # "Mixed sections") passes the magnitude of the mixture and the extra
        # operations (value_terms: the Jacobian's rounding; the caller's c_val
        # carries them for the values).
        self.value_scale = self.kappa0 if value_scale is None else float(value_scale)
        self.value_terms = int(value_terms)
        # Per term, (N,) non-negative weights: the entry i of k(Xs, x) holds
        # the term with amplitude amp * weights[t][i] (None: 1, one kernel).
        self.weights = weights

    @classmethod
    def parse(cls, kernel, d, linear=False, Xs=None):
        """A :class:`SmoothCovariance` of the kernel, or None if it is not of that form.

        ``linear=True`` also accepts non-negative multiples of ``DotProduct``
        (exponent 1: the linear part ``lin x . y``, its ``sigma_0^2`` a
        constant; module doc, "Linear terms") and of ``DotProduct ** p``, p
        = 2 .. ``POLY_MAX_P`` (``poly``, module doc "Dot-product powers") and
        products a prod_f (RBF / Matern(1.5, 2.5, inf))_f x DotProduct ** p, p
        = 0 .. ``POLY_MAX_P``, constants anywhere in the product (``prod``,
        "Products with a dot product", "Products of several factors");
        ``Xs`` (the support points) is then required. Only :class:`LatentVariance`'s own bound handles them
        (the multi-output and softmax models' callers do not ask for them)."""
        from sklearn.gaussian_process import kernels as K

        from ..kernels.polynomial import is_dot_product_power

        terms, const, lin, white, nodes, poly, prod = [], [0.0], [0.0], [0.0], [0], [], []

        def walk(k, amp):
            t = type(k)
            nodes[0] += 1
            if t is K.Sum:
                return walk(k.k1, amp) and walk(k.k2, amp)
            if t is K.Product:
                for a, b in ((k.k1, k.k2), (k.k2, k.k1)):
                    if type(a) is K.ConstantKernel:
                        c = float(a.constant_value)
                        return np.isfinite(c) and c >= 0 and walk(b, amp * c)
                return bool(linear) and product(k, amp)
            if t is K.ConstantKernel:
                c = float(k.constant_value)
                const[0] += amp * c
                return np.isfinite(c) and c >= 0
            if t is K.WhiteKernel:
                # Its noise joins D (regressor) or Dw (Laplace GPC), which the
                # lemma needs >= 0 (module doc, "Lemma: 0 <= P <= I").
                c = float(k.noise_level)
                white[0] += amp * c
                return bool(np.isfinite(c) and c >= 0)
            if t is K.DotProduct and linear:
                s0 = float(k.sigma_0)
                if not np.isfinite(s0):
                    return False
                const[0] += amp * s0 * s0
                lin[0] += amp
                return True
            if linear and is_dot_product_power(k):
                # sklearn: (inner + sigma_0 ** 2) ** exponent (module doc,
                # "Dot-product powers"); exponent 1 is the linear part.
                s0, p = float(k.kernel.sigma_0), int(float(k.exponent))
                if not np.isfinite(s0) or p > cls.POLY_MAX_P:
                    return False
                if p == 1:
                    const[0] += amp * s0 * s0
                    lin[0] += amp
                elif amp > 0:
                    poly.append((float(amp), s0**2, p))
                return True
            prof = profile_of(k)
            if not prof:  # another kernel, or a profile's type outside the range
                return False
            if amp > 0:
                terms.append((float(amp),) + prof)
            return True

        def profile_of(k):
            """``(kind, ls)`` of an RBF / Matern (1.5, 2.5, inf) /
            RationalQuadratic (alpha in ``RQ_ALPHA``) kernel, else a false
            value (False: one of these types outside that range, None:
            another kernel)."""
            t = type(k)
            rq = t is K.RationalQuadratic
            if rq:
                a_rq = float(k.alpha)
                if not (np.isfinite(a_rq) and cls.RQ_ALPHA[0] <= a_rq <= cls.RQ_ALPHA[1]):
                    return False
            if not (rq or t is K.RBF or t is K.Matern):
                return None
            if t is K.Matern and float(k.nu) not in (1.5, 2.5, np.inf):
                return False
            # |l|: sklearn's values are even in l (StationaryAdapter._length_scales).
            ls = np.abs(np.squeeze(np.asarray(k.length_scale, dtype=np.float64)))
            ls = np.full(d, float(ls)) if ls.ndim == 0 else ls
            if ls.shape != (d,) or not np.all(np.isfinite(ls) & (ls > 0)):
                return False
            if rq:
                return ("rq", a_rq), ls
            return ("rbf" if t is K.RBF or float(k.nu) == np.inf else f"matern{float(k.nu)}"), ls

        def product(k, amp):
            """A product of stationary profiles (RBF / Matern 1.5, 2.5, inf /
            RationalQuadratic) and DotProduct factors or powers (any sigma_0:
            the polynomial g, total degree <= ``POLY_MAX_P``), constants
            anywhere in the product tree (module doc, "Products with a dot
            product" and "Products of several factors")."""
            a, stat, dps, leaves = amp, [], [], [0]

            def flat(f):
                nonlocal a
                tf = type(f)
                leaves[0] += 1
                if tf is K.Product:
                    nodes[0] += 1
                    leaves[0] -= 1
                    return flat(f.k1) and flat(f.k2)
                if tf is K.ConstantKernel:
                    c = float(f.constant_value)
                    a = a * c
                    return bool(np.isfinite(c) and c >= 0)
                if tf is K.DotProduct:
                    dps.append((float(f.sigma_0), 1))
                    return True
                if is_dot_product_power(f):
                    dps.append((float(f.kernel.sigma_0), int(float(f.exponent))))
                    return True
                prof = profile_of(f)
                if prof:
                    stat.append(prof)
                return bool(prof)

            if not flat(k) or not stat or not np.isfinite(a):
                return False
            if not dps and len(stat) < 2:
                # One profile times constants only, e.g. (C * C) * RBF (what
                # sklearn builds from 2.0 * C(1.0) * RBF()): a term a k, as in
                # walk's constant branch (C * k), a the product of the constants.
                if a > 0:
                    terms.append((float(a),) + stat[0])
                return True
            if sum(q for _, q in dps) > cls.POLY_MAX_P or not all(np.isfinite(s) for s, _ in dps):
                return False
            if a > 0:
                prod.append((a, tuple((s * s, q) for s, q in dps), tuple(stat), leaves[0]))
            return True

        if not walk(kernel, 1.0) or not (terms or prod) or not np.isfinite(const[0]):
            return None
        if lin[0] > 0 or poly or prod:
            if Xs is None or not (np.isfinite(lin[0]) and np.isfinite(white[0])):
                return None
            if not all(np.isfinite(c) and np.isfinite(s2) for c, s2, _ in poly):
                return None
            if not all(np.isfinite(a) and all(np.isfinite(s2) for s2, _ in dpl) for a, dpl, *_ in prod):
                return None
            xs_norm = float(np.max(np.linalg.norm(np.asarray(Xs, dtype=np.float64), axis=1), initial=0.0))
            if not np.isfinite(xs_norm):
                return None
            return cls(terms, const[0], d, lin=lin[0], white=white[0], xs_norm=xs_norm * (1.0 + 1e-12),
                       n_nodes=nodes[0], poly=poly, prod=prod)
        return cls(terms, const[0], d)

    def kappa_range(self, lo, hi):
        """(B,) bounds ``(kc_lo, kc_hi)`` of k_c(x, x) = kappa0 + lin ||x||^2
        + sum c g(||x||^2) over each box (g = (s + t)^p for the powers, the
        polynomial of the products' dot-product factors), and (B,) ``xmax`` >= max ||x||
        (rounded outward: ||x||^2 is a sum of d non-negative squares, relative
        error <= (d + 3) u, widened by that and by 1e-12 for the sums and
        products after it)."""
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        far = np.maximum(np.abs(lo), np.abs(hi))
        near = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
        dd = lo.shape[-1]
        x2hi = (far * far).sum(-1) * (1.0 + (dd + 3) * _U) * (1.0 + 1e-12)
        x2lo = (near * near).sum(-1) * (1.0 - (dd + 3) * _U) * (1.0 - 1e-12)
        # (lin = 0 with an infinite x2hi: no 0 * inf = NaN)
        kc_hi = (self.kappa0 + (self.lin * x2hi if self.lin > 0 else np.zeros_like(x2hi))) * (1.0 + 1e-12)
        kc_lo = (self.kappa0 + (self.lin * x2lo if self.lin > 0 else np.zeros_like(x2lo))) * (1.0 - 1e-12)
        if self.poly or self.prod:
            # + sum c g(||x||^2), g = sum_j coef_j t^j increasing in t >= 0
            # (coef_j >= 0): the ends at x2lo / x2hi (already widened), the
            # coefficients' and the sum's rounding (_gsum: (4 p + 4) u) inside
            # the factors 1 -+ (4 p + 24) u.
            with np.errstate(over="ignore"):
                for c, coef in self._powers():
                    f = (4 * (len(coef) - 1) + 24) * _U
                    kc_hi = kc_hi + c * _gsum(coef, x2hi, 0) * (1.0 + f) * (1.0 + 1e-12)
                    kc_lo = kc_lo + c * _gsum(coef, x2lo, 0) * (1.0 - f) * (1.0 - 1e-12)
        return kc_lo, kc_hi, np.sqrt(x2hi) * (1.0 + 1e-12)

    @property
    def nonstationary(self):
        """True when k_c(x, x) varies with x (linear, dot-product power or
        product terms with a dot-product factor)."""
        return self.lin > 0 or bool(self.poly) or bool(self._dprod())

    def _powers(self):
        """(c, coef) of every term whose diagonal is c g(||x||^2) with g(t) =
        sum_j coef_j t^j, coef_j >= 0: the powers ((s + t)^p) and the
        products with a dot-product factor (their profiles are 1 at 0)."""
        return ([(c, _dot_polynomial(((s2, p),))) for c, s2, p in self.poly]
                + [(a, coef) for a, coef, *_ in self._dprod()])

    def _dprod(self):
        """The products with a dot-product factor (p >= 1)."""
        return [t for t in self.prod if t[2] >= 1]

    def _stat_c2l2(self, stat):
        """(d,) sum_f c2_f / l_f^2 over a product's profiles: the diagonal of
        its stationary block's first-order part (module doc, "Products of
        several factors")."""
        return sum(self.profile(kind)[0] / ls**2 for kind, ls in stat)

    def magnitude(self, xmax):
        """(B,) bound of the term magnitudes of k_c(x, x_i) for ||x|| <= xmax:
        kappa0 + lin xmax xs_norm + sum c g(xmax xs_norm) (|g(t)| <= g(|t|):
        non-negative coefficients; Cauchy-Schwarz: |x . x_i| <= ||x||
        ||x_i||; rounded up)."""
        m = (self.kappa0 + self.lin * xmax * self.xs_norm) * (1.0 + 1e-12)
        with np.errstate(over="ignore"):
            for c, coef in self._powers():  # a product's profile is <= 1
                m = m + c * _gsum(coef, xmax * self.xs_norm * (1.0 + 1e-12), 0) * (1.0 + (4 * (len(coef) - 1) + 24) * _U)
        return m * (1.0 + 1e-12)

    def section(self, x0, h):
        """The dot-product power terms' parts of the local expansion at the
        box centres x0 (B, d) with half-widths h (module doc, "Dot-product
        powers"): ``(kc0, gco, alpha, beta, err)``, all (B,):
        kc0 = k_c(x0, x0) = kappa0 + lin ||x0||^2 + sum c S^p (S = s +
        ||x0||^2), gco = lin + sum c p S^(p-1) (<k_x0, w> = gco x0 . u), alpha
        = sum c p S^(p-1) and beta = sum c p (p - 1) S^(p-2) (||w||^2 = u^T
        (H0 + alpha I + beta x0 x0^T) u), and err >= the error of our float
        evaluation of the power terms' contributions to P over the box
        (first order p (d + 4) + 24 ulps of each contribution's magnitude,
        the factor 8 for the higher orders). Products with dot-product
        factors (module doc, "Products with a dot product", "Products of
        several factors"; g their dot-product polynomial, T0 = ||x0||^2) add
        a g(T0), a g'(T0), a g'(T0), a g''(T0) and their error to these, and
        to the sixth output, dH0 (B, d): the per-box diagonal a g(T0) sum_f
        c2_f / l_f^2 of their profiles' first-order part."""
        x2 = np.einsum("bd,bd->b", x0, x0)
        kc0 = self.kappa0 + self.lin * x2
        gco = np.full(len(x0), self.lin)
        alpha, beta, err = np.zeros(len(x0)), np.zeros(len(x0)), np.zeros(len(x0))
        d = x0.shape[1]
        bx = (np.abs(x0) * h).sum(-1) * (1.0 + 1e-12)
        ee = (h * h).sum(-1) * (1.0 + 1e-12)
        with np.errstate(over="ignore", invalid="ignore"):
            for c, s2, p in self.poly:
                S = s2 + x2
                kc0 = kc0 + c * S**p
                gco = gco + c * p * S ** (p - 1)
                alpha = alpha + c * p * S ** (p - 1)
                beta = beta + c * p * (p - 1) * S ** (p - 2)
                mag = c * (S**p + 2 * p * S ** (p - 1) * bx + p * S ** (p - 1) * ee + p * (p - 1) * S ** (p - 2) * bx * bx)
                err = err + 8.0 * (p * (d + 4) + 24) * _U * mag
            dH0 = np.zeros(x0.shape)
            for a, coef, p, stat, _, _ in self._dprod():
                # g(x . y) = sum_j c_j (x . y)^j: at x = y = x0, g(T0), g'(T0)
                # and g''(T0), T0 = ||x0||^2 (for one sigma_0, (s + T0)^p and
                # its derivatives; module doc, "Products of several factors").
                g0, g1, g2 = _gsum(coef, x2, 0), _gsum(coef, x2, 1), _gsum(coef, x2, 2)
                kc0 = kc0 + a * g0
                gco = gco + a * g1
                alpha = alpha + a * g1
                beta = beta + a * g2
                dh = a * g0[:, None] * self._stat_c2l2(stat)
                dH0 = dH0 + dh
                mag = a * (g0 + 2 * g1 * bx + g1 * ee + g2 * bx * bx) + (dh * h * h).sum(-1)
                err = err + 8.0 * (p * (d + 4) + 24) * _U * mag
        return kc0, gco, alpha, beta, err, dH0

    def increment2(self, lo, hi, h1):
        """(B,) upper bound of sup ||k_x - k_c||_H^2 over each box (c its float
        centre, h1 >= |x - c| its half-widths): sum_j H0_j h1_j^2 for the
        stationary and linear parts (module doc, "The RKHS remainder") plus,
        per power term, c (p R^(p-1) ||h1||)^2 with R^2 = s + sum_j
        max(|lo_j|, |hi_j|)^2 (the tensor-power telescoping of
        :meth:`~skgprobust.kernels.polynomial.DotProductPowerAdapter.rkhs_increment`),
        per product with dot-product factors a (||Phi(x) - Phi(c)|| g(R'^2)^1/2
        + (sum_j c_j j^2 R'^(2 (j - 1)))^1/2 ||h1||)^2 with ||Phi(x) -
        Phi(c)||^2 <= sum_f c2_f z_f^2 over its profiles, g = sum_j c_j t^j
        its dot-product polynomial and R'^2 = sum_j max(|lo_j|, |hi_j|)^2
        (module doc, "Products with a dot product", "Products of several
        factors"; a product without one is in H0)."""
        D = (self.H0 * h1 * h1).sum(-1)
        if self._dprod():
            # a (||Phi(x) - Phi(c)|| R^p + p R^(p-1) ||h1||)^2: the product's
            # increment (Phi(x) - Phi(c)) (x) psi(x) + Phi(c) (x) (psi(x) -
            # psi(c)), ||Phi(c)|| = 1, Phi the profiles' block (module doc,
            # "Products with a dot product", "Products of several factors").
            hh = (h1 * h1).sum(-1)
            far2 = (np.maximum(np.abs(lo), np.abs(hi)) ** 2).sum(-1)
            with np.errstate(over="ignore", invalid="ignore"):
                for a, coef, p, stat, _, _ in self._dprod():
                    R2 = far2 * (1.0 + 1e-12)
                    Dk = (self._stat_c2l2(stat) * h1 * h1).sum(-1)
                    # ||psi(x)||^2 = g(||x||^2) <= g(R2); ||psi(x) - psi(c)||^2
                    # <= sum_j c_j (j R^(j-1) ||h1||)^2 (module doc, "Products
                    # of several factors").
                    t = np.sqrt(Dk * _gsum(coef, R2, 0)) + np.sqrt(_gsum(coef, R2, "J") * hh)
                    D = D + a * t * t * (1.0 + (8 * p + 24) * _U)
        if self.poly:
            hh = (h1 * h1).sum(-1)
            far2 = (np.maximum(np.abs(lo), np.abs(hi)) ** 2).sum(-1)
            with np.errstate(over="ignore", invalid="ignore"):
                for c, s2, p in self.poly:
                    R2 = (s2 + far2) * (1.0 + 1e-12)
                    D = D + c * p * p * R2 ** (p - 1) * hh * (1.0 + (4 * p + 24) * _U)
        return D * (1.0 + 1e-12)

    def value_rounding(self, c_val, scale=None):
        """Per-entry bound cv of the kernel values' own rounding (module doc,
        "Rounding of the local bound" and "Mixed sections"): ``c_val u
        max(value_scale, scale)`` (times 1 + 1e-12; ``scale``: a larger
        bound of the term magnitudes where the caller's entries may exceed
        value_scale, e.g. a Gram diagonal with WhiteKernel parts), with ``c_val`` the relative
        constant of :meth:`~skgprobust.kernels.KernelAdapter.value_ulps` of
        the adapter that computes the sections (plus what the caller's
        arithmetic adds: :meth:`LatentVariance._value_ulps`).

        Proof. The adapter's contract is |k~(x, x_i) - k(x, x_i)| <=
        rounding[b, i] + c_val u A(x, x_i) (the first part is added
        separately by the callers). Single kernel without linear terms: every
        term of this form is >= 0 (non-negative amplitudes and constants,
        WhiteKernel parts 0 off the diagonal of sklearn's k(X, Y)), so A =
        k(x, x_i) <= const + sum_t a_t = kappa0 = value_scale. With linear
        terms (``lin`` > 0) the DotProduct parts' magnitudes c |sigma_0^2 +
        x . x_i| <= c sigma_0^2 + c ||x|| ||x_i|| depend on x: the caller must
        pass ``scale`` >= kappa0 + lin ||x|| max_i ||x_i|| for its x (or, on
        the support points, the largest |K_ij|), else ValueError. Mixed sections: value_scale >=
        max_i sum_l |c_il| kappa0_l >= sum_l |c_il| A_l, the form the
        composite adapter's constant is relative to. value_scale is a float
        sum of T + 1 non-negative terms (relative error <= (T + 1) u) and the
        product c_val u value_scale one more rounding: the factor 1 + 1e-12
        covers both for T < 10^3 terms.
        """
        if scale is None and self.nonstationary:
            raise ValueError("value_rounding of a covariance with linear or power terms needs the term magnitudes' "
                             "scale.")
        m = self.value_scale if scale is None else np.maximum(self.value_scale, scale)
        return float(c_val) * _U * m * (1.0 + 1e-12)

    def remainder2(self, h, x0=None):
        """(B,) upper bound of ||k_x - k_x0 - Dk_x0[x - x0]||_H^2 over the
        box of half-widths h around x0, and (B, d) each coordinate's share
        (``x0`` is required with dot-product power and product terms: their
        remainders, module doc "Dot-product powers" and "Products with a dot
        product", depend on it)."""
        E2 = np.zeros(len(h))
        share = np.zeros(h.shape)
        if (self.poly or self._dprod()) and x0 is None:
            return np.full(len(h), np.inf), np.full(h.shape, 1.0 / max(h.shape[1], 1))
        d = h.shape[1]
        if self.poly or self._dprod():
            # The box's moments, rounded up (sums of d non-negative terms):
            # ||x0||^2, |b| <= |x0| . h, e <= ||h||^2, and R^2 - s = ||(|x0|
            # + h)||^2 >= ||x||^2 over the box.
            f = 1.0 + (d + 3) * _U
            Sx = np.einsum("bd,bd->b", x0, x0) * f
            bx = (np.abs(x0) * h).sum(-1) * f
            ee = (h * h).sum(-1) * f
            far2 = ((np.abs(x0) + h) ** 2).sum(-1) * f
            hh = np.where(ee > 0, ee, 1.0)
            hs = (h * h) / hh[:, None]  # shares (split scores only)
            bs = np.abs(x0) * h / np.where(bx > 0, bx, 1.0)[:, None]
        if self.prod:
            # ||E|| <= a^1/2 (||E_Phi|| ||psi(x)|| + ||W|| ||psi(x) - psi0|| +
            # ||E_psi||) with ||E_Phi|| <= sum_f ||E_f|| + sum_f (sum_(g<f)
            # c2_g z_g^2)^1/2 ||w_f||, ||W||^2 <= sum_f c2_f z_f^2 and psi the
            # map of the dot-product polynomial g (module doc, "Products with
            # a dot product", "Products of several factors"); p = 0: ||E|| <=
            # a^1/2 ||E_Phi||.
            with np.errstate(over="ignore", invalid="ignore"):
                for a, coef, p, stat, _, _ in self.prod:
                    tA = np.zeros(len(h))
                    zc = np.zeros(len(h))  # sum_(g<f) c2_g z_g^2, then the total
                    zsh = np.zeros(h.shape)
                    for kind, ls in stat:
                        c2, C, q = self.profile(kind)
                        z2 = ((h / ls) ** 2).sum(-1) * (1.0 + (d + 3) * _U)
                        tA = tA + np.sqrt(C * z2 ** (q / 2)) + np.sqrt(zc * c2 * z2)
                        zc = (zc + c2 * z2) * (1.0 + 2 * _U)
                        zsh = zsh + c2 * (h / ls) ** 2
                    zs = zsh / np.where(zc > 0, zc, 1.0)[:, None]
                    tA = tA * (1.0 + 4 * len(stat) * _U)
                    if p >= 1:
                        # ||psi(x)||^2 <= g(R2), ||psi(x) - psi0||^2 <= sum_j
                        # c_j j^2 R2^(j-1) ||h||^2, ||E_psi||^2 <= sum_j c_j F_j
                        # (each power t^j's remainder with s = 0, S = ||x0||^2;
                        # the remainder is linear in the kernel), the sums
                        # rounded up by (4 p + 8) u (module doc, "Products of
                        # several factors").
                        fg = 1.0 + (4 * p + 8) * _U
                        tA = tA * np.sqrt(_gsum(coef, far2, 0) * fg)
                        tB = np.sqrt(zc * ee * _gsum(coef, far2, "J") * fg)
                        Fs = sum(cj * _power_remainder_sum(Sx, bx, ee, j) for j, cj in enumerate(coef))
                        tC = np.sqrt(Fs * fg)
                    else:
                        tB = tC = np.zeros(len(h))
                    t = tA + tB + tC
                    e = a * t * t * (1.0 + (4 * p + 40) * _U)
                    E2 = E2 + e
                    # Each coordinate's share (split scores only): the
                    # stationary factors' parts by c2 (h_j / l_j)^2, the
                    # power's by h_j^2 and |x0_j| h_j.
                    if p >= 1:
                        w = (tA[:, None] * zs + tB[:, None] * 0.5 * (zs + hs) + tC[:, None] * 0.5 * (hs + bs))
                    else:
                        w = tA[:, None] * zs
                    share = share + e[:, None] * w / np.where(t > 0, t, 1.0)[:, None]
        if self.poly:
            # sup over |b| <= bx, 0 <= e <= ee of sum gamma_ij S^(p-i-j) b^i
            # e^j (module doc, "Dot-product powers"), S rounded up.
            with np.errstate(over="ignore", invalid="ignore"):
                for c, s2, p in self.poly:
                    S = (s2 + Sx) * (1.0 + 2 * _U)
                    e = c * _power_remainder_sum(S, bx, ee, p) * (1.0 + (4 * p + 40) * _U)
                    E2 = E2 + e
                    # Shares (split scores only): by h_j^2 and |x0_j| h_j.
                    share = share + e[:, None] * 0.5 * (hs + bs)
        for a, kind, ls in self.terms:
            _, C, p = self.profile(kind)
            z2 = (h / ls) ** 2
            s2 = z2.sum(-1)
            e = a * C * s2 ** (p / 2)
            E2 += e
            share += e[:, None] * z2 / np.where(s2 > 0, s2, 1.0)[:, None]
        E2 = E2 * (1.0 + 1e-12)
        return E2, share / np.where(E2 > 0, E2, 1.0)[:, None]

    def jacobian_rounding(self, amax, Xs, x0=None):
        """(B, d) bound on ||dJ_j||, the error of the computed Jacobian column
        j of k_c(x0, Xs) beyond the caller's 32 u ||G_j||: the rounding of
        the scaled distance itself (2 (d + 2) u c2 a sqrt(N) / l_j per term,
        comment in the code), the linear terms' share (module doc, "Linear
        terms"), the dot-product powers' and the products' (module doc,
        "Dot-product powers" (v), "Products with a dot product"; ``x0``
        required) and, caused by rounding the inputs: per term
        |dJ_ij| <= (sup|kappa'(s)/s| + sup s |d/ds (kappa'(s)/s)|) ds_i / l_j
        <= 3 c2 a ds_i / l_j, ds_i the error of the scaled distance.

        With per-term ``weights`` (mixed sections, module doc) entry i of term
        t carries amplitude a_t w_ti, and the Jacobian is a sum of such terms
        computed in float: besides the weighted input rounding, each term's
        own rounding (16 u, relative) and the products and sums of the
        mixture (value_terms u) are bounded relative to the sum of the
        terms' magnitudes, |d k_t / d x_j| <= a_t w_ti sup|kappa'| / l_j
        (no cancellation is assumed between terms of different sign).

        RationalQuadratic terms (``x0``, the (B, d) points, required): the
        computed slope psi'(phi) = -(1 + t)^(-alpha - 1) / 2, t = phi / (2
        alpha), carries the base's relative error |e| <= u + t (d + 6) u /
        (1 + t) raised to the power alpha + 1 (``RationalQuadraticAdapter``),
        i.e. a relative error of at most rel = expm1((alpha + 1) u + (1 + 1 /
        alpha) (phi / 2) (d + 6) u) (1 + 4u) beyond the 16 u of every term.
        Entry (i, j) of the term's gradient is a 2 psi' (x_j - x_ij) / l_j^2,
        at most a (1 + t)^(-alpha - 1) |x0_j - x_ij| / l_j^2 in absolute
        value; so its extra error is bounded by rel times that (phi from the
        computed offsets: phi enlarged by 1e-12 relative for rel, which grows
        with phi, and the power evaluated as exp(-(alpha + 1) log1p(t) (1 -
        1e-12)) (1 + 1e-13), which covers the few-ulp errors of log1p, the
        product and exp, for the factor, which falls with phi)."""
        out = np.zeros(amax.shape)
        d = amax.shape[1]
        N = Xs.shape[0]
        for t, (a, kind, ls) in enumerate(self.terms):
            e = 5.0 * _input_rounding(amax, Xs, ls)  # (B, N)
            # The rounding of the scaled distance itself (a sum of d squares
            # and a square root: relative error <= (d + 2) u / 2 of s) moves
            # the slope entry a kappa'(s) (x_j - x_ij) / (l_j^2 s) by at most
            # a sup_s |s^2 d/ds (kappa'(s) / s)| (d + 2) u / (2 l_j) <= c2 a (d
            # + 2) u / l_j (RBF: 3 sqrt3 e^-1.5 = 1.16 <= 2 c2; Matern and
            # the RQ mixture alike), per entry; the 2-norm over N entries.
            dist = 2.0 * (d + 2) * _U * self.profile(kind)[0] * a * np.sqrt(N) / ls[None, :]
            out = out + (dist * (1.0 if self.weights is None else float(np.max(self.weights[t], initial=0.0))))
            if self.weights is not None:
                w = self.weights[t]
                e = e * w[None, :]
                out += (16.0 + self.value_terms) * _U * self.SUP_SLOPE * a * np.linalg.norm(w) / ls[None, :]
            ds = np.linalg.norm(e, axis=1)  # (B,)
            out += 3.0 * self.profile(kind)[0] * a * ds[:, None] / ls[None, :]
            if isinstance(kind, tuple):
                if x0 is None:
                    return np.full(amax.shape, np.inf)
                D, _, rel, fac, _ = _rq_slope_rounding(x0, Xs, ls, float(kind[1]))
                with np.errstate(over="ignore", invalid="ignore"):
                    G = a * (rel * fac)[:, :, None] * D / ls**2  # (B, N, d)
                    if self.weights is not None:
                        G = G * self.weights[t][None, :, None]
                    G = np.where(np.isnan(G), np.inf, G)
                    out = out + np.sqrt((G * G).sum(1)) * (1.0 + 1e-12)
        if self.lin > 0:
            # Linear terms (module doc, "Linear terms"): their gradient lin
            # x_i does not depend on x (no input rounding). The caller's
            # 32 u ||G_j|| is relative to the computed total, which may cancel
            # (stationary slope against the trend): each term's own relative
            # error and every product and sum node of the tree are bounded
            # relative to the sum of the parts' magnitudes, |G_stat| + |G_lin|
            # <= |G| + 2 |G_lin| entrywise, so (16 + 2 (n_nodes + 2)) u times
            # 2 lin |x_ij| more covers them (n_nodes: the tree's nodes).
            out = out + (16.0 + 2.0 * (self.n_nodes + 2)) * 2.0 * _U * self.lin * np.linalg.norm(Xs, axis=0)[None, :]
        if (self.poly or self._dprod()) and x0 is None:
            return np.full(amax.shape, np.inf)
        if self.poly:
            ax = np.abs(x0) @ np.abs(Xs).T  # (B, N)
            # Dot-product powers (module doc, "Dot-product powers"): the
            # adapter computes c p t~^(p-1) x_ij with t~ = fl(x0 . x_i + s),
            # |t~ - t| <= e_i = (d + 1)(1 + 2^-30) u (|x0| . |x_i| + s)
            # (DotProductPowerAdapter.rounding), so |t~^(p-1) - t^(p-1)| <=
            # (p - 1) M_i^(p-2) e_i with M_i >= max(|t|, |t~|); the power (8
            # ulps), the products with p, x_ij and c (3 u), and every sum
            # node of the tree relative to the parts' magnitudes (as for
            # the linear part: (16 + 2 (n_nodes + 2)) 2 u) add relative
            # errors of c p M_i^(p-1) |x_ij|. Column j's 2-norm over i.
            X2 = Xs * Xs
            rel = (19.0 + 2.0 * (16.0 + 2.0 * (self.n_nodes + 2))) * _U
            with np.errstate(over="ignore", invalid="ignore"):
                for c, s2, p in self.poly:
                    e_i, M = _dot_parts(ax, s2, d)
                    f = c * p * ((p - 1) * M ** (p - 2) * e_i + rel * M ** (p - 1))
                    col = np.sqrt((f * f) @ X2) * (1.0 + 1e-10)
                    out = out + np.where(np.isnan(col), np.inf, col)
        if self.prod:
            out = out + self._product_jacobian_rounding(amax, Xs, x0)
        return out * (1.0 + 1e-12) if self.weights is not None else out


    def _product_jacobian_rounding(self, amax, Xs, x0):
        """(B, d) bound on ||dJ_j|| for the product terms (module doc,
        "Products of several factors", the Jacobian): sklearn's / the
        adapter's Product node computes fl(K1~ G2~ + K2~ G1~) and fl(K1~
        K2~), so by induction over any product tree of m leaves the computed
        gradient is sum_f G~_f prod_(g != f) K~_g (1 + theta_f), |theta_f| <=
        gamma_(2 (m - 1)) (per leaf f at depth D, along its path to the
        root: two roundings per node, plus the m - 1 - D products inside the
        siblings' values; charged gamma_(3 (m - 1))); constants are leaves
        with G = 0 (their terms vanish exactly). Against the exact sum_f G_f
        prod_(g != f) K_g the error is at most, per entry, sum_f [dG_f
        prod_(g != f) (MK_g + dK_g) + MG_f (prod_(g != f) (MK_g + dK_g) -
        prod_(g != f) MK_g) + gamma (MG_f + dG_f) prod_(g != f) (MK_g + dK_g)]
        with |K_g| <= MK_g, |K~_g - K_g| <= dK_g, |G_f,j| <= MG_f,j,
        |G~_f,j - G_f,j| <= dG_f,j, the leaves' bounds (unit amplitude; the
        amplitude a, a product of the constants, is exact up to the
        roundings counted in gamma and in n_nodes):

        * RBF / Matern (1.5, 2.5, inf) profile: MK = 1, dK = SUP_SLOPE ds_i
          + (d + 26) u (the scaled distance's input rounding ds_i, its own
          rounding (d + 2) u s / 2 times |kappa'(s)| <= 1 / s, the
          profile's 21 ulps), MG_j = SUP_SLOPE / l_j, dG_j = (c2 (2 (d + 2)
          u + 3 ds_i) + 32 u SUP_SLOPE) / l_j (as for the stationary terms);
        * DotProduct ** q (q >= 1; t = x0 . x_i + s, |t~ - t| <= e_i, M_i
          >= |t|, |t~|, ``DotProductPowerAdapter.rounding``): MK = M^q, dK =
          q M^(q-1) e_i + 17 u M^q, MG_j = q M^(q-1) |x_ij|, dG_j = (q (q -
          1) M^(q-2) e_i + 19 u q M^(q-1)) |x_ij| (mean value theorem, the
          power's 8 ulps and the products with q and x_ij).

        The product then sits in the kernel tree's sums, whose roundings
        are relative to the parts' magnitudes (the caller's 32 u ||G_j|| is
        relative to the computed total, which may cancel): (16 + 2 (n_nodes
        + 2)) 2 u times a sum_f MG_f prod_(g != f) MK_g, as for the linear
        part. Column j's 2-norm over i."""
        B, d = amax.shape
        N = Xs.shape[0]
        out = np.zeros((B, d))
        X2 = Xs * Xs
        rel_tree = 2.0 * (16.0 + 2.0 * (self.n_nodes + 2)) * _U
        with np.errstate(over="ignore", invalid="ignore"):
            if self._dprod():
                ax = np.abs(x0) @ np.abs(Xs).T  # (B, N)
            for a, _, p, stat, dp_leaves, n_leaves in self.prod:
                # Per leaf (MK, dK, mg, dg, ls), all (B, N) but ls: |G_j| <=
                # mg v_j, |dG_j| <= dg v_j with v_j = 1 / l_j (a profile, ls
                # its length scales) or |x_ij| (a dot-product leaf, ls None),
                # so the per-entry bound is separable and no (B, N, d) array
                # is formed.
                leaves = []
                for kind, ls in stat:
                    c2 = self.profile(kind)[0]
                    ds = 5.0 * _input_rounding(amax, Xs, ls)  # (B, N)
                    dK = self.SUP_SLOPE * ds + (d + 26) * _U
                    dg = c2 * (2.0 * (d + 2) * _U + 3.0 * ds) + 32.0 * _U * self.SUP_SLOPE
                    if isinstance(kind, tuple):
                        # RationalQuadratic: the alpha-fold rounding of the
                        # value (rel psi) and of the slope (rel 2 |psi'| |x0_j
                        # - x_ij| / l_j^2 <= rel fac sqrt(phi) / l_j).
                        if x0 is None:
                            return np.full(amax.shape, np.inf)
                        _, phi, rel, fac, fac_v = _rq_slope_rounding(x0, Xs, ls, float(kind[1]))
                        dK = dK + rel * fac_v
                        dg = dg + rel * fac * np.sqrt(phi * (1.0 + 1e-12))
                    leaves.append((np.ones((B, N)), dK, np.full((B, N), self.SUP_SLOPE), dg, ls))
                for s2, q in dp_leaves:
                    e_i, M = _dot_parts(ax, s2, d)
                    Mq1 = M ** (q - 1)
                    MK = M**q
                    dK = q * Mq1 * e_i + 17.0 * _U * MK
                    dg = 19.0 * _U * q * Mq1
                    if q >= 2:
                        dg = dg + q * (q - 1) * M ** (q - 2) * e_i
                    leaves.append((MK, dK, q * Mq1, dg, None))
                gam = 3.0 * max(n_leaves - 1, 1) * _U * 1.01
                col = np.zeros((B, d))
                A_dp = np.zeros((B, N))  # the dot-product leaves' coefficients of |x_ij|
                for f, (_, _, mg, dg, ls) in enumerate(leaves):
                    up = np.ones((B, N))  # prod_(g != f) (MK_g + dK_g)
                    ex = np.ones((B, N))  # prod_(g != f) MK_g
                    for g_, (MK_g, dK_g, _, _, _) in enumerate(leaves):
                        if g_ != f:
                            up = up * (MK_g + dK_g)
                            ex = ex * MK_g
                    up = up * (1.0 + 1e-12)
                    # dG_f up + MG_f (up - ex) + gam (MG_f + dG_f) up + rel_tree MG_f ex
                    A = dg * up + mg * (up - ex) + gam * (mg + dg) * up + rel_tree * mg * ex
                    if ls is None:
                        A_dp = A_dp + A
                    else:
                        # ||A_i / l_j||_i = ||A||_i / l_j
                        col = col + np.sqrt((A * A).sum(-1))[:, None] / ls[None, :]
                if dp_leaves:
                    col = col + np.sqrt((A_dp * A_dp) @ X2)  # ||A_i |x_ij|||_i
                # The 2-norm of a sum of the leaves' parts: at most the sum
                # of their norms (triangle inequality).
                col = a * col * (1.0 + 1e-10)
                out = out + np.where(np.isnan(col), np.inf, col)
        return out


@dataclass
class VarianceBound:
    """Bounds of the latent variance over B boxes."""

    lower: np.ndarray  # (B,)
    upper: np.ndarray  # (B,)
    arg_min: np.ndarray  # (B, d) candidate point for the minimum of var
    arg_max: np.ndarray  # (B, d) candidate point for the maximum of var
    score: np.ndarray  # (B, d) split scores


def _norm2_estimate(matvec, rmatvec, n, iters=30):
    """Estimate of the spectral norm (power iteration, times 1.5): only used
    to pick the shifts of :func:`~skgprobust._fp.tril_inv_norm2_upper`, never
    as a bound."""
    v = np.random.default_rng(0).normal(size=n)
    v /= np.linalg.norm(v)
    s = 0.0
    for _ in range(iters):
        w = rmatvec(matvec(v))
        s = np.linalg.norm(w)
        if s == 0:
            return 0.0
        v = w / s
    return 1.5 * np.sqrt(s)


#: The local bound's solve terms use gs = GS_FACTOR gamma_(N+1) (module doc,
#: "Solve model": the model needs gamma_(N+1); the factor is headroom).
GS_FACTOR = 2.0

#: Largest N for the extended-precision certificate of the float-factor
#: lemma (:meth:`LatentVariance._lemma_certificate`; ~N^3 / 6 long double
#: multiply-adds once per fit: ~0.6 s at N = 1000, ~10 s at 2500 here).
EXTENDED_MAX_N = 2500


def _tril_product(L, A):
    """``L @ A`` for lower-triangular L (N, N) and any A (N, N), by BLAS
    ``trmm`` (a product of N-term dot products at most, in BLAS's order,
    like ``@``)."""
    if L.shape[0] == 0:
        return L @ A
    return blas.dtrmm(1.0, np.asfortranarray(L), np.asfortranarray(A), lower=1)


class LatentVariance:
    """``var(x) = k(x, x) - ||A k(Xs, x)||^2`` for one latent model.

    Parameters
    ----------
    adapter : KernelAdapter
        Adapter of the fitted kernel on the support inputs.
    L : ndarray of shape (N, N)
        Lower-triangular factor sklearn solves with.
    col_scale : ndarray of shape (N,) or None
        Column scaling D of ``A = L^-1 D`` (``W_sr_`` for the Laplace GPC).
    smooth : {"parse"} or SmoothCovariance or None, default="parse"
        The local RKHS bound's description of the cross-covariance ("parse":
        read from the adapter's kernel; None: off).
    noise_nonnegative : bool, default=True
        False when the noise the factor carries besides the kernel (the
        regressor's ``alpha``) may be negative: the lemma's premise Dn >= 0
        fails, so it is not used (as for a kernel that is not PSD).

    Notes
    -----
    After the set-up the instance keeps L, the spectrum ``lam`` and the
    leading eigenvectors the spectral split can use (none where it never
    applies): one N x N matrix in what joblib workers receive. ``A``, ``S``
    and ``V`` are recomputed on first access by the same operations (the
    same numbers), or kept by subclasses that set ``_KEEP_DENSE``.
    """

    def __init__(self, adapter, L, col_scale=None, smooth="parse", noise_nonnegative=True):
        self.adapter = adapter
        L = np.asarray(L, dtype=np.float64)
        N = L.shape[0]
        self.L = L
        self.col_scale = None if col_scale is None else np.asarray(col_scale, dtype=np.float64)
        # A, S and V (N x N each) are set-up intermediates: the bounds use L
        # (triangular solves, as sklearn), the spectrum lam and the leading
        # eigenvectors of the spectral split. Only those are kept, so the
        # pickles sent to joblib workers carry one N x N matrix (L); A, S
        # and V are recomputed on first access (the same operations, so the
        # same numbers) unless the class keeps them (_KEEP_DENSE).
        self._dense = {}
        A = self._inverse_factor()
        S = A.T @ A
        V = None  # eigenvectors: only computed where they are used (below)
        finite_S = bool(np.all(np.isfinite(S)))
        if finite_S and self._KEEP_DENSE:
            lam, V = np.linalg.eigh(S)
        elif finite_S:
            # Eigenvalues only (LAPACK without vectors: 1.4 s against eigh's
            # 3.5 s at N = 3000): lam[0] is an estimate for the certified
            # norms (any estimate is valid there) and lam[n_keep] screens the
            # spectral split; the eigenvectors are computed below only when
            # the split passes that screen, with eigh's own eigenvalues.
            lam = np.linalg.eigvalsh(S)
        else:
            # S = A^T A overflowed (a factor L with subnormal entries, e.g.
            # C(1e-310) * RBF with noise 1e-312: ||L^-1||^2 > 1e308): LAPACK's
            # eigh fails ("did not converge") on inf / NaN. No spectrum: the
            # bounds that use it become infinite (valid), not an exception.
            lam, V = np.full(N, np.inf), np.eye(N)
        lam = np.maximum(lam, 0.0)[::-1]  # S is PSD; clip rounding below 0
        self.lam = lam
        if self._KEEP_DENSE:
            self._dense.update(A=A, S=S, V=V[:, ::-1])
        # Proven norms of the factor (module doc, "Soundness margin"):
        # nLabs >= || |L| ||_2 (Collatz-Wielandt) and norm_Linv >= ||L^-1||_2
        # (tril_inv_norm2_upper: the residual of the computed inverse A with
        # a Cholesky certificate of lambda_max(fl(S)) for the regressor; a
        # Cholesky certificate of lambda_min(L L^T) for the classifiers).
        self._nLabs = nonneg_norm2_upper(L) if N else 0.0
        D = np.ones(N) if self.col_scale is None else self.col_scale
        # ||L A - D||_F plus its own rounding: the residual of the computed
        # inverse factor, shared by s_err and (regressor) the ||L^-1|| bound.
        # Both factors are lower triangular: BLAS trmm (half gemm's flops);
        # each entry is a dot product of at most N terms in some order, as
        # the bound below assumes.
        res = _tril_product(L, A)
        res[np.diag_indices(N)] -= D
        # (N + 4) u: gamma_N of the products and the subtraction of D; the
        # Frobenius norms are sums of N^2 terms: (1 + (N^2 + 4) u).
        self._res = (float(np.linalg.norm(res)) + (N + 4) * _U * float(np.linalg.norm(_tril_product(np.abs(L), np.abs(A))))) * (
            1.0 + (N * N + 4) * _U
        )
        # lambda_max(fl(S)) certified (a Cholesky of fl(mu I - S)), not eigh's.
        self._lam_S = sym_lambda_max_upper(S, float(lam[0])) if N else 0.0
        if self.col_scale is None:
            norm_Linv = tril_inv_norm2_upper(L, np.sqrt(lam[0]) if N else 0.0, X=A, G=S, rho=self._res, lam_G=self._lam_S,
                                             nLabs=self._nLabs)
        else:
            est = _norm2_estimate(
                lambda v: solve_triangular(L, v, lower=True, check_finite=False),
                lambda v: solve_triangular(L, v, lower=True, trans="T", check_finite=False),
                N,
            )
            norm_Linv = tril_inv_norm2_upper(L, est / 1.5, nLabs=self._nLabs)
        # The lemma 0 <= P <= I for the *float* factor (module doc, "The
        # lemma for the float factor"): P <= (1 + rho) I; every use of it is
        # scaled by (1 + rho) (the kappa-scaled margin here, the RKHS terms
        # and kappa0 of the local and polynomial bounds).
        self.lemma_e = 0.0
        self.rho = self._lemma_rho(norm_Linv) if N else 0.0
        # The lemma needs a PSD kernel (an RKHS for k_c, noise >= 0): for a
        # kernel not known to be PSD (KernelAdapter.psd; e.g. WhiteKernel
        # with a negative noise level, a negative constant factor,
        # ExpSineSquared on several features) there is no P <= (1 + rho) I:
        # rho = inf, and the bounds that rest on it (the kappa-scaled
        # margin, the local RKHS and polynomial bounds) become infinite,
        # never wrong. (WhiteKernel(-0.2) + C * RBF, Gram still positive
        # definite: var bounds were crossed by 0.25 at 11025 of 11025
        # sampled points.) The same for a negative noise diagonal outside
        # the kernel (noise_nonnegative False: a regressor's alpha array with
        # negative entries; C * RBF + White(0.3), alpha -0.4 on separated
        # points: std ranges crossed by predict at 481 of 72000 samples,
        # tests/test_negative_noise.py).
        self.psd = bool(getattr(adapter, "psd", False)) and bool(noise_nonnegative)
        if N and not self.psd:
            self.rho, self.lemma_e = np.inf, np.inf
        with np.errstate(over="ignore", invalid="ignore"):
            kap0 = self._kappa(norm_Linv)
            kap = kap0 * (1.0 + self.rho) * (1.0 + 1e-15)
        self.kappa = float(kap) if np.isfinite(kap) else np.inf
        # The margin's factor for callers whose scale bounds q directly
        # (:meth:`margin_direct`; module doc, "Without the lemma"): kappa
        # itself where the lemma holds (the same numbers as before), else
        # kappa without (1 + rho) for a kernel whose term magnitude is
        # dominated by its diagonal, with the support points' own adapter.
        self.kappa_direct, self._direct_margin = self.kappa, False
        if not np.isfinite(self.kappa) and N and self._LEMMA_ADAPTER_IS_SUPPORT_KERNEL \
                and type(self).margin is LatentVariance.margin and bool(getattr(adapter, "dominated", False)):
            kd = kap0 * (1.0 + 1e-15)
            self.kappa_direct = float(kd) if np.isfinite(kd) else np.inf
            self._direct_margin = True
        # The explicit S (used only for its spectrum) squares the condition
        # number: it differs from the exact (L^-1 D)^T (L^-1 D) by s_err in
        # norm, which is added to every eigenvalue bound below. Near-noise-free
        # regressors (alpha = 1e-10, lambda_max ~ 1e10) need this; q(r0) and
        # its gradient are computed with triangular solves, as sklearn does.
        self._dA = 0.0
        self.s_err = self._s_error(A, norm_Linv) if N else 0.0
        # ||L^-1 D||^2 <= lambda_max(fl(S)) + s_err, and (regressor) <= ||L^-1||^2.
        self.lam_max = (self._lam_S + self.s_err) * (1 + 1e-10) if N else 0.0
        if N and self.col_scale is None:
            self.lam_max = min(self.lam_max, norm_Linv * norm_Linv * (1 + 1e-12))
        # Eigen-decomposition error of the spectral split (module doc): only
        # computed where the split can be used.
        self._eig_err = (0.0, 0.0)
        # The spectral split uses the leading m = _SPECTRAL_BUDGET // (N d)
        # eigenvectors (_n_top), only where lam[m] + s_err is small enough:
        # m is largest at d = 1 and lam decreasing, so if d = 1 fails the test
        # every d does, and no column is kept. V[:, ::-1][:, :m] is read from
        # the stored last columns of V as a reversed view (the same values and
        # stride signs as a view of the full V, so the same matmul path).
        # Without eigenvectors yet, the screen allows 1e-8 lam_max more than
        # the test (eigvalsh's and eigh's eigenvalues differ by ~N u lam_max):
        # every case eigh's eigenvalues pass gets here, and eigh's decide.
        n_keep = int(min(N, _SPECTRAL_BUDGET // max(1, N)))
        slack = 0.0 if V is not None else 1e-8 * self.lam_max
        if N == 0 or self.lam_max == 0 or self._rest(n_keep) > _SPECTRAL_MAX_REST * self.lam_max + slack:
            n_keep = 0
        if n_keep and V is None:
            lam, V = np.linalg.eigh(S)
            self.lam = lam = np.maximum(lam, 0.0)[::-1]
            if self._rest(n_keep) > _SPECTRAL_MAX_REST * self.lam_max:
                n_keep = 0
        if n_keep:
            self._eig_err = self._eig_error(S, lam, V)
            if self._rest(n_keep) > _SPECTRAL_MAX_REST * self.lam_max:
                n_keep = 0
        self._V_tail = np.ascontiguousarray(V[:, N - n_keep :]) if V is not None else np.zeros((N, 0))
        # The local RKHS bound (module doc, "High signal-to-noise"): only for
        # the kernels whose cross-covariance it can expand.
        # ``smooth``: "parse" reads adapter.kernel; a SmoothCovariance is used
        # as given (the caller vouches that it describes k(Xs, x) and k_c(x, x),
        # module doc "Mixed sections"); None switches the bound off.
        self._norm_Linv = norm_Linv
        if not self.psd and (smooth is None or isinstance(smooth, SmoothCovariance) or isinstance(smooth, str)):
            self.smooth = None
        elif isinstance(smooth, SmoothCovariance) or smooth is None:
            self.smooth = smooth if N else None
        elif smooth == "parse":
            Xs = self.adapter.Xs
            self.smooth = SmoothCovariance.parse(adapter.kernel, Xs.shape[1], linear=True, Xs=Xs) if N else None
        else:
            raise ValueError(f"smooth must be 'parse', None or a SmoothCovariance, got {smooth!r}.")
        if self.smooth is not None:
            self._solve_setup(norm_Linv)
        # The exact polynomial form (module doc, "Polynomial kernels").
        self.poly = None
        if N and self.psd:
            from ..kernels.polynomial import PolynomialCovariance

            self.poly = PolynomialCovariance.parse(adapter.kernel, self.adapter.Xs.shape[1])
            if self.poly is not None:
                self._poly_setup(norm_Linv)

    # The lemma's rho (``_lemma_rho``) reads the support points' kernel
    # diagonal and rounding through the adapter; a subclass whose adapter is
    # not that kernel (multi-output) sets False (noise lower bound 0, kmax
    # from the factor's rows).
    _LEMMA_ADAPTER_IS_SUPPORT_KERNEL = True
    # True: L is sklearn's Cholesky factor of fl(K) + noise (regressor) or of
    # I + W^1/2 fl(K) W^1/2 (Laplace / EP classifiers), so Higham's Thm 10.3
    # bounds L L^T - fl(K) - noise. False (e.g. a factor from a QR, the
    # sparse models): rho only from the direct certificate (an O(N^3) set-up).
    _LEMMA_CHOLESKY_MODEL = True

    # Subclasses whose bounds use A, S or the full V set this to keep them
    # from the set-up instead of recomputing them on first access.
    _KEEP_DENSE = False

    # The direct margin (module doc, "Without the lemma"); set per instance in
    # __init__, class defaults for objects unpickled from before session 25.
    _direct_margin = False
    kappa_direct = np.inf

    #: c1 of "Without the lemma" (a): q(r0~) <= c1 q0 where kappa_direct is finite.
    _C1 = 1.3

    def _direct_qmax(self, q0, e):
        """(B,) ``qmax`` for :meth:`input_rounding` without the lemma:
        (c1 |q0|)^1/2 + e^1/2 bounds ||A r(x)|| over the box (module doc,
        "Without the lemma", (a) and (e)), squared and rounded up; None
        where the lemma holds (rho finite)."""
        if np.isfinite(self.rho):
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            return (np.sqrt(self._C1 * np.abs(q0)) + np.sqrt(np.maximum(e, 0.0))) ** 2 * (1.0 + 1e-12)

    def _inverse_factor(self):
        """``A = L^-1 D``: LAPACK's triangular inverse (``trtri``, a third of
        the flops of a triangular solve of the identity), the solve where
        ``trtri`` reports a zero pivot. Any computed inverse serves: every
        use of A goes through the residual ``L A - D`` (set-up)."""
        N = self.L.shape[0]
        A, info = lapack.dtrtri(self.L, lower=1) if N else (np.zeros((0, 0)), 0)
        if info == 0:
            A = np.tril(A)
        else:
            A = solve_triangular(self.L, np.eye(N), lower=True, check_finite=False)
        if self.col_scale is not None:
            A = A * self.col_scale[None, :]
        return A

    def _cached(self, name, make):
        # The cache dict is shared by shallow copies (the multi-output
        # outputs copy one base), so they share what one of them recomputes.
        value = self._dense.get(name)
        if value is None:
            value = self._dense[name] = make()
        return value

    @property
    def A(self):
        """``L^-1 D`` (N, N), recomputed on first access (not kept by the set-up)."""
        return self._cached("A", self._inverse_factor)

    @property
    def S(self):
        """``A^T A`` (N, N), recomputed on first access."""
        return self._cached("S", lambda: self.A.T @ self.A)

    @property
    def V(self):
        """Eigenvectors of S (N, N) by ``eigh``, columns in descending order of
        their eigenvalues, recomputed on first access. Where the set-up did
        not use the spectral split it computed the eigenvalues alone
        (``eigvalsh``): ``lam`` then agrees with V's eigenvalues only to
        rounding, so nothing may pair them in a bound (the split and
        ``_eig_error`` use eigh's own pair; the paper method keeps both)."""
        return self._cached("V", lambda: np.linalg.eigh(self.S)[1][:, ::-1])

    @property
    def _V_top(self):
        """The leading eigenvectors the spectral split may use, descending."""
        return self._V_tail[:, ::-1]

    def ensure_solve_setup(self):
        """Compute the per-fit constants of the componentwise solve margins
        (gam, ||L||abs, ||L^-1||; :meth:`_solve_setup`) unless they are
        already there; idempotent.

        The set-up does this itself when the local RKHS bound is on
        (``smooth``); a caller that switches it on later, on copies of one
        base (the multi-output model, one ``smooth`` per output), calls this
        once on the base. With ``col_scale`` (Laplace GPC) it needs
        ``smooth``.
        """
        if "_gam" not in self.__dict__:
            self._solve_setup(self._norm_Linv)

    def _solve_setup(self, norm_Linv):
        """Per-fit constants of the componentwise solve margins (module doc,
        "Rounding of the local bound"): gam, ||L||abs >= || |L| ||_2 and
        nLinv >= ||L^-1||_2."""
        N, d = self.n_support, self.adapter.Xs.shape[1]
        self._gam = margin_rtol(N, d)
        if "_nLabs" not in self.__dict__:  # the set-up's (self.L is only set there)
            self._nLabs = nonneg_norm2_upper(self.L)
        if self.col_scale is None:
            # A = L^-1: lam_max >= ||A||^2 (certified lambda_max(fl(S)) plus
            # s_err, and <= the proven ||L^-1||^2 of the set-up).
            self._nLinv = float(np.sqrt(self.lam_max))
        self._Dmax = 1.0 if self.col_scale is None else float(np.max(np.abs(self.col_scale), initial=0.0))
        if self.col_scale is not None:
            # Laplace GPC: L L^T = fl(I + D fl(K) D) + dB with ||dB|| <= gam
            # ||L||abs^2 (Cholesky), fl(K) = K + E (kernel-value rounding <=
            # c_val u kg per entry plus input rounding), D K D >= 0 and the
            # products err by 3 u |D K D|: L L^T >= (1 - t) I. kg bounds
            # every |K_ij| and term magnitude of the Gram sklearn factors:
            # kappa0 off the diagonal (linear and power terms: kappa0 + lin
            # ||x_i|| ||x_j|| + sum c (s + ||x_i|| ||x_j||)^p <= max_i
            # k_c(x_i, x_i) <= kad, each part monotone in the norms), the adapter's diagonal
            # (WhiteKernel parts included) on it, as in _lemma_rho's kad.
            Xs = self.adapter.Xs
            sm = self.smooth
            kad = float(np.max(np.abs(self.adapter.diag(Xs)), initial=0.0))
            kg = max(sm.kappa0, kad)
            cv = sm.value_rounding(self._value_ulps(d), kg)
            EK = float(np.linalg.norm(self.adapter.rounding(Xs, Xs) + cv)) * (1.0 + N * _U)
            nLa = np.float64(self._nLabs)  # numpy float: overflow -> inf, never OverflowError
            with np.errstate(over="ignore", invalid="ignore"):
                t = 2.0 * self._gam * nLa * nLa + self._Dmax**2 * (EK + 3.0 * _U * N * kg) * 1.01
            self._nLinv = float(1.0 / np.sqrt(1.0 - t)) * (1 + 1e-12) if t < 0.5 else np.inf
            # The set-up's proven bound (Cholesky certificate of L L^T) is
            # valid as well; the smaller is used.
            self._nLinv = min(self._nLinv, float(norm_Linv))

    def _s_error(self, A, norm_Linv):
        """Upper bound of ||fl(A^T A) - (L^-1 D)^T (L^-1 D)||_2."""
        N = A.shape[0]
        # ||A - L^-1 D|| <= ||L^-1|| ||L A - D||; the residual is computed in
        # float, so add its own rounding, (N + 4) u || |L| |A| || (self._res).
        # inf * 0 (an unbounded ||L^-1|| with an exactly zero residual) is
        # not a bound: inf there.
        with np.errstate(over="ignore", invalid="ignore"):
            dA = np.float64(norm_Linv) * np.float64(self._res)
        dA = np.inf if not np.isfinite(norm_Linv) or np.isnan(dA) else float(dA)
        self._dA = float(dA) * (1 + 1e-12)  # >= ||A - L^-1 D||_2 (the paper method uses it)
        # Frobenius norms (>= the 2-norms) are sums of N^2 non-negative terms
        # and a square root: computed ones are rounded up by (1 + (N^2 + 4) u),
        # like every other norm of the set-up (review finding 5).
        fro = 1.0 + (N * N + 4) * _U
        nA = np.float64(np.linalg.norm(A)) * fro
        gam = (N + 2) * _U
        with np.errstate(over="ignore", invalid="ignore"):
            # || |A|^T |A| ||_F <= || |A| ||_F^2 = ||A||_F^2 (submultiplicative):
            # no N^3 product (its extra looseness is < N (N + 2) u lam_max).
            err = 2.0 * dA * nA + dA * dA + gam * nA * nA + 1e-300
        return float(err) * (1 + 1e-12) if np.isfinite(err) else np.inf

    def _eig_error(self, S, lam, V):
        """(eta, eps): eta >= ||V^T V - I||_2 and eps >= ||fl(S) - V diag(lam) V^T||_2
        for the computed eigenvectors V and clipped eigenvalues lam (ascending
        order of ``eigh``'s V, lam descending: reversed here). Each product
        is computed in float and its own rounding added, (N + 4) u times the
        product of the absolute values (gamma_N of the products, the scaling
        by lam and the subtraction), bounded by the product of Frobenius
        norms; Frobenius norms bound the 2-norms."""
        N = S.shape[0]
        g = (N + 4) * _U
        lam_a = lam[::-1]  # ascending, matching V's columns
        # || |X| |Y| ||_F <= ||X||_F ||Y||_F: the magnitudes' products are not
        # formed (two N^3 products saved; looser by <= sqrt(N), on terms of
        # relative size N u).
        nV = float(np.linalg.norm(V))
        E = V.T @ V
        E[np.diag_indices(N)] -= 1.0
        eta = float(np.linalg.norm(E)) + g * nV * nV
        VL = V * lam_a[None, :]
        R = S - VL @ V.T
        eps = float(np.linalg.norm(R)) + (g + 2 * _U) * float(np.linalg.norm(VL)) * nV
        eps += _U * float(np.linalg.norm(S))
        # The Frobenius norms are sums of N^2 terms: (1 + (N^2 + 4) u).
        f = (1.0 + (N * N + 4) * _U) * (1 + 1e-12)
        return eta * f, eps * f

    def _lemma_rho(self, norm_Linv):
        """rho >= 0 with P <= (1 + rho) I for the float factor (module doc,
        "The lemma for the float factor"): ``e nLinv^2`` with e >= 0 and
        L L^T >= Kc' - e I (Kc' = D Kc D), ``inf`` when that is not finite.
        Sets ``self.lemma_e`` to that e (the per-point lemma, module doc
        "The per-point lemma")."""
        self.lemma_e = np.inf
        N = self.n_support
        d = self.adapter.Xs.shape[1]
        L = self.L
        Xs = self.adapter.Xs
        with np.errstate(over="ignore", invalid="ignore"):
            nLa = np.float64(self._nLabs)
            e_chol = margin_rtol(N + 1, 0) * nLa * nLa  # >= 8 gamma_(N+1) || |L| ||^2
            rows = np.einsum("ij,ij->i", L, L)  # (|L| |L^T|)_ii, fl
            krow = float(np.max(rows, initial=0.0)) * (1.0 + (2 * N + 4) * _U)
            self._krow = krow  # shared with _kappa (the same expression)
            kad = float(np.max(np.abs(self.adapter.diag(Xs)), initial=0.0))
            own = bool(self._LEMMA_ADAPTER_IS_SUPPORT_KERNEL)
            if not own:
                # A subclass whose adapter is not the support points' kernel
                # (the multi-output LMC): kmax from the factor's rows.
                kad = max(kad, krow)
            c_val = self._value_ulps(d)
            # Input rounding over the hull box of the support points (valid for
            # every x in it, so for x = x_i): |rounding(x_i, x_j)| <= R_j, and
            # the N x N matrix of bounds has Frobenius norm <= sqrt(N) ||R||
            # (sqrt(2N) ||R|| for the symmetric maximum). O(N d), not O(N^2 d).
            R = np.asarray(self.adapter.rounding(Xs.min(0)[None], Xs.max(0)[None]), dtype=np.float64)[0]
            nR = np.float64(np.linalg.norm(R)) * (1.0 + (N + 4) * _U)
            fro = 1.0 + (N * N + 4) * _U
            # ||fl(K) - K||_2 <= ||.||_F: input rounding plus c_val u kad per entry.
            nF = (np.sqrt(np.float64(N)) * nR * (1.0 + 1e-15) + N * c_val * _U * kad) * fro
            if self.col_scale is None:
                # L L^T = Kc + Dn + F + Ea + E3: Ea the diagonal additions of
                # the white parts and alpha (<= 8 u krow), Dn >= delta I.
                e = (e_chol + nF + 8.0 * _U * krow * 1.01) * (1.0 + 1e-10)
                delta = 0.0
                rho0 = e * np.float64(norm_Linv) ** 2
                cert = np.inf
                # rho0 <= 1e-6 costs at most that relative on the margins:
                # kept without the O(N^2 d + N^3) refinements.
                if not self._LEMMA_CHOLESKY_MODEL:
                    # L not from sklearn's Cholesky of fl(K) + noise: only
                    # the structure-free certificate is a proof (no noise
                    # credit: delta belongs to the Cholesky model).
                    cert = self._lemma_certificate(norm_Linv, nR, c_val, kad, self._support_gram())
                    return self._rho_of(cert, norm_Linv)
                if not (rho0 <= 1e-6) and own:
                    # The support Gram (N x N) is built once for both.
                    Kc = self._support_gram()
                    delta = self._noise_lower(rows, R, c_val, kad, krow, Kc)
                    if not (e <= delta):
                        cert = self._lemma_certificate(norm_Linv, nR, c_val, kad, Kc)
            else:
                if not self._LEMMA_CHOLESKY_MODEL:
                    # No structure-free certificate for the classifier form
                    # (I + D K D) here: without sklearn's Cholesky, no proof.
                    return self._rho_of(np.inf, norm_Linv)
                # L L^T = I + Dc K Dc + Dc F Dc + Ep (3 u N Dmax^2 kad) + EI (u krow) + E3.
                Dm = float(np.max(np.abs(self.col_scale), initial=0.0))
                e = (e_chol + Dm * Dm * (nF + 3.0 * _U * N * kad) + 2.0 * _U * krow) * 1.01
                delta = 1.0
                # For :meth:`floor`: L L^T >= I - e I + Dc Kc Dc, and kad.
                self._floor_e, self._floor_kad = float(e), kad
            if not np.isfinite(e):
                return np.inf
            if e <= delta:
                self.lemma_e = 0.0
                return 0.0
            # L L^T >= Kc' - (e - delta) I; fl(e - delta) rounded up by the factor.
            ep = (e - delta) * (1.0 + 1e-10)
            if self.col_scale is None:
                ep = min(ep, cert)
            return self._rho_of(ep, norm_Linv)

    def _rho_of(self, ep, norm_Linv):
        """rho = ep nLinv^2 (rounded up) for the shift ep of L L^T >= Kc' -
        ep I; records ``self.lemma_e = ep``."""
        with np.errstate(over="ignore", invalid="ignore"):
            ep = np.float64(ep)
            if not (ep >= 0 and np.isfinite(ep)):
                self.lemma_e = np.inf
                return np.inf
            self.lemma_e = float(ep)
            if ep == 0:
                return 0.0
            rho = ep * np.float64(norm_Linv) ** 2 * (1.0 + 1e-10)
        return float(rho) if np.isfinite(rho) else np.inf

    def _support_gram(self):
        """Our kernel values k_c(Xs, Xs) (N, N) through the adapter, as the
        lemma's certificate and noise credit read them."""
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(self.adapter.values(self.adapter.Xs), dtype=np.float64)

    def _lemma_certificate(self, norm_Linv, nR, c_val, kad, Kc):
        """e' >= 0 with L L^T >= Kc - e' I from a direct certificate of
        lambda_min(L L^T - Kc) (module doc, "The lemma for the float
        factor"; any L, no Cholesky model; regressor form S = (L L^T)^-1):
        Hs = fl(fl(L L^T) - fl(Kc)) (lower triangle, our kernel values),
        L L^T - Kc = Hs + Delta with ||Delta||_2 <= gam_N nLabs^2 (the
        product, any order) + ||F||_F (kernel values: rounding(Xs, Xs) +
        c_val u kmax per entry) + u ||Hs||_F (the subtraction), all rounded
        up; lambda_min(Hs) >= lb by
        :func:`~skgprobust._fp.psd_lower_certificate`. With e' = max(||Delta||
        - lb, 0) (rounded up; rho = e' nLinv^2); ``inf`` when no shift
        certifies. The shift c of the certificate (lb ~ c) is 4 ||Delta||
        first (success with lb >= ||Delta||: e' = 0), then just below an
        estimate of lambda_min(Hs) (``eigvalsh``; only chooses c), then
        fixed fallbacks; the first success is used.

        Where that leaves e' > 0 and the platform has x87 extended
        precision (:func:`~skgprobust._fp.extended_unit_roundoff`, N <=
        ``EXTENDED_MAX_N``), Hs is recomputed with the product and the
        subtraction in extended precision
        (:func:`~skgprobust._fp.gram_minus_extended`): the product's term
        becomes 2 gamma_N(u_x) nLabs^2 (u_x = 2^-64, 2x headroom) instead of
        gam_N nLabs^2 (~8000x smaller), the subtraction's (u + 2 u_x) (1 +
        2 u) ||Hs||_F; the same certificate runs on it and the smaller e'
        is used. This is what certifies unscaled trend models whose noise
        is below gam_N nLabs^2 (module doc, "The lemma for the float
        factor": Friedman #3, N = 1000, noise 2e-4 against gam_N nLabs^2 =
        1e-3, rho 4.2 -> 0)."""
        N = self.n_support
        L = self.L
        with np.errstate(over="ignore", invalid="ignore"):
            Hs = L @ L.T - Kc
            fro = 1.0 + (N * N + 4) * _U
            nLa = np.float64(self._nLabs)
            # Hs is read from its lower triangle: entry (j, i) carries the
            # bound of (i, j), so the symmetric maximum of the bounds R_j
            # (hull box, :meth:`_lemma_rho`): Frobenius <= sqrt(2 N) ||R||.
            nF = (np.sqrt(2.0 * N) * nR * (1.0 + 1e-15) + N * c_val * _U * kad) * fro
            # N 2^-1074: Hs's subnormal entries (absolute rounding) and the norm's underflow.
            dlt = (margin_rtol(N, 0) * nLa * nLa + nF + _U * np.float64(np.linalg.norm(np.tril(Hs))) * 2.0 * fro
                   + N * 2.0**-1074) * (1.0 + 1e-10)
            if not (np.isfinite(dlt) and np.all(np.isfinite(Hs))):
                return np.inf
            ep = self._certified_shift(Hs, dlt, nF)
            ux = extended_unit_roundoff()
            if ep > 0 and ux is not None and N <= EXTENDED_MAX_N:
                Hx = gram_minus_extended(L, Kc)
                gx = 2.0 * N * ux / (1.0 - N * ux)
                dx = (gx * nLa * nLa + nF + (_U + 2.0 * ux) * (1.0 + 2.0 * _U)
                      * np.float64(np.linalg.norm(np.tril(Hx))) * 2.0 * fro + N * 2.0**-1074) * (1.0 + 1e-10)
                if np.isfinite(dx) and np.all(np.isfinite(Hx)):
                    ep = min(ep, self._certified_shift(Hx, dx, None))
            return ep

    def _certified_shift(self, Hs, dlt, nF):
        """e' >= 0 with Hs + Delta >= -e' I for every symmetric Delta with
        ||Delta||_2 <= dlt (Hs's lower triangle read), from
        :func:`~skgprobust._fp.psd_lower_certificate` at the shifts of
        :meth:`_lemma_certificate`; with ``nF`` (not None) also the
        row-scaled form (:meth:`_scaled_lemma_certificate`, whose own
        Delta bound needs Hs = fl(fl(L L^T) - fl(Kc)) in float64). ``inf``
        when nothing certifies."""
        with np.errstate(over="ignore", invalid="ignore"):
            dmin = float(np.min(np.diag(Hs)))
            # Shifts c for the certificate lb = c - (its rounding): the first
            # that certifies is used (descending). 4 dlt first: lb >= dlt
            # there already gives e' = 0 (e.g. the sparse models' jitter,
            # L L^T - Kc >= j I in real arithmetic); then just below an
            # estimate of lambda_min(Hs) (eigvalsh: it only picks shifts,
            # every bound comes from the certificate); then fixed fallbacks.
            if 4.0 * dlt <= dmin:
                lb = psd_lower_certificate(Hs, 4.0 * dlt)
                if lb >= dlt:
                    return 0.0
            # The row-scaled certificate (a few huge rows of L make nLabs^2,
            # hence dlt, useless for the others).
            ep_s = np.inf if nF is None else self._scaled_lemma_certificate(Hs, nF)
            if ep_s == 0.0:
                return 0.0
            try:
                lam = float(np.linalg.eigvalsh(Hs, UPLO="L")[0])
            except np.linalg.LinAlgError:  # pragma: no cover - only picks shifts
                lam = np.nan
            cands = [0.0, -dlt, -10.0 * dlt, -1e3 * dlt, -1e6 * dlt]
            if np.isfinite(lam):
                cands += [lam - 0.02 * abs(lam) - dlt, lam - 0.2 * abs(lam) - 2.0 * dlt]
            for c in sorted(set(cands), reverse=True):
                if c > dmin or not np.isfinite(c):
                    continue  # Hs - c I has a non-positive diagonal entry
                lb = psd_lower_certificate(Hs, c)
                if lb > -np.inf:
                    ep = dlt - lb
                    return 0.0 if ep <= 0 else min(float(ep * (1.0 + 1e-10)), ep_s)
            return ep_s

    def _scaled_lemma_certificate(self, Hs, nF):
        """e' >= 0 with L L^T >= Kc - e' I from a certificate of the
        row-scaled matrix (module doc, "The lemma for the float factor";
        ``inf`` when it does not certify).

        S = diag(s), s_i = fl(1 / fl(sqrt(r_i))), r_i = fl(sum_j L_ij^2)
        (any positive floats would do; these make S |L| |L^T| S <= 1
        entrywise). With Hs = fl(fl(L L^T) - fl(Kc)) (lower triangle read),
        L L^T - Kc = Hs + Delta1 + Delta2 + Delta3: the product |Delta1_ij|
        <= gam_N (|L| |L^T|)_ij <= gam_N sqrt(r*_i r*_j) (Cauchy-Schwarz,
        r* the exact row sums; any order), so |(S Delta1 S)_ij| <= gam_N (1 +
        (N + 8) u) (s_i^2 r*_i <= (1 + u)^4 / (1 - gamma_N)); the kernel
        values ||S Delta2 S||_F <= max s^2 nF; the subtraction |Delta3_ij|
        <= u |Hs_ij|. Hh = fl(S Hs S) (two products per entry) errs from S
        Hs S by <= 2.01 u |Hh| entrywise, and |S Delta3 S| <= 1.01 u |Hh|.
        So S (L L^T - Kc) S >= Hh - dlt_s I, dlt_s = gam_N N (1 + (N + 8) u)
        + max s^2 nF + 2 (3.1 u) ||tril(Hh)||_F (rounded up), and with
        lambda_min(Hh) >= lb (:func:`~skgprobust._fp.psd_lower_certificate`)
        L L^T - Kc >= (lb - dlt_s) S^-2: e' = 0 if lb >= dlt_s, else (dlt_s
        - lb) max 1 / s^2. Shifts: 4 dlt_s, then just below an ``eigvalsh``
        estimate of lambda_min(Hh)."""
        N = self.n_support
        L = self.L
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            r = np.einsum("ij,ij->i", L, L)
            sc = 1.0 / np.sqrt(r)
            # r_i >= 1e-250: no underflow in the squares that could break
            # the relative bound of fl(r_i).
            if not (np.all(r >= 1e-250) and np.all(np.isfinite(sc)) and np.all(sc > 0)):
                return np.inf
            Hh = (Hs * sc[:, None]) * sc[None, :]
            if not np.all(np.isfinite(Hh)):
                return np.inf
            fro = 1.0 + (N * N + 4) * _U
            smax2 = float(np.max(sc)) ** 2 * (1.0 + 4.0 * _U)
            dlt_s = (
                margin_rtol(N, 0) * N * (1.0 + (N + 8) * _U)
                + smax2 * nF
                + 2.0 * 3.1 * _U * float(np.linalg.norm(np.tril(Hh))) * fro
            ) * (1.0 + 1e-10)
            if not np.isfinite(dlt_s):
                return np.inf
            dmin = float(np.min(np.diag(Hh)))
            lb = psd_lower_certificate(Hh, 4.0 * dlt_s) if 4.0 * dlt_s <= dmin else -np.inf
            if not (lb >= dlt_s):
                try:
                    lam = float(np.linalg.eigvalsh(Hh, UPLO="L")[0])
                except np.linalg.LinAlgError:  # pragma: no cover - only picks shifts
                    return np.inf
                c = lam - 0.02 * abs(lam) - dlt_s
                if not (np.isfinite(c) and c <= dmin):
                    return np.inf
                lb = psd_lower_certificate(Hh, c)
            if lb >= dlt_s:
                return 0.0
            if not lb > -np.inf:
                return np.inf
            ep = (dlt_s - lb) * (1.0 + 1e-10) / (float(np.min(sc)) ** 2 * (1.0 - 4.0 * _U))
            return float(ep) if np.isfinite(ep) else np.inf

    def _noise_lower(self, rows, R, c_val, kad, krow, Kc):
        """delta <= min_i Dn_ii, the regressor's noise diagonal (white parts
        plus alpha), from the factor's row norms and the kernel's own
        diagonal without the white parts (module doc, "The lemma for the
        float factor"); 0 when not positive."""
        N = self.n_support
        with np.errstate(over="ignore", invalid="ignore"):
            kc = np.diagonal(Kc)
            lb = (
                rows * (1.0 - margin_rtol(N + 1, 0) - (2 * N + 8) * _U)
                - kc
                - 2.0 * (c_val * _U * kad + R)
                - 8.0 * _U * krow * 1.01
            )
            delta = float(np.min(lb, initial=np.inf)) * (1.0 - 1e-12)
        return delta if np.isfinite(delta) and delta > 0 else 0.0

    def _kappa(self, norm_Linv):
        """The factor of the kappa-scaled margin (module doc, "Soundness
        margin"): ``nLinv (nLabs + 2 (2 w + nLinv w^2) / gam)`` with w =
        sqrt(N) c_val u sqrt(kii), kii >= max_i D_i^2 k(x_i, x_i) (the
        kernel values' own rounding), ``inf`` where the first-order argument needs
        ``gam nLinv nLabs <= 1`` and that fails."""
        N = self.n_support
        if N == 0:
            return 1.0
        d = self.adapter.Xs.shape[1]
        gam = margin_rtol(N, d)
        Dmax = 1.0 if self.col_scale is None else float(np.max(np.abs(self.col_scale), initial=0.0))
        with np.errstate(over="ignore", invalid="ignore"):
            # kii >= max_i D_i^2 K(z_i, z_i) for the support points' own kernel:
            # Dmax^2 max_i k(x_i, x_i) through the adapter (single kernel), or
            # max_i (L L^T)_ii (any factor of D K D + a PSD diagonal, the
            # multi-output LMC included; the row norms up to Cholesky's and
            # their own rounding, (2N + 4) u relative).
            kad = float(np.max(np.abs(self.adapter.diag(self.adapter.Xs)), initial=0.0)) * Dmax * Dmax
            krow = self.__dict__.get("_krow")  # _lemma_rho's (the same expression)
            if krow is None:
                krow = float(np.max(np.einsum("ij,ij->i", self.L, self.L), initial=0.0)) * (1.0 + (2 * N + 4) * _U)
            kii = max(kad, krow)
            w = np.sqrt(N) * self._value_ulps(d) * _U * np.sqrt(kii) * (1.0 + 1e-12)
            ka = norm_Linv * self._nLabs
            kappa = norm_Linv * (self._nLabs + 2.0 * (2.0 * w + norm_Linv * w * w) / gam) * (1.0 + 1e-12)
        if not (np.isfinite(kappa) and gam * ka <= 1.0):
            return np.inf
        # Step (d): sklearn's k(x, x) errs by <= c_diag u k(x, x); the
        # derivation's budget holds 8 u of it, the excess is added here
        # (module doc, "Soundness margin", (d)).
        extra = max(0.0, float(self.adapter.diag_ulps(d)) - 8.0) * _U / gam * (1.0 + 1e-12)
        return max(1.0, float(kappa)) + extra

    def _value_ulps(self, d):
        """c_val: each kernel value k~(x, x_i) errs (beyond
        :meth:`KernelAdapter.rounding`) by <= c_val u sqrt(k(x, x) k(x_i, x_i))
        (module doc, "Soundness margin" (a)): the adapter's
        :meth:`~skgprobust.kernels._base.KernelAdapter.value_ulps`, where the
        constants and their proofs live (subclasses may add to it). With a
        column scale D (the Laplace classifiers) sklearn's right-hand side is
        fl(D_i k~_i): one more rounding, u |D_i k~_i| <= u |D_i| (1 + c_val u)
        sqrt(k(x, x) k(x_i, x_i)), hence + 1 (the 1 + c_val u factor is inside
        the margins' (1 + 1e-12))."""
        c = self.adapter.value_ulps(d)
        return c + 1 if self.col_scale is not None else c

    def _apply_A(self, R):
        """``A R^T`` for rows R (n, N), by a triangular solve as sklearn does."""
        Rs = R if self.col_scale is None else R * self.col_scale
        return solve_triangular(self.L, Rs.T, lower=True, check_finite=False)

    def _grad_q(self, W):
        """``2 S r`` given ``W = A r^T`` (N, n): rows (n, N)."""
        G = solve_triangular(self.L, W, lower=True, trans="T", check_finite=False).T
        if self.col_scale is not None:
            G = G * self.col_scale
        return 2.0 * G

    @property
    def n_support(self):
        return self.L.shape[0]

    # -- point values ----------------------------------------------------
    def value(self, X):
        """var(x) per row of X (n,), in the same form sklearn computes it."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        return self.value_from_kernel(X, self.adapter.values(X))

    def value_from_kernel(self, X, R):
        """:meth:`value` given R = ``self.adapter.values(X)`` (computed once
        for several models on the same kernel and support)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if self.n_support == 0:
            return self.adapter.diag(X)
        Z = self._apply_A(R)
        return self.adapter.diag(X) - np.einsum("ij,ij->j", Z, Z)

    def value_and_grad(self, X):
        """var(x) per row of X (n,) and its gradient (n, d)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        R, dR = self.adapter.value_and_grad(X)
        return self.value_and_grad_from_kernel(X, R, dR)

    def value_and_grad_from_kernel(self, X, R, dR):
        """:meth:`value_and_grad` given (R, dR) =
        ``self.adapter.value_and_grad(X)`` (computed once for several models
        on the same kernel and support)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if self.n_support == 0:
            q, dq = np.zeros(len(X)), np.zeros_like(X)
        else:
            W = self._apply_A(R)
            q = np.einsum("ij,ij->j", W, W)
            dq = np.einsum("nid,ni->nd", dR, self._grad_q(W))
        kd = self.adapter.diag(X)
        # d/dx k(x, x) is 0 for stationary kernels; DotProduct-like diagonals
        # are handled by a central difference (only the local search uses it).
        if not self.adapter.kernel.is_stationary():
            eps = 1e-6 * np.maximum(1.0, np.abs(X))
            dkd = np.empty_like(X)
            for j in range(X.shape[1]):
                Xp, Xm = X.copy(), X.copy()
                Xp[:, j] += eps[:, j]
                Xm[:, j] -= eps[:, j]
                dkd[:, j] = (self.adapter.diag(Xp) - self.adapter.diag(Xm)) / (2 * eps[:, j])
        else:
            dkd = 0.0
        return kd - q, dkd - dq

    # -- box bounds ------------------------------------------------------
    def margin(self, scale, d):
        """Absolute rounding margin for quantities of size ``scale``."""
        return margin_rtol(self.n_support, d) * self.kappa * scale

    def margin_direct(self, scale, d):
        """:meth:`margin` for a ``scale`` that bounds q(x) and |k(x, x)| over
        the box by itself, not through the lemma (module doc, "Without the
        lemma"): finite also where rho is infinite, for kernels whose term
        magnitude is dominated by the diagonal (``kappa_direct``). Elsewhere
        it is :meth:`margin` itself (a subclass's override included)."""
        if not self._direct_margin:
            return self.margin(scale, d)
        return margin_rtol(self.n_support, d) * self.kappa_direct * scale

    def floor(self, lo, hi):
        """A cheap lower bound (B,) of the variance the model computes at any x
        of each box: no kernel values at the support points, O(B d).

        With the float factor, P <= (1 + rho) I (module doc), so q(x) <= (1 +
        rho) k_c(x, x) and v >= -rho k_c(x, x) >= -rho k(x, x) (white parts >=
        0: the lemma holds only for PSD kernels, else rho = inf). For the
        Laplace classifiers (column scale Dc, |Dc| <= Dm) the noise gives
        more: with e the lemma's bound, L L^T >= Dc Kc Dc + (1 - e) I, so for
        e < 1, q(x) <= r^T (Kc + s I)^-1 r with s = (1 - e) / Dm^2 (with M =
        L L^T: r^T Dc M^-1 Dc r = max_z 2 z^T Dc r - z^T M z <= max_z 2 z^T Dc
        r - c^T Kc c - (1 - e) ||z||^2, c = Dc z, and ||c|| <= Dm ||z||, so
        <= max_c 2 c^T r - c^T (Kc + s I) c; zero entries of Dc included), and the
        posterior variance of f(x) observed with noise s is at least k_c(x, x)
        s / (s + lambda_max(Kc)) (min over c of Var(f(x) - c^T f_X) + s
        ||c||^2 >= min_t (sd - t sqrt(lambda))_+^2 + s t^2); lambda_max(Kc) <=
        trace <= N kad (1 + c_diag u), kad the computed maximum of k(x_i, x_i)
        (white parts >= 0). So v >= k(x, x) s / (s + N kad), with k(x, x) >=
        dlo (1 - c_diag u) also where ``diag_interval`` returns the computed
        diagonal. Only for a finite rho (a PSD kernel). sklearn's number is
        within ``margin(max |k(x, x)|)`` plus the input rounding of that
        (module doc, "Soundness margin": any scale >= max(q, |k(x, x)|)).
        Used to show that a probability the model computes from the variance
        is finite (:meth:`skgprobust._engine._latent.BoundModel.probabilities_finite`)
        without a full bound.
        """
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        d = lo.shape[1]
        dlo, dhi = self.adapter.diag_interval(lo, hi)
        with np.errstate(over="ignore", invalid="ignore"):
            S = np.maximum(np.abs(dlo), np.abs(dhi)) * (1.0 + 1e-12)
            base = -self.rho * S if self.rho > 0 else np.zeros_like(S)
            e = getattr(self, "_floor_e", np.inf)
            if self.col_scale is not None and e < 1.0 and np.isfinite(self.rho):
                cu = float(self.adapter.diag_ulps(d)) * _U
                Dm = float(np.max(np.abs(self.col_scale), initial=0.0))
                lam = self.n_support * self._floor_kad * (1.0 + cu) * (1.0 + 1e-12)
                s = (1.0 - e) / (Dm * Dm) * (1.0 - 1e-12) if Dm * Dm > 0 else np.inf
                ratio = 1.0 if not np.isfinite(s) else s / (s + lam) * (1.0 - 1e-12)
                noise = np.maximum(dlo, 0.0) * (1.0 - cu) * ratio * (1.0 - 1e-12)
                base = np.maximum(base, noise)
            out = base - self.margin(S, d) - self.input_rounding(lo, hi, dhi)
        return np.where(np.isfinite(out), out, -np.inf)

    def bounds(self, lo, hi):
        """Lower and upper bounds of var over each box (see module doc)."""
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        B, d = lo.shape
        N = self.n_support
        centre = 0.5 * (lo + hi)
        r0 = self.adapter.values(centre)  # (B, N)
        if N == 0:
            q0, g = np.zeros(B), np.zeros((B, 0))
        else:
            W0 = self._apply_A(r0)  # (N, B)
            q0 = np.einsum("ib,ib->b", W0, W0)
            g = self._grad_q(W0)
        g_r0 = np.einsum("bi,bi->b", g, r0)
        klo, khi = self.adapter.interval(lo, hi)
        dlo, dhi = self.adapter.diag_interval(lo, hi)

        LO2, HI2, G2 = np.vstack([lo, lo]), np.vstack([hi, hi]), np.vstack([g, -g])
        lin = self.adapter.linearise(LO2, HI2, G2)
        both = affine_lower(self.adapter, G2, 0.0, LO2, HI2, linearised=lin)
        gmin, gmax = both.lower[:B], -both.lower[B:]

        # Lower bound of q (tangent plane), never below 0.
        q_lower = np.maximum(q0 - g_r0 + gmin, 0.0)
        # Upper bound of q: linear part plus the quadratic remainder e.
        dr = np.maximum(khi - r0, r0 - klo)
        dr = np.maximum(dr, 0.0)
        dr2 = np.einsum("bi,bi->b", dr, dr)
        e = self.lam_max * dr2
        m = self._n_top(B, d) if self.lam_max * np.max(np.abs(dhi), initial=0.0) > _SPECTRAL_MIN_GAIN else 0
        # ||A dr||^2 <= (1 + rho) ||k_x - k_x0||_H^2 (module doc, "The RKHS
        # remainder"): free, independent of N and of the noise, and within a
        # small factor of the spectral split (which costs 2m mean-type
        # bounds per box).
        nE, nEA = self.centre_rounding_norm(lo, hi)
        e_rkhs = self.rkhs_remainder(lo, hi, n_centre=nEA)
        e = np.minimum(e, e_rkhs)
        if self.smooth is None and N > 0:
            # Kernels without the local RKHS bound (Matern 0.5 terms): the
            # Jacobian remainder, O(h^2) where the RKHS one is O(h). Tried
            # only where the RKHS increment is not already of second order
            # (it shrinks less than 3x when the box is halved; or it is
            # infinite): on an RBF + Matern 0.5 fit dominated by the RBF term
            # the first-order model cost 40% of the splits and never won. A
            # choice of work only.
            c_, h_ = box_halfwidths(lo, hi)
            with np.errstate(over="ignore", invalid="ignore"):
                D1 = self.adapter.rkhs_increment(lo, hi)
                D2 = self.adapter.rkhs_increment(c_ - 0.5 * h_, c_ + 0.5 * h_)
            go = ~np.isfinite(D1) | (D1 < 3.0 * D2)
            if go.any():
                e = e.copy()
                e[go] = np.minimum(e[go], self.jacobian_remainder(lo[go], hi[go], n_centre=nEA[go], cap=e[go]))
        if self.smooth is not None or np.all(np.isfinite(e_rkhs)):
            m = 0
        rmax = np.abs(r0) + np.maximum(np.abs(klo), np.abs(khi))
        scale0 = (
            np.abs(q0)
            + np.einsum("bi,bi->b", np.abs(g), rmax)
            # the slack that absorbs the solves' errors in q0 and g (the
            # latter paired with A dr): module doc, "Without the lemma", (b)-(d)
            + np.linalg.norm(g, axis=1) * np.linalg.norm(rmax, axis=1)
            + np.abs(dhi)
        )
        rin = self.input_rounding(lo, hi, dhi, qmax=self._direct_qmax(q0, e), nE=nE)
        poly = self._poly_bounds(lo, hi, dhi) if self.poly is not None else None
        local = self._local_bounds(lo, hi, dlo, dhi) if self.smooth is not None else None
        if m > 0:
            # The spectral split only lowers e, i.e. raises the lower bound,
            # to at most the value with e = 0 (the margin grows with e): it
            # is computed only for the boxes where that could beat the
            # polynomial or the local RKHS bound (which one wins changes
            # nothing about soundness).
            need = np.ones(B, dtype=bool)
            best = dlo - (q0 - g_r0 + gmax) - self.margin(scale0, d) - rin
            if poly is not None:
                need &= ~(best <= poly[0])
            if local is not None:
                need &= ~(best <= local[0])
            if need.all():
                e = np.minimum(e, self._spectral(lo, hi, r0, dr2, m))
            elif need.any():
                e = e.copy()
                e[need] = np.minimum(e[need], self._spectral(lo[need], hi[need], r0[need], dr2[need], m))
        q_upper = q0 - g_r0 + gmax + e

        mg = self._bounds_margin(q0, g, r0, rmax, g_r0, gmax, gmin, e, dhi, scale0, d) + rin
        lower = dlo - q_upper - mg
        upper = dhi - q_lower + mg
        lower = np.where(np.isfinite(lower), lower, -np.inf)
        upper = np.where(np.isfinite(upper), upper, np.inf)
        arg_min, arg_max, score = both.argmin[B:], both.argmin[:B], both.score[:B]
        # (not for the exact polynomial kernels, whose bound below is tighter)
        joint = self._diag_joint(lo, hi, g, lin[1]) if N > 0 and self.poly is None and np.any(dhi > dlo) else None
        if joint is not None:
            # Non-constant diagonal (module doc, "Non-constant diagonals"):
            # k(x, x) - g . r(x) bounded as one Taylor model, in place of
            # dlo - gmax and dhi - gmin; the tighter per box and side.
            j_lo, j_hi, u_lo, u_hi = joint
            lo_j = j_lo + g_r0 - q0 - e - mg
            hi_j = j_hi + g_r0 - q0 + mg
            use_lo = np.isfinite(lo_j) & (lo_j > lower)
            use_hi = np.isfinite(hi_j) & (hi_j < upper)
            lower, upper = np.where(use_lo, lo_j, lower), np.where(use_hi, hi_j, upper)
            arg_min = np.where(use_lo[:, None], u_lo, arg_min)
            arg_max = np.where(use_hi[:, None], u_hi, arg_max)
        if self.smooth is not None:
            # The local RKHS bound; the tighter of the two per box and side.
            lo2, hi2, amin2, amax2, score2 = local
            use_lo, use_hi = lo2 > lower, hi2 < upper
            lower, upper = np.where(use_lo, lo2, lower), np.where(use_hi, hi2, upper)
            arg_min = np.where(use_lo[:, None], amin2, arg_min)
            arg_max = np.where(use_hi[:, None], amax2, arg_max)
            score = np.where((use_lo | use_hi)[:, None], score2, score)
        if self.poly is not None:
            # The exact polynomial bound; the tighter per box and side.
            lo3, hi3, amin3, amax3, score3 = poly
            use_lo, use_hi = lo3 > lower, hi3 < upper
            lower, upper = np.where(use_lo, lo3, lower), np.where(use_hi, hi3, upper)
            arg_min = np.where(use_lo[:, None], amin3, arg_min)
            arg_max = np.where(use_hi[:, None], amax3, arg_max)
            score = np.where((use_lo | use_hi)[:, None], score3, score)
        return VarianceBound(lower, upper, arg_min, arg_max, score)

    def centre_rounding_norm(self, lo, hi):
        """``(||E||, ||E + c_val u A||)`` per box (B,) each: E =
        ``adapter.rounding(lo, hi)``, A its term magnitude bound
        (``rounding_parts``), c_val = ``adapter.value_ulps(d)``; the second
        bounds ||r~(x) - r(x)|| at every x of the box (the adapter's
        contract), the first is what :meth:`input_rounding` takes (its
        relative part is in the kappa-scaled margin).

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Box corners.

        Returns
        -------
        nE, nEA : ndarray of shape (B,)
            The two norms, rounded up.
        """
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        if self.n_support == 0:
            z = np.zeros(len(lo))
            return z, z
        R, _, _, A = self.adapter.rounding_parts(lo, hi)
        c = float(self.adapter.value_ulps(lo.shape[1]))
        with np.errstate(over="ignore", invalid="ignore"):
            nE = np.linalg.norm(R, axis=1)
            nEA = np.linalg.norm(R + c * _U * A, axis=1) * (1.0 + 1e-12)
        return nE, np.where(np.isnan(nEA), np.inf, nEA)

    def _bounds_margin(self, q0, g, r0, rmax, g_r0, gmax, gmin, e, dhi, scale0, d):
        """The rounding margin of :meth:`bounds` (sklearn's evaluation at every
        x of the box, and ours of q0, g, g . r0 and the sums), without the
        input rounding (added by the caller).

        Without the lemma (rho infinite): ``margin_direct(scale0 + e)``, the
        scale bounding q over the box by itself (module doc, "Without the
        lemma", whose slack terms sum_i |g_i| rmax_i and ||g|| ||rmax|| it
        needs).

        With the lemma (rho finite; session 27): ``margin(S) + E2 + E4``
        with S = 2.4 |q0| + e + |dhi|. Proof. (i) sklearn's number at x:
        the main derivation (module doc, "Soundness margin") bounds its
        distance to v(x) by (gam kappa_a / 2 + 2 Vt) s for any s >= max(q(x),
        |k(x, x)|), with q(x) <= (1 + rho) k_c(x, x) <= (1 + rho) |dhi|; the
        factor (1 + rho) is in kappa, so gam kappa |dhi| >= (gam kappa_a + 2
        Vt) max(q(x), |k(x, x)|) covers it with its 2x headroom. (ii) Ours:
        the bound uses q(x) = q(r0~) + g* . dr + ||A dr||^2 (g* = 2 S r0~
        exact, dr = r(x) - r0~, ||A dr||^2 <= e) with the computed q0, g:
        E1 = |q(r0~) - q0| <= 3.9 (N + 1) u kappa_a ||z1||^2 (steps (b), (c))
        with ||z1||^2 = q(r0~) <= 1.28 |q0| ("Without the lemma", (a)), and
        E3 = |(g* - g) . dr| <= 4.3 beta (q(r0~) e)^1/2 <= 2.2 beta (1.28
        |q0| + e), beta <= 1.01 (N + 1) u kappa_a (ibid., (b): the error of g
        enters only paired with A dr). E1 + E3 <= 7.4 (N + 1) u kappa_a (1.28
        |q0| + e) <= gam kappa (1.4 |q0| + e) (gam >= (8 N + 256) u, kappa
        >= kappa_a), inside gam kappa (2.4 |q0| + e). (iii) The rounding of
        g_r0 = fl(g . r0~): E2 = gamma_(N+1) sum_i |g_i r0~_i| (Higham, any
        order); gmax, gmin carry their own margins (affine_lower). (iv) The
        sums q0 - g_r0 + gmax + e, dlo - q_upper and dhi - q_lower and the
        margin's own additions: E4 = 6 u (|q0| + |g_r0| + max(|gmax|, |gmin|)
        + e + |dhi|) (five roundings of terms of these sizes, u each, one
        spare), and the margin's total times (1 + 4 u). (v) With a column
        scale (the Laplace classifiers) g = fl(2 D y~): the product with D
        rounds each g_i by u |g_i| outside the solve's error that (ii) pairs
        with A dr, so g . dr moves by <= u sum_i |g_i| |dr_i| <= E5 = u
        sum_i |g_i| rmax_i (|dr_i| <= rmax_i = |r0~_i| + max |k_i| over the
        box; referee, session 27; charged for every model, it is small).

        Before, the lemma case used the direct margin's scale too: its
        terms sum_i |g_i| rmax_i + ||g|| ||rmax|| are ~10-30 q0 on high
        signal-to-noise models (fitted Friedman #1, C * RBF + C * Matern 0.5
        + White: scale 66,000 against q0 = 1884), which put a floor of 2.7%
        of the variance under every std range of kernels without the local
        RKHS bound (Matern 0.5 terms, powers); S is 8x smaller there."""
        if not np.isfinite(self.rho) or self.n_support == 0:
            return self.margin_direct(scale0 + e, d)
        N = self.n_support
        with np.errstate(over="ignore", invalid="ignore"):
            S = 2.4 * np.abs(q0) + e + np.abs(dhi)
            gam = (N + 1) * _U / (1.0 - (N + 1) * _U)
            E2 = gam * np.einsum("bi,bi->b", np.abs(g), np.abs(r0)) * (1.0 + 1e-12)
            E4 = 6.0 * _U * (np.abs(q0) + np.abs(g_r0) + np.maximum(np.abs(gmax), np.abs(gmin)) + e + np.abs(dhi))
            E5 = _U * np.einsum("bi,bi->b", np.abs(g), rmax) * (1.0 + 1e-12)
            out = (self.margin(S, d) + E2 + E4 + E5) * (1.0 + 4.0 * _U)
        return np.where(np.isnan(out), np.inf, out)

    def _diag_joint(self, lo, hi, g, tm):
        """Bounds of F(x) = k(x, x) - g . r(x) over each box from the adapter's
        Taylor models of the diagonal (:meth:`~skgprobust.kernels.KernelAdapter.diag_taylor`)
        and of the weighted sums -g . r and g . r, added (module doc,
        "Non-constant diagonals"): ``(lower, upper, argmin, argmax)``, or None
        without models. Margins as in :func:`~skgprobust._bounds._mean.affine_lower`:
        the relative ``rtol (mag_diag + mag_sum)`` of our evaluation, and the
        absolute ``|g| . rounding`` of the kernel values sklearn computes (its
        rounding of k(x, x) is in the caller's margin, as for dlo / dhi).
        ``tm``: the adapter's Taylor model of the sums with weights ``[g;
        -g]`` on the boxes ``[lo; lo]`` (what :meth:`bounds` has computed),
        or None."""
        ad = self.adapter
        if tm is None:
            return None
        md = [ad.diag_taylor(lo, hi, 1.0), ad.diag_taylor(lo, hi, -1.0)]
        if md[0] is None or md[1] is None:
            return None
        B, d = lo.shape
        mean_rtol = getattr(ad, "mean_rtol", None)
        N = self.n_support
        rtol = margin_rtol(N + 1, d) if mean_rtol is None else max(mean_rtol(N, d), margin_rtol(N + 1, d))
        absolute = np.einsum("bi,bi->b", np.abs(g), ad.rounding(lo, hi))
        h = 0.5 * (hi - lo)
        centre = 0.5 * (lo + hi)
        out = []
        # +k - g . r: the -g half (rows B..2B); -k + g . r: the +g half.
        for k, sl in enumerate((slice(B, 2 * B), slice(0, B))):
            m = md[k] + TaylorModel(tm.value[sl], tm.grad[sl], tm.diag[sl], tm.M[sl], tm.rem[sl], tm.mag[sl])
            v, u = taylor_lower(m, h)
            v = v - rtol * m.mag - absolute - 1e-300
            out.append((np.where(np.isnan(v), -np.inf, v), np.clip(centre + np.where(np.isfinite(u), u, 0.0), lo, hi)))
        return out[0][0], -out[1][0], out[0][1], out[1][1]

    def jacobian_remainder(self, lo, hi, n_centre=None, cap=None):
        """(B,) upper bound of ||A (r(x) - r0~)||^2 over each box from the
        adapter's first-order model (:meth:`~skgprobust.kernels.KernelAdapter.first_order`);
        +inf where it has none.

        Proof. c the float centre, the box inside c +- h1
        (:func:`box_halfwidths`), r0~ = ``adapter.values(c)``. For any float
        matrix J and x = c + u in the box, r(x) - r0~ = (r(x) - r(c) - J u) + J
        u + (r(c) - r0~), so ||A (r(x) - r0~)|| <= T1 + T2 + T3 with

        * T1 = sum_j h1_j n_j, n_j >= ||A J_j|| (column j): computed as
          sklearn solves (:meth:`_apply_A`: y~ from fl(D J_j)); by the
          componentwise backward error of the triangular solve ((L + dL) y~
          = fl(D J_j), |dL| <= gs |L|, gs as in the local bound's margins)
          ||L^-1 fl(D J_j) - y~|| <= nLinv gs nLabs ||y~||, and the product
          with D moves it by at most nLinv 1.01 u ||fl(D J_j)||;
        * T2 = sqrt(lam_max) ||delta|| (||A|| <= sqrt(lam_max), the model's
          |r_i(x) - r_i(c) - J_i . u| <= delta_i);
        * T3 = sqrt(lam_max) n_centre >= ||A (r(c) - r0~)|| (the adapter's
          contract, as in :meth:`rkhs_remainder`).

        The norms are sums of N (or d) non-negative terms: factors 1 + (N +
        4) u and 1 + (d + 2) u; the square and the sum 1 + 1e-10. Unlike
        :meth:`rkhs_remainder` (sup ||k_x - k_c||_H^2, first order in the box
        width for Matern 0.5, whose feature map is not differentiable) this
        is second order wherever the kernel vectors are differentiable on
        the box (no support point in it), with the cancellation of the
        first-order term kept inside A J; it needs no positive
        semi-definiteness. nLinv: sqrt(lam_max) for the regressor, the
        set-up's proven ||L^-1|| with a column scale (the Laplace GPC).

        Parameters
        ----------
        lo, hi : ndarray of shape (B, d)
            Box corners.
        n_centre : ndarray of shape (B,), default=None
            The centre rounding norm (:meth:`centre_rounding_norm`'s second).
        cap : ndarray of shape (B,), default=None
            A bound the caller has already: boxes where (T2 + T3)^2 alone is
            not below it skip the solve (its d right-hand sides per box are
            the cost; with a large lam_max, e.g. an RBF term next to the
            Matern 0.5 one at high signal-to-noise, T2 dominates) and get
            +inf (a choice of work, not of soundness).

        Returns
        -------
        e : ndarray of shape (B,)
            The bound (+inf where unknown or skipped).
        """
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        B, d = lo.shape
        N = self.n_support
        if N == 0:
            return np.zeros(B)
        c, h1 = box_halfwidths(lo, hi)
        fo = self.adapter.first_order(c, h1)
        if fo is None or not np.isfinite(self.lam_max):
            return np.full(B, np.inf)
        J, delta = fo
        if n_centre is None:
            n_centre = self.centre_rounding_norm(lo, hi)[1]
        if "_nLabs" not in self.__dict__:
            self._nLabs = nonneg_norm2_upper(self.L)
        sl = float(np.sqrt(self.lam_max)) * (1.0 + 1e-12)
        nLinv = sl if self.col_scale is None else float(self._norm_Linv)
        gs = GS_FACTOR * (N + 1) * _U / (1.0 - (N + 1) * _U) * (1.0 + 1e-12)
        out = np.full(B, np.inf)
        # Underflow: a square below 2^-1074 is lost, so every 2-norm of N
        # entries gets + sqrt(N) 2^-537 (sqrt(sum a^2) <= sqrt(computed) +
        # sqrt(N) 2^-537), the products + 2^-1070 each, the final square +
        # 2^-1070; all far below any remainder that matters.
        unf = float(np.sqrt(N)) * 2.0**-537
        with np.errstate(over="ignore", invalid="ignore"):
            T2 = sl * (np.sqrt(np.einsum("bn,bn->b", delta, delta)) * (1.0 + (N + 4) * _U) + unf) + 2.0**-1070
            T3 = sl * n_centre
            go = np.isfinite(T2 + T3)
            if cap is not None:
                go &= (T2 + T3) ** 2 < np.asarray(cap)
            if not go.any():
                return out
            Jg, h1g = J[go], h1[go]
            Bg = len(Jg)
            Y = self._apply_A(np.transpose(Jg, (0, 2, 1)).reshape(Bg * d, N))  # (N, Bg d)
            nY = np.sqrt(np.einsum("nk,nk->k", Y, Y)).reshape(Bg, d) * (1.0 + (N + 4) * _U) + unf
            nj = nY * (1.0 + nLinv * gs * self._nLabs)
            if self.col_scale is not None:
                DJ = Jg * self.col_scale[None, :, None]
                nDJ = np.sqrt(np.einsum("bnd,bnd->bd", DJ, DJ)) * (1.0 + (N + 4) * _U) + unf
                nj = nj + nLinv * 1.01 * _U * nDJ + 2.0**-1070
            T1 = ((nj * h1g).sum(-1) + d * 2.0**-1070) * (1.0 + (d + 2) * _U)
            out[go] = (T1 + T2[go] + T3[go]) ** 2 * (1.0 + 1e-10) + 2.0**-1070
        return np.where(np.isfinite(out), out, np.inf)

    def rkhs_remainder(self, lo, hi, n_centre=None):
        """(B,) upper bound of ||A (r(x) - r0~)||^2 over each box, r0~ =
        ``adapter.values(c)`` the computed kernel vector at the float centre
        c (what :meth:`bounds` and ``affine_variance_enclosure`` expand
        around) and r(x) exact: (sqrt(e_H) + a_c)^2 (1 + 1e-12).

        e_H >= ||A (r(x) - r(c))||^2 is (1 + rho) times the smaller of sum_j
        H0_j h1_j^2 (:class:`SmoothCovariance`, plus its dot-product powers'
        increments: :meth:`SmoothCovariance.increment2`) and the adapter's
        :meth:`~skgprobust.kernels.KernelAdapter.rkhs_increment` (any kernel
        with one: products with dot products, periodic kernels, Matern 0.5
        ...), both bounds of sup ||k_x - k_c||_H^2 (module doc, "The RKHS
        remainder": A^T A = S and P <= (1 + rho) I). a_c = sqrt(lam_max)
        ||E + c_val u A|| >= ||A (r(c) - r0~)|| (triangle inequality): by the
        adapter's contract |r0~ - r(c)| <= E + c_val u A entrywise, E =
        ``adapter.rounding(lo, hi)``, c_val = ``adapter.value_ulps(d)`` and A
        the term magnitude bound of ``rounding_parts`` (c lies in the box);
        ``n_centre``: that norm (:meth:`centre_rounding_norm`) when the
        caller has it. Before
        session 27 the bound was e_H alone, which covers r(c) but not the
        computed r0~: a gap of 2 sqrt(e_H) a_c + a_c^2, negligible where the
        kernel values carry a few ulps (the margins' headroom took it), not
        where they carry more (a fractional power whose base underflows:
        sklearn's value 0, the exact one 0.999 for (RBF ** 0.001) ** 0.001;
        soundness hunt). +inf without a bound of sup ||k_x - k_c||_H^2, or
        for a kernel not proven PSD (the lemma needs it)."""
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        B = len(lo)
        if not self.adapter.psd:
            return np.full(B, np.inf)
        _, h1 = box_halfwidths(lo, hi)
        with np.errstate(over="ignore", invalid="ignore"):
            D = self.adapter.rkhs_increment(lo, hi)
            if self.smooth is not None:
                D = np.minimum(D, self.smooth.increment2(lo, hi, h1))
            e = D * (1.0 + self.rho) * (1.0 + 1e-12)
            if np.isfinite(e).any() and self.n_support > 0:
                if n_centre is None:
                    n_centre = self.centre_rounding_norm(lo, hi)[1]
                a_c = np.sqrt(self.lam_max) * n_centre * (1.0 + 1e-12)
                e = (np.sqrt(e) + a_c) ** 2 * (1.0 + 1e-12)
        return np.where(np.isnan(e), np.inf, e)

    def _poly_setup(self, norm_Linv):
        """Per-fit part of the polynomial bound (module doc, "Polynomial
        kernels"): Z = A F by a triangular solve, H = diag(c) - Z^T Z, the
        magnitudes |Z|^T |Z| and the bound dz >= ||Z - Z*||_2."""
        pc = self.poly
        F = pc.design(self.adapter.Xs)  # (N, n)
        Z = self._apply_A(F.T)  # (N, n) = solve(L, D F), as sklearn solves
        G = Z.T @ Z
        self._poly_H = np.diag(pc.coef) - G
        Zabs = np.abs(Z)
        self._poly_Habs = np.diag(np.abs(pc.coef)) + Zabs.T @ Zabs
        DF = F if self.col_scale is None else F * self.col_scale[:, None]
        N, n = F.shape
        d = self.adapter.Xs.shape[1]
        # ||Z - Z*|| <= ||L^-1|| (||L Z - fl(D F)|| + ||fl(D F) - D F*||): the
        # residual with its own rounding, and F's (products of <= P + 1
        # factors, c_alpha with its binomial/multinomial products and powers
        # of s: relative (4 P + d + 8) u, times 2 for headroom).
        res = np.linalg.norm(self.L @ Z - DF) + (N + 2) * _U * np.linalg.norm(np.abs(self.L) @ Zabs)
        res += 2.0 * (4 * pc.P + d + 8) * _U * np.linalg.norm(np.abs(DF))
        self._poly_dz = float(norm_Linv * res) * (1 + 1e-10)
        self._poly_ok = bool(np.all(np.isfinite(self._poly_H)) and np.isfinite(self._poly_dz))

    def _poly_bounds(self, lo, hi, dhi):
        """Bounds of var over each box from the exact polynomial form
        (module doc, "Polynomial kernels"): (lower, upper, arg_min, arg_max, score)."""
        pc = self.poly
        B, d = lo.shape
        N = self.n_support
        if not self._poly_ok:
            inf = np.full(B, np.inf)
            return -inf, inf, lo.copy(), lo.copy(), np.zeros((B, d))
        n, n2 = pc.n_mono, len(pc.alphas2)
        with np.errstate(over="ignore", invalid="ignore"):
            c = 0.5 * (lo + hi)
            # [lo, hi] lies in [c - h, c + h] for the float centre c.
            h = np.maximum(hi - c, c - lo) * (1.0 + 4.0 * _U)
            T = pc.shift(c)  # (B, n, n)
            Hc = np.matmul(np.transpose(T, (0, 2, 1)), np.matmul(self._poly_H[None], T))  # T^T H T
            coef = np.zeros((B, n2))
            np.add.at(coef.T, pc.pair_index, Hc.reshape(B, n * n).T)
            hp = np.prod(h[:, None, :] ** pc.alphas2[None], axis=-1)  # (B, n2): max |u^gamma|
            hpsi = hp[:, :n]  # the first n of alphas2 are the monomials of degree <= P
            tabs = np.einsum("bij,bj->bi", np.abs(T), hpsi)  # >= |phi(x)| on the box
            mag = np.einsum("bi,ij,bj->b", tabs, self._poly_Habs, tabs) + (np.abs(coef) * hp).sum(-1)
            deg2 = pc.alphas2.sum(-1)
            value = coef[:, 0] + pc.white
            lin = np.flatnonzero(deg2 == 1)
            grad = np.zeros((B, d))
            grad[:, pc.alphas2[lin].argmax(-1)] = coef[:, lin]
            M = np.zeros((B, d, d))
            for g in np.flatnonzero(deg2 == 2):
                j, k = np.flatnonzero(pc.alphas2[g])[[0, -1]]
                if j == k:
                    M[:, j, j] = 2.0 * coef[:, g]
                else:
                    M[:, j, k] = M[:, k, j] = coef[:, g]
            hi_ord = deg2 >= 3
            even = np.all(pc.alphas2 % 2 == 0, axis=-1)
            t = coef[:, hi_ord] * hp[:, hi_ord]
            ev = even[hi_ord]
            # u^gamma with all exponents even lies in [0, h^gamma]; otherwise in [-h^gamma, h^gamma].
            rem_lo = np.where(ev, np.minimum(t, 0.0), -np.abs(t)).sum(-1)
            rem_hi = np.where(ev, np.maximum(t, 0.0), np.abs(t)).sum(-1)
            zeros = np.zeros((B, d))
            v_lo, u_lo = taylor_lower(TaylorModel(value, grad, zeros, M, rem_lo, mag), h)
            m_hi, u_hi = taylor_lower(TaylorModel(-value, -grad, zeros, -M, -rem_hi, mag), h)
            v_hi = -m_hi
            # Our own rounding (relative to mag), then the difference between
            # the computed Z and the exact A F (dz), then sklearn's own rounding.
            own = margin_rtol(N + 3 * n + n2 + d * d + 2 * pc.P, d) * mag
            kmax = np.einsum("bi,i,bi->b", tabs, np.abs(pc.coef), tabs)  # >= k_c(x, x) on the box
            delta = self._poly_dz * np.linalg.norm(tabs, axis=1)
            # q* <= (1 + rho) k_c(x, x) (the lemma for the float factor).
            dz_term = 2.0 * np.sqrt(kmax * (1.0 + self.rho)) * delta + delta * delta
            klo, khi = self.adapter.interval(lo, hi)
            rmax = np.maximum(np.abs(klo), np.abs(khi))
            nE = np.linalg.norm(self.adapter.rounding(lo, hi), axis=1)
            a = np.sqrt(self.lam_max) * (nE + (4 * pc.P + 32) * _U * np.linalg.norm(rmax, axis=1))
            kk = np.maximum(np.abs(dhi), kmax + abs(pc.white)) * (1.0 + self.rho)
            sk = self.margin(2.0 * kk, d) + 2.0 * np.sqrt(kk) * a + a * a
            mg = (own + dz_term + sk) * (1.0 + 1e-10)
            lower = v_lo - mg
            upper = v_hi + mg
        lower = np.where(np.isfinite(lower), lower, -np.inf)
        upper = np.where(np.isfinite(upper), upper, np.inf)
        arg_min = np.clip(c + np.where(np.isfinite(u_lo), u_lo, 0.0), lo, hi)
        arg_max = np.clip(c + np.where(np.isfinite(u_hi), u_hi, 0.0), lo, hi)
        with np.errstate(over="ignore", invalid="ignore"):
            share = np.abs(t)[:, :, None] * pc.alphas2[hi_ord][None] / deg2[hi_ord][None, :, None]
            score = np.abs(grad) * h + (np.abs(M) * h[:, None, :]).sum(-1) * h + share.sum(1)
        score = np.where(np.isfinite(score), score, 0.0)
        return lower, upper, arg_min, arg_max, score

    def _local_bounds(self, lo, hi, dlo, dhi):
        """Bounds of var over each box from the local RKHS expansion around
        the box centre (module doc, "High signal-to-noise"): (lower, upper,
        arg_min, arg_max, score)."""
        sm = self.smooth
        B, d = lo.shape
        N = self.n_support
        # The float centre x0 and half-widths h with [lo, hi] inside x0 +- h
        # (box_halfwidths: max(hi - x0, x0 - lo), rounded up; 0.5 (hi - lo)
        # can be short by half an ulp of x0, 1.33x on a 3-ulp box at 1e6:
        # soundness hunt, session 16).
        x0, h = box_halfwidths(lo, hi)
        R, G = self.adapter.value_and_grad(x0)  # (B, N), (B, N, d)
        Y = np.concatenate([R[:, None, :], np.transpose(G, (0, 2, 1))], axis=1).reshape(B * (d + 1), N)
        Z = self._apply_A(Y).reshape(N, B, d + 1)
        z0, ZJ = Z[:, :, 0], Z[:, :, 1:]
        # a0 = (L L^T)^-1 D r0 and AJ = (L L^T)^-1 fl(D G), for the
        # componentwise margins (module doc, "The weights over the box").
        AZ = solve_triangular(self.L, Z.reshape(N, B * (d + 1)), lower=True, trans="T",
                              check_finite=False).reshape(N, B, d + 1)
        a0 = AZ[:, :, 0]  # (N, B)
        nAJ = np.sqrt(np.einsum("nbd,nbd->bd", AZ[:, :, 1:], AZ[:, :, 1:]))  # (B, d)
        q0 = np.einsum("nb,nb->b", z0, z0)
        # The float factor: P <= (1 + rho) I, so Q' = (1 + rho) I - P >= 0 and
        # v = diag - k0 + <k_x, Q' k_x> with k0 = (1 + rho) kappa0, H0' =
        # (1 + rho) H0, E' = sqrt(1 + rho) E (module doc, "The lemma for the
        # float factor"); rho = 0 gives the real-arithmetic text.
        f1 = 1.0 + self.rho
        H0 = sm.H0 * f1
        g = -2.0 * np.einsum("nb,nbd->bd", z0, ZJ)
        lin = sm.nonstationary
        poly = bool(sm.poly) or bool(sm._dprod())
        e_poly = 0.0
        if lin:
            # Linear terms and dot-product powers (module doc, "Linear
            # terms", "Dot-product powers"): ||k_x0||^2 = k_c(x0, x0) and
            # <k_x0, w> = gco x0 . u; k0 bounds (1 + rho) k_c(x, x) over the
            # box (and at x0) in the margins.
            kc0, gco, p_alpha, p_beta, e_poly, p_dH0 = sm.section(x0, h)
            kc_lo, kc_hi, xmax = sm.kappa_range(lo, hi)
            vc0 = kc0 * f1 - q0
            g_lin = 2.0 * gco[:, None] * x0
            g = g + f1 * g_lin
            k0 = kc_hi * f1
            e_poly = e_poly * f1
        else:
            k0 = sm.kappa0 * f1
            vc0 = k0 - q0
        ZZ = np.einsum("nbj,nbk->bjk", ZJ, ZJ)
        H1 = np.diag(H0)[None] - ZZ
        if poly:
            # ||w||^2 = u^T (H0 + alpha I + beta x0 x0^T) u, per box.
            Hp = p_alpha[:, None, None] * np.eye(d)[None] + p_beta[:, None, None] * x0[:, :, None] * x0[:, None, :]
            Hp[:, np.arange(d), np.arange(d)] += p_dH0  # products' stationary factors
            H1 = H1 + f1 * Hp
        zeros = np.zeros((B, d))
        mag = np.zeros(B)
        # P(u) = vc0 + g.u + u^T H1 u over |u| <= h, both sides.
        p_lo, u_lo = taylor_lower(TaylorModel(vc0, g, zeros, 2.0 * H1, mag, mag), h)
        m_hi, u_hi = taylor_lower(TaylorModel(-vc0, -g, zeros, -2.0 * H1, mag, mag), h)
        p_hi = -m_hi
        # Rounding of P: the solves (relative, kappa), the assembly, and the
        # input rounding of r0 and of the Jacobian J (through sqrt(lam_max)).
        nZJh = (np.sqrt(np.einsum("nbd,nbd->bd", ZJ, ZJ)) * h).sum(-1)
        H0h = (H0 * h * h).sum(-1)
        if poly:
            # sup over the box of u^T (alpha I + beta x0 x0^T) u (beta >= 0).
            bx = (np.abs(x0) * h).sum(-1)
            H0h = (H0h + f1 * (p_alpha * (h * h).sum(-1) + p_beta * bx * bx + (p_dH0 * h * h).sum(-1))) * (1.0 + 1e-12)
        F = k0 + H0h
        scale = F + np.abs(q0) + (np.abs(g) * h).sum(-1) + H0h + nZJh**2
        scale = scale + (np.abs(H1) * h[:, :, None] * h[:, None, :]).sum(axis=(1, 2))
        amax = np.abs(x0)
        dr0 = np.linalg.norm(self.adapter.rounding(x0, x0), axis=1)
        # 32 u of the computed Jacobian: each term's own evaluation (Matern's
        # slopes: up to ~21 u, its value_ulps) with headroom.
        dJ = sm.jacobian_rounding(amax, self.adapter.Xs, x0) + 32.0 * _U * np.linalg.norm(G, axis=1)  # (B, d)
        din = np.sqrt(self.lam_max) * (dr0 + (dJ * h).sum(-1))
        mP = self.margin(scale, d) + 2.0 * np.sqrt(F) * din + din * din + e_poly
        h1 = h  # the box lies in |x - x0| <= h (box_halfwidths)
        # Dh >= sup ||w||_H' (the first-order section, H0' = (1 + rho) H0);
        # Dh_inc >= (1 + rho)^1/2 sup ||k_x - k_x0||_H (the same for the
        # stationary and linear parts; the powers' increment has higher-order
        # terms, module doc "Dot-product powers").
        Dh = np.sqrt(H0h) * (1.0 + 1e-12)
        # Dh_inc also serves where a_box must bound the weights of r0 + J u
        # (the per-point lemma's T): sup ||w|| <= it (true for the powers,
        # ||w||^2 = c p S^(p-2) (S e + (p - 1) b^2) <= c p^2 R^(2(p-1)) ||h||^2
        # as S <= R^2 and b^2 <= ||x0||^2 e; the max makes it so by construction).
        Dh_inc = np.maximum(np.sqrt(sm.increment2(lo, hi, h1) * f1) * (1.0 + 1e-12), Dh) if poly else Dh
        # The per-point lemma's path (module doc, "The per-point lemma"): P
        # without the factor (1 + rho), its own Hessian and magnitude.
        per_point = self.rho > 0 and np.isfinite(getattr(self, "lemma_e", np.inf))
        if per_point:
            H1n = np.diag(sm.H0)[None] - ZZ
            if poly:
                H1n = H1n + Hp
            scale_n = F + np.abs(q0) + (np.abs(g) * h).sum(-1) + H0h + nZJh**2
            scale_n = scale_n + (np.abs(H1n) * h[:, :, None] * h[:, None, :]).sum(axis=(1, 2))
        E2, E2_share = sm.remainder2(h, x0)
        E = np.sqrt(E2 * f1) * (1.0 + 1e-12)
        own, skl, a_box, own_n = self._local_margins(
            lo, hi, x0, h1, Dh, z0, ZJ, a0, G, dJ, scale, dhi, k0, scale_n if per_point else None,
            xmax if lin else None, nAJ=nAJ, E=E, Dh_inc=Dh_inc,
        )
        if per_point:
            mPn = np.minimum(self.margin(scale_n, d) + 2.0 * np.sqrt(F) * din + din * din, own_n) + e_poly / f1
        mP = np.minimum(mP, own + e_poly)
        p_lo = np.where(np.isfinite(p_lo), p_lo - mP, 0.0)
        p_hi = np.where(np.isfinite(p_hi), p_hi + mP, np.inf)
        s_lo = np.maximum(np.sqrt(np.maximum(p_lo, 0.0)) - E, 0.0)
        s_hi = np.sqrt(np.maximum(p_hi, 0.0)) + E
        # var = diag(x) - kappa0 + v_c(x); the outer margin as in bounds().
        mg = np.minimum(self.margin(scale + np.abs(dhi), d) + self.input_rounding(lo, hi, dhi), skl)
        if lin:
            # diag(x) - (1 + rho) k_c(x, x) = white - rho k_c(x, x), in
            # [white - rho kc_hi, white - rho kc_lo] ("Linear terms").
            base_lo = sm.white * (1.0 - 1e-12) - self.rho * kc_hi
            base_hi = sm.white * (1.0 + 1e-12) - self.rho * kc_lo
        else:
            base_lo, base_hi = dlo - k0, dhi - k0
        lower = base_lo + s_lo * s_lo - mg
        upper = base_hi + s_hi * s_hi + mg
        lower = np.where(np.isfinite(lower), lower, -np.inf)
        upper = np.where(np.isfinite(upper), upper, np.inf)
        if per_point:
            # Q'' = I + e Psi - P >= 0: v = diag - kappa0 - e ||a(x)||^2 +
            # ||Q''^1/2 k_x||^2, P'' = P + e ||a(k_x0 + w)||^2 in [P, P + T],
            # T = e a_box^2 >= e ||a||^2 over the box, ||Q''^1/2 E|| <= fE E.
            vcn = (kc0 if lin else sm.kappa0) - q0
            gn = g - self.rho * g_lin if lin else g
            pn_lo, _ = taylor_lower(TaylorModel(vcn, gn, zeros, 2.0 * H1n, mag, mag), h)
            mn_hi, _ = taylor_lower(TaylorModel(-vcn, -gn, zeros, -2.0 * H1n, mag, mag), h)
            with np.errstate(over="ignore", invalid="ignore"):
                T = self.lemma_e * a_box * a_box * (1.0 + 1e-10)
                fE = 1.0 + max(self.rho - 1.0, 0.0) * (1.0 + self.rho)
                En = np.sqrt(E2 * fE) * (1.0 + 1e-12)
                pn_lo = np.where(np.isfinite(pn_lo), pn_lo - mPn, 0.0)
                pn_hi = np.where(np.isfinite(mn_hi), -mn_hi + mPn + T, np.inf)
                sn_lo = np.maximum(np.sqrt(np.maximum(pn_lo, 0.0)) - En, 0.0)
                sn_hi = np.sqrt(np.maximum(pn_hi, 0.0)) + En
                if lin:
                    # diag(x) - k_c(x, x) = white ("Linear terms").
                    bn_lo, bn_hi = sm.white * (1.0 - 1e-12), sm.white * (1.0 + 1e-12)
                else:
                    bn_lo, bn_hi = dlo - sm.kappa0, dhi - sm.kappa0
                lower_n = bn_lo - T + sn_lo * sn_lo - mg
                upper_n = bn_hi + sn_hi * sn_hi + mg
            # Both paths are valid bounds of the same v: the tighter per side.
            lower = np.where(np.isfinite(lower_n) & (lower_n > lower), lower_n, lower)
            upper = np.where(np.isfinite(upper_n) & (upper_n < upper), upper_n, upper)
        arg_min = np.clip(x0 + u_lo, lo, hi)
        arg_max = np.clip(x0 + u_hi, lo, hi)
        score = (
            np.abs(g) * h
            + (np.abs(H1) * h[:, None, :]).sum(-1) * h
            + 2.0 * s_hi[:, None] * E[:, None] * E2_share
        )
        return lower, upper, arg_min, arg_max, score

    def _local_margins(self, lo, hi, x0, h, Dh, z0, ZJ, a0, G, dJ, scale, dhi, k0, scale_n=None, xmax=None,
                       nAJ=None, E=None, Dh_inc=None):
        """The componentwise rounding margins of the local bound (module doc,
        "Rounding of the local bound"): (own, skl, a_box, own_n), bounds on
        |P~ - P| over the box (our evaluation of P) and on |v~(x) - v(x)| at
        every x of the box (sklearn's evaluation of v), a_box >= ||a(x)|| =
        ||(L L^T)^-1 D r(x)|| for every x of the box and >= ||(L L^T)^-1 D
        (r0 + J u)|| for every |u| <= h ("The weights over the box"), and
        ``own`` for the per-point lemma's P (magnitude ``scale_n``; None
        when not given). Infinite where they do not apply. ``nAJ`` (B, d):
        the norms of the computed columns fl(L^-T ZJ~_j), and ``E`` (B,) >=
        (1 + rho)^1/2 ||E||_H over the box, for the column-wise weights of
        the box's first-order term (None: not used). ``Dh`` (B,) >= (1 +
        rho)^1/2 sup ||w||_H over the box (the first-order section) and
        ``Dh_inc`` >= (1 + rho)^1/2 sup ||k_x - k_x0||_H (None: Dh, which
        bounds both for the stationary and linear parts)."""
        sm = self.smooth
        if Dh_inc is None:
            Dh_inc = Dh
        B, d = lo.shape
        N = self.n_support
        gam, nLabs, nLinv, Dmax = self._gam, self._nLabs, self._nLinv, self._Dmax
        gs = GS_FACTOR * (N + 1) * _U / (1.0 - (N + 1) * _U) * (1.0 + 1e-12)
        nL2 = nLinv * nLinv
        with np.errstate(over="ignore", invalid="ignore"):
            # Kernel values as float code computes them: input rounding plus
            # the rounding of the value itself and of the product with D
            # (GPC), <= cv per entry in the scaled space.
            # Linear terms: the term magnitude A(x, x_i) <= kappa0 + lin
            # ||x|| ||x_i|| (Cauchy-Schwarz; value_ulps' contract).
            cv = sm.value_rounding(self._value_ulps(d), None if xmax is None else sm.magnitude(xmax))
            nE0 = np.linalg.norm(self.adapter.rounding(x0, x0), axis=1)
            nEx = np.linalg.norm(self.adapter.rounding(lo, hi), axis=1)
            dR = Dmax * (nE0 + np.sqrt(N) * cv) * (1.0 + 4.0 * _U)
            dRx = Dmax * (nEx + np.sqrt(N) * cv) * (1.0 + 4.0 * _U)
            # ||(fl(D G) - D J) u|| over the box (gradient rounding, and the
            # product with D: u |D G|, in the scaled space).
            nG = np.sqrt(np.einsum("bnd,bnd->bd", G, G))
            dGh = Dmax * ((dJ + _U * nG) * h).sum(-1) * (1.0 + (2 * d + 4) * _U)
            nz0 = np.sqrt(np.einsum("nb,nb->b", z0, z0))
            nZJ = np.sqrt(np.einsum("nbd,nbd->bd", ZJ, ZJ))
            na0 = np.sqrt(np.einsum("nb,nb->b", a0, a0))
            # ||(L L^T)^-1 fl(D R)|| from the computed a0 (two solves).
            aR = (na0 + nLinv * gs * nLabs * (nLinv * nz0 + na0)) * (1.0 + 4.0 * N * _U)
            # The first-order term's weights column by column ("The weights
            # over the box"): aJ_j >= ||(L L^T)^-1 fl(D G)_j|| from the
            # computed columns (the solve model twice, as aR), so
            # ||(L L^T)^-1 fl(D G) u|| <= aJh = sum_j h_j aJ_j.
            if nAJ is None or E is None:
                aJh = np.full(B, np.inf)
                E_w = np.full(B, np.inf)
            else:
                aJ = (nAJ + nLinv * gs * nLabs * (nLinv * nZJ + nAJ)) * (1.0 + 4.0 * (N + d) * _U)
                aJh = (aJ * h).sum(-1) * (1.0 + 4.0 * (N + d) * _U)
                aJh = np.where(np.isfinite(aJh), aJh, np.inf)
                E_w = np.where(np.isfinite(E), nLinv * E, np.inf)
            # Our own solves: P~ - P* = -(||y~||^2 - ||y*||^2), y = L^-1 (fl(D R) + fl(D G) u).
            s_n = (nz0 + (nZJ * h).sum(-1)) * (1.0 + 4.0 * N * _U)
            a_own = np.minimum(aR + nLinv * (Dh + nLinv * dGh), (aR + aJh) * (1.0 + 4.0 * _U))
            e_solve = 2.0 * gs * a_own * nLabs * s_n + (nLinv * gs * nLabs * s_n) ** 2
            # The computed kernel values R, G vs the exact ones at x0.
            a_ex = np.minimum(aR + nL2 * dR + nLinv * Dh, (aR + nL2 * dR + aJh + nL2 * dGh) * (1.0 + 8.0 * _U))
            dn = dR + dGh
            # ||L^-1 D (r0 + J u)||^2 <= (1 + rho) ||k_x0 + w||_H^2 = k0 + u^T H0' u
            # (Dh is already that of H0' = (1 + rho) H0).
            e_in = np.minimum(2.0 * a_ex * dn, 2.0 * np.sqrt(k0 + Dh * Dh) * nLinv * dn) + nL2 * dn * dn
            own = (e_solve + e_in + gam * scale) * (1.0 + 1e-10)
            own_n = None if scale_n is None else (e_solve + e_in + gam * scale_n) * (1.0 + 1e-10)
            # sklearn at any x of the box: its solve with its kernel values r~(x).
            # a_x >= ||(L L^T)^-1 D r(x)||: r(x) = r0 + J u + E_X, E the
            # remainder in H, ||(L L^T)^-1 D E_X|| <= nLinv (1 + rho)^1/2 ||E||.
            a_x = np.minimum(aR + nL2 * dR + nLinv * Dh_inc,
                             (aR + nL2 * dR + aJh + nL2 * dGh + E_w) * (1.0 + 8.0 * _U))
            a_sk = a_x + nL2 * dRx
            zn = np.sqrt(k0) + nLinv * dRx
            rho = nLinv * gs * nLabs
            zt = np.where(rho < 0.5, zn / (1.0 - rho), np.inf)
            e_sk = gam * zt * zt + 2.0 * gs * a_sk * nLabs * zt + (rho * zt) ** 2 + gam * np.abs(dhi)
            e_inx = np.minimum(2.0 * a_x * dRx, 2.0 * np.sqrt(k0) * nLinv * dRx) + nL2 * dRx * dRx
            skl = (e_sk + e_inx) * (1.0 + 1e-10)
        own = np.where(np.isfinite(own), own, np.inf)
        skl = np.where(np.isfinite(skl), skl, np.inf)
        a_box = np.where(np.isfinite(a_x), a_x, np.inf)
        if own_n is not None:
            own_n = np.where(np.isfinite(own_n), own_n, np.inf)
        return own, skl, a_box, own_n

    def input_rounding(self, lo, hi, dhi, qmax=None, nE=None):
        """(B,) bound on |q(r~) - q(r)| when the kernel values r~ carry the
        input-rounding error of :meth:`KernelAdapter.rounding` (|dr| <= E):
        ``2 ||A r|| ||A dr|| + ||A dr||^2`` with ``||A r||^2 = q <= (1 + rho)
        k(x, x)`` (the lemma for the float factor) and, where the caller
        passes ``qmax`` (B,), a proven upper bound of ||A r(x)||^2 over each
        box that needs no lemma (:meth:`_direct_qmax`; module doc, "Without
        the lemma"); ``nE``: the row norms of ``adapter.rounding(lo, hi)``
        when the caller has them."""
        if self.n_support == 0:
            return np.zeros(len(lo))
        if nE is None:
            nE = np.linalg.norm(self.adapter.rounding(lo, hi), axis=1)
        a = np.sqrt(self.lam_max) * nE
        with np.errstate(over="ignore", invalid="ignore"):
            qa = np.maximum(dhi, 0.0) * (1.0 + self.rho)
            if qmax is not None:
                qa = np.minimum(np.where(np.isnan(qa), np.inf, qa), np.maximum(qmax, 0.0))
            return 2.0 * np.sqrt(qa) * a + a * a

    def _n_top(self, B, d):
        N = self.n_support
        if N == 0 or self.lam_max == 0:
            return 0
        m = int(min(N, _SPECTRAL_BUDGET // max(1, N * d)))
        return m if self._rest(m) <= _SPECTRAL_MAX_REST * self.lam_max else 0

    def _rest(self, m):
        """Bound on the eigenvalues of the exact S beyond the leading m: with
        fl(S) = V diag(lam) V^T + E (computed V, clipped lam; ||E|| <= eps,
        ||V^T V - I|| <= eta, :meth:`_eig_error`), sum_{j >= m} lam_j (v_j . y)^2
        <= lam_m ||V^T y||^2 <= lam_m (1 + eta) ||y||^2, so y^T S y <=
        sum_{j<m} lam_j (v_j . y)^2 + (lam_m (1 + eta) + eps + s_err) ||y||^2."""
        eta, eps = self._eig_err
        lm = self.lam[m] if m < len(self.lam) else 0.0
        return (lm * (1.0 + eta) + eps + self.s_err) * (1.0 + 1e-12)

    def _spectral(self, lo, hi, r0, dr2, m):
        """sum_{j<m} lam_j max(z_j - z0_j)^2 + lam_m ||dr||^2, z_j = v_j . r(x)."""
        B, d = lo.shape
        if m > self._V_tail.shape[1]:  # pragma: no cover - _n_top never asks for more (set-up)
            raise RuntimeError(f"spectral split with {m} eigenvectors, {self._V_tail.shape[1]} kept")
        Vtop = self._V_top[:, :m]  # (N, m)
        Vt = Vtop.T  # (m, N)
        W = np.concatenate([np.repeat(Vt[None], B, 0), np.repeat(-Vt[None], B, 0)], axis=1)  # (B, 2m, N)
        W = W.reshape(B * 2 * m, -1)
        LO = np.repeat(lo, 2 * m, axis=0)
        HI = np.repeat(hi, 2 * m, axis=0)
        bb = affine_lower(self.adapter, W, 0.0, LO, HI).lower.reshape(B, 2, m)
        zmin, zmax = bb[:, 0], -bb[:, 1]
        # z0~ = fl(r0 @ v_j) errs from the exact v_j . r0 by <= gamma_N
        # (|r0| @ |v_j|) (an N-term dot product in any order, BLAS included;
        # Higham (3.5)); ez = (N + 2) u (|r0| @ |V|) bounds it (the product of
        # absolute values has non-negative terms, its own rounding is inside
        # the (1 + 1e-12) factor below). zmin <= v_j . r(x) <= zmax (mean-type
        # bounds, rigorous), so |v_j . (r(x) - r0)| <= max(zmax - z0~, z0~ -
        # zmin) + ez.
        N = r0.shape[1]
        z0 = r0 @ Vtop
        ez = (N + 2) * _U * (np.abs(r0) @ np.abs(Vtop)) * (1 + 1e-12)
        dz = np.maximum(np.maximum(zmax - z0, z0 - zmin), 0.0) + ez
        # ||A dr||^2 <= dr^T fl(S) dr + s_err ||dr||^2 and, with the computed
        # eigenpairs, dr^T fl(S) dr <= sum_{j<m} lam_j (v_j . dr)^2 + (lam_m
        # (1 + eta) + eps) ||dr||^2 (:meth:`_rest`, :meth:`_eig_error`).
        return (self.lam[:m] * dz * dz).sum(-1) * (1 + 1e-12) + self._rest(m) * dr2


class NonCholeskyLatentVariance(LatentVariance):
    """:class:`LatentVariance` for a factor L that is *not* a Cholesky factor
    of the rounded kernel matrix plus noise (the sparse models: L from a QR
    of the whitened design). Higham's backward-error model then says nothing
    about L L^T - Kc, so the lemma's rho comes only from the direct
    certificate of lambda_min(fl(L L^T) - fl(Kc)) (an O(N^3) set-up over the
    N support points, here the M inducing points); see "The lemma for the
    float factor" in the module docstring."""

    _LEMMA_CHOLESKY_MODEL = False
