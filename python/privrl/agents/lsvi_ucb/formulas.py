"""The paper's formulas of batched LSVI-UCB (Alg. 2, App. D).

Every noise scale, bound and radius, one function per equation (its docstring names it);
privrl.agents.lsvi_ucb.calibration assembles them and re-exports them."""

# Conventions as in privrl.agents.ucrl_vtr.formulas; the failure probability per event is p/(6KH).
from __future__ import annotations

import math

from privrl.common.checks import checked
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.bounds import (
    gaussian_matrix_bound,
    gaussian_vector_bound,
    laplace_matrix_bound,
    laplace_vector_bound,
)
from privrl.privacy.mechanisms import (
    advanced_composition_budget,
    gaussian_sigma,
    laplace_scale,
    simple_composition_budget,
    tree_depth,
    tree_node_budget,
)


# ============================================================================================
# (a) Gaussian JDP (App. D "Initialization of the parameters")
# ============================================================================================
@checked()
def lsvi_ucb_lambda(d: int) -> float:
    """App. D "Initialization of the parameters": ``lambda = d``."""
    return float(d)


@checked()
def lsvi_ucb_num_batches(epsilon: float, H: int, K: int, d: int) -> int:
    """App. D: ``B = ceil((K eps)^{2/5} / (d^{3/5} H^{1/5}))`` static batches.

    Clipped to ``K`` (only ``min(B, K)`` batches can start within ``K`` episodes, so the number
    of releases ``N_K <= min(B, K)`` and the composition stays valid); the clip is only active
    for very large ``eps`` (where ``K eps`` overflows to inf, B is K)."""
    B = math.ceil(min((K * epsilon) ** 0.4 / (d**0.6 * H**0.2), K))
    return int(min(max(B, 1), K))


@checked()
def lsvi_ucb_B0(B: int) -> int:
    """App. D: ``B0 = ceil(log2 B + 1)`` (= ``tree_depth(B)``)."""
    return tree_depth(B)


@checked()
def lsvi_ucb_sigma_lambda(epsilon: float, delta: float, H: int, B: int) -> float:
    """App. D, printed closed form: ``sigma_Lambda = 128/eps sqrt(B H B0) log^2(32 H B0 B / delta)``.

    Derivation (App. D, privacy part, eqs. *.privacy.jdp.lsvi.ucb), rebuilt by
    :func:`lsvi_ucb_sigma_lambda_composed`: per-h budget
    ``(eps', delta') = (eps/(2 sqrt(8H log(4/delta))), delta/(4H))``
    (= ``advanced_composition_budget(eps/2, delta/2, H)``); each of the ``B`` released prefix
    sums is ``(eps'_1, delta'_1) = advanced_composition_budget(eps', delta', B)``; each tree node
    ``tree_node_budget(eps'_1, delta'_1, B)`` (``B0`` nodes per prefix); Gaussian mechanism with
    sensitivity 2 (``||phi phi^T||_F <= 1``; the paper writes "L1" but uses it as the L2
    sensitivity). This gives
    ``128/eps sqrt(H B B0 log(4/delta) log(8H/delta) log(16HB/delta) log(32 H B B0/delta))``;
    the printed form bounds each of the four logs by the largest, ``log(32 H B0 B/delta)``, so the
    closed form is >= the composed value (more noise, still private). The closed form is used.
    """
    B0 = lsvi_ucb_B0(B)
    return (128.0 / epsilon) * math.sqrt(B * H * B0) * math.log(32.0 * H * B0 * B / delta) ** 2


@checked()
def lsvi_ucb_sigma_lambda_composed(epsilon: float, delta: float, H: int, B: int) -> float:
    """``sigma_Lambda`` rebuilt from the tools, following App. D's privacy proof step by step
    (see :func:`lsvi_ucb_sigma_lambda`); it is <= the printed closed form."""
    eps_h, dlt_h = advanced_composition_budget(epsilon / 2.0, delta / 2.0, H)
    eps_1, dlt_1 = advanced_composition_budget(eps_h, dlt_h, B)
    eps_0, dlt_0 = tree_node_budget(eps_1, dlt_1, B)
    return gaussian_sigma(2.0, eps_0, dlt_0)


