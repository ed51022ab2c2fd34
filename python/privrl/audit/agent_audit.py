"""End-to-end audit of a whole agent: two neighbouring user sequences, the billboard as output.

Paper: Luyo et al., Def. "Joint DP" (what is audited: everything the server publishes, for two
sequences of users that differ in one user); issue 14, item 2.
"""

# The audits of privrl.audit feed a mechanism statistics chosen by hand. Here the shipped agent
# runs as in production: each trial builds a fresh agent (its own noise key), and for every user
# of the sequence plans from the current billboard (agent.policy()), turns the user's trajectory
# into its statistics through that plan (agent.observe()), and publishes the next billboard. The
# two sequences share users 2..K and differ in user 1, so every later user's statistics change
# with the billboard, adaptively (JDP's neighbouring relation). The output is every billboard of
# the run: per step h the released design Lambda~_h and target u~_h = Lambda~_h w~_h.
#
# The statistic is estimated, since the adaptive data leave no closed-form noiseless difference:
# a separate set of "fit" runs gives the mean difference of the two output laws and their pooled
# covariance, and Sigma^+ (m_a - m_b) (the likelihood-ratio direction of two Gaussians with one
# covariance; each output whitened alone when the fit runs are too few for the covariance:
# _direction) is the projection direction; fresh runs are then audited with it exactly as in
# privrl.audit.audit_samples (distribution-free Clopper-Pearson bound and the Gaussian-DP mu
# bound, both on runs the direction never saw).
#
# The last user's billboard is never published (no later user plans on it): the outputs are the
# releases after users 1..K-1, and a continual mechanism's nodes that only the K-th release would
# sum are not seen. The release plan counts every node a user enters (the tree's ceil(log2 K) + 1:
# 3 at K = 4, of which the releases 1..3 show 2), so these outputs reveal less than the plan's
# worst case: for audit_linucb_agent's pair under the tree (calibration="tight") the exact mu over
# its outputs is 0.74 (eps 3.09 at delta 1e-5) against the plan's 0.925 (eps 4) (schedule="every",
# 4 leaves). Under the default BLT (encoder C lower-triangular Toeplitz, c_0 = 1) the releases
# 1..L-1 of L leaves are A_{L-1} (x + C_{L-1}^-1 z) on their leading blocks, so they reveal
# ||C_{L-1} e_1|| of the plan's multiplier ||C e_1||: with schedule="every" 1.0967 of 1.1130 at
# K = 4, mu 0.893 for that pair (eps 3.84); with LinUCB's default schedule "auto" (L = 2 at K = 4)
# c_0 = 1 of 1.0501, mu 0.863 (eps 3.69).
#
# The Gaussian-DP bound is exact for scores that are Gaussian with one variance under both
# sequences. A billboard is linear in the noise when the users' statistics do not depend on it
# (LinUCB's fixed (context, arm, reward) triples); when later users' statistics follow the billboard
# (UCRL-VTR's X = phi_{V~}), the score is a nonlinear function of the noise and the bound is an
# approximation, not a certificate (a non-Gaussian pair can have a standardized mean difference
# above its true GDP mu: randomized response at eps = 4 has 2 sinh(2) = 7.3). The Clopper-Pearson
# bound needs no such assumption. Measured at x1 noise (audit_ucrl_vtr_agent, seeds 1-5): 3.27-3.73,
# effective eps 4 (2.99-3.33 over 5 seeds when each output was whitened alone).
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privrl.agents.common.base import Agent
from privrl.audit.mechanism_audit import AuditResult, Statistics, _neighbours, audit_samples, check_trials
from privrl.common.checks import (
    check_delta_pure_ok,
    check_pos_int,
    check_positive_real,
    check_probability,
    check_seed,
)
from privrl.common.errors import PrivacyParameterError
from privrl.envs.finite import Trajectory

__all__ = ["audit_agent", "audit_linucb_agent", "audit_psrl_agent", "audit_ucrl_vtr_agent", "billboards"]


User = Trajectory | Statistics


def billboards(agent: Any, users: Sequence[User]) -> np.ndarray:
    """Run ``agent`` on the user sequence (plan, observe, release per user) and return every
    billboard it publishes, flattened: per user and step the design and ``design @ weights``; a
    release with no matrix to invert (PSRL's: the noisy counts N~ in ``design``, the reward sums
    R~ in ``weights``) as its design and weights. A user given as Statistics is an adversarial
    user who sends chosen statistics (inside the sensitivity guard's bounds, which still apply)
    instead of a trajectory's."""
    out = []
    for user in users:
        agent.policy()
        if isinstance(user, Statistics):
            agent.observe_statistics(user.X, user.y)
        else:
            agent.observe(user)
        rel = agent.release()
        if np.size(rel.inverse) == 0:  # the released sums themselves, linear in the noise
            out.append(np.concatenate([np.ravel(rel.design), np.ravel(rel.weights)]))
            continue
        target = np.einsum("hij,hj->hi", rel.design, rel.weights)
        out.append(np.concatenate([rel.design.reshape(-1), target.reshape(-1)]))
    return np.concatenate(out)


