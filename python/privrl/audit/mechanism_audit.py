"""Empirical privacy audit: a statistical lower bound on epsilon from two neighbouring inputs.

Paper: Luyo et al., App. B / App. D (the mechanisms audited: tree release of Cor. 1, LDP randomizer of Cor. 2,
u-release of Alg. 2); issue 6, item 5.
"""

# Method (a distinguishing attack with a certified false-positive / true-positive rate):
#   1. run the mechanism n times on neighbour a and n times on neighbour b, every run with its
#      own independent noise seed;
#   2. reduce each output to a score: its projection on a direction (the exact noiseless
#      difference of the two outputs when known -- the likelihood-ratio statistic for white
#      Gaussian noise -- else the difference of the means of the training halves);
#   3. choose the rejection set E = {score > t} or {score < t} on the first halves only;
#   4. on the second halves count TP (runs of the "positive" neighbour in E) and FP (runs of the
#      other one in E); Clopper-Pearson gives TPR >= TPR_lb and FPR <= FPR_ub, each with
#      probability >= 1 - alpha/2;
#   5. (eps, delta)-DP requires TPR <= e^eps FPR + delta, so with probability >= 1 - alpha
#      eps >= eps_lb = log((TPR_lb - delta) / FPR_ub)   (0 if TPR_lb <= delta).
# The bound is valid for any statistic and any threshold chosen without the test halves; a
# correct mechanism gives eps_lb <= its true epsilon (w.p. >= 1 - alpha), a broken one (too
# little noise) gives eps_lb above the claim.
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from privrl import _core
from privrl.agents.common.specs import (
    GuardSpec,
    LsviPrivateSpec,
    LsviSpec,
    RegressionSpec,
    VtrSpec,
    noise_spec,
)
from privrl.agents.lsvi_ucb import calibration as lsvi_ucb
from privrl.agents.ucrl_vtr import calibration as ucrl_vtr
from privrl.audit.intervals import _normal_quantile, _wilson, betainc, clopper_pearson
from privrl.common.checks import check_pos_int
from privrl.common.errors import PrivacyParameterError
from privrl.kernels import NoiseStream
from privrl.privacy.accounting import gaussian_epsilon, tree_nodes_per_leaf
from privrl.privacy.plans import ReleasePlan, statistic_worst_case

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "betainc",
    "audit_samples",
    "audit_mechanism",
    "audit_ucrl_vtr_tree",
    "audit_ldp_randomizer",
    "audit_lsvi_u_release",
    "audit_lsvi_server",
]