@checked()
def lsvi_ucb_sigma_u(epsilon: float, delta: float, H: int, B: int) -> float:
    """App. D, printed closed form: ``sigma_u = 128/eps H sqrt(H B) log^2(32 H B0 B / delta)``.

    Derivation (App. D, "M^u_h is (eps', delta')-DP"): each ``u~_{b,h}`` gets fresh noise and must
    be ``(eps'_1, delta'_1) = advanced_composition_budget(eps', delta', B)``-DP (same ``eps'``,
    ``delta'`` as :func:`lsvi_ucb_sigma_lambda`); the protected sum changes only in the term of
    the changed user, sensitivity ``2(H+1) <= 4H``; Gaussian mechanism:
    ``4H sqrt(2 log(2/delta'_1)) / eps'_1
    = 32 H sqrt(8 H B log(16HB/delta) log(8H/delta) log(4/delta)) / eps`` (the paper's
    intermediate expression, reproduced by :func:`lsvi_ucb_sigma_u_composed`). The printed
    ``128 H sqrt(HB) log^2(32 H B0 B/delta)/eps`` is a larger upper bound; it is the one used."""
    B0 = lsvi_ucb_B0(B)
    return (128.0 / epsilon) * H * math.sqrt(H * B) * math.log(32.0 * H * B0 * B / delta) ** 2


@checked()
def lsvi_ucb_sigma_u_composed(epsilon: float, delta: float, H: int, B: int) -> float:
    """``sigma_u`` rebuilt from the tools (see :func:`lsvi_ucb_sigma_u`); <= the closed form."""
    eps_h, dlt_h = advanced_composition_budget(epsilon / 2.0, delta / 2.0, H)
    eps_1, dlt_1 = advanced_composition_budget(eps_h, dlt_h, B)
    return gaussian_sigma(4.0 * H, eps_1, dlt_1)


@checked()
def lsvi_ucb_upsilon(sigma_lambda: float, B0: int, d: int, K: int, H: int, p: float) -> float:
    """App. D: ``Upsilon^J_{p/6KH} = sigma_Lambda B0 (4 sqrt(d) + 2 log(6KH/p))`` (as printed: a
    factor ``B0`` where Clm. "bounded.eigen" for a sum of ``B0`` nodes would give ``sqrt(B0)``,
    i.e. conservative)."""
    return gaussian_matrix_bound(sigma_lambda, 1, d, p / (6.0 * K * H)) * B0


@checked()
def lsvi_ucb_c_K(Upsilon: float, d: int) -> float:
    """App. D: ``c_K = d Upsilon^J_{p/6KH}``."""
    return d * Upsilon


@checked()
def lsvi_ucb_C(sigma_u: float, d: int, K: int, H: int, p: float) -> float:
    """App. D: ``C^J_{p/6KH} = sigma_u (sqrt(d) + 2 sqrt(log(6KHd/p)))`` (printed with ``6KHd``
    inside the log although the subscript reads ``p/6KH``; the printed form is used and is the
    more conservative one)."""
    return gaussian_vector_bound(sigma_u, 1, d, p / (6.0 * K * H * d))


@checked()
def lsvi_ucb_U_K(lam: float, c_K: float, C: float, H: int, K: int, d: int) -> float:
    """App. D / Lem. "Lem.B.2": ``U_K = max{1, 2H sqrt(dK/(lam + c_K)) + C/(lam + c_K)}``."""
    denom = lam + c_K
    if denom <= 0.0:
        raise PrivacyParameterError(f"lam + c_K must be > 0, got lam={lam!r}, c_K={c_K!r}")
    return max(1.0, 2.0 * H * math.sqrt(d * K / denom) + C / denom)


@checked()
def lsvi_ucb_log_chi(U_K: float, H: int, K: int, d: int, p: float) -> float:
    """``log chi`` for App. D's ``chi = 24^2 * 18 * K^2 d U_K H / p``, computed as a sum of logs."""
    return (
        math.log(24.0**2 * 18.0) + 2.0 * math.log(K) + math.log(d) + math.log(U_K) + math.log(H) - math.log(p)
    )


