"""LinUCB's privacy (H = 1, disjoint arms): what it releases, its parameters, its calibration.

A linear contextual bandit is the paper's setting with H = 1: one user, one context x
(``||x|| <= 1``), one arm a, one reward r in [0, 1]. The server's statistics are UCRL-VTR's with
H = 1 (App. B): the Gram matrix ``sum phi phi^T`` and the reward vector ``sum phi r`` of
``phi = e_a (x) x``, both prefix sums that never change once a user is in them, so a
continual-release mechanism releases both (Shariff & Sheffet 2018; App. "Tree-based method"),
with leaves that are batches of users between fixed ends (JDP, :func:`linucb_leaf_ends`), or
the user's randomizer (LDP, Zheng et al. 2020). The release plan is therefore Alg. 1's plan at
H = 1 with the context's dimension p (a user changes one arm's block; every other block is zero
for every user, so the block-diagonal release has the sensitivity of one block: L2 2 for both
families, L1 2p and 2 sqrt(p); a pair of users in two different blocks changes less than the
same-block worst case, tests/test_linucb.py) and ``linucb_leaves`` leaves, with the Gaussian
scales in the ratio :data:`VECTOR_TO_GRAM`; every noise scale comes from
:func:`privrl.agents.ucrl_vtr.calibration.calibrate_ucrl_vtr` with that plan (one home).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from privrl.agents.ucrl_vtr import calibration as vtr
from privrl.agents.ucrl_vtr.calibration import UCRLVTRCalibration
from privrl.common.checks import (
    MAX_INT,
    check_pos_int,
    check_positive_real,
    check_probability,
    did_you_mean,
    is_integer,
)
from privrl.common.errors import PrivacyParameterError
from privrl.common.memory import refuse_over_memory
from privrl.privacy.common import DEFAULT_CALIBRATION, check_calibration, check_kind, privacy_args
from privrl.privacy.continual import resolve_release_choices
from privrl.privacy.plans import ReleasePlan, UserStatistic, check_plan, check_plan_shape

__all__ = [
    "LinUCBCalibration",
    "calibrate_linucb",
    "linucb_leaf_ends",
    "linucb_leaves",
    "linucb_radius",
    "release_plan",
    "SIGMA_R",
    "THETA_BOUND",
    "VECTOR_TO_GRAM",
]

TITLE = "LinUCB, disjoint arms (H = 1; JDP: Shariff & Sheffet 2018, LDP: Zheng et al. 2020)"
#: Sub-Gaussian scale of a reward in [0, 1] around its mean (Hoeffding): the reward noise std
#: the width uses.
SIGMA_R = 0.5
#: ``||w*_a|| <= THETA_BOUND``: the usual LinUCB assumption behind the radius's ``sqrt(lam) S``.
THETA_BOUND = 1.0
#: ``sigma_g / sigma_B`` of the Gaussian agents: ``2 S`` (S = THETA_BOUND). The estimate's error
#: from the released noise is ``G~^{-1}(n - N w)``: ``||n|| ~ sqrt(p) sigma_g`` against
#: ``||N w|| <= ||N|| S ~ 2 sqrt(p) sigma_B S`` (a symmetric p x p Gaussian matrix of entry std
#: sigma_B has norm ~ 2 sqrt(p) sigma_B), so ``sigma_g = 2 S sigma_B`` balances the two. What
#: privacy pays for it: one user's worst change is ``(rho + 2 + 1/rho) / sigma_g^2`` (per unit of
#: the mechanism's multiplier squared; ``rho = (sigma_g / sigma_B)^2``, attained by x, x' with
#: x.x' = -1/rho, r = r' = 1 in one arm's block; a pair in two blocks gives rho + 2), against
#: ``4 / sigma^2`` at equal scales: at rho = 4, sigma_B is 0.625 and sigma_g 1.25 times the
#: equal-scale sigma for the same (eps, delta).
VECTOR_TO_GRAM = 2.0 * THETA_BOUND


#: The leaf schedules: "auto" (leaves of p users), "geometric" (leaves end at p 2^i users),
#: "every" (one user per leaf) or an int L (leaves of L users).
SCHEDULES = ("auto", "geometric", "every")


def check_schedule(schedule: Any) -> str | int:
    """``schedule`` checked: one of :data:`SCHEDULES` or an integer L >= 1 (a release every L
    users); anything else is refused with a message that names what is accepted."""
    if isinstance(schedule, str) and schedule in SCHEDULES:
        return schedule
    if is_integer(schedule) and 1 <= int(schedule) <= MAX_INT:
        return int(schedule)
    hint = did_you_mean(schedule, SCHEDULES).strip() if isinstance(schedule, str) else ""
    raise PrivacyParameterError(
        "schedule must be one of 'auto' (a release every p users), 'geometric' (after p, 2p, 4p, ... "
        "users), 'every' (after every user) or an integer L in [1, 2^63 - 1] (a release every L "
        f"users), got {schedule!r}" + (f"; {hint}" if hint else "")
    )


def linucb_leaf_ends(kind: str, K: int, p: int, schedule: str | int = "auto") -> list[int]:
    """The user counts at which a leaf of the private agents ends (and the billboard is
    released): a schedule of (K, p) only, fixed in advance (the release times never depend on the
    data). ``"auto"``: every p users (a release costs O(A p^3), one p x p inverse per arm, and a
    user O(A p^2), so a release every p users costs what the users between releases cost);
    ``"geometric"``: ``p, 2p, 4p, ...`` then K: about ``log2(K / p)`` leaves, so the
    continual-release mechanism is shallow (its multiplier and variance grow with the number of
    leaves) while the early releases come fast (batched bandits: a geometric grid keeps the
    regret within log factors, Gao et al. 2019); ``"every"``: 1, 2, ..., K; an int L: L, 2L, ...,
    K. Non-private agents update after every user (the exact Sherman-Morrison server) whatever
    the schedule. A schedule whose list cannot fit in memory is refused (ResourceError)."""
    n, step = _leaf_count(kind, K, p, schedule)
    # a Python int and its 64-bit copy in the Rust core per end: a list of every user hung at
    # K = 2^40 (NonPrivate) or 2^62 (JDP, auto) with a bare MemoryError
    refuse_over_memory(
        "LinUCB",
        ENTRIES_PER_END * n,
        f"the user count at which each of its {n} leaves ends (K = {K})",
        "Use fewer episodes or, for a private agent, a coarser schedule (an int L or 'geometric').",
    )
    if step is None:  # geometric
        ends, e = [], p
        while e < K:
            ends.append(e)
            e *= 2
        return [*ends, K]
    return [*range(step, K, step), K]


#: Doubles' worth of memory per leaf end: a list slot and a Python int (40 bytes), the Rust copy.
ENTRIES_PER_END = 6


def _leaf_count(kind: str, K: int, p: int, schedule: str | int) -> tuple[int, int | None]:
    """(the number of leaf ends of :func:`linucb_leaf_ends`, the users per leaf; None when
    geometric), checked, without building the list."""
    kind = check_kind(kind)
    K, p = check_pos_int(K, "K"), check_pos_int(p, "p")
    schedule = check_schedule(schedule)
    if kind == "none" or schedule == "every":
        return K, 1
    if schedule == "auto":
        schedule = p
    if schedule == "geometric":
        n, e = 1, p
        while e < K:
            n, e = n + 1, e * 2
        return n, None
    assert isinstance(schedule, int)
    return -(-K // schedule), schedule


def linucb_leaves(kind: str, K: int, p: int, schedule: str | int = "auto") -> int:
    """Leaves of a JDP mechanism (``len(linucb_leaf_ends(...))``, counted without building the
    list); LDP and non-private: K (one user each)."""
    kind = check_kind(kind)
    K, p = check_pos_int(K, "K"), check_pos_int(p, "p")
    return _leaf_count(kind, K, p, schedule)[0] if kind == "jdp" else K


def linucb_radius(lam: float, K: int, p: int, alpha: float) -> float:
    """The self-normalized radius of LinUCB (Abbasi-Yadkori et al. 2011, Thm. 2) in units of the
    reward noise's scale: ``sqrt(2 log(1/alpha) + p log(1 + K / (lam p))) + sqrt(lam) S /
    sigma_r`` with ``S = THETA_BOUND`` and ``sigma_r = SIGMA_R`` (``lam > 0``: the ridge
    regularizer of the estimate)."""
    lam = check_positive_real(lam, "lam")
    K, p, alpha = check_pos_int(K, "K"), check_pos_int(p, "p"), check_probability(alpha, "alpha")
    # in logs where the ratios overflow: K / (lam p) at a tiny lam, 1 / alpha at a tiny alpha
    ratio, inv_alpha = K / (lam * p), 1.0 / alpha
    growth = math.log1p(ratio) if math.isfinite(ratio) else math.log(K) - math.log(lam) - math.log(p)
    confidence = math.log(inv_alpha) if math.isfinite(inv_alpha) else -math.log(alpha)
    return math.sqrt(2.0 * confidence + p * growth) + math.sqrt(lam) * THETA_BOUND / SIGMA_R


def release_plan(
    kind: str,
    pure: bool,
    K: int,
    p: int,
    schedule: str | int = "auto",
    mechanism: str | None = None,
    sampler: str | None = None,
) -> ReleasePlan:
    """What LinUCB releases about one user: Alg. 1's plan at H = 1 (App. B) for a context of
    dimension p, over ``linucb_leaves`` leaves (module docstring)."""
    leaves = linucb_leaves(kind, K, p, schedule)
    base = vtr.release_plan(kind, pure, 1, leaves, p, mechanism, sampler)
    stat = UserStatistic(
        name="x, r",
        x="x (the context; it enters the played arm's block of phi = e_a (x) x)",
        y="r (the reward)",
        dim=p,
        x_bound=1.0,
        y_low=0.0,
        y_high=1.0,
        source="||x|| <= 1 (ContextualBandit checks its contexts; the agent clips), r in [0, 1]",
    )
    fams = tuple(
        replace(
            f,
            statistic=stat.name,
            paper="block of sum phi phi^T" if f.form == "outer" else "block of sum phi r",
            l2_source="||x x^T||_F <= 1 (||x r|| <= 1), neighbours differ by both terms: 2",
            l1_source="2 ||x||_1^2 <= 2p" if f.form == "outer" else "2 ||x||_1 r <= 2 sqrt(p)",
            scale_ratio=f.scale_ratio * (1.0 if f.form == "outer" or pure else VECTOR_TO_GRAM),
        )
        for f in base.families
    )
    return replace(base, algorithm="linucb", title=TITLE, statistics=(stat,), families=fams)


@dataclass(frozen=True, kw_only=True)
class LinUCBCalibration(UCRLVTRCalibration):
    """Alg. 1's calibration at H = 1 (``K`` here is the number of users, ``leaves`` the
    mechanism's capacity) and LinUCB's regret side: ``arms``, ``context_dim`` (p), ``schedule``,
    ``leaves``, ``sigma_r`` and ``radius`` (:func:`linucb_radius`); ``beta`` is the radius the
    index uses (adaptive: 1, one std of the estimate's error)."""

    arms: int
    context_dim: int
    schedule: str | int
    leaves: int
    sigma_r: float = SIGMA_R
    radius: float = 0.0


def calibrate_linucb(
    kind: str,
    epsilon: float | None,
    delta: float | None,
    K: int,
    arms: int,
    p: int,
    schedule: str | int = "auto",
    prob: float = 0.05,
    calibration: str = DEFAULT_CALIBRATION,
    mechanism: str | None = None,
    plan: ReleasePlan | None = None,
    sampler: str | None = None,
    lam: float | None = None,
) -> LinUCBCalibration:
    """All parameters of LinUCB for ``kind`` in ``{"none", "jdp", "ldp"}`` (``delta == 0``: pure
    DP). The noise is Alg. 1's at H = 1 (``calibration``: "paper" Cor. 1 / 2, "tight", "practical"
    and "adaptive" the tight noise); ``lam`` (default 1) and the radius are the regret side
    only.
    A paper calibration outside its formulas' regime (eps < 1): as
    :func:`privrl.agents.ucrl_vtr.calibration.calibrate_ucrl_vtr` says."""
    kind = check_kind(kind)
    _, _, pure = privacy_args(kind, epsilon, delta)
    K, arms, p = check_pos_int(K, "K"), check_pos_int(arms, "arms"), check_pos_int(p, "p")
    check_plan(plan, ("linucb",), kind, pure, 1)
    prob = check_probability(prob, "p")
    calibration = check_calibration(calibration)
    schedule = check_schedule(schedule)
    lam = 1.0 if lam is None else check_positive_real(lam, "lam")
    mechanism, sampler = resolve_release_choices(kind, calibration, pure, mechanism, sampler, plan)
    own = release_plan(kind, pure, K, p, schedule, mechanism, sampler)
    plan = own if plan is None else plan
    check_plan_shape(plan, own)
    leaves = linucb_leaves(kind, K, p, schedule)
    base = vtr.calibrate_ucrl_vtr(
        kind, epsilon, delta, 1, leaves, p, 1.0, prob, calibration, mechanism, plan, plan.sampler
    )
    alpha = prob / (6.0 * K)
    radius = linucb_radius(lam, K, p, alpha)
    fields = {**base.to_dict(), "algorithm": "linucb", "K": K, "lam": lam, "alpha": alpha}
    fields.update(
        arms=arms,
        context_dim=p,
        schedule=schedule,
        leaves=leaves,
        radius=radius,
        beta=1.0 if calibration == "adaptive" else radius,
    )
    return LinUCBCalibration(**fields)