# ============================================================================================
# The audit
# ============================================================================================
@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit. ``epsilon_lower_bound`` holds with probability >= ``confidence``
    for any mechanism; ``flagged`` is True when it exceeds ``claimed_epsilon`` (the mechanism
    cannot be as private as claimed). ``effective_epsilon`` (when known) is the exact epsilon of
    the audited sub-mechanism at ``delta`` for the chosen neighbours: the best any audit of it
    could reach."""

    name: str
    epsilon_lower_bound: float
    claimed_epsilon: float | None
    effective_epsilon: float | None
    delta: float
    confidence: float
    n_trials: int
    n_test: int
    orientation: str
    threshold: float
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    statistic: str
    # Gaussian-DP audit (Gaussian mechanisms only): the separation mu of the two output laws along
    # the statistic, estimated with a one-sided confidence bound, converted to epsilon at delta
    mu_hat: float | None = None
    mu_lower: float | None = None
    gdp_epsilon_lower_bound: float | None = None

    @property
    def best_lower_bound(self) -> float:
        """The larger of the distribution-free and the Gaussian-DP lower bounds."""
        return max(self.epsilon_lower_bound, self.gdp_epsilon_lower_bound or 0.0)

    @property
    def flagged(self) -> bool:
        return self.claimed_epsilon is not None and self.best_lower_bound > self.claimed_epsilon

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["flagged"] = self.flagged
        return d

    def __str__(self) -> str:
        claim = "-" if self.claimed_epsilon is None else f"{self.claimed_epsilon:g}"
        eff = "-" if self.effective_epsilon is None else f"{self.effective_epsilon:.3g}"
        return (
            f"{self.name}: eps >= {self.epsilon_lower_bound:.3f} (confidence "
            f"{self.confidence:g}, {self.n_test} test runs per neighbour; TPR {self.tpr:.4f} "
            f">= {self.tpr_lower:.4f}, FPR {self.fpr:.2e} <= {self.fpr_upper:.2e}); claimed "
            f"eps = {claim}, effective eps of the audited part = {eff}"
            + (
                ""
                if self.gdp_epsilon_lower_bound is None
                else f"; Gaussian-DP: mu >= {self.mu_lower:.4f} (estimate {self.mu_hat:.4f}), "
                f"eps >= {self.gdp_epsilon_lower_bound:.3f}"
            )
            + ("  ** FLAGGED **" if self.flagged else "")
        )


def _eps_lb(tpr_lb: float, fpr_ub: float, delta: float) -> float:
    if tpr_lb <= delta or fpr_ub <= 0.0:
        return 0.0 if tpr_lb <= delta else math.inf
    return max(0.0, math.log((tpr_lb - delta) / fpr_ub))


def _checked_samples(
    samples_a: Any, samples_b: Any, delta: float, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """The two sample sets as (n, outputs) float arrays, after checking shapes and parameters."""
    a = np.asarray(samples_a, dtype=float)
    b = np.asarray(samples_b, dtype=float)
    if a.ndim < 1 or b.ndim < 1 or a.shape[0] != b.shape[0] or a.shape[1:] != b.shape[1:]:
        raise PrivacyParameterError(f"samples must have equal shapes (n, ...), got {a.shape} and {b.shape}")
    n = a.shape[0]
    if n < 4:
        raise PrivacyParameterError(f"need at least 4 runs per neighbour, got {n}")
    if not (0.0 < confidence < 1.0):
        raise PrivacyParameterError(f"confidence must be in (0, 1), got {confidence}")
    if not (0.0 <= delta < 1.0):
        raise PrivacyParameterError(f"delta must be in [0, 1), got {delta}")
    a, b = a.reshape(n, -1), b.reshape(n, -1)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise PrivacyParameterError("samples contain NaN or inf")
    return a, b


def _choose_threshold(
    train_a: np.ndarray, train_b: np.ndarray, delta: float, z: float, n_candidates: int
) -> tuple[str, float]:
    """(orientation, threshold) with the best Wilson-bound epsilon on the training halves."""
    half = train_a.shape[0]
    best = (-math.inf, "a>", 0.0)
    ks = np.unique(
        np.concatenate([[0], np.round(np.geomspace(1, max(1, half // 2), n_candidates))]).astype(int)
    )
    ks = ks[ks < half]
    for orient, pos, neg in (("a>", train_a, train_b), ("b<", -train_b, -train_a)):
        neg_sorted = np.sort(neg)
        pos_sorted = np.sort(pos)
        # candidates: the upper tail of the negatives (small FPR), the lower tail of the
        # positives (large TPR) and, when the halves are separated, the midpoint of the gap
        # (the midpoint first: among thresholds with the same training bound it generalises best)
        cands = list(neg_sorted[::-1][ks]) + list(np.nextafter(pos_sorted[ks], -np.inf))
        if pos_sorted[0] > neg_sorted[-1]:
            cands.insert(0, 0.5 * (pos_sorted[0] + neg_sorted[-1]))
        for t in cands:
            tp = half - int(np.searchsorted(pos_sorted, t, side="right"))
            fp = half - int(np.searchsorted(neg_sorted, t, side="right"))
            lo, _ = _wilson(tp, half, z)
            _, hi = _wilson(fp, half, z)
            e = _eps_lb(lo, hi, delta)
            if e > best[0]:
                best = (e, orient, float(t))
    return best[1], best[2]


def audit_samples(
    samples_a: Any,
    samples_b: Any,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    direction: Any = None,
    claimed_epsilon: float | None = None,
    effective_epsilon: float | None = None,
    name: str = "mechanism",
    n_candidates: int = 64,
    inverse_variance: Any = None,
    gaussian: bool = False,
) -> AuditResult:
    """Audit from outputs already drawn: ``samples_a`` / ``samples_b`` of shape ``(n, ...)``
    (run ``i`` on neighbour a / b, independent noise). ``direction``: the projection direction
    (flattened output shape); ``None`` estimates it from the training halves. See the module
    comment for the method; ``delta`` is the claimed delta, ``confidence = 1 - alpha``."""
    a, b = _checked_samples(samples_a, samples_b, delta, confidence)
    n = a.shape[0]
    half = n // 2
    if direction is None:
        v = a[:half].mean(axis=0) - b[:half].mean(axis=0)
        stat = "projection on the difference of the training means"
    else:
        v = np.asarray(direction, dtype=float).reshape(-1)
        if v.shape[0] != a.shape[1]:
            raise PrivacyParameterError(f"direction has {v.shape[0]} entries, outputs have {a.shape[1]}")
        stat = "projection on the exact noiseless difference (likelihood-ratio statistic)"
        if inverse_variance is not None:
            # whitened: for independent Gaussian entries the likelihood ratio is linear in
            # Sigma^{-1} (mean_a - mean_b); weight 0 drops a duplicated output (a symmetric entry)
            w = np.asarray(inverse_variance, dtype=float).reshape(-1)
            if w.shape != v.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise PrivacyParameterError("inverse_variance must be one finite weight >= 0 per output")
            v = v * w
            stat = "whitened likelihood-ratio statistic (Sigma^-1 times the exact noiseless difference)"
    sa, sb = a @ v, b @ v
    train_a, test_a = sa[:half], sa[half:]
    train_b, test_b = sb[:half], sb[half:]
    alpha = 1.0 - confidence
    orient, t = _choose_threshold(train_a, train_b, delta, _normal_quantile(1.0 - alpha / 2.0), n_candidates)
    if orient == "a>":
        pos_test, neg_test = test_a, test_b
    else:
        pos_test, neg_test = -test_b, -test_a
    m = pos_test.shape[0]
    tp = int(np.count_nonzero(pos_test > t))
    fp = int(np.count_nonzero(neg_test > t))
    tpr_lb, _ = clopper_pearson(tp, m, alpha / 2.0)
    _, fpr_ub = clopper_pearson(fp, m, alpha / 2.0)
    eps_lb = _eps_lb(tpr_lb, fpr_ub, delta)
    threshold = t if orient == "a>" else -t
    gdp = _gdp_bound(sa, sb, delta, confidence) if gaussian else (None, None, None)
    return AuditResult(
        name=name,
        epsilon_lower_bound=eps_lb,
        claimed_epsilon=claimed_epsilon,
        effective_epsilon=effective_epsilon,
        delta=float(delta),
        confidence=float(confidence),
        n_trials=n,
        n_test=m,
        orientation="score(a) > t" if orient == "a>" else "score(b) < t",
        threshold=threshold,
        tpr=tp / m,
        fpr=fp / m,
        tpr_lower=tpr_lb,
        fpr_upper=fpr_ub,
        statistic=stat,
        mu_hat=gdp[0],
        mu_lower=gdp[1],
        gdp_epsilon_lower_bound=gdp[2],
    )


def _gdp_bound(sa: np.ndarray, sb: np.ndarray, delta: float, confidence: float) -> tuple[float, float, float]:
    """(mu estimate, lower confidence bound, epsilon at delta of that bound) for scores of a
    Gaussian mechanism: along a linear statistic the two output laws are N(m_a, s^2), N(m_b, s^2)
    (same noise, shifted mean), a mu-GDP pair with mu = |m_a - m_b| / s, and the mechanism is
    at least as distinguishable as that pair. mu is the standardized mean difference over all runs;
    its standard error is sqrt(2/n + mu^2/(4n)) (normal approximation, n runs per neighbour)."""
    n = sa.shape[0]
    s = math.sqrt(0.5 * (float(sa.var(ddof=1)) + float(sb.var(ddof=1))))
    mu = abs(float(sa.mean() - sb.mean())) / s if s > 0 else math.inf
    se = math.sqrt(2.0 / n + mu * mu / (4.0 * n))
    mu_lo = max(0.0, mu - _normal_quantile(confidence) * se)
    return mu, mu_lo, gaussian_epsilon(mu_lo, delta) if delta > 0 else math.inf * (mu_lo > 0)


def _sym_inverse_variance(H: int, d: int, sigma: float, divisor: float) -> np.ndarray:
    """Per-entry inverse variance of H symmetric (Z' + Z'^T)/c matrices flattened row-major, Z' with
    N(0, sigma^2) entries: off-diagonal variance 2 sigma^2 / c^2, diagonal 4 sigma^2 / c^2; the lower
    triangle repeats the upper one (weight 0: counted once)."""
    iu = np.triu(np.ones((d, d)), 1)
    w = iu * (divisor**2 / (2 * sigma**2)) + np.eye(d) * (divisor**2 / (4 * sigma**2))
    return np.broadcast_to(w, (H, d, d)).reshape(-1)


def _seed_stream(seed: Any) -> np.random.Generator:
    return np.random.default_rng(seed)


def audit_mechanism(
    mechanism_fn: Callable[[Any, Any], Any],
    neighbour_a: Any,
    neighbour_b: Any,
    n_trials: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    seed: Any = 0,
    direction: Any = None,
    claimed_epsilon: float | None = None,
    effective_epsilon: float | None = None,
    name: str = "mechanism",
) -> AuditResult:
    """Audit any mechanism: ``mechanism_fn(input, noise_seed)`` returns one output (array-like)
    and must draw its noise from ``noise_seed`` (32 random bytes, a fresh value for every run:
    the runs are independent). It is run ``n_trials`` times on each neighbour; then
    :func:`audit_samples`. ``seed`` makes the audit reproducible."""
    if check_pos_int(n_trials, "n_trials") < 4:
        raise PrivacyParameterError(f"n_trials must be an int >= 4, got {n_trials!r}")
    rng = _seed_stream(seed)
    out_a = np.stack(
        [np.asarray(mechanism_fn(neighbour_a, rng.bytes(32)), dtype=float) for _ in range(int(n_trials))]
    )
    out_b = np.stack(
        [np.asarray(mechanism_fn(neighbour_b, rng.bytes(32)), dtype=float) for _ in range(int(n_trials))]
    )
    return audit_samples(
        out_a,
        out_b,
        delta=delta,
        confidence=confidence,
        direction=direction,
        claimed_epsilon=claimed_epsilon,
        effective_epsilon=effective_epsilon,
        name=name,
    )


# ============================================================================================
# Ready-made audits of the shipped mechanisms
# ============================================================================================
class Statistics(NamedTuple):
    """A user's per-step regression data X (H, d), y (H,), sent as they are (an adversarial user)."""

    X: np.ndarray
    y: np.ndarray


