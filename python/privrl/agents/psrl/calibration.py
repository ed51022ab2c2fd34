"""Private tabular PSRL's privacy: what it releases about one user (the plan, as data), its calibration
and its per-user ledger.

Design: /work/notes/probes49/README.md ("Release", "Sensitivity", "Accounting") and DESIGN_next.md;
the formulas are privrl.agents.psrl.formulas.
"""

# What the generic tools do with this plan (checked in tests/test_psrl_reference.py):
# * the statistic is declared nonnegative (UserStatistic.nonnegative), so privrl.privacy.plans.plan_mu
#   restricts the worst pair's cosine to [0, 1]: orthogonal users, ||x - x'|| = sqrt(2) x_bound =
#   2 sqrt(m H) = Delta (with a free angle, x' = -x, it was sqrt(2) larger). calibrate_psrl's sigma is
#   tight_scales of this plan, equal to psrl_sigma (one Gaussian mechanism, exact curve).
# * privrl.audit.report.privacy_report_from_calibration("psrl", cal) reports it (plan_of: this
#   release_plan; its "paper" part is the one Gaussian mechanism per user, the tight part the plan's
#   mu); psrl_accountant is the same ledger on its own.
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from privrl.agents.psrl.formulas import (
    psrl_num_batches,
    psrl_releases,
    psrl_sensitivity,
    psrl_x_bound,
)
from privrl.common.checks import check_choice, check_pos_int, check_probability
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.accounting import PrivacyAccountant
from privrl.privacy.common import (
    Calibration,
    check_batch_count,
    check_kind,
    in_theorem_regime,
    privacy_args,
    sampler_fields,
    tight_scales,
)
from privrl.privacy.plans import DEFAULT_SAMPLER, ReleasedFamily, ReleasePlan, UserStatistic

__all__ = [
    "MECHANISM",
    "PSRLCalibration",
    "calibrate_psrl",
    "psrl_accountant",
    "release_plan",
    "resolve_batches",
]

TITLE = "private tabular PSRL on a time-homogeneous release (pooled over the H steps; not in the paper)"
#: The release mechanism: each batch's own sums noised once ("increments"); the billboard is their
#: running sum. Not one of privrl.privacy.continual.MECHANISMS (a user enters one release, not a
#: continual-release mechanism's leaf).
MECHANISM = "increments"
#: The samplers: "discrete" (the agents' default, privrl.privacy.plans.DEFAULT_SAMPLER: the exact
#: discrete Gaussian on the lattice sigma 2^-grid_bits, data rounded to it; one draw of dimension
#: n = S A S + S A per user, accounted as every agent's: whitened sensitivity Delta / sigma +
#: sqrt(n) 2^-grid_bits on the continuous curve by domination, privacy.common.plan_target,
#: privacy.mechanisms.discrete_gaussian_mechanism_delta) or "float" (the continuous Gaussian, the
#: probe's). The Rust core draws either (rust/agents/psrl.rs), the numpy reference too (Billboard).
SAMPLERS = ("discrete", "float")
#: The largest per-user cap m: the Rust core counts a user's visits of an (s, a) in 32 bits (a cap
#: beyond H counts every visit, as m = H does).
MAX_M = 2**32 - 1


def resolve_batches(batches: str | int, kind: str, eps: float | None, H: int, K: int, S: int, A: int) -> int:
    """The number of static batches B: ``"static"`` (private: :func:`psrl_num_batches`, App. D's
    formula with d = S A; non-private: K, a release after every user), ``"every"`` (B = K) or an int
    in [1, K]."""
    if isinstance(batches, str) and batches == "every":
        return K
    if isinstance(batches, str) and batches == "static":
        return K if kind == "none" or eps is None else psrl_num_batches(eps, H, K, S, A)
    return check_batch_count(batches, K, ("static", "every"))


