"""Linear MDPs p_h(s'|s,a) = phi(s,a)^T mu_h(s'), r_h(s,a) = phi(s,a)^T theta_h, and the benchmark
instances. Sec. 2, Asm. 1 ("Linear MDP") of the paper; the environments used for Sec. 4 (JDP LSVI-UCB).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from privrl.common.blas import matmul_1thread, one_blas_thread
from privrl.common.checks import is_one_hot, model_seed
from privrl.common.errors import AssumptionError, AssumptionWarning, ShapeError, stacklevel_outside
from privrl.common.memory import refuse_over_memory
from privrl.envs.finite import (
    PROB_TOL,
    FiniteMDP,
    _as_array,
    _check_finite,
    _check_shape,
    _freeze,
    check_dense_size,
    env_int,
    env_name,
)
from privrl.envs.mixture import _binary_vertices

__all__ = [
    "LinearMDP",
    "RandomLinearMDP",
    "SyntheticLinearMDP",
    "RiverSwim",
    "tabular_linear_mdp",
]

#: Largest S for which the mu bound of Asm. 1 is computed exactly over the 2^(S-1) sign vertices.
EXACT_MU_MAX_S = 16


def _sign_vertices(n: int) -> np.ndarray:
    """All v in {-1,+1}^n with v[0] = +1 (the other half is -v), shape (2^(n-1), n)."""
    m = max(n - 1, 0)
    return np.concatenate([np.ones((2**m, 1)), 2.0 * _binary_vertices(m) - 1.0], axis=1)[:, :n]


#: Entries of P (8 bytes each) from which a linear MDP's exact values use its factors (2 MiB).
LOW_RANK_MIN_ENTRIES = 1 << 18


class LinearMDP(FiniteMDP):
    """A finite linear MDP (Asm. 1): p_h(s'|s,a) = phi(s,a)^T mu_h(s'), r_h(s,a) = phi(s,a)^T theta_h.

    Parameters
    ----------
    features : array (S, A, d)
        phi(s,a). ||phi(s,a)||_2 <= 1 (+1e-9) is REQUIRED (it bounds the privacy sensitivity):
        a violation raises AssumptionError.
    mu : array (H, S, d)
        mu[h, s'] = mu_h(s'). The induced P = phi^T mu_h must have distributions as rows
        (AssumptionError otherwise).
    theta : array (H, d) or None
        r_h = phi^T theta_h, must lie in [0, 1] (AssumptionError otherwise).
    init_dist : array (S,)
    name : str, optional
    R : array (H, S, A), optional
        Rewards given directly. If both theta and R are given they must agree (|R - phi theta|
        <= 1e-9, AssumptionError otherwise). If only R is given, R is used as the reward and
        theta is set to the least-squares fit of R on phi per step; if that fit is not exact
        (rewards not linear in phi) an AssumptionWarning is issued and recorded.

    Asm. 1 also asks ||theta_h|| <= sqrt(d) and ||sum_s' mu_h(s') v(s')|| <= sqrt(d) ||v||_inf.
    These do not affect privacy, and some published instances (SyntheticLinearMDP) exceed them
    by a constant, so they only WARN (AssumptionWarning). The mu bound is first checked with the
    sufficient bound sqrt(sum_i (sum_s' |mu_h(s')_i|)^2) <= sqrt(d); if that fails and S <= 16
    the exact maximum over the sign vertices v in {-1,+1}^S (the max of a convex function over
    the box is at a vertex) decides; if S > 16 the bound is reported as unverified (warning).
    Everything is recorded in ``self.assumption_report`` (a dict).

    Attributes: d, features (S, A, d), features_flat (S*A, d) (row s*A + a is phi(s,a)),
    mu (H, S, d), theta (H, d), assumption_report; plus those of FiniteMDP.
    """

    def __init__(
        self,
        features: Any,
        mu: Any,
        theta: Any,
        init_dist: Any,
        name: str | None = None,
        R: Any = None,
    ) -> None:
        phi, mu, theta, R = _linear_parts(features, mu, theta, R)
        S, A, d = phi.shape
        H = mu.shape[0]
        # Asm. 1: ||phi(s,a)|| <= 1 -- an error, it bounds the sensitivity of the private statistics.
        report: dict[str, Any] = {"phi_norm_max": check_phi_norms(phi)}
        check_dense_size("LinearMDP", H, S, A)  # P below (numpy's "Unable to allocate" before)
        phi_flat = phi.reshape(S * A, d)
        theta, R = _linear_rewards(phi_flat, theta, R, (H, S, A), report)
        P = phi_matmul(phi_flat, mu.transpose(0, 2, 1)).reshape(H, S, A, S)
        super().__init__(P, R, init_dist, name=name)

        self.d: int = int(d)
        self.features: np.ndarray = _freeze(phi)
        self.features_flat: np.ndarray = _freeze(phi_flat.copy())
        self.mu: np.ndarray = _freeze(mu)
        self.theta: np.ndarray = _freeze(np.asarray(theta, dtype=np.float64))

        # Asm. 1, the bounds that only warn.
        msgs = _soft_bounds(self.theta, mu, report)
        if not report["reward_linear"]:
            msgs.append(
                "the rewards R are not linear in phi (least-squares residual "
                f"{report['reward_fit_residual']:.3g})"
            )
        self.assumption_report: dict[str, Any] = report
        for m in msgs:
            # at the user's line, also through a subclass (SyntheticLinearMDP) or from_gymnasium
            warnings.warn(
                f"{self.name}: Asm. 1 not satisfied: {m}",
                AssumptionWarning,
                stacklevel=stacklevel_outside("privrl"),
            )

    def kernel_factors(self) -> dict[str, np.ndarray]:
        """``phi`` (S A, d) and ``mu`` (H, S, d) of ``P_h(s'|s, a) = phi(s, a)^T mu_h(s')`` when they
        make the exact values cheaper: 2 d < S (``phi^T (mu_h^T V)``, d S + S d products a step
        instead of S^2) and P beyond a cache (LOW_RANK_MIN_ENTRIES: RandomLinearMDP(100, 10, 16,
        20)'s 16 MB were read once per policy); none otherwise (one-hot features, small models,
        whose values stay P's sums bit for bit). Equal to P's sums up to rounding."""
        if 2 * self.d >= self.S or self.P.size < LOW_RANK_MIN_ENTRIES:
            return {}
        return {"phi": np.ascontiguousarray(self.features_flat), "mu": np.ascontiguousarray(self.mu)}


def phi_matmul(phi_flat: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``phi_flat @ X`` (phi_flat (n, d), X (..., d, m)). When every row of phi has at most one
    nonzero entry (one-hot, tabular features) each sum has a single nonzero term, so the product is
    that term: a gather, the same values (up to the sign of a zero) without the O(n d m) dense
    product (Taxi one-hot, n = d = 3,000, S = 500, H = 20: 7 s of a LinearMDP's construction, which
    a sweep repeats per run)."""
    if not is_one_hot(phi_flat):  # one BLAS thread: the same bits at any thread count
        return matmul_1thread(phi_flat, X)
    nonzero = phi_flat != 0
    col = nonzero.argmax(axis=1)  # 0 for an all-zero row, whose scale below is 0
    scale = phi_flat[np.arange(phi_flat.shape[0]), col]
    return np.ascontiguousarray(X[..., col, :] * scale[:, None])


def _linear_parts(features: Any, mu: Any, theta: Any, R: Any) -> tuple[np.ndarray, np.ndarray, Any, Any]:
    """features (S, A, d), mu (H, S, d), theta (H, d) or None, R (H, S, A) or None as checked
    float arrays (at least one of theta and R)."""
    phi = _as_array(features, "features", 3, "(S, A, d)")
    S, A, d = phi.shape
    mu = _as_array(mu, "mu", 3, "(H, S, d)")
    H = mu.shape[0]
    _check_shape(mu, "mu", (H, S, d), "(H, S, d)")
    _check_finite(phi, "features")
    _check_finite(mu, "mu")
    if theta is None and R is None:
        raise ShapeError("LinearMDP needs the reward parameters theta (H, d) or the rewards R (H, S, A)")
    if theta is not None:
        theta = _as_array(theta, "theta", 2, "(H, d)")
        _check_shape(theta, "theta", (H, d), "(H, d)")
        _check_finite(theta, "theta")
    if R is not None:
        R = _as_array(R, "R", 3, "(H, S, A)")
        _check_shape(R, "R", (H, S, A), "(H, S, A)")
        _check_finite(R, "R")
    return phi, mu, theta, R


def check_phi_norms(phi: np.ndarray) -> float:
    """max ||phi(s,a)||_2, which Asm. 1 requires to be <= 1 (AssumptionError otherwise)."""
    norms = np.linalg.norm(phi, axis=2)
    phi_norm_max = float(norms.max())
    if phi_norm_max > 1.0 + PROB_TOL:
        s, a = (int(i) for i in np.unravel_index(int(np.argmax(norms)), norms.shape))
        raise AssumptionError(
            f"||phi(s={s}, a={a})||_2 = {norms[s, a]:.12g} > 1: Asm. 1 requires ||phi(s,a)|| <= 1 "
            "(it bounds the privacy sensitivity)"
        )
    return phi_norm_max


def _linear_rewards(
    phi_flat: np.ndarray, theta: Any, R: Any, shape: tuple[int, int, int], report: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """(theta, R): R = phi theta when only theta is given (both must agree when both are), else
    theta fitted to R by least squares per step; records reward_linear (and the fit residual)."""
    H, S, A = shape
    reward_linear = True
    if theta is not None:
        R_lin = phi_matmul(phi_flat, theta.T).T.reshape(H, S, A)
        if R is not None:
            diff = np.abs(R - R_lin)
            if diff.max() > PROB_TOL:
                idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
                raise AssumptionError(  # repr: ".6g" printed 0.5 and 0.50000001 both as 0.5
                    f"R[h={idx[0]}, s={idx[1]}, a={idx[2]}] = {float(R[idx])!r} but phi^T theta_h = "
                    f"{float(R_lin[idx])!r}: R and theta are inconsistent (by more than {PROB_TOL:g})"
                )
        else:
            R = R_lin
    else:
        with one_blas_thread():  # the same bits at any BLAS thread count (privrl.common.blas)
            theta, *_ = np.linalg.lstsq(phi_flat, R.reshape(H, S * A).T, rcond=None)
        theta = np.ascontiguousarray(theta.T)
        resid = float(np.abs(np.matmul(phi_flat, theta.T).T - R.reshape(H, S * A)).max())
        reward_linear = resid <= 1e-8
        report["reward_fit_residual"] = resid
    report["reward_linear"] = reward_linear
    return theta, R


def _soft_bounds(theta: np.ndarray, mu: np.ndarray, report: dict[str, Any]) -> list[str]:
    """Asm. 1's ||theta_h|| <= sqrt(d) and mu bound (see LinearMDP): recorded in `report`; the
    returned messages say which fail or could not be verified."""
    S, d = mu.shape[1], mu.shape[2]
    sqrt_d = float(np.sqrt(d))
    theta_norms = np.linalg.norm(theta, axis=1)
    report["theta_norm_max"] = float(theta_norms.max())
    report["theta_bound"] = sqrt_d
    report["theta_ok"] = bool(theta_norms.max() <= sqrt_d + PROB_TOL)
    suff = np.sqrt((np.abs(mu).sum(axis=1) ** 2).sum(axis=1))  # (H,)
    report["mu_bound_sufficient"] = float(suff.max())
    report["mu_bound_exact"] = None
    if suff.max() <= sqrt_d + PROB_TOL:
        report["mu_ok"] = True
    elif S <= EXACT_MU_MAX_S:
        verts = _sign_vertices(S)  # (2^(S-1), S)
        exact = np.array([np.linalg.norm(verts @ mu[h], axis=1).max() for h in range(mu.shape[0])])
        report["mu_bound_exact"] = float(exact.max())
        report["mu_ok"] = bool(exact.max() <= sqrt_d + PROB_TOL)
    else:
        report["mu_ok"] = None  # could not be verified
    msgs = []
    if not report["theta_ok"]:
        h = int(np.argmax(theta_norms))
        msgs.append(f"||theta_h={h}|| = {theta_norms[h]:.6g} > sqrt(d) = {sqrt_d:.6g}")
    if report["mu_ok"] is False:
        msgs.append(
            f"max_h,|v|<=1 ||sum_s' mu_h(s') v(s')|| = {report['mu_bound_exact']:.6g} "
            f"> sqrt(d) = {sqrt_d:.6g}"
        )
    elif report["mu_ok"] is None:
        msgs.append(
            f"the mu bound could not be verified (sufficient bound {suff.max():.6g} > sqrt(d) = "
            f"{sqrt_d:.6g} and S = {S} > {EXACT_MU_MAX_S} is too large for the exact vertex check)"
        )
    return msgs


# --------------------------------------------------------------------------------------------
# tabular MDPs as linear MDPs
# --------------------------------------------------------------------------------------------
def _one_hot_parts(P: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    H, S, A, _ = P.shape
    features = np.eye(S * A).reshape(S, A, S * A)
    mu = np.ascontiguousarray(P.reshape(H, S * A, S).transpose(0, 2, 1))  # mu[h, s', s*A+a] = P[h,s,a,s']
    theta = np.ascontiguousarray(R.reshape(H, S * A))
    return features, mu, theta


def tabular_linear_mdp(P: Any, R: Any, init_dist: Any, name: str | None = None) -> LinearMDP:
    """Any tabular MDP (P (H, S, A, S), R (H, S, A)) as a linear MDP with one-hot
    phi(s,a) = e_{s*A+a} in R^(S*A): mu_h(s')_{s*A+a} = p_h(s'|s,a), theta_h = R_h flattened.
    Asm. 1 holds with d = S*A (||theta_h|| <= sqrt(SA), the mu sufficient bound equals sqrt(SA))."""
    P = _as_array(P, "P", 4, "(H, S, A, S)")
    R = _as_array(R, "R", 3, "(H, S, A)")
    H, S, A, S2 = P.shape
    if S2 != S:  # was numpy's "cannot reshape array of size ..." from _one_hot_parts
        raise ShapeError(f"P must have shape (H, S, A, S) with matching S axes, got {P.shape}")
    _check_shape(R, "R", (H, S, A), "(H, S, A)")
    _check_finite(P, "P")  # before they become mu and theta: a NaN in P was reported as mu's
    _check_finite(R, "R")
    # the one-hot features (S A, S A) and their flat copy dwarf P when A is large: S = 10,
    # A = 10^5 asked numpy for 7.28 TiB (MemoryError) from an 80 MB P
    refuse_over_memory(
        "tabular_linear_mdp",
        2.0 * (S * A) ** 2 + 2.0 * H * S * S * A,
        f"two dense tables of S A = {S * A} one-hot features of dimension d = S A and mu (H, S, S A) "
        f"(H = {H}, S = {S}, A = {A})",
        "Use fewer actions or states, or a LinearMDP with features smaller than one-hot.",
    )
    features, mu, theta = _one_hot_parts(P, R)
    return LinearMDP(features, mu, theta, init_dist, name=name)


def _river_swim_tabular(S: int) -> tuple[np.ndarray, np.ndarray]:
    """Time-homogeneous tabular RiverSwim: P (S, 2, S), R (S, 2); action 0 = left, 1 = right."""
    P = np.zeros((S, 2, S))
    R = np.zeros((S, 2))
    for s in range(S):
        P[s, 0, max(s - 1, 0)] = 1.0
    P[0, 1, 0] = 0.3
    P[0, 1, 1] = 0.7
    for s in range(1, S - 1):
        P[s, 1, s] = 0.6
        P[s, 1, s + 1] = 0.3
        P[s, 1, s - 1] = 0.1
    P[S - 1, 1, S - 1] = 0.9
    P[S - 1, 1, S - 2] = 0.1
    R[0, 0] = 0.005
    R[S - 1, 1] = 1.0
    return P, R


class RiverSwim(LinearMDP):
    """Tabular RiverSwim (docs/benchmarks.md) as a linear MDP with one-hot features in R^(S*A), A = 2.

    Action 0 = left (moves left surely, stays at 0), 1 = right: middle states stay 0.6 / right 0.3 /
    left 0.1; state 0 stay 0.3 / right 0.7; state S-1 stay 0.9 / left 0.1. Rewards 0.005 for left
    at 0, 1 for right at S-1, else 0. s_1 = 0. Time-homogeneous.
    """

    def __init__(self, S: int = 6, H: int = 20, name: str | None = None) -> None:
        S = env_int("RiverSwim", "S", S, 2, "S >= 2 states")
        H = env_int("RiverSwim", "H", H, 1, "a horizon H >= 1")
        check_dense_size("RiverSwim", H, S, 2)
        P1, R1 = _river_swim_tabular(S)
        P = np.broadcast_to(P1, (H, S, 2, S))
        R = np.broadcast_to(R1, (H, S, 2))
        features, mu, theta = _one_hot_parts(np.ascontiguousarray(P), np.ascontiguousarray(R))
        init = np.zeros(S)
        init[0] = 1.0
        super().__init__(features, mu, theta, init, name=env_name(name) or f"RiverSwim(S={S}, H={H})")


# --------------------------------------------------------------------------------------------
class RandomLinearMDP(LinearMDP):
    """Random linear MDP (docs/benchmarks.md):
    phi(s,a) ~ Dirichlet(0.3 * 1_d); mu_h,i ~ Dirichlet(0.5 * 1_S) for i = 1..d so that
    p_h(.|s,a) = sum_i phi_i(s,a) mu_h,i; theta_h ~ U[0,1]^d; s_1 uniform over S.

    Draw order from ``np.random.default_rng(seed)``: phi (S, A, d), then mu (H, d, S), then theta (H, d).
    """

    def __init__(
        self, S: int = 100, A: int = 10, d: int = 16, H: int = 20, seed: int = 0, name: str | None = None
    ) -> None:
        S, A, d, H = (env_int("RandomLinearMDP", k, v) for k, v in (("S", S), ("A", A), ("d", d), ("H", H)))
        check_dense_size("RandomLinearMDP", H, S, A, d)  # d alone was ignored: 8 TiB at d = 2^40
        seed = model_seed(seed)  # None: drawn here, so the name tells the model drawn
        rng = np.random.default_rng(seed)
        phi = rng.dirichlet(np.full(d, 0.3), size=(S, A))  # (S, A, d)
        mu = rng.dirichlet(np.full(S, 0.5), size=(H, d)).transpose(0, 2, 1)  # (H, S, d)
        theta = rng.random((H, d))
        self.seed = seed
        super().__init__(
            phi,
            mu,
            theta,
            np.full(S, 1.0 / S),
            name=env_name(name) or f"RandomLinearMDP(S={S}, A={A}, d={d}, H={H}, seed={seed})",
        )


class SyntheticLinearMDP(LinearMDP):
    """Min et al. style two-state linear MDP (docs/benchmarks.md), d = 10 only.

    S = {0, 1}; u_a in {-1,+1}^8 is the 8-bit binary code of a, most significant bit first
    (bit 1 -> +1, 0 -> -1); phi(s,a) = [u_a, 1{s=0,a=0}, 1 - 1{s=0,a=0}] / 3;
    mu_h(s') = 3 [0_8, (1-s') XOR alpha_h, s' XOR alpha_h], alpha_h in {0,1} drawn per step from
    ``np.random.default_rng(seed).integers(0, 2, size=H)``; theta_h = 3 [0_8, r, 1-r], r = 0.99;
    s_1 uniform on {0, 1}.

    Hence (s=0, a=0) moves to state alpha_h and earns r; every other pair moves to 1 - alpha_h and
    earns 1 - r. ||phi|| = 1 exactly. The mu bound of Asm. 1 is exceeded (3 sqrt 2 > sqrt 10), which
    is reported with an AssumptionWarning, as for the published instance.

    Attributes: alpha (H,) int, action_codes (A, 8), r.
    """

    D = 10
    N_BITS = 8

    def __init__(
        self, H: int, n_actions: int = 100, d: int = 10, seed: int = 0, name: str | None = None
    ) -> None:
        # an integer by the sizes' rule first (d = 10.0 or True passed the comparison with 10)
        if env_int("SyntheticLinearMDP", "d", d, 1) != self.D:
            raise AssumptionError(
                f"SyntheticLinearMDP is only defined for d = {self.D} (8 code bits + 2), got d={d}"
            )
        H = env_int("SyntheticLinearMDP", "H", H, 1, "a horizon H >= 1")
        A = env_int("SyntheticLinearMDP", "n_actions", n_actions, 1)
        if A > 2**self.N_BITS:
            raise AssumptionError(
                f"SyntheticLinearMDP needs 1 <= n_actions <= {2**self.N_BITS} (8-bit action codes), "
                f"got {n_actions}"
            )
        check_dense_size("SyntheticLinearMDP", H, 2, A)
        seed = model_seed(seed)  # None: drawn here, so the name tells the model drawn
        rng = np.random.default_rng(seed)
        alpha = rng.integers(0, 2, size=H).astype(np.int64)
        bits = (np.arange(A)[:, None] >> np.arange(self.N_BITS - 1, -1, -1)) & 1
        u = 2.0 * bits - 1.0  # (A, 8)
        phi = np.zeros((2, A, self.D))
        phi[:, :, :8] = u[None]
        ind = np.zeros((2, A))
        ind[0, 0] = 1.0
        phi[:, :, 8] = ind
        phi[:, :, 9] = 1.0 - ind
        phi /= 3.0
        mu = np.zeros((H, 2, self.D))
        for sp in (0, 1):
            mu[:, sp, 8] = 3.0 * ((1 - sp) ^ alpha)
            mu[:, sp, 9] = 3.0 * (sp ^ alpha)
        r = 0.99
        theta = np.zeros((H, self.D))
        theta[:, 8] = 3.0 * r
        theta[:, 9] = 3.0 * (1.0 - r)
        self.seed = seed
        self.r = r
        self.alpha = _freeze(alpha)
        self.action_codes = _freeze(u)
        super().__init__(
            phi,
            mu,
            theta,
            np.array([0.5, 0.5]),
            name=env_name(name) or f"SyntheticLinearMDP(H={H}, n_actions={A}, seed={seed})",
        )