def _neighbours(plan: ReleasePlan, scales: dict, kind: str) -> tuple[Statistics, Statistics]:
    """Two neighbouring users for every step, read from the release plan: ``"worst"`` (default)
    the pair that realises the plan's joint worst case (privrl.privacy.plans), ``"zero"`` the
    worst user against one who sends zeros."""
    (stat,) = plan.statistics
    w = statistic_worst_case(plan, stat.name, scales)
    H = plan.H
    a = Statistics(np.tile(w.x, (H, 1)), np.full(H, w.y))
    if kind == "worst":
        return a, Statistics(np.tile(w.x_prime, (H, 1)), np.full(H, w.y_prime))
    if kind == "zero":
        return a, Statistics(np.zeros((H, stat.dim)), np.zeros(H))
    raise PrivacyParameterError(f"neighbours must be 'worst' or 'zero', got {kind!r}")


def _guard_of(plan: ReleasePlan, y_high: float | None = None) -> GuardSpec:
    (stat,) = plan.statistics
    return GuardSpec(stat.x_bound, stat.y_low, stat.y_high if y_high is None else y_high, False)


def _vtr_regression(mode: str, plan: ReleasePlan, cal: Any, sigma: float, noise: str, K: int, seeds: list) -> Any:
    """The shipped UCRL-VTR regression (Rust: the guard, the mechanisms or the randomizer, the
    paper's release) with node noise ``sigma``, alone on a one-state model: the audits feed it
    chosen statistics."""
    H, d = plan.H, plan.statistics[0].dim
    ns = noise_spec(cal, sigma, sigma, K, seeds)
    spec = RegressionSpec(
        mode=mode,
        lam=float(cal.lam),
        base=float(cal.lam + cal.shift),
        radius=1.0,
        shift_name="the shift",
        guard=_guard_of(plan),
        noise=dataclasses.replace(ns, noise=noise),
        practical=None,
    )
    return _core.VtrAgent(VtrSpec(np.zeros((1, 1, 1, d)), np.zeros((H, 1, 1)), [spec], None, None, None, int(K)))