def release_plan(
    kind: str, H: int, K: int, S: int, A: int, B: int, m: int = 1, sampler: str | None = None
) -> ReleasePlan:
    """What PSRL releases about one user: ONE statistic per episode (not per step: the release is
    pooled over h), the vector x of its capped counts n(s, a, s') and reward sums R(s, a)
    (``S A S + S A`` entries, all >= 0, ``||x||^2 <= 2 m H``, psrl_sensitivity's derivation), in
    ONE released family: the increment of its batch, noised once (site "release", one draw, L2
    multiplier 1, one instance per user). ``y`` is the constant 1 (the plan's vector family is
    ``x y``). ``capacity`` = the run's releases, B - 1. ``sampler`` None: DEFAULT_SAMPLER
    ("discrete") when private, "float" without noise (see SAMPLERS)."""
    # checked as calibrate_psrl checks them: kind=nan, S=nan or A=0 built a plan of model nan, of
    # dimension nan or 0
    kind = check_kind(kind, ("none", "jdp"))
    H, K, S, A = check_pos_int(H, "H"), check_pos_int(K, "K"), check_pos_int(S, "S"), check_pos_int(A, "A")
    B, m = check_pos_int(B, "B"), check_pos_int(m, "m")
    stat = UserStatistic(
        name="n(s, a, s'), R(s, a) of the capped visits",
        x="the user's counts n(s, a, s') and reward sums R(s, a) of its first m visits of each (s, a)",
        y="1",
        dim=S * A * S + S * A,
        x_bound=psrl_x_bound(H, m),
        y_low=1.0,
        y_high=1.0,
        source=f"the per-user cap m = {m} (first m visits of each (s, a) counted), rewards in [0, 1], "
        "H steps; x >= 0 entrywise (counts and sums of rewards in [0, 1])",
        nonnegative=True,
    )
    R = max(psrl_releases(B), 1)  # a plan's capacity is >= 1; B = 1 releases nothing
    if kind == "none":
        return ReleasePlan("psrl", TITLE, "none", None, H, R, MECHANISM, (stat,), sampler="float")
    sampler = DEFAULT_SAMPLER if sampler is None else check_choice(sampler, SAMPLERS, "sampler")
    family = ReleasedFamily(
        name="increment",
        paper="the batch's own pooled sums + N(0, sigma^2) per cell (the billboard sums them)",
        statistic=stat.name,
        form="scaled",
        site="release",
        scale_key="sigma",
        scale_ratio=1.0,
        draws=1,
        draws_paper=1,
        multiplier=1.0,
        l2_sensitivity=psrl_sensitivity(H, m),
        l2_source="x, x' >= 0, ||x||^2 <= 2 m H: ||x - x'||^2 <= 4 m H, Delta = 2 sqrt(m H)",
        l1_sensitivity=4.0 * H,
        l1_source="||x||_1 <= sum c + sum r <= 2 H, x, x' >= 0: 4 H (unused: Gaussian only)",
        sym_divisor=None,
        mechanism=MECHANISM,
        instances=1,
    )
    return ReleasePlan("psrl", TITLE, kind, "gaussian", H, R, MECHANISM, (stat,), (family,), sampler=sampler)


@dataclass(frozen=True, kw_only=True)
class PSRLCalibration(Calibration):
    """Parameters of private tabular PSRL: ``S``, ``A`` (``d = S A``, the one-hot dimension),
    ``m`` (the per-user cap), ``batches`` (as given), ``B``, ``releases`` (B - 1), ``sensitivity``
    (Delta = 2 sqrt(m H)), ``sigma`` (the Gaussian std per released cell; None non-private) and
    ``mu`` (Delta / sigma, the user's GDP parameter; None non-private). The cumulative noise
    variance per cell after j releases is ``j sigma^2`` (:meth:`noise_variance`)."""

    S: int
    A: int
    m: int
    batches: str | int
    B: int
    releases: int
    sensitivity: float
    sigma: float | None = None
    mu: float | None = None

    def noise_variance(self, j: int) -> float:
        """The billboard's noise variance per cell after ``j`` releases: ``j sigma^2`` (0 non-private)."""
        j = int(j)
        if not 0 <= j <= self.releases:
            raise PrivacyParameterError(f"j must be in [0, releases = {self.releases}], got {j}")
        return j * (self.sigma or 0.0) ** 2