def _same_user(a: Any, b: Any) -> bool:
    """One user in both sequences: the same object, or equal data (a copy of a trajectory or of
    statistics was counted as a different user, refusing neighbouring sequences)."""
    if a is b:
        return True
    if type(a) is not type(b) or not isinstance(a, (Trajectory, Statistics)):
        return False
    fields = ("X", "y") if isinstance(a, Statistics) else ("states", "actions", "rewards")
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in fields)


def audit_agent(
    make_agent: Callable[[Any], Any],
    users_a: Sequence[User],
    users_b: Sequence[User],
    *,
    delta: float,
    claimed_epsilon: float | None = None,
    effective_epsilon: float | None = None,
    n_trials: int = 2000,
    n_fit: int = 1000,
    confidence: float = 0.95,
    seed: Any = 0,
    name: str = "agent",
) -> AuditResult:
    """Audit a whole agent on two neighbouring user sequences (same length, differing in one
    user): ``make_agent(noise_seed)`` builds a fresh agent for one run (an int seed). ``n_fit >= 2`` runs per
    sequence estimate the whitened direction, ``n_trials >= MIN_RUNS`` (4) fresh runs per sequence are audited
    along it (see the module comment). ``claimed_epsilon`` / ``delta``: the agent's guarantee."""
    # n_fit = 1 left every fitted variance NaN (ddof = 1): a zero direction and eps >= 0 whatever the
    # agent (a 100x under-noised one unflagged); too few n_trials and a bad confidence were refused
    # by audit_samples only after every run
    n_trials, n_fit = check_trials(n_trials), check_pos_int(n_fit, "n_fit")
    if n_fit < 2:
        raise PrivacyParameterError(
            f"audit_agent needs n_fit >= 2 runs per sequence (the direction's variances), got n_fit = {n_fit}"
        )
    delta, confidence = check_delta_pure_ok(delta), check_probability(confidence, "confidence")
    check_seed(seed)  # numpy's "expected non-negative integer" named no argument; True was seed 1
    if (
        len(users_a) != len(users_b)
        or sum(not _same_user(a, b) for a, b in zip(users_a, users_b, strict=True)) > 1
    ):
        raise PrivacyParameterError("the two user sequences must have the same length and differ in one user")
    probe = make_agent(0)
    if not isinstance(probe, Agent):
        raise TypeError(
            f"make_agent(noise_seed) must build a privrl Agent, got {type(probe).__name__} from "
            f"{make_agent!r}"
        )
    rng = np.random.default_rng(seed)

    def runs(users: Sequence[User], n: int) -> np.ndarray:
        return np.stack([billboards(make_agent(int(rng.integers(2**63))), users) for _ in range(n)])

    direction = _direction(runs(users_a, n_fit), runs(users_b, n_fit))
    sa, sb = runs(users_a, n_trials), runs(users_b, n_trials)
    return audit_samples(
        sa,
        sb,
        delta=delta,
        confidence=confidence,
        direction=direction,
        claimed_epsilon=claimed_epsilon,
        effective_epsilon=effective_epsilon,
        name=name,
        gaussian=delta > 0,
    )


#: Fit runs per varying output below which the direction whitens each output alone: a pooled
#: covariance of fewer runs is too noisy to invert (its smallest eigenvalues are estimation error).
FULL_WHITENING_RUNS = 10