def audit_ucrl_vtr_tree(
    epsilon: float = 4.0,
    delta: float = 1e-5,
    *,
    calibration: str = "tight",
    H: int = 2,
    d: int = 2,
    K: int = 8,
    n_trials: int = 20_000,
    noise_multiplier: float = 1.0,
    neighbours: str = "worst",
    confidence: float = 0.95,
    seed: Any = 0,
    plan: ReleasePlan | None = None,
    sampler: str | None = None,
) -> AuditResult:
    """Audit the JDP UCRL-VTR release (Alg. 1 / Cor. 1): the shipped JDP regression of the Rust
    agent (``2H`` trees, the sensitivity guard with the plan's bounds, the calibration for
    ``(epsilon, delta, H, K, d)``) receives user 1's statistics and zero statistics from users
    2..K. The neighbours are the release plan's worst pair (default: ``X_h = H e_1, y_h = H``
    against ``-H e_1, H``) or the worst user against zeros (``neighbours="zero"``); ``plan``
    (default ``privrl.agents.ucrl_vtr.calibration.release_plan``) is what the calibration and the neighbours
    are read from. The output is the released ``(Lambda~_{t,h}, u~_{t,h} = Lambda~ w~)`` at
    ``t = 1, 2, 4, ...``: exactly the ``tree_nodes_per_leaf(K)`` nodes containing user 1, hence
    everything the release says about user 1. ``noise_multiplier`` scales the calibrated sigma
    (0.01: a deliberately broken mechanism). ``sampler``: the noise drawn, the agents' default
    "discrete" (exact discrete Gaussian on the lattice) or "float"."""
    plan = plan if plan is not None else ucrl_vtr.release_plan("jdp", delta == 0.0, H, K, d, "tree", sampler)
    cal = ucrl_vtr.calibrate_ucrl_vtr("jdp", epsilon, delta, H, K, d, 1.0, calibration=calibration, plan=plan)
    if cal.noise != "gaussian":
        raise PrivacyParameterError("audit_ucrl_vtr_tree audits the Gaussian (delta > 0) release")
    sigma = cal.sigma_B * float(noise_multiplier)
    n_nodes = tree_nodes_per_leaf(K)
    times = [2**level for level in range(n_nodes)]
    user_a, user_b = _neighbours(plan, {k: getattr(cal, k) for k in plan.scale_keys}, neighbours)
    zero = Statistics(np.zeros((H, d)), np.zeros(H))

    def run(user: Statistics, noise: str, seeds: list) -> np.ndarray:
        server = _vtr_regression("jdp", plan, cal, sigma, noise, K, seeds)
        out = []
        for t in range(1, times[-1] + 1):
            u = user if t == 1 else zero
            server.observe_statistics(u.X, u.y)
            if t in times:
                design, _, weights, _, _, _ = server.billboard(0)
                target = np.einsum("hij,hj->hi", design, weights)
                out.append(np.concatenate([design.reshape(-1), target.reshape(-1)]))
        return np.concatenate(out)

    blank = [bytes(32)] * (2 * H)
    exact = run(user_a, "none", blank) - run(user_b, "none", blank)
    rng = _seed_stream(seed)
    sa = np.stack(
        [run(user_a, cal.node_noise, [rng.bytes(32) for _ in range(2 * H)]) for _ in range(int(n_trials))]
    )
    sb = np.stack(
        [run(user_b, cal.node_noise, [rng.bytes(32) for _ in range(2 * H)]) for _ in range(int(n_trials))]
    )
    # exact mu of what is audited: per released node the (whitened) difference; the matrix noise
    # (Z' + Z'^T)/sqrt 2 has variance sigma^2 off and 2 sigma^2 on the diagonal.
    dm = user_a.X[:, :, None] * user_a.X[:, None, :] - user_b.X[:, :, None] * user_b.X[:, None, :]
    dv = user_a.X * user_a.y[:, None] - user_b.X * user_b.y[:, None]
    off = dm - np.einsum("hii->hi", dm)[..., None] * np.eye(d)
    mu2 = (
        (np.sum(np.triu(off, 1) ** 2) + np.sum(np.einsum("hii->hi", dm) ** 2) / 2.0 + np.sum(dv**2))
        * n_nodes
        / sigma**2
    )
    per_release = np.concatenate(
        [_sym_inverse_variance(H, d, sigma, cal.sym_divisor), np.full(H * d, 1.0 / sigma**2)]
    )
    return audit_samples(
        sa,
        sb,
        delta=delta,
        confidence=confidence,
        direction=exact,
        claimed_epsilon=float(epsilon),
        effective_epsilon=gaussian_epsilon(math.sqrt(mu2), delta),
        name=f"UCRL-VTR JDP tree release ({calibration}, {plan.sampler}, x{noise_multiplier:g} noise)",
        inverse_variance=np.tile(per_release, n_nodes),
        gaussian=True,
    )