@checked()
def lsvi_ucb_chi(U_K: float, H: int, K: int, d: int, p: float) -> float:
    """App. D / Lem. "Lem.B.3": ``chi = 24^2 * 18 * K^2 d U_K H / p`` (``inf`` on overflow)."""
    lc = lsvi_ucb_log_chi(U_K, H, K, d, p)
    return math.exp(lc) if lc < 709.0 else math.inf


@checked()
def lsvi_ucb_beta(lam: float, c_K: float, U_K: float, H: int, K: int, d: int, p: float) -> float:
    """App. D / Lem. "Lem.B.3": ``beta = 24 H sqrt(d (lam + c_K)) log chi``.

    Non-private LSVI-UCB: ``c_K = 0`` and ``U_K`` with ``C = 0`` (Alg. 2 without noise); this is
    the choice made here instead of Jin et al. (2020)'s ``c d H sqrt(log(2dKH/p))`` whose constant
    ``c`` is unspecified."""
    return 24.0 * H * math.sqrt(d * (lam + c_K)) * lsvi_ucb_log_chi(U_K, H, K, d, p)


# ============================================================================================
# (b) Pure JDP (App. "Pure joint DP in the linear setting")
# ============================================================================================
@checked()
def lsvi_ucb_num_batches_pure(epsilon: float, H: int, K: int, d: int) -> int:
    """App. "Pure joint DP in the linear setting": ``B = ceil((K eps)^{1/3} / (d^{2/3} H^{1/3}))``
    (clipped to ``K`` like :func:`lsvi_ucb_num_batches`)."""
    B = math.ceil(min((K * epsilon) ** (1.0 / 3.0) / (d ** (2.0 / 3.0) * H ** (1.0 / 3.0)), K))
    return int(min(max(B, 1), K))


@checked()
def lsvi_ucb_laplace_scales(epsilon: float, H: int, B: int, d: int) -> tuple[float, float]:
    """Pure (eps, 0)-JDP LSVI-UCB Laplace scales ``(sigma_Lambda, sigma_u)`` (the paper only gives
    ``O~(BH/eps)`` and ``O~(H^2 B/eps)``); derived by simple composition:

    * ``2H`` mechanism families (``H`` Lambda trees, ``H`` u-sequences), ``eps/(2H)`` each.
    * Lambda tree of step ``h``: leaves are the ``B`` batches; a user lies in one batch, hence in
      ``B0 = tree_depth(B)`` nodes. Releasing all node values costs ``B0`` node budgets, so each
      node gets ``eps/(2 H B0)`` and all ``B`` prefix sums are post-processing. A node is released
      as ``M + (Z' + Z'^T)/2`` = post-processing of the full-matrix release ``M + Z'``, whose L1
      sensitivity is ``2 ||phi||_1^2 <= 2d`` (``||phi||_2 <= 1``). ``sigma_Lambda = 4 d H B0/eps``.
    * u of step ``h``: the user's term ``phi (r + V)`` appears in every later release (up to
      ``B`` of them, each with fresh noise and a re-evaluated ``V``), so ``eps/(2 H B)`` per
      release (simple composition holds for adaptive mechanisms); L1 sensitivity
      ``2 ||phi||_1 (H + 1) <= 2 sqrt(d) (H + 1)``. ``sigma_u = 4 sqrt(d) H (H+1) B / eps``.

    The tree makes ``sigma_Lambda`` scale with ``B0 ~ log B`` rather than the paper's ``B``; the
    ``d`` and ``sqrt(d)`` factors come from L1 (not L2) sensitivities, absent from the paper's
    orders. Because ``sigma_Lambda`` is smaller than the paper's, ``c_K`` is taken from
    :func:`lsvi_ucb_c_K_pure`.
    """
    B0 = lsvi_ucb_B0(B)
    eps_node, _ = simple_composition_budget(epsilon, 0.0, 2 * H * B0)
    eps_rel, _ = simple_composition_budget(epsilon, 0.0, 2 * H * B)
    return (laplace_scale(2.0 * d, eps_node), laplace_scale(2.0 * math.sqrt(d) * (H + 1), eps_rel))