def _direction(fa: np.ndarray, fb: np.ndarray) -> np.ndarray:
    """The projection direction from the fit runs of the two sequences: Sigma^+ (m_a - m_b), the
    likelihood-ratio direction of two Gaussians with one covariance Sigma (the pooled sample
    covariance, inverted on its eigenvalues above 1e-9 of the largest), when the fit runs number at
    least FULL_WHITENING_RUNS per varying output; otherwise each output whitened alone,
    (m_a - m_b) / var. Outputs that never vary (the deterministic shift, repeated symmetric
    entries) carry no noise and are dropped, unless they differ between the sequences: then they
    alone are the direction (a noiseless difference separates the sequences outright). The
    releases of a continual mechanism share noise (the tree's prefix at t + 1 reuses nodes of the
    prefix at t): whitening each output alone ignores it (measured on audit_linucb_agent's pair:
    mu 0.56 against 0.72 with the covariance; the pair's exact mu over its outputs is 0.74)."""
    var = 0.5 * (fa.var(axis=0, ddof=1) + fb.var(axis=0, ddof=1))
    diff = fa.mean(axis=0) - fb.mean(axis=0)
    keep = var > 1e-12 * max(float(var.max()), 1e-300)
    # an output without noise whose fit runs of the two sequences do not overlap tells them apart
    # alone (a statistic released raw beside noised ones): the raw difference on those outputs;
    # audit_samples judges it on fresh runs like any direction
    apart = ~keep & ((fa.max(axis=0) < fb.min(axis=0)) | (fb.max(axis=0) < fa.min(axis=0)))
    if apart.any():
        return np.where(apart, diff, 0.0)
    if not keep.any():  # no noise anywhere: the raw difference (zero when nothing tells them apart)
        return diff
    if len(fa) + len(fb) - 2 < FULL_WHITENING_RUNS * int(keep.sum()):
        return np.where(keep, diff / np.where(keep, var, 1.0), 0.0)
    xa, xb = fa[:, keep], fb[:, keep]
    cov = (
        (xa - xa.mean(axis=0)).T @ (xa - xa.mean(axis=0)) + (xb - xb.mean(axis=0)).T @ (xb - xb.mean(axis=0))
    ) / (len(fa) + len(fb) - 2)
    ev, vecs = np.linalg.eigh(cov)
    top = ev > 1e-9 * max(float(ev.max()), 1e-300)
    direction = np.zeros_like(diff)
    direction[keep] = vecs[:, top] @ ((vecs[:, top].T @ diff[keep]) / ev[top])
    return direction


def _audited_model(
    epsilon: float, delta: float, calibration: str | None, mechanism: str | None, sampler: str | None
) -> Any:
    """The JointDP model an agent audit runs: ``JointDP(epsilon, delta)`` with only the choices
    given (None leaves JointDP's own default, so that an audit called without them audits the agent
    a user gets with ``JointDP(epsilon, delta)``: today the adaptive calibration with the BLT
    mechanism and the discrete sampler)."""
    from privrl.privacy import JointDP

    given = {"calibration": calibration, "mechanism": mechanism, "sampler": sampler}
    chosen: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    return JointDP(epsilon, delta, **chosen)


def _describe(model: Any) -> str:
    """What an agent audit ran, for its name: calibration, mechanism, sampler."""
    return f"{model.calibration}, {model.mechanism}, {model.sampler}"


def audit_ucrl_vtr_agent(
    epsilon: float = 4.0,
    delta: float = 1e-5,
    *,
    noise_multiplier: float = 1.0,
    calibration: str | None = None,
    mechanism: str | None = None,
    sampler: str | None = None,
    K: int = 4,
    n_trials: int = 2000,
    n_fit: int = 1000,
    confidence: float = 0.95,
    seed: Any = 0,
) -> AuditResult:
    """End-to-end audit of the shipped JDP UCRL-VTR agent (Alg. 1), by default the one a user runs
    with ``JointDP(epsilon, delta)``: ``calibration``, ``mechanism`` and ``sampler`` left None take
    JointDP's own defaults (today adaptive, BLT, discrete; ``calibration="tight"`` audits the
    paper's tree), and the result's name says which was audited. The agent runs
    on a small RandomLinearMixtureMDP (S=3, A=2, d=2, H=2, seed 0) with K users. User 1 sends, in
    the two sequences, the release plan's worst pair of statistics (an adversarial user); users
    2..K are fixed trajectories of a uniformly random policy, run through the agent's plans. The agent's
    noise scales are multiplied by ``noise_multiplier`` (0.5: a broken agent with half the
    noise); ``effective_epsilon`` is the tight accountant's epsilon of that noise (the worst-case
    user, an upper bound on what these neighbours can reveal)."""
    noise_multiplier = check_positive_real(noise_multiplier, "noise_multiplier")
    K = check_pos_int(K, "K")  # K=None / "4" / nan: a bare TypeError from range(K - 1) below
    from privrl.agents import UCRLVTR
    from privrl.envs import RandomLinearMixtureMDP

    class Scaled(UCRLVTR):  # the shipped agent with its node noise scaled (a broken agent)
        def _regression(self, cal, guard, sigma_m, sigma_v, *rest):
            m = noise_multiplier
            return super()._regression(cal, guard, sigma_m * m, sigma_v * m, *rest)

    env = RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, seed=0)
    model = _audited_model(epsilon, delta, calibration, mechanism, sampler)
    keys = ("sigma_B", "sigma_g")

    def make(noise_seed: Any) -> Any:
        return Scaled(env, model, episodes=K, seed=noise_seed)

    rng = np.random.default_rng(12345)
    uniform = rng.integers(0, env.A, size=(env.H, env.S))
    others = [env.sample_episode(uniform, rng) for _ in range(K - 1)]
    probe = UCRLVTR(env, model, episodes=K, seed=0)
    plan = probe.release_plan()
    # user 1: the release plan's worst pair of statistics (an adversarial user; real trajectories
    # stay far inside the bounds: before any data the optimistic plan has V~ = H everywhere and
    # every user's X_{1,h} is the same); users 2..K: real trajectories, whose statistics then
    # follow the billboard adaptively
    first_a, first_b = _neighbours(plan, probe.calibration, "worst")
    cal = probe.calibration
    scaled = cal.replace(**{k: getattr(cal, k) * noise_multiplier for k in keys})
    return _end_to_end(
        make,
        ("ucrl_vtr", probe, scaled),
        (first_a, first_b),
        others,
        epsilon,
        delta,
        dict(n_trials=n_trials, n_fit=n_fit, confidence=confidence, seed=seed),
        f"UCRL-VTR JDP agent end to end ({_describe(model)}, x{noise_multiplier:g} noise)",
    )


