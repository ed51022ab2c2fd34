"""Audits of the shipped mechanisms (App. B / App. D): the JDP tree release of Cor. 1, the LDP randomizer of
Cor. 2 and the LSVI-UCB server of Alg. 2, each run by the Rust agents' own code on the release plan's
worst pair of neighbouring users, then audited by privrl.audit.mechanism_audit.audit_samples."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

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
from privrl.audit.mechanism_audit import (
    AuditResult,
    Statistics,
    _neighbours,
    _sym_inverse_variance,
    audit_samples,
    check_trials,
)
from privrl.common.checks import check_pos_int, check_positive_real, check_probability, check_real, check_seed
from privrl.common.errors import PrivacyParameterError, ResourceError
from privrl.common.memory import refuse_over_memory
from privrl.kernels import DEFAULT_GRID_BITS, NoiseStream
from privrl.privacy.accounting import gaussian_epsilon, tree_nodes_per_leaf
from privrl.privacy.common import PRACTICAL_RULES, check_calibration
from privrl.privacy.plans import ReleasePlan


def _counts(n_trials: Any, noise_multiplier: Any, confidence: Any, seed: Any) -> tuple[int, float]:
    """The shipped audits' n_trials (an integer >= MIN_RUNS) and noise_multiplier (> 0), checked at the
    edge like audit_mechanism's, confidence in (0, 1) and the seed: all before the runs
    (audit_samples refused n_trials = 3 or confidence = 1.5 only after 2 n_trials of them; numpy
    refused seed = -1 naming no argument, and took True for 1)."""
    check_seed(seed)
    n_trials = check_trials(n_trials)
    check_probability(confidence, "confidence")
    return n_trials, check_positive_real(noise_multiplier, "noise_multiplier")


def _scaled_sigma(base: float, noise_multiplier: float) -> float:
    """``base * noise_multiplier``, refused (by the multiplier's name) where its variance leaves the
    doubles: the exact mu and the audit's weights divide by sigma^2 (a noise_multiplier of 1e-170
    gave sigma^2 = 0 and a bare ZeroDivisionError)."""
    sigma = base * noise_multiplier
    if not (sigma * sigma > 0.0 and math.isfinite(1.0 / (sigma * sigma))):
        raise PrivacyParameterError(
            f"noise_multiplier = {noise_multiplier!r} scales the calibrated sigma {base:.6g} to {sigma:.3g}, "
            "whose variance is not a double with a finite inverse: there is no noise left to audit"
        )
    return sigma


def _paper_release(calibration: Any, name: str, end_to_end: str) -> str:
    """The JDP-server audits build the paper's release of the binary tree by hand (its constant
    shift, no per-release rule): ``calibration`` checked and the practical / adaptive rules refused
    by name before any run (they ran with shift 0 and failed with NotPositiveDefiniteError, "the
    noise exceeded the shift", or drew BLT noise on the tree's release times)."""
    calibration = check_calibration(calibration)
    if calibration in PRACTICAL_RULES:
        raise PrivacyParameterError(
            f"{name} audits the paper's release of the binary tree (calibration 'tight' or 'paper'), "
            f"got calibration={calibration!r}: its noise is the tight calibration's, its release a "
            f"post-processing of the same noisy sums, so calibration='tight' audits that noise{end_to_end}"
        )
    return calibration


def _refuse_over_memory(name: str, n_trials: int, width: int, fixed: float) -> None:
    """Refuse (ResourceError) an audit whose ``n_trials`` outputs of ``width`` entries per neighbour
    (and their checked copies in audit_samples) cannot fit in memory: d = 10^5 asked numpy for 149
    GiB, H = 10^6 ran 45 s before failing to allocate 9 GiB. ``fixed``: the entries besides."""
    refuse_over_memory(
        name,
        4.0 * n_trials * width + fixed,
        f"n_trials = {n_trials} outputs of {width} entries for each neighbour",
        "Use fewer n_trials or a smaller H / d.",
    )


#: Most users (agent steps) an audit runs in all, 2 n_trials times the users of one run: an audit
#: at K = 2^40 ran 2^40 users per trial (years); 2^30 is hours at the ~10 us an agent step costs.
MAX_AUDIT_USERS = 2**30


def _refuse_over_work(name: str, n_trials: int, users_per_run: int) -> None:
    """Refuse (ResourceError) an audit that would run more than MAX_AUDIT_USERS users in all."""
    total = 2 * n_trials * users_per_run
    if total > MAX_AUDIT_USERS:
        raise ResourceError(
            f"{name} would run {total:,} users (n_trials = {n_trials} runs per neighbour of "
            f"{users_per_run:,} users), more than {MAX_AUDIT_USERS:,}: use fewer n_trials or a smaller K"
        )


def _guard_of(plan: ReleasePlan, y_high: float | None = None) -> GuardSpec:
    (stat,) = plan.statistics
    return GuardSpec(stat.x_bound, stat.y_low, stat.y_high if y_high is None else y_high, False)


def _vtr_regression(
    mode: str, plan: ReleasePlan, cal: Any, sigmas: tuple[float, float], noise: str, K: int, seeds: list
) -> Any:
    """The shipped UCRL-VTR regression (Rust: the guard, the mechanisms or the randomizer, the
    paper's release) with node noise ``sigmas`` (the matrix's sigma_B, the vector's sigma_g), alone
    on a one-state model: the audits feed it chosen statistics."""
    H, d = plan.H, plan.statistics[0].dim
    ns = noise_spec(cal, *sigmas, K, seeds)
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
    return _core.VtrAgent(
        VtrSpec(np.zeros((1, 1, 1, d)), np.zeros((H, 1, 1)), [spec], None, None, None, int(K))
    )


def _gram_pair(
    a: Statistics, b: Statistics, sigma_m: float, sigma_v: float, divisor: float
) -> tuple[np.ndarray, float, np.ndarray]:
    """(direction, mu^2, inverse_variance) of one UCRL-VTR message ``(X X^T + B, X y + g)`` for the
    neighbours ``a`` and ``b``: the noiseless difference, its whitened squared norm and the
    per-entry weights. The matrix noise (Z' + Z'^T)/sqrt 2 has variance sigma_B^2 off and 2
    sigma_B^2 on the diagonal; the lower triangle repeats the upper one."""
    H, d = a.X.shape
    dm = np.einsum("hi,hj->hij", a.X, a.X) - np.einsum("hi,hj->hij", b.X, b.X)
    dv = a.X * a.y[:, None] - b.X * b.y[:, None]
    diag = np.einsum("hii->hi", dm)
    mu2 = (np.sum(np.triu(dm, 1) ** 2) + np.sum(diag**2) / 2.0) / (sigma_m * sigma_m) + np.sum(dv**2) / (
        sigma_v * sigma_v
    )
    weights = [_sym_inverse_variance(H, d, sigma_m, divisor), np.full(H * d, 1.0 / (sigma_v * sigma_v))]
    return np.concatenate([dm.reshape(-1), dv.reshape(-1)]), float(mu2), np.concatenate(weights)


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
    "discrete" (exact discrete Gaussian on the lattice) or "float". ``calibration``: "tight" (the
    noise of every calibration but the paper's) or "paper"; this is the tree's release, not the
    default agent's BLT (audit_ucrl_vtr_agent audits that agent end to end)."""
    n_trials, noise_multiplier = _counts(n_trials, noise_multiplier, confidence, seed)
    calibration = _paper_release(
        calibration,
        "audit_ucrl_vtr_tree",
        " (audit_ucrl_vtr_agent audits the default agent, BLT, end to end)",
    )
    delta = check_real(delta, "delta")  # delta == 0.0 below: np.array([]) was numpy's 'truth value ...'
    plan = plan if plan is not None else ucrl_vtr.release_plan("jdp", delta == 0.0, H, K, d, "tree", sampler)
    cal = ucrl_vtr.calibrate_ucrl_vtr("jdp", epsilon, delta, H, K, d, 1.0, calibration=calibration, plan=plan)
    if cal.noise != "gaussian":
        raise PrivacyParameterError("audit_ucrl_vtr_tree audits the Gaussian (delta > 0) release")
    # the matrix's and the vector's noise, each the agent's (at d = 1 the pair +-H e_1 leaves X X^T
    # unchanged and the tight calibration lowers sigma_B below sigma_g)
    sigma_m, sigma_v = (_scaled_sigma(cal.scale(k), float(noise_multiplier)) for k in ("sigma_B", "sigma_g"))
    n_nodes = tree_nodes_per_leaf(K)
    _refuse_over_memory(
        "audit_ucrl_vtr_tree", n_trials, n_nodes * (H * d * d + H * d), 8.0 * n_nodes * H * d * d
    )
    times = [2**level for level in range(n_nodes)]
    _refuse_over_work("audit_ucrl_vtr_tree", n_trials, times[-1])
    user_a, user_b = _neighbours(plan, cal, neighbours)
    zero = Statistics(np.zeros((H, d)), np.zeros(H))

    def run(user: Statistics, noise: str, seeds: list) -> np.ndarray:
        server = _vtr_regression("jdp", plan, cal, (sigma_m, sigma_v), noise, K, seeds)
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
    rng = np.random.default_rng(seed)
    sa = np.stack(
        [run(user_a, cal.node_noise, [rng.bytes(32) for _ in range(2 * H)]) for _ in range(int(n_trials))]
    )
    sb = np.stack(
        [run(user_b, cal.node_noise, [rng.bytes(32) for _ in range(2 * H)]) for _ in range(int(n_trials))]
    )
    # exact mu of what is audited: per released node the (whitened) difference of one user's message
    _, mu2, per_release = _gram_pair(user_a, user_b, sigma_m, sigma_v, cal.scale("sym_divisor"))
    return audit_samples(
        sa,
        sb,
        delta=delta,
        confidence=confidence,
        direction=exact,
        claimed_epsilon=float(epsilon),
        effective_epsilon=gaussian_epsilon(math.sqrt(mu2 * n_nodes), delta),
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
    """Audit the LDP UCRL-VTR user-side randomizer (Cor. 2): the shipped user-side randomizer of the
    Rust agent
    with the calibration of ``plan`` (default ``privrl.agents.ucrl_vtr.calibration.release_plan``)
    privatizes one user's statistics (the plan's worst pair, or the worst user against zeros);
    the output is everything the user sends, ``(X X^T + B^1, X y + g^1)`` for all ``h``."""
    n_trials, noise_multiplier = _counts(n_trials, noise_multiplier, confidence, seed)
    H, d = check_pos_int(H, "H"), check_pos_int(d, "d")
    _refuse_over_memory("audit_ldp_randomizer", n_trials, H * d * d + H * d, 8.0 * H * d * d)
    delta = check_real(delta, "delta")  # delta == 0.0 below: np.array([]) was numpy's 'truth value ...'
    plan = plan if plan is not None else ucrl_vtr.release_plan("ldp", delta == 0.0, H, 1, d, "tree", sampler)
    cal = ucrl_vtr.calibrate_ucrl_vtr("ldp", epsilon, delta, H, 1, d, 1.0, calibration=calibration, plan=plan)
    if cal.noise != "gaussian":
        raise PrivacyParameterError("audit_ldp_randomizer audits the Gaussian (delta > 0) randomizer")
    sigma_m, sigma_v = (_scaled_sigma(cal.scale(k), float(noise_multiplier)) for k in ("sigma_B", "sigma_g"))
    user_a, user_b = _neighbours(plan, cal, neighbours)
    rng = np.random.default_rng(seed)

    def draws(user: Statistics) -> np.ndarray:
        sigmas, seeds = (sigma_m, sigma_v), [rng.bytes(32), rng.bytes(32)]
        rnd = _vtr_regression("ldp", plan, cal, sigmas, cal.node_noise, 1, seeds)
        out = np.empty((int(n_trials), H * d * d + H * d))
        for i in range(int(n_trials)):
            gram, target = rnd.user_message(0, user.X, user.y)
            out[i] = np.concatenate([gram, target])
        return out

    direction, mu2, inverse_variance = _gram_pair(user_a, user_b, sigma_m, sigma_v, cal.scale("sym_divisor"))
    return audit_samples(
        draws(user_a),
        draws(user_b),
        delta=delta,
        confidence=confidence,
        direction=direction,
        claimed_epsilon=float(epsilon),
        effective_epsilon=gaussian_epsilon(math.sqrt(mu2), delta),
        name=f"UCRL-VTR LDP randomizer ({calibration}, {plan.sampler}, x{noise_multiplier:g} noise)",
        inverse_variance=inverse_variance,
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
    sampler: str | None = None,
) -> AuditResult:
    """Audit the u-release of Alg. 2 (App. D, "M^u_h"): with the value functions fixed (the
    proof's ``a_{h+1}``), release ``b`` of step ``h`` is ``u~_{b,h} = sum_j phi_j (r_j + V(s'_j)) +
    eta^b_h``, ``eta`` fresh per release at the agent's ``sigma_u``, drawn as the LSVI server draws
    it: a ``NoiseStream`` of the calibration's node law, and under the discrete sampler the sum
    rounded to eta's lattice first (``rust/agents/lsvi.rs``, ``release``). User 1 enters every one of
    the R releases with the plan's worst pair (default plan: ``phi = e_1``, ``r + V = H + 1``
    against ``phi = -e_1``): the sensitivity ``2(H + 1)`` of every release. ``sampler``: the noise
    drawn, the agents' default "discrete" (exact discrete Gaussian on the lattice) or "float"."""
    n_trials, noise_multiplier = _counts(n_trials, noise_multiplier, confidence, seed)
    cal = lsvi_ucb.calibrate_lsvi_ucb(
        "jdp", epsilon, delta, H, K, d, batches=batches, calibration=calibration, plan=plan, sampler=sampler
    )
    if cal.noise != "gaussian":
        raise PrivacyParameterError("audit_lsvi_u_release audits the Gaussian (delta > 0) release")
    plan = plan if plan is not None else lsvi_ucb.release_plan("jdp", False, H, K, d, cal.B, "tree", sampler)
    sigma = cal.scale("sigma_u") * float(noise_multiplier)
    R = cal.releases
    user_a, user_b = _neighbours(plan, cal, "worst")
    term_a = np.broadcast_to(user_a.X * user_a.y[:, None], (R, H, d)).reshape(-1)
    term_b = np.broadcast_to(user_b.X * user_b.y[:, None], (R, H, d)).reshape(-1)
    rng = np.random.default_rng(seed)

    def draws(term: np.ndarray) -> np.ndarray:
        # the agent's eta: its node law and lattice (grid sigma_u * 2^-grid_bits under "discrete")
        stream = NoiseStream(
            cal.node_noise, sigma, seed=rng.bytes(32), grid_bits=cal.grid_bits or DEFAULT_GRID_BITS
        )
        eta = stream.vectors(int(n_trials) * R * H, d).reshape(int(n_trials), R * H * d)
        unit = stream.lattice_unit()
        if unit is None:
            return term + eta
        # the server's u~ = (round(u / unit) + round(eta / unit)) * unit
        return (np.round(term / unit) + np.round(eta / unit)) * unit

    mu = float(np.linalg.norm(term_a - term_b)) / sigma
    return audit_samples(
        draws(term_a),
        draws(term_b),
        delta=delta,
        confidence=confidence,
        direction=term_a - term_b,
        claimed_epsilon=float(epsilon),
        effective_epsilon=gaussian_epsilon(mu, delta),
        name=f"LSVI-UCB u-release ({calibration}, {plan.sampler}, x{noise_multiplier:g} noise)",
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
    """Audit the shipped LSVI-UCB server of the Rust agent (Alg. 2): its receive, batch schedule,
    trees, fresh eta stream and ``release_batch``. With one step (H = 1, ``V_{H+1} = 0``) the released
    ``u~ = Lambda~ w~`` is ``sum_j phi_j r_j + eta`` at every release, the Gaussian mechanism
    the proof analyses; user 1 sends the plan's worst pair (``phi = e_1, r + V = H + 1`` against
    ``-e_1``, fed to the server as its guard would let through), users 2..K send zeros; the
    output is ``u~`` of every release. ``noise_multiplier`` scales both sigma_u and sigma_Lambda.
    ``calibration``: "tight" (the tree's noise of every calibration but the paper's; the default
    agent's server runs BLT for the design, which u~ does not show, and its sigma_u differs only by
    the discrete lattice's share: 3e-8 relative at K = 8, batches 4) or "paper"."""
    n_trials, noise_multiplier = _counts(n_trials, noise_multiplier, confidence, seed)
    from privrl.agents.lsvi_ucb.agent import batch_starts

    calibration = _paper_release(calibration, "audit_lsvi_server", "")
    H = 1
    cal = lsvi_ucb.calibrate_lsvi_ucb(
        "jdp", epsilon, delta, H, K, d, batches=batches, calibration=calibration, sampler=sampler
    )
    if cal.noise != "gaussian":
        raise PrivacyParameterError("audit_lsvi_server audits the Gaussian (delta > 0) release")
    m = float(noise_multiplier)
    plan = lsvi_ucb.release_plan("jdp", False, H, K, d, cal.B, "tree", sampler)
    user_a, user_b = _neighbours(plan, cal, "worst")
    ends = {int(k) - 1 for k in batch_starts(K, cal.B)[1:]}
    if not ends:  # batches = 1: numpy's "need at least one array to concatenate" after the runs
        raise PrivacyParameterError(
            f"audit_lsvi_server needs a release before the last user: batches >= 2 and K > ceil(K / "
            f"batches), got K = {K}, batches = {batches}"
        )
    # n_trials = 10^13 ran unrefused (no output was kept before the runs: a hang, then memory)
    _refuse_over_memory("audit_lsvi_server", n_trials, len(ends) * H * d, 0.0)
    _refuse_over_work("audit_lsvi_server", n_trials, int(K))
    rng = np.random.default_rng(seed)
    # the shipped LsviAgent (Rust) on a feature table whose rows are the two users' phi and 0;
    # its guard lets r + V up to H + 1 through, as the plan's worst case (V_{H+1} = 0 at H = 1)
    table = np.stack([user_a.X[0], user_b.X[0], np.zeros(d)])
    y_high = float(max(user_a.y[0], user_b.y[0]))

    def run(row: int, r: float) -> np.ndarray:
        seeds = [rng.bytes(32) for _ in range(H + 1)]
        private = LsviPrivateSpec(
            noise_spec(cal, cal.scale("sigma_Lambda") * m, cal.scale("sigma_u") * m, cal.releases, seeds),
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
    mu = float(np.linalg.norm(np.tile(term, n_releases))) / (cal.scale("sigma_u") * m)
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