def calibrate_psrl(
    kind: str,
    epsilon: float | None,
    delta: float | None,
    S: int,
    A: int,
    H: int,
    K: int,
    m: int = 1,
    batches: str | int = "static",
    p: float = 0.05,
    sampler: str | None = None,
) -> PSRLCalibration:
    """All parameters of private tabular PSRL for ``kind`` in ``{"none", "jdp"}`` (LDP: a later
    step). Gaussian noise only: ``delta`` must be > 0 (pure DP would need a Laplace release and its
    L1 accounting, not designed). ``batches``: see :func:`resolve_batches`. ``sigma`` is the plan's
    (:func:`release_plan`, :func:`privrl.privacy.common.tight_scales`: one Gaussian mechanism per
    user of sensitivity sqrt(2) x_bound, the exact analytic Gaussian curve), which is
    :func:`~privrl.agents.psrl.formulas.psrl_sigma`; ``p`` is recorded for the Calibration base
    (PSRL uses no confidence radius). ``sampler`` (SAMPLERS; None: "discrete"): the discrete
    Gaussian's sigma is ``Delta / (mu_discrete - sqrt(S A S + S A) 2^-grid_bits)``, about 1e-6
    above the float sigma at S A = 64 (plan_target; the float sigma is psrl_sigma)."""
    kind = check_kind(kind, ("none", "jdp"))
    eps, dlt, pure = privacy_args(kind, epsilon, delta)
    if pure:
        raise PrivacyParameterError(
            "PSRL's release is Gaussian: delta must be > 0 (pure DP, delta = 0, is not designed for it)"
        )
    S, A = check_pos_int(S, "S"), check_pos_int(A, "A")
    H, K, m = check_pos_int(H, "H"), check_pos_int(K, "K"), check_pos_int(m, "m")
    if m > MAX_M:
        raise PrivacyParameterError(f"m must be an integer in [1, 2^32 - 1] (the per-user cap), got {m}")
    p = check_probability(p, "p")
    sampler = None if sampler is None else check_choice(sampler, SAMPLERS, "sampler")
    B = resolve_batches(batches, kind, eps, H, K, S, A)
    Delta = psrl_sensitivity(H, m)
    base: dict[str, Any] = dict(
        algorithm="psrl",
        kind=kind,
        pure=False,
        calibration="tight",
        epsilon=eps,
        delta=dlt,
        p=p,
        H=H,
        K=K,
        d=S * A,
        mechanism=MECHANISM,
        in_theorem_regime=in_theorem_regime(kind, eps, dlt, False),
        S=S,
        A=A,
        m=m,
        batches=batches,
        B=B,
        releases=psrl_releases(B),
        sensitivity=Delta,
    )
    if kind == "none":
        return PSRLCalibration(**base)
    assert eps is not None and dlt is not None  # privacy_args: both given for "jdp"
    plan = release_plan(kind, H, K, S, A, B, m, sampler)
    sigma = tight_scales(plan, eps, dlt)["sigma"]
    fields = sampler_fields(plan, kind)
    return PSRLCalibration(**base, noise="gaussian", **fields, sigma=sigma, mu=Delta / sigma)


def psrl_accountant(cal: PSRLCalibration) -> PrivacyAccountant:
    """One user's privacy ledger: ONE Gaussian release of sensitivity ``cal.sensitivity`` at std
    ``cal.sigma`` (the increment of its batch; every other release has sensitivity 0 for that user),
    whatever B. ``psrl_accountant(cal).epsilon(cal.delta) <= cal.epsilon``. The continuous law's
    ledger: a discrete-sampler calibration is refused (its certificate is the privacy report's,
    privrl.audit.report.privacy_report_from_calibration("psrl", cal)["tight"])."""
    if not isinstance(cal, PSRLCalibration):
        raise TypeError(f"cal must be a PSRLCalibration, got {type(cal).__name__}")
    if cal.kind == "none" or cal.sigma is None:
        raise PrivacyParameterError("a non-private PSRL calibration releases no noise: nothing to account")
    if cal.sampler != "float":
        raise PrivacyParameterError(
            f"psrl_accountant is the continuous Gaussian's ledger; this calibration draws with "
            f"sampler={cal.sampler!r}: read privacy_report_from_calibration('psrl', cal)['tight']"
        )
    return PrivacyAccountant().add_gaussian(cal.sensitivity, cal.sigma, 1, "PSRL increment (one per user)")