def audit_ldp_randomizer(
    epsilon: float = 4.0,
    delta: float = 1e-5,
    *,
    calibration: str = "tight",
    H: int = 2,
    d: int = 2,
    n_trials: int = 20_000,
    noise_multiplier: float = 1.0,
    neighbours: str = "worst",
    confidence: float = 0.95,
    seed: Any = 0,
    plan: ReleasePlan | None = None,
    sampler: str | None = None,
) -> AuditResult:
    """Audit the LDP UCRL-VTR user-side randomizer (Cor. 2): the shipped user-side randomizer of the Rust agent
    with the calibration of ``plan`` (default ``privrl.agents.ucrl_vtr.calibration.release_plan``)
    privatizes one user's statistics (the plan's worst pair, or the worst user against zeros);
    the output is everything the user sends, ``(X X^T + B^1, X y + g^1)`` for all ``h``."""
    plan = plan if plan is not None else ucrl_vtr.release_plan("ldp", delta == 0.0, H, 1, d, "tree", sampler)
    cal = ucrl_vtr.calibrate_ucrl_vtr("ldp", epsilon, delta, H, 1, d, 1.0, calibration=calibration, plan=plan)
    if cal.noise != "gaussian":
        raise PrivacyParameterError("audit_ldp_randomizer audits the Gaussian (delta > 0) randomizer")
    sigma = cal.sigma_B * float(noise_multiplier)
    user_a, user_b = _neighbours(plan, {k: getattr(cal, k) for k in plan.scale_keys}, neighbours)
    rng = _seed_stream(seed)

    def draws(user: Statistics) -> np.ndarray:
        rnd = _vtr_regression("ldp", plan, cal, sigma, cal.node_noise, 1, [rng.bytes(32), rng.bytes(32)])
        out = np.empty((int(n_trials), H * d * d + H * d))
        for i in range(int(n_trials)):
            gram, target = rnd.user_message(0, user.X, user.y)
            out[i] = np.concatenate([gram, target])
        return out

    def clean(user: Statistics) -> np.ndarray:
        g = np.einsum("hi,hj->hij", user.X, user.X)
        return np.concatenate([g.reshape(-1), (user.X * user.y[:, None]).reshape(-1)])

    dm = np.einsum("hi,hj->hij", user_a.X, user_a.X) - np.einsum("hi,hj->hij", user_b.X, user_b.X)
    dv = user_a.X * user_a.y[:, None] - user_b.X * user_b.y[:, None]
    diag = np.einsum("hii->hi", dm)
    mu2 = (np.sum(np.triu(dm, 1) ** 2) + np.sum(diag**2) / 2.0 + np.sum(dv**2)) / sigma**2
    return audit_samples(
        draws(user_a),
        draws(user_b),
        delta=delta,
        confidence=confidence,
        direction=clean(user_a) - clean(user_b),
        claimed_epsilon=float(epsilon),
        effective_epsilon=gaussian_epsilon(math.sqrt(mu2), delta),
        name=f"UCRL-VTR LDP randomizer ({calibration}, {plan.sampler}, x{noise_multiplier:g} noise)",
        inverse_variance=np.concatenate(
            [_sym_inverse_variance(H, d, sigma, cal.sym_divisor), np.full(H * d, 1.0 / sigma**2)]
        ),
        gaussian=True,
    )


