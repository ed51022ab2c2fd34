"""The continual-release mechanism of the JDP models and the noise scale that keeps a calibration's
(eps, delta) when the binary tree is replaced (issue 6, item 3; App. "Tree-based method")."""
# Why the rescaling is exact, not heuristic
# -----------------------------------------
# Each mechanism releases a post-processing of E x + z (E its encoder, z i.i.d. node noise of
# std sigma). One user's leaf x_i enters through column i of E, so the user's whole influence on
# one tree is a Gaussian mechanism with L2 sensitivity Delta * m, m = max_i ||E e_i||_2 (the
# kernel's `sensitivity_multiplier`), i.e. mu = Delta m / sigma in the GDP sense of Dong, Roth &
# Su (2019): releases with equal mu have the same tradeoff function, hence the same (eps, delta)
# for every eps.
#
# A calibration computes sigma for the binary tree counting n_ref nodes per user and tree:
#   * "paper": K0 = ceil(log2 T) + 1 nodes (App. "Tree-based method"); the paper's per-node budget
#     and advanced composition certify the K0-fold composition of N(0, sigma^2) releases of
#     sensitivity Delta, which is EXACTLY the Gaussian mechanism with mu = Delta sqrt(K0) / sigma;
#   * "tight": tree_nodes_per_leaf(T) = floor(log2 T) + 1, the exact count, mu likewise.
# So any mechanism with mu_M = Delta m_M / sigma_M equal to Delta sqrt(n_ref) / sigma inherits
# the certificate:  sigma_M = sigma * m_M / sqrt(n_ref).  For the tree itself the calibration's
# sigma is kept unchanged (factor 1: under "paper" the tree keeps the paper's sigma_B although its
# exact multiplier sqrt(floor(log2 T) + 1) can be below sqrt(K0)). Everything else in the privacy
# argument (H steps, families, Billboard lemma) composes these per-tree mechanisms and is untouched.
#
# The regret analysis only uses that the released noise of step t is a (symmetrized) Gaussian
# whose entries have variance <= n_terms sigma^2 (the tree: a sum of at most K0 nodes). Under M
# the entries have variance sigma_M^2 v_M(t) <= sigma_M^2 max_t v_M(t), so the bounds Upsilon and
# C (linear in sigma sqrt(n_terms)) are rescaled by sigma_M sqrt(max v_M) / (sigma sqrt(n_terms))
# and the shift, radii and regularizers that depend on them are recomputed with the calibration
# module's own formulas.
#
# Pure DP (Laplace) stays on the tree: the factorizations' L1 multiplier grows like sqrt(T), and
# the Laplace noise bounds of App. "Pure DP" are stated for sums of equally weighted nodes.
from __future__ import annotations

import functools
import math
from typing import Any, Dict

from privrl.exceptions import PrivacyParameterError
from privrl.privacy import calibration as cal_mod
from privrl.privacy.accounting import tree_nodes_per_leaf
from privrl.privacy.mechanisms import tree_depth

__all__ = [
    "MECHANISMS",
    "check_mechanism",
    "reference_tree_nodes",
    "mechanism_sigma_factor",
    "noise_bound_factor",
    "adapt_calibration",
]

#: The continual-release mechanisms a JDP model can select ("tree" is the paper's).
MECHANISMS = ("tree", "honaker", "factorization", "blt")

#: Per algorithm: the tree capacity key, the tree noise scales, the noise bounds they drive.
_TREES = {
    "ucrl_vtr": ("K", ("sigma_B", "sigma_g"), ("Upsilon", "C")),
    "ucrl_vtr_plus": ("K", ("sigma_B1", "sigma_B2", "sigma_f", "sigma_g"),
                      ("Upsilon1", "Upsilon2", "C1", "C2")),
    # Alg. 2: only Lambda goes through trees; u~ is a fresh Gaussian per batch (sigma_u, C kept).
    "lsvi_ucb": ("B", ("sigma_Lambda",), ("Upsilon",)),
}


def check_mechanism(mechanism: Any) -> str:
    if not isinstance(mechanism, str) or mechanism not in MECHANISMS:
        raise PrivacyParameterError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    return mechanism


def reference_tree_nodes(capacity: int, calibration: str) -> int:
    """Nodes per user and tree the calibration's sigma is computed for: K0 = ceil(log2 T) + 1
    ("paper", App. "Tree-based method") or floor(log2 T) + 1 ("tight", the exact count)."""
    if calibration == "tight":
        return tree_nodes_per_leaf(capacity)
    return tree_depth(capacity)


@functools.lru_cache(maxsize=256)
def _profile(mechanism: str, capacity: int):
    # Pure function of (kind, T); an agent asks for it several times while calibrating.
    from privrl.kernels.continual import mechanism_profile  # Rust only when a mechanism is built

    return mechanism_profile(mechanism, capacity)


def mechanism_sigma_factor(mechanism: str, capacity: int, calibration: str = "paper") -> float:
    """sigma_M / sigma_tree at equal privacy: m_M / sqrt(n_ref) (1 for the tree itself)."""
    mechanism = check_mechanism(mechanism)
    if mechanism == "tree":
        return 1.0
    prof = _profile(mechanism, capacity)
    return prof.l2_multiplier / math.sqrt(reference_tree_nodes(capacity, calibration))