def audit_linucb_agent(
    epsilon: float = 4.0,
    delta: float = 1e-5,
    *,
    noise_multiplier: float = 1.0,
    calibration: str | None = None,
    mechanism: str | None = None,
    sampler: str | None = None,
    schedule: str | int | None = None,
    K: int = 4,
    n_trials: int = 2000,
    n_fit: int = 1000,
    confidence: float = 0.95,
    seed: Any = 0,
) -> AuditResult:
    """End-to-end audit of the shipped JDP LinUCB agent, by default the one a user runs with
    ``JointDP(epsilon, delta)`` (``calibration``, ``mechanism``, ``sampler`` None: JointDP's
    defaults, today adaptive, BLT, discrete; ``calibration="tight"`` audits the paper's tree; the
    result's name says which), on a two-arm bandit
    with contexts x, -x and e_1 (||x|| = 1): user 1 has context x and reward 1 and plays arm 0 in
    one sequence, arm 1 in the other (both arms' Gram and reward blocks differ: whitened
    sensitivity^2 1 / sigma_B^2 + 2 / sigma_g^2 per leaf, 96% of the plan's worst case under the
    tight noise, whose sigma_g = 2 sigma_B under every mechanism; x against -x on one arm moves
    only a reward block, 4 / sigma_g^2, 64% of it),
    users 2..K are fixed (context, arm, reward) triples; the output is every billboard. The
    noise is multiplied by ``noise_multiplier`` (0.5: a broken agent). ``schedule``: LinUCB's
    (None: its default, "auto", which at K = 4 releases once, after users 1-2, and at K = 2 never
    before the last user, leaving nothing to audit: bound 0); ``schedule="every"`` releases after
    every user."""
    noise_multiplier = check_positive_real(noise_multiplier, "noise_multiplier")
    K = check_pos_int(K, "K")  # K=None / "4" / nan: a bare TypeError from range(K - 1) below
    from privrl.agents import LinUCB
    from privrl.envs.bandit import ContextualBandit

    class Scaled(LinUCB):  # the shipped agent with its noise scaled (a broken agent)
        def _noise(self, cal):
            m = noise_multiplier
            return super()._noise(
                cal.replace(sigma_B=cal.scale("sigma_B") * m, sigma_g=cal.scale("sigma_g") * m)
            )

    x = np.array([0.6, 0.8])
    env = ContextualBandit(np.stack([x, -x, [1.0, 0.0]]), [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    model = _audited_model(epsilon, delta, calibration, mechanism, sampler)
    scheduled: dict[str, Any] = {} if schedule is None else {"schedule": schedule}  # None: LinUCB's default

    def make(noise_seed: Any) -> Any:
        return Scaled(env, model, episodes=K, seed=noise_seed, **scheduled)

    def user(s: int, a: int, r: float) -> Trajectory:
        return Trajectory(np.array([s, s]), np.array([a]), np.array([r]))

    rng = np.random.default_rng(12345)
    others = [user(int(rng.integers(3)), int(rng.integers(2)), float(rng.integers(2))) for _ in range(K - 1)]
    probe = LinUCB(env, model, episodes=K, seed=0, **scheduled)
    cal = probe.calibration
    scaled = cal.replace(
        sigma_B=cal.scale("sigma_B") * noise_multiplier, sigma_g=cal.scale("sigma_g") * noise_multiplier
    )
    return _end_to_end(
        make,
        ("linucb", probe, scaled),
        (user(0, 0, 1.0), user(0, 1, 1.0)),
        others,
        epsilon,
        delta,
        dict(n_trials=n_trials, n_fit=n_fit, confidence=confidence, seed=seed),
        f"LinUCB JDP agent end to end, schedule {probe.schedule!r} ({_describe(model)}, "
        f"x{noise_multiplier:g} noise)",
    )


def audit_psrl_agent(
    epsilon: float = 4.0,
    delta: float = 1e-5,
    *,
    noise_multiplier: float = 1.0,
    K: int = 4,
    n_trials: int = 2000,
    n_fit: int = 1000,
    confidence: float = 0.95,
    seed: Any = 0,
) -> AuditResult:
    """End-to-end audit of the shipped JDP PSRL agent (privrl.agents.PSRL), the one a user runs
    with ``JointDP(epsilon, delta)`` (its noise is its own calibration's whatever JointDP's
    calibration; the result's name says the sampler drawn), on the one-hot map of S = 2 states,
    A = 2 actions, H = 2, cap m = 1, with a release after every user (``batches="every"``; sigma
    does not depend on B: one release per user). User 1 plays action 0 in one sequence and action
    1 in the other on the same states 0 -> 1 -> 0 with rewards 1: its capped counts and reward
    sums sit on disjoint (s, a) pairs, ||x||^2 = 2 m H each, so ||x - x'|| is the sensitivity
    2 sqrt(m H), the release plan's worst case (mu = the calibration's mu). Users 2..K are fixed
    random trajectories (their counts do not follow the billboard: every output is linear in the
    noise, Gaussian, and the GDP bound is exact); the output is every billboard (N~, R~). The
    noise is multiplied by ``noise_multiplier`` (0.5: a broken agent)."""
    noise_multiplier = check_positive_real(noise_multiplier, "noise_multiplier")
    K = check_pos_int(K, "K")  # K=None / "4" / nan: a bare TypeError from range(K - 1) below
    from privrl.agents import PSRL
    from privrl.envs.features import FeatureMap

    class Scaled(PSRL):  # the shipped agent with its noise scaled (a broken agent)
        def _noise_sigma(self, cal):
            return super()._noise_sigma(cal) * noise_multiplier

    env = FeatureMap.one_hot(2, 2, 2, name="audit")
    model = _audited_model(epsilon, delta, None, None, None)

    def make(noise_seed: Any) -> Any:
        return Scaled(env, model, episodes=K, seed=noise_seed, batches="every")

    def user(actions: Any, states: Any = (0, 1, 0), rewards: Any = (1.0, 1.0)) -> Trajectory:
        return Trajectory(np.array(states), np.array(actions), np.array(rewards, dtype=float))

    rng = np.random.default_rng(12345)
    others = [
        user(rng.integers(2, size=2), rng.integers(2, size=3), rng.integers(2, size=2)) for _ in range(K - 1)
    ]
    probe = PSRL(env, model, episodes=K, seed=0, batches="every")
    cal = probe.calibration
    scaled = cal.replace(sigma=float(cal.sigma or 0.0) * noise_multiplier)  # JointDP: a sigma > 0
    return _end_to_end(
        make,
        ("psrl", probe, scaled),
        (user((0, 0)), user((1, 1))),
        others,
        epsilon,
        delta,
        dict(n_trials=n_trials, n_fit=n_fit, confidence=confidence, seed=seed),
        f"PSRL JDP agent end to end ({cal.sampler}, x{noise_multiplier:g} noise)",
    )


def _end_to_end(
    make: Callable[[Any], Any],
    scaled_agent: tuple[str, Any, Any],
    first: tuple[Any, Any],
    others: list[Any],
    epsilon: float,
    delta: float,
    settings: dict[str, Any],
    name: str,
) -> AuditResult:
    """The agent audits' common end: audit_agent on two user sequences that differ in user 1
    (``first``: its two versions) then share ``others``, against the claimed epsilon and the
    effective one the tight report gives the scaled calibration (``scaled_agent``: (algorithm, a
    probe agent whose release plan is audited, the calibration with its noise scaled))."""
    from privrl.audit.report import privacy_report_from_calibration

    algorithm, probe, scaled = scaled_agent
    report = privacy_report_from_calibration(algorithm, scaled, plan=probe.release_plan())
    return audit_agent(
        make,
        [first[0], *others],
        [first[1], *others],
        delta=delta,
        claimed_epsilon=float(epsilon),
        effective_epsilon=float(report["tight"]["budget"][0]),
        name=name,
        **settings,
    )