def audit_lsvi_u_release(
    epsilon: float = 4.0,
    delta: float = 1e-5,
    *,
    calibration: str = "tight",
    H: int = 2,
    d: int = 2,
    K: int = 40,
    batches: int = 4,
    n_trials: int = 20_000,
    noise_multiplier: float = 1.0,
    confidence: float = 0.95,
    seed: Any = 0,
    plan: ReleasePlan | None = None,
) -> AuditResult:
    """Audit the u-release of Alg. 2 (App. D, "M^u_h"): with the value functions fixed (the
    proof's ``a_{h+1}``), release ``b`` of step ``h`` is ``u~_{b,h} = sum_j phi_j (r_j + V(s'_j)) +
    eta^b_h``, ``eta ~ N(0, sigma_u^2 I)`` fresh per release (a ``NoiseStream`` at the agent's
    ``sigma_u``, as the LSVI server draws it). User 1 enters every one of the R releases with the
    plan's worst pair (default plan: ``phi = e_1``, ``r + V = H + 1`` against ``phi = -e_1``): the
    sensitivity ``2(H + 1)`` of every release."""
    cal = lsvi_ucb.calibrate_lsvi_ucb(
        "jdp", epsilon, delta, H, K, d, batches=batches, calibration=calibration, plan=plan
    )
    if cal.noise != "gaussian":
        raise PrivacyParameterError("audit_lsvi_u_release audits the Gaussian (delta > 0) release")
    plan = plan if plan is not None else lsvi_ucb.release_plan("jdp", False, H, K, d, cal.B)
    sigma = cal.sigma_u * float(noise_multiplier)
    R = cal.releases
    user_a, user_b = _neighbours(plan, {k: getattr(cal, k) for k in plan.scale_keys}, "worst")
    term_a = np.broadcast_to(user_a.X * user_a.y[:, None], (R, H, d)).reshape(-1)
    term_b = np.broadcast_to(user_b.X * user_b.y[:, None], (R, H, d)).reshape(-1)
    rng = _seed_stream(seed)

    def draws(term: np.ndarray) -> np.ndarray:
        stream = NoiseStream("gaussian", sigma, seed=rng.bytes(32))
        eta = stream.vectors(int(n_trials) * R * H, d).reshape(int(n_trials), R * H * d)
        return term + eta

    mu = float(np.linalg.norm(term_a - term_b)) / sigma
    return audit_samples(
        draws(term_a),
        draws(term_b),
        delta=delta,
        confidence=confidence,
        direction=term_a - term_b,
        claimed_epsilon=float(epsilon),
        effective_epsilon=gaussian_epsilon(mu, delta),
        name=f"LSVI-UCB u-release ({calibration}, x{noise_multiplier:g} noise)",
        gaussian=True,  # white noise: the raw difference is already the likelihood-ratio direction
    )