def noise_bound_factor(mechanism: str, capacity: int, sigma_factor: float, n_terms: int) -> float:
    """Factor on the noise bounds Upsilon / C: the largest per-entry std of the released noise
    under M, sigma_M sqrt(max_t v_M(t)), over the sigma sqrt(n_terms) they were computed for."""
    if check_mechanism(mechanism) == "tree":
        return 1.0
    prof = _profile(mechanism, capacity)
    return sigma_factor * math.sqrt(prof.max_variance_factor / n_terms)


def adapt_calibration(cal: Dict[str, Any], mechanism: str, algorithm: str) -> Dict[str, Any]:
    """A copy of a ``calibrate_*`` result for JDP trees replaced by `mechanism`.

    The tree noise scales are multiplied by :func:`mechanism_sigma_factor` (same (eps, delta),
    see the module comment), Upsilon / C by :func:`noise_bound_factor`, and the quantities that
    depend on them (shift, ups_low / ups_high, radii; for Alg. 2 c_K, U_K, chi, beta) are
    recomputed with privrl.privacy.calibration's formulas. Added keys: ``mechanism``,
    ``mechanism_capacity``, ``mechanism_l2_multiplier``, ``mechanism_max_variance_factor``,
    ``reference_tree_nodes``, ``sigma_factor``, ``noise_bound_factor``.

    Non-JDP calibrations and the tree are returned unchanged (plus ``mechanism``)."""
    mechanism = check_mechanism(mechanism)
    if algorithm not in _TREES:
        raise ValueError(f"algorithm must be one of {tuple(_TREES)}, got {algorithm!r}")
    out = dict(cal)
    out["mechanism"] = mechanism
    if cal.get("kind") != "jdp" or mechanism == "tree":
        return out
    if cal.get("pure"):
        raise PrivacyParameterError(
            f"mechanism {mechanism!r} needs Gaussian noise (delta > 0): pure DP (Laplace) keeps the "
            "binary tree, whose L1 sensitivity multiplier and noise bounds the paper's pure-DP "
            "analysis covers")
    cap_key, scale_keys, bound_keys = _TREES[algorithm]
    capacity = int(cal[cap_key])
    calibration = cal.get("calibration", "paper")
    n_terms = int(cal["B0"] if algorithm == "lsvi_ucb" else cal["noise_terms"])
    prof = _profile(mechanism, capacity)
    f_sigma = mechanism_sigma_factor(mechanism, capacity, calibration)
    f_bound = noise_bound_factor(mechanism, capacity, f_sigma, n_terms)
    for k in scale_keys:
        out[k] = cal[k] * f_sigma
    for k in bound_keys:
        out[k] = cal[k] * f_bound
    H, K, d, p = cal["H"], cal["K"], cal["d"], cal["p"]
    lam = cal["lam"]
    if algorithm == "ucrl_vtr":
        ups, C = out["Upsilon"], out["C"]
        out.update(
            shift=cal_mod.ucrl_vtr_shift(ups), ups_low=ups, ups_high=3.0 * ups,
            beta=cal_mod.ucrl_vtr_beta(lam, ups, cal["C_w"], H, K, d, p),
            beta_condition=cal_mod.ucrl_vtr_beta_condition(lam, ups, 3.0 * ups, C, cal["C_w"],
                                                           H, K, d, p),
            node_budget=None)
    elif algorithm == "ucrl_vtr_plus":
        u1, u2, c1, c2 = out["Upsilon1"], out["Upsilon2"], out["C1"], out["C2"]
        cor = cal_mod.ucrl_vtr_plus_betas(lam, u1, u2, cal["C_w"], H, K, d, p)
        cond = cal_mod.ucrl_vtr_plus_betas_condition(lam, u1, 3.0 * u1, c1, u2, 3.0 * u2, c2,
                                                     cal["C_w"], H, K, d, p)
        out.update(shift1=2.0 * u1, shift2=2.0 * u2,
                   beta_hat=cor[0], beta_check=cor[1], beta_tilde=cor[2],
                   beta_hat_condition=cond[0], beta_check_condition=cond[1],
                   beta_tilde_condition=cond[2])
    else:
        ups, C = out["Upsilon"], out["C"]
        # App. D needs c_K >= d Upsilon and C <= H (lam + c_K) (Lem. "Lem.B.4"); the tree's sigma
        # ratio gave the latter for free, a smaller Upsilon may not, so take both explicitly.
        cK = cal_mod.lsvi_ucb_c_K_pure(ups, C, lam, d, H)
        U_K = cal_mod.lsvi_ucb_U_K(lam, cK, C, H, K, d)
        out.update(c_K=cK, shift=cK + ups, U_K=U_K, chi=cal_mod.lsvi_ucb_chi(U_K, H, K, d, p),
                   log_chi=cal_mod.lsvi_ucb_log_chi(U_K, H, K, d, p),
                   beta=cal_mod.lsvi_ucb_beta(lam, cK, U_K, H, K, d, p))
    out.update(mechanism_capacity=capacity, mechanism_l2_multiplier=prof.l2_multiplier,
               mechanism_max_variance_factor=prof.max_variance_factor,
               reference_tree_nodes=reference_tree_nodes(capacity, calibration),
               sigma_factor=f_sigma, noise_bound_factor=f_bound)
    return out
