"""Linear-mixture MDPs p_h(s'|s,a) = phi(s'|s,a)^T w_h with the value-feature map phi_v, and the
benchmark instances. Sec. 2, Asm. 2 ("Linear-Mixture MDP") of the paper; the environments used for
Sec. 3 (JDP / LDP UCRL-VTR).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from privrl.common.blas import matmul_1thread
from privrl.common.checks import check_all_finite, check_finite_real, model_seed, numeric_array
from privrl.common.errors import AssumptionError, AssumptionWarning, PrivacyParameterError, ShapeError
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

__all__ = ["LinearMixtureMDP", "HardToLearn", "RandomLinearMixtureMDP", "RiverSwimMixture"]

#: Supports up to this size are checked exactly over all 2^m vertices of [0,1]^m.
EXACT_SUPPORT_MAX = 16
#: Randomized vertex search (only for supports larger than EXACT_SUPPORT_MAX).
RANDOM_SEARCH_STARTS = 256
RANDOM_SEARCH_SEED = 20240917


def _binary_vertices(m: int) -> np.ndarray:
    """All v in {0,1}^m, shape (2^m, m)."""
    codes = np.arange(2**m, dtype=np.int64)
    return ((codes[:, None] >> np.arange(m - 1, -1, -1)) & 1).astype(np.float64)


def _random_vertex_search(phi: np.ndarray, rng: np.random.Generator, starts: int) -> tuple[float, np.ndarray]:
    """Lower bound on max_{v in {0,1}^m} ||phi^T v|| (phi (m, d)): random vertices + greedy single flips."""
    m = phi.shape[0]
    V = (rng.random((starts, m)) < 0.5).astype(np.float64)
    X = V @ phi  # (starts, d)
    while True:
        # Flipping coordinate j moves x by (1 - 2 v_j) phi_j.
        sign = 1.0 - 2.0 * V  # (starts, m)
        cand = X[:, None, :] + sign[:, :, None] * phi[None, :, :]  # (starts, m, d)
        cn = np.einsum("kjd,kjd->kj", cand, cand)
        cur = np.einsum("kd,kd->k", X, X)
        j = cn.argmax(axis=1)
        better = cn[np.arange(starts), j] > cur + 1e-15
        if not better.any():
            break
        rows = np.nonzero(better)[0]
        V[rows, j[rows]] = 1.0 - V[rows, j[rows]]
        X[rows] = cand[rows, j[rows]]
    norms = np.linalg.norm(X, axis=1)
    k = int(norms.argmax())
    return float(norms[k]), V[k]


class LinearMixtureMDP(FiniteMDP):
    """A finite linear-mixture MDP (Asm. 2): p_h(s'|s,a) = phi(s'|s,a)^T w_h.

    Parameters
    ----------
    features : array (S, A, S, d)
        features[s, a, s'] = phi(s'|s,a) (dense; zero outside the support of (s,a)).
    weights : array (H, d)
        w_h, steps h = 0..H-1.
    R : array (H, S, A)
        Rewards in [0, 1].
    init_dist : array (S,)
    C_w : float, optional
        Bound on ||w_h||; default max_h ||w_h||.
    name : str, optional

    Asm. 2 is checked at construction and every violation raises AssumptionError:
      * P = phi^T w_h has distributions as rows;
      * ||w_h||_2 <= C_w (+1e-9);
      * ||phi_v(s,a)||_2 <= 1 (+1e-9) for every v: S -> [0,1]. phi_v is linear in v, so the norm is
        convex and its max over the box [0,1]^S is at a vertex; only next states in the support of
        (s,a) (nonzero feature) matter. First the sufficient bound ||sum_s' |phi(s'|s,a)| ||_2 <= 1
        (componentwise absolute values) is tried for all pairs at once; for a pair that fails it,
        the max is computed EXACTLY over all 2^m vertices when the support has m <= 16 states;
        for larger supports a randomized vertex search (256 random vertices, each improved by
        greedy single-coordinate flips, fixed seed) is run and an error is raised only if it finds a
        violation -- otherwise the pair is reported as unverified (AssumptionWarning and
        ``assumption_report["phi_v_unverified"]``).

    Attributes: d, C_w, features (S, A, S, d), weights (H, d),
    phi_v_matrix (S*A*d, S) C-contiguous with phi_v(v) = (phi_v_matrix @ v).reshape(S, A, d),
    assumption_report (dict); plus those of FiniteMDP.
    """

    def __init__(
        self,
        features: Any,
        weights: Any,
        R: Any,
        init_dist: Any,
        C_w: float | None = None,
        name: str | None = None,
    ) -> None:
        phi = _as_array(features, "features", 4, "(S, A, S, d)")
        S, A, S2, d = phi.shape
        if S2 != S:
            raise ShapeError(f"features must have shape (S, A, S, d) with matching S axes, got {phi.shape}")
        w = _as_array(weights, "weights", 2, "(H, d)")
        H = w.shape[0]
        _check_shape(w, "weights", (H, d), "(H, d)")
        _check_finite(phi, "features")
        _check_finite(w, "weights")

        w_norms = np.linalg.norm(w, axis=1)
        if C_w is None:
            C_w = float(w_norms.max())
        else:
            # a real number: float() read "2" as 2.0, True as 1.0, and a list was float()'s TypeError
            try:
                C_w = check_finite_real(C_w, "C_w", positive=False)
            except PrivacyParameterError:
                raise AssumptionError(f"C_w must be a finite non-negative real bound, got {C_w!r}") from None
            if w_norms.max() > C_w + PROB_TOL:
                h = int(np.argmax(w_norms))
                raise AssumptionError(f"||w_h={h}||_2 = {w_norms[h]:.12g} > C_w = {C_w:.12g} (Asm. 2)")

        # P (H, S, A, S) can dwarf the features (S, A, S, d) at a long horizon: numpy's MemoryError
        # "Unable to allocate 745 GiB" before (LinearMDP checks the same)
        check_dense_size("LinearMixtureMDP", H, S, A)
        # P[h, s, a, s'] = phi(s'|s,a)^T w_h
        # (one BLAS thread: the same bits at any thread count, privrl.common.blas)
        P = matmul_1thread(phi.reshape(S * A * S, d), w.T).T.reshape(H, S, A, S)
        super().__init__(P, R, init_dist, name=name)

        self.d: int = int(d)
        self.C_w: float = C_w
        self.features: np.ndarray = _freeze(phi)
        self.weights: np.ndarray = _freeze(w)
        self.phi_v_matrix: np.ndarray = _freeze(phi.transpose(0, 1, 3, 2).reshape(S * A * d, S).copy())
        self.assumption_report: dict[str, Any] = {"w_norm_max": float(w_norms.max()), "C_w": C_w}
        check_phi_v_bound(self.features, self.name, self.assumption_report, stacklevel=3)

    # ---------------------------------------------------------------- value features
    def phi_v(self, v: Any) -> np.ndarray:
        """phi_v(s,a) = sum_s' phi(s'|s,a) v(s'): v (S,) -> (S, A, d); v (n, S) -> (n, S, A, d)."""
        v = check_all_finite(numeric_array(v, "v"), "v")  # NaN gave NaN features, complex was truncated
        S, A, d = self.S, self.A, self.d
        if v.ndim == 1 and v.shape[0] == S:
            return (self.phi_v_matrix @ v).reshape(S, A, d)
        if v.ndim == 2 and v.shape[1] == S:
            return (v @ self.phi_v_matrix.T).reshape(v.shape[0], S, A, d)
        raise ShapeError(f"v must have shape (S,) or (n, S) with S={S}, got {v.shape}")


def check_phi_v_bound(phi: np.ndarray, name: str, report: dict[str, Any], stacklevel: int = 2) -> None:
    """Asm. 2's ||phi_v(s, a)|| <= 1 for every v: S -> [0, 1], for mixture features `phi`
    (S, A, S, d): AssumptionError naming the worst v where it fails. The sufficient bound
    ||sum_s' |phi(s'|s, a)| || <= 1 first; where it fails, exactly over the support's binary v
    (the norm is convex in v, so its max over [0, 1]^S is at a vertex), or by a randomized vertex
    search for supports above EXACT_SUPPORT_MAX (an AssumptionWarning says which pairs were only
    searched). Findings go into `report`."""
    suff = np.linalg.norm(np.abs(phi).sum(axis=2), axis=2)  # (S, A)
    report["phi_v_sufficient_max"] = float(suff.max())
    failing = np.argwhere(suff > 1.0 + PROB_TOL)
    exact_max = 0.0
    unverified: list[tuple[int, int]] = []
    rng = np.random.default_rng(RANDOM_SEARCH_SEED)
    vert_cache: dict[int, np.ndarray] = {}
    for s, a in failing:
        s, a = int(s), int(a)
        sub = phi[s, a]  # (S, d)
        support = np.nonzero(np.any(sub != 0.0, axis=1))[0]
        m = support.size
        sub = sub[support]
        if m <= EXACT_SUPPORT_MAX:
            if m not in vert_cache:
                vert_cache[m] = _binary_vertices(m)
            norms = np.linalg.norm(vert_cache[m] @ sub, axis=1)
            k = int(norms.argmax())
            val, vbest = float(norms[k]), vert_cache[m][k]
            exact_max = max(exact_max, val)
        else:
            val, vbest = _random_vertex_search(sub, rng, RANDOM_SEARCH_STARTS)
            if val <= 1.0 + PROB_TOL:
                unverified.append((s, a))
        if val > 1.0 + PROB_TOL:
            ones = [int(x) for x in support[vbest > 0.5]]
            raise AssumptionError(
                f"||phi_v(s={s}, a={a})||_2 = {val:.12g} > 1 for v = indicator of next states {ones}: "
                "Asm. 2 requires ||phi_v(s,a)|| <= 1 for every v: S -> [0, 1]"
            )
    report["phi_v_exact_max"] = exact_max if len(failing) else None
    report["phi_v_unverified"] = unverified
    if unverified:
        warnings.warn(
            f"{name}: ||phi_v(s,a)|| <= 1 (Asm. 2) verified only by a randomized vertex search for "
            f"{len(unverified)} state-action pairs with supports larger than {EXACT_SUPPORT_MAX}",
            AssumptionWarning,
            stacklevel=stacklevel,
        )


# --------------------------------------------------------------------------------------------
class HardToLearn(LinearMixtureMDP):
    """The hard instance of Zhou, Gu & Szepesvari (2021) (docs/benchmarks.md).

    States x_1..x_{H+2} are indices 0..H+1, start at 0; indices H (x_{H+1}) and H+1 (x_{H+2}) are
    absorbing. Actions 0..2^(d-1)-1, action a <-> a vector in {-1,+1}^(d-1) from its binary digits,
    most significant first (bit 1 -> +1). delta = 1/H, Delta = sqrt(delta/K)/(4 sqrt 2),
    alpha = sqrt(1/(1+Delta(d-1))), beta = sqrt(Delta/(1+Delta(d-1))); mu_h uniform on
    {-Delta,+Delta}^(d-1) per step h (from ``np.random.default_rng(seed)``: signs
    ``integers(0, 2, size=(H, d-1))``); w_h = (1/alpha, mu_h/beta).
    phi(s+1|s,a) = (alpha(1-delta), -beta a), phi(x_{H+2}|s,a) = (alpha delta, beta a) for s
    non-absorbing, phi(s|s,a) = (alpha, 0) for s absorbing. So P(s+1|s,a) = 1 - delta - <mu_h, a>,
    P(x_{H+2}|s,a) = delta + <mu_h, a>. Reward 1 in x_{H+2} (every action), else 0.
    Requires H >= 2 and (d-1) Delta <= delta (both AssumptionError): at H = 1, delta = 1 and
    P(s+1|s,a) = -<mu_h, a> < 0 for half the actions. C_w = ||w_h|| = 1 + (d-1) Delta.

    Attributes: action_vectors (A, d-1), mu (H, d-1), delta, Delta, alpha, beta, K, seed.
    """

    def __init__(self, d: int, H: int, K: int, seed: int = 0, name: str | None = None) -> None:
        d = env_int("HardToLearn", "d", d, 2)
        # H = 1 (delta = 1): P(s+1|s,a) = 1 - delta - <mu_h, a> = -<mu_h, a> < 0 for half the actions
        H = env_int(
            "HardToLearn",
            "H",
            H,
            2,
            "a horizon H >= 2 (at H = 1, delta = 1/H = 1 leaves 1 - delta - <mu_h, a> < 0)",
        )
        K = env_int("HardToLearn", "K", K, 1, "K >= 1 episodes")
        delta = 1.0 / H
        Delta = np.sqrt(delta / K) / (4.0 * np.sqrt(2.0))
        if (d - 1) * Delta > delta + 1e-15:  # H >= 2: delta <= 1 - delta, so this also bounds P(s+1|s,a)
            raise AssumptionError(
                f"HardToLearn needs (d-1) Delta <= delta for valid probabilities: (d-1) Delta = "
                f"{(d - 1) * Delta:.6g} > delta = 1/H = {delta:.6g} (increase K or lower d)"
            )
        alpha = float(np.sqrt(1.0 / (1.0 + Delta * (d - 1))))
        beta = float(np.sqrt(Delta / (1.0 + Delta * (d - 1))))
        A = 2 ** (d - 1)
        S = H + 2
        check_dense_size("HardToLearn", H, S, A, mixture_d=d)  # features (S, A, S, d), mu (H, ...)
        bits = (np.arange(A)[:, None] >> np.arange(d - 2, -1, -1)) & 1
        avec = 2.0 * bits - 1.0  # (A, d-1)
        seed = model_seed(seed)  # None: drawn here, so the name tells the model drawn
        rng = np.random.default_rng(seed)
        mu = Delta * (2.0 * rng.integers(0, 2, size=(H, d - 1)) - 1.0)  # (H, d-1)
        w = np.concatenate([np.full((H, 1), 1.0 / alpha), mu / beta], axis=1)  # (H, d)

        feats = np.zeros((S, A, S, d))
        good = H + 1  # x_{H+2}
        for s in range(H):  # non-absorbing states 0..H-1
            feats[s, :, s + 1, 0] = alpha * (1.0 - delta)
            feats[s, :, s + 1, 1:] = -beta * avec
            feats[s, :, good, 0] = alpha * delta
            feats[s, :, good, 1:] = beta * avec
        for s in (H, H + 1):
            feats[s, :, s, 0] = alpha
        R = np.zeros((H, S, A))
        R[:, good, :] = 1.0
        init = np.zeros(S)
        init[0] = 1.0

        self.K, self.seed = K, seed
        self.delta, self.Delta, self.alpha, self.beta = delta, float(Delta), alpha, beta
        self.action_vectors = _freeze(avec)
        self.mu = _freeze(mu)
        label = env_name(name) or f"HardToLearn(d={d}, H={H}, K={K}, seed={seed})"
        super().__init__(feats, w, R, init, C_w=None, name=label)


class RandomLinearMixtureMDP(LinearMixtureMDP):
    """Random linear mixture (docs/benchmarks.md).

    d basis kernels P_i(.|s,a): every row (i, s, a) has its own random support of min(S, 5) next
    states (uniform without replacement) carrying Dirichlet(0.5) weights. w_h = sqrt(d) q_h with
    q_h ~ Dirichlet(1_d), phi(s'|s,a) = (P_1(s'|s,a), ..., P_d(s'|s,a)) / sqrt(d), so
    p_h = sum_i q_h,i P_i. r_h(s,a) ~ U[0,1] i.i.d.; s_1 uniform over S; C_w = sqrt(d).

    Draw order from ``np.random.default_rng(seed)``: supports (argsort of uniforms (d, S, A, S)),
    Dirichlet weights (d, S, A, m), q (H, d), R (H, S, A).
    Attribute: basis (d, S, A, S) = the kernels P_i.
    """

    SUPPORT = 5

    def __init__(
        self, S: int = 20, A: int = 4, d: int = 5, H: int = 10, seed: int = 0, name: str | None = None
    ) -> None:
        S, A, d, H = (
            env_int("RandomLinearMixtureMDP", k, v) for k, v in (("S", S), ("A", A), ("d", d), ("H", H))
        )
        check_dense_size("RandomLinearMixtureMDP", H, S, A, mixture_d=d)
        m = min(S, self.SUPPORT)
        seed = model_seed(seed)  # None: drawn here, so the name tells the model drawn
        rng = np.random.default_rng(seed)
        support = np.argsort(rng.random((d, S, A, S)), axis=-1)[..., :m]  # (d, S, A, m)
        vals = rng.dirichlet(np.full(m, 0.5), size=(d, S, A))  # (d, S, A, m)
        basis = np.zeros((d, S, A, S))
        np.put_along_axis(basis, support, vals, axis=-1)
        q = rng.dirichlet(np.ones(d), size=H)  # (H, d)
        R = rng.random((H, S, A))
        feats = basis.transpose(1, 2, 3, 0) / np.sqrt(d)  # (S, A, S, d)
        self.seed = seed
        self.basis = _freeze(basis)
        super().__init__(
            feats,
            np.sqrt(d) * q,
            R,
            np.full(S, 1.0 / S),
            C_w=float(np.sqrt(d)),
            name=env_name(name) or f"RandomLinearMixtureMDP(S={S}, A={A}, d={d}, H={H}, seed={seed})",
        )


class RiverSwimMixture(LinearMixtureMDP):
    """RiverSwim as a 3-dimensional linear mixture (docs/benchmarks.md), exactly as specified there.

    Actions 0 = left, 1 = right; w_h = sqrt(3) (0.9, 0.05, 0.05) for every h; features scaled by
    1/sqrt(3). Unscaled: right at a middle state puts e_1 on s+1, e_2 on s, e_3 on s-1; right at 0
    puts (0,1,1) on 0 and e_1 on 1; right at S-1 puts (0,1,1) on S-1 and e_1 on S-2 (so at either
    end right moves to the neighbour w.p. 0.9 and stays w.p. 0.1); left puts (1,1,1) on max(0, s-1).
    Rewards 0.005 for left at 0, 1 for right at S-1, else 0. s_1 = 0.
    C_w = sqrt(3) ||(0.9, 0.05, 0.05)||.
    """

    W = (0.9, 0.05, 0.05)

    def __init__(self, S: int = 6, H: int = 20, name: str | None = None) -> None:
        S = env_int("RiverSwimMixture", "S", S, 2, "S >= 2 states")
        H = env_int("RiverSwimMixture", "H", H, 1, "a horizon H >= 1")
        check_dense_size("RiverSwimMixture", H, S, 2)
        f = np.zeros((S, 2, S, 3))
        for s in range(S):
            f[s, 0, max(0, s - 1)] = (1.0, 1.0, 1.0)
        for s in range(1, S - 1):
            f[s, 1, s + 1] = (1.0, 0.0, 0.0)
            f[s, 1, s] = (0.0, 1.0, 0.0)
            f[s, 1, s - 1] = (0.0, 0.0, 1.0)
        f[0, 1, 0] = (0.0, 1.0, 1.0)
        f[0, 1, 1] = (1.0, 0.0, 0.0)
        f[S - 1, 1, S - 1] = (0.0, 1.0, 1.0)
        f[S - 1, 1, S - 2] = (1.0, 0.0, 0.0)
        f /= np.sqrt(3.0)
        w = np.sqrt(3.0) * np.array(self.W)
        R = np.zeros((H, S, 2))
        R[:, 0, 0] = 0.005
        R[:, S - 1, 1] = 1.0
        init = np.zeros(S)
        init[0] = 1.0
        super().__init__(
            f,
            np.tile(w, (H, 1)),
            R,
            init,
            C_w=float(np.sqrt(3.0) * np.linalg.norm(self.W)),
            name=env_name(name) or f"RiverSwimMixture(S={S}, H={H})",
        )