def audit_lsvi_server(
    epsilon: float = 4.0,
    delta: float = 1e-5,
    *,
    calibration: str = "tight",
    d: int = 2,
    K: int = 8,
    batches: int = 2,
    n_trials: int = 5_000,
    noise_multiplier: float = 1.0,
    confidence: float = 0.95,
    seed: Any = 0,
    sampler: str | None = None,
) -> AuditResult:
    """Audit the shipped LSVI-UCB server of the Rust agent (Alg. 2): its receive, batch schedule, trees, fresh eta
    stream and ``release_batch``. With one step (H = 1, ``V_{H+1} = 0``) the released
    ``u~ = Lambda~ w~`` is ``sum_j phi_j r_j + eta`` at every release, the Gaussian mechanism
    the proof analyses; user 1 sends the plan's worst pair (``phi = e_1, r + V = H + 1`` against
    ``-e_1``, fed to the server as its guard would let through), users 2..K send zeros; the
    output is ``u~`` of every release. ``noise_multiplier`` scales both sigma_u and sigma_Lambda."""
    from privrl.agents.lsvi_ucb.agent import batch_starts

    H = 1
    cal = lsvi_ucb.calibrate_lsvi_ucb(
        "jdp", epsilon, delta, H, K, d, batches=batches, calibration=calibration, sampler=sampler
    )
    if cal.noise != "gaussian":
        raise PrivacyParameterError("audit_lsvi_server audits the Gaussian (delta > 0) release")
    m = float(noise_multiplier)
    plan = lsvi_ucb.release_plan("jdp", False, H, K, d, cal.B, "tree", sampler)
    user_a, user_b = _neighbours(plan, {k: getattr(cal, k) for k in plan.scale_keys}, "worst")
    ends = {int(k) - 1 for k in batch_starts(K, cal.B)[1:]}
    rng = _seed_stream(seed)
    # the shipped LsviAgent (Rust) on a feature table whose rows are the two users' phi and 0;
    # its guard lets r + V up to H + 1 through, as the plan's worst case (V_{H+1} = 0 at H = 1)
    table = np.stack([user_a.X[0], user_b.X[0], np.zeros(d)])
    y_high = float(max(user_a.y[0], user_b.y[0]))

    def run(row: int, r: float) -> np.ndarray:
        seeds = [rng.bytes(32) for _ in range(H + 1)]
        private = LsviPrivateSpec(
            noise_spec(cal, cal.sigma_Lambda * m, cal.sigma_u * m, cal.releases, seeds),
            float(cal.lam + cal.shift),
            None,
            None,
        )
        spec = LsviSpec(
            table, 1, H, _guard_of(plan, y_high), 1.0, float(cal.lam), int(cal.batch_length), private,
            "aggregated", 0, None, None, K,
        )  # fmt: skip
        agent = _core.LsviAgent(spec)
        out = []
        for k in range(1, K + 1):
            s0, rk = (row, r) if k == 1 else (2, 0.0)
            agent.observe(np.array([s0, 2]), np.array([0]), np.array([rk]))
            if k in ends:
                design, _, weights, _ = agent.billboard()
                out.append(np.einsum("hij,hj->hi", design, weights).reshape(-1))
        return np.concatenate(out)

    sa = np.stack([run(0, float(user_a.y[0])) for _ in range(int(n_trials))])
    sb = np.stack([run(1, float(user_b.y[0])) for _ in range(int(n_trials))])
    n_releases = sa.shape[1] // (H * d)
    term = (user_a.X * user_a.y[:, None] - user_b.X * user_b.y[:, None]).reshape(-1)
    mu = float(np.linalg.norm(np.tile(term, n_releases))) / (cal.sigma_u * m)
    return audit_samples(
        sa,
        sb,
        delta=delta,
        confidence=confidence,
        direction=np.tile(term, n_releases),
        claimed_epsilon=float(epsilon),
        effective_epsilon=gaussian_epsilon(mu, delta),
        name=f"LSVI-UCB server u-release ({calibration}, {plan.sampler}, x{noise_multiplier:g} noise)",
        gaussian=True,
    )