@checked()
def lsvi_ucb_upsilon_pure(sigma_lambda: float, B0: int, d: int, K: int, H: int, p: float) -> float:
    """App. "Pure joint DP in the linear setting", as printed:
    ``Upsilon^J_{p/6KHd} = sigma_Lambda B0 (2d + 2 sqrt(d log(6KHd/p)) + log(6KHd/p))``, i.e.
    ``B0 * laplace_matrix_bound(sigma_Lambda, d, p/(6KH))`` with ``sigma_Lambda`` used as the
    LAPLACE SCALE ``b`` (the claims are for unit-scale Laplace entries, whose standard deviation is
    ``sqrt 2``; reading sigma as a standard deviation would under-estimate the norm by ``sqrt 2``).
    Valid: it dominates :func:`laplace_matrix_sum_bound` ``(b, B0, d, p/(6KH))`` because
    ``2 B0 d + 2 sqrt(B0 d L) + L <= B0 (2d + 2 sqrt(d L) + L)``."""
    return B0 * laplace_matrix_bound(sigma_lambda, d, p / (6.0 * K * H))


@checked()
def lsvi_ucb_c_K_pure(Upsilon: float, C: float, lam: float, d: int, H: int) -> float:
    """Pure-JDP regularizer (derived): ``c_K = max(d Upsilon, C/H - lam)``.

    App. D's regret proof needs only ``c_K >= d Upsilon`` (Lem. "Adapted from Lem.4.4") and,
    in Lem. "Lem.B.4", ``C / (lam + c_K) <= H`` (third term of the condition on ``beta``). For the
    Gaussian closed forms the latter follows from ``sigma_u / sigma_Lambda <= H / sqrt(B0)``, so
    ``c_K = d Upsilon`` suffices (:func:`lsvi_ucb_c_K`). With the Laplace scales of
    :func:`lsvi_ucb_laplace_scales` (tree: ``sigma_Lambda ~ B0``, not ``~ B``) the ratio
    ``C / (lam + d Upsilon)`` grows like ``(H+1) B / B0^2`` and can exceed ``H`` (e.g. the
    non-batched ``B = K`` with small ``d``), so ``c_K`` is raised to keep ``C <= H (lam + c_K)``;
    otherwise it equals the paper's ``d Upsilon``."""
    return max(d * Upsilon, C / H - lam)


@checked()
def lsvi_ucb_C_pure(sigma_u: float, d: int, K: int, H: int, p: float) -> float:
    """App. "Pure joint DP in the linear setting", as printed:
    ``C^J_{p/6KHd} = sigma_u sqrt(d) log(6KHd/p)`` = Clm. "bound.laplace.vector" for the single
    Laplace vector ``eta^b_h`` (scale ``sigma_u``, again a Laplace scale) at ``alpha = p/(6KH)``."""
    return laplace_vector_bound(sigma_u, d, p / (6.0 * K * H))


@checked()
def lsvi_ucb_u_sensitivity(H: int) -> float:
    """App. D ("M^u_h is (eps', delta')-DP"): L2 sensitivity ``2(H + 1)`` of the protected sum
    ``sum_j phi_j (r_j + V(s'_j))`` (``||phi|| <= 1``, ``r + V in [0, H + 1]``); the paper then
    bounds it by ``4H`` for its closed form."""
    return 2.0 * (H + 1)


@checked()
def lsvi_ucb_releases(K: int, B: int) -> int:
    """Number of perturbed releases of Alg. 2 with ``B`` static batches over ``K`` episodes: one
    at the end of every batch that is followed by another (line 14, ``k = k_{b+1} - 1``), i.e.
    ``len(k_i <= K) - 1`` with ``k_i = i ceil(K/B) + 1`` (Alg. 2, line 4); at least 1 (so a
    degenerate ``B = 1`` still gets a positive noise scale). Every release sums all earlier
    users, so a user enters at most this many u releases and the Lambda trees receive at most
    this many leaves. Equals ``B - 1`` unless late batches never start."""
    L = -(-K // B)
    starts = min(B, (K - 1) // L + 1)
    return max(1, starts - 1)
