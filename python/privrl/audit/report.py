"""Privacy reports: every family an agent releases, read from its release plan, and the (eps, delta) it
yields under the paper's composition argument and under the tight accountant.

Paper: Luyo et al., App. B (privacy of Cor. 1-2), App. C (Alg. 3), App. D (privacy of Alg. 2),
App. "Differential Privacy Tools".
"""

# The report composes the plan's families twice:
#   (a) "paper": the paper's own argument recomputed forward from the appendix's tools with the
#       ACTUAL noise scales and the paper's delta split (per draw budget from the Gaussian or
#       Laplace mechanism -> advanced composition over the tree's nodes -> over H (and over the B
#       releases in Alg. 2) -> simple composition over the families -> post-processing ->
#       Billboard lemma), with the paper's separate sensitivities and node counts. A paper-
#       calibrated agent comes back at or below its target; a tight one does not (the paper's
#       tools cannot certify the smaller noise), which is the point of (b).
#   (b) "tight": the exact GDP parameter of the plan (privrl.privacy.plans: joint worst case over
#       the step's matrix and vector, the symmetric matrix law, the mechanisms' exact multipliers)
#       through the analytic Gaussian curve; simple composition of Laplace releases for pure DP.
from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from privrl.agents.linucb import calibration as linucb
from privrl.agents.lsvi_ucb import calibration as lsvi_ucb
from privrl.agents.psrl import calibration as psrl
from privrl.agents.ucrl_vtr import calibration as ucrl_vtr
from privrl.agents.ucrl_vtr_plus import calibration as ucrl_vtr_plus
from privrl.audit.paper_argument import VACUOUS_EPSILON, _paper_lsvi, _paper_psrl, _paper_vtr
from privrl.common.checks import check_positive_real
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.accounting import PrivacyAccountant
from privrl.privacy.common import Calibration
from privrl.privacy.plans import (
    ReleasedFamily,
    ReleasePlan,
    check_plan_shape,
    law_factor,
    refuse_unfit,
    statistic_worst_case,
)
from privrl.privacy.regret_side import (
    ALGORITHMS,
    SIMULATION_ONLY,
    check_calibration_of,
    check_report,
    regret_side,
    warn_if_over_target,
)
from privrl.privacy.samplers import discrete_tight, format_sampler, sampler_section, tight_section

__all__ = [
    "ALGORITHMS",
    "format_privacy_report",
    "plan_of",
    "regret_side",
    "privacy_report",
    "privacy_report_from_calibration",
    "summarize_privacy_report",
]

_MODULES = {"ucrl_vtr": ucrl_vtr, "ucrl_vtr_plus": ucrl_vtr_plus, "lsvi_ucb": lsvi_ucb, "linucb": linucb}
_MODULES["psrl"] = psrl
_CALIBRATE: dict[str, Any] = {
    "psrl": psrl.calibrate_psrl,
    "ucrl_vtr": ucrl_vtr.calibrate_ucrl_vtr,
    "ucrl_vtr_plus": ucrl_vtr_plus.calibrate_ucrl_vtr_plus,
    "lsvi_ucb": lsvi_ucb.calibrate_lsvi_ucb,
    "linucb": linucb.calibrate_linucb,
}


def plan_of(algorithm: str, cal: Any) -> ReleasePlan:
    """The default release plan of ``algorithm`` for the structure a calibration was made for, on
    the calibration's lattice (its ``grid_bits``: a calibration made from a plan of a coarser
    lattice was reported on the default 2^-24 one, its rounding's share of the budget left out)."""
    check_calibration_of(algorithm, cal)
    plan = _default_plan(algorithm, cal)
    bits = getattr(cal, "grid_bits", None)
    return plan if bits is None or plan.sampler != "discrete" else replace(plan, grid_bits=bits)


def _default_plan(algorithm: str, cal: Any) -> ReleasePlan:
    mod = _MODULES[algorithm]
    pure = bool(getattr(cal, "pure", False))
    tail = (getattr(cal, "mechanism", "tree"), getattr(cal, "sampler", None) or "float")
    if algorithm == "linucb":
        return mod.release_plan(cal.kind, pure, cal.K, cal.context_dim, cal.schedule, *tail)
    if algorithm == "psrl":  # one release plan, no paper / tight variants
        return mod.release_plan(cal.kind, cal.H, cal.K, cal.S, cal.A, cal.B, cal.m, cal.sampler)
    batches = (cal.B,) if algorithm == "lsvi_ucb" else ()
    return mod.release_plan(cal.kind, pure, cal.H, cal.K, cal.d, *batches, *tail)


# ============================================================================================
# Family inventory
# ============================================================================================
def _guard_text(guard: Any, stat: Any) -> str:
    if guard is None:
        return f"{stat.source} (assumed)"
    return (
        f"SensitivityGuard(mode={guard.mode!r}): ||{stat.x}|| <= {guard.x_bound:g}, guarded values in "
        f"[{guard.y_low:g}, {guard.y_high:g}], checked where user data enters the mechanism "
        f"({'clipped and counted' if guard.mode == 'clip' else 'rejected'}); {stat.source}"
    )


def _site_text(f: ReleasedFamily, plan: ReleasePlan) -> str:
    what = "symmetric d x d matrices" if f.is_matrix else "d-vectors"
    one = "symmetric d x d matrix" if f.is_matrix else "d-vector"  # was "d x d matrice"
    kind = "binary tree" if f.mechanism == "tree" else f"{f.mechanism} continual-release mechanism"
    if plan.algorithm == "linucb":  # H = 1, one p x p (p-vector) block per arm (docs/privacy.md)
        block = "symmetric p x p blocks" if f.is_matrix else "p-vector blocks"
        if f.site == "tree":
            return (
                f"server: one {kind} per arm of {block} over {plan.capacity} leaves (a user enters "
                "the block of the arm it played: one mechanism's leaf)"
            )
        if f.site == "user":
            return (
                f"user: LocalRandomizer, one release of every arm's {block} (its own arm's statistic, "
                "zeros elsewhere: the server does not learn the arm)"
            )
    if f.site == "tree":
        return f"server: {f.instances} {kind}s of {what} over {plan.capacity} leaves"
    if f.site == "user":
        return f"user: LocalRandomizer, one {one} release per step (H = {f.instances})"
    if plan.algorithm == "psrl":
        return (
            f"server: the increment of the user's batch, {f.draws} release of the pooled sums (fresh noise)"
        )
    return f"server: {f.instances} x {f.draws} {what} releases (one per release and step, fresh noise)"


def _entry(
    f: ReleasedFamily, plan: ReleasePlan, cal: Calibration, guards: Mapping[str, Any]
) -> dict[str, Any]:
    pure = plan.noise == "laplace"
    scale = float(getattr(cal, f.scale_key))
    stat = plan.statistic(f.statistic)
    sens = f.l1_sensitivity if pure else f.l2_sensitivity
    e: dict[str, Any] = {
        "name": f.name,
        "paper": f.paper,
        "site": _site_text(f, plan),
        "statistic": stat.name,
        "form": "x x^T" if f.is_matrix else "x y",
        "instances": f.instances,
        "mechanism": f.mechanism,
        "draws_per_user": f.draws,
        "draws_per_user_paper": f.draws_paper,
        "total_draws_per_user": None if f.draws is None else f.instances * f.draws,
        "l2_multiplier": f.multiplier,
        "law_factor": law_factor(f),
        "norm": ("L1 (entrywise)" if f.is_matrix else "L1")
        if pure
        else ("L2 (Frobenius)" if f.is_matrix else "L2"),
        "sensitivity": sens,
        "sensitivity_source": f.l1_source if pure else f.l2_source,
        "enforced_by": _guard_text(guards.get(stat.name), stat),
        "noise": plan.noise,
        "scale_key": f.scale_key,
        "scale": scale,
        "sym_divisor": f.sym_divisor,
        "counted_as": {
            "tree": "nodes per user and tree",
            "user": "releases per user and step",
            "release": "releases per user and step",
        }[f.site]
        if f.draws is not None
        else f"one Gaussian per user and mechanism, L2 multiplier {f.multiplier:.4g}",
    }
    if pure:
        e["laplace_b"] = scale
        e["epsilon_per_user"] = f.instances * f.l1_multiplier * sens / scale
    else:
        e["sigma"] = scale
        # this family alone, at its separate worst case (the joint value is in "statistics")
        e["mu_squared_per_user"] = f.instances * (f.multiplier * sens / scale) ** 2
    return e


def _statistics(plan: ReleasePlan, scales: Mapping[str, float]) -> list[dict[str, Any]]:
    out = []
    for stat in plan.statistics:
        fams = [f for f in plan.families if f.statistic == stat.name]
        if not fams or plan.noise != "gaussian":
            continue
        w = statistic_worst_case(plan, stat.name, scales)
        out.append(
            {
                "statistic": stat.name,
                "families": [f.name for f in fams],
                "instances": fams[0].instances,
                "mu_squared_per_step": w.value,
                "mu_squared_per_user": fams[0].instances * w.value,
                "x_bound": stat.x_bound,
                "y_range": (stat.y_low, stat.y_high),
                "worst_x": w.x.tolist(),
                "worst_y": w.y,
                "worst_x_prime": w.x_prime.tolist(),
                "worst_y_prime": w.y_prime,
            }
        )
    return out


# ============================================================================================
# (b) Tight accountant
# ============================================================================================
def _tight(
    cal: Calibration, plan: ReleasePlan, stats: list[dict[str, Any]], mechs: list[dict]
) -> dict[str, Any]:
    acc = PrivacyAccountant()
    eps_t, dlt_t = cal.target()
    if plan.noise == "laplace":
        for m in mechs:
            acc.add_laplace(
                m["sensitivity"], m["scale"], int(m["instances"] * (m["draws_per_user"] or 1)), m["name"]
            )
        e = acc.epsilon(0.0)
        if plan.sampler == "discrete":
            return discrete_tight(plan, None, e, eps_t, dlt_t)
        return tight_section(e, 0.0, acc.delta(eps_t), None, acc.rho, acc.method())
    for s in stats:
        # one Gaussian per step with the joint worst-case change of the statistic's families
        acc.add_gaussian(math.sqrt(s["mu_squared_per_step"]), 1.0, s["instances"], s["statistic"])
    if plan.sampler == "discrete":
        return discrete_tight(plan, acc.mu, 0.0, eps_t, dlt_t)
    e = acc.epsilon(dlt_t)
    method = acc.method() + "; joint worst case of each step's matrix and vector (privrl.privacy.plans)"
    return tight_section(e, dlt_t, acc.delta(eps_t), acc.mu, acc.rho, method)


# ============================================================================================
# Entry points
# ============================================================================================
def _within(budget: Any, eps_t: float, dlt_t: float, rel: float = 1e-9) -> bool:
    return bool(budget[0] <= eps_t * (1 + rel) and budget[1] <= dlt_t * (1 + rel) + 1e-300)


def _check_plan_fits(plan: ReleasePlan, cal: Calibration) -> ReleasePlan:
    """A ``plan`` given with ``cal`` must be one of its algorithm, model, H, noise, sampler and
    mechanism: a JDP calibration with an LDP plan was reported as (0.47, 1e-5), within its
    (1, 1e-5) target, its 4 tree nodes per user counted as one release."""
    sampler = getattr(cal, "sampler", None)
    pairs = {
        "algorithm": (plan.algorithm, (cal.algorithm,)),
        "model": (plan.model, (cal.kind,)),
        "H": (plan.H, (getattr(cal, "H", plan.H),)),
        "noise": (plan.noise, (cal.noise if cal.kind != "none" else plan.noise,)),
        "sampler": (plan.sampler, (sampler if sampler is not None else plan.sampler,)),
        "mechanism": (plan.mechanism, (getattr(cal, "mechanism", plan.mechanism),)),
        "grid_bits": (plan.grid_bits, (getattr(cal, "grid_bits", None) or plan.grid_bits,)),
    }
    refuse_unfit(pairs)
    check_plan_shape(plan, plan_of(cal.algorithm, cal))  # another K's tree nodes, another d's dims
    return plan


def _check_guards(plan: ReleasePlan, guards: Mapping[str, Any]) -> None:
    """``guards`` describe the enforcement of the plan's statistics: a guard looser than the bound
    the noise is counted for was printed as the enforcement of a certified report (a guard of
    ||x|| <= 50 beside the x_bound 5 the report's accounting used: within target), another object
    failed with a bare AttributeError, a name of no statistic was dropped silently."""
    if not isinstance(guards, Mapping):  # "x", [g]: a bare AttributeError; an array numpy's ValueError
        raise TypeError(f"guards must be a mapping of statistic name -> SensitivityGuard, got {guards!r}")
    for name, g in guards.items():
        stat = plan.statistic(name)
        if not all(hasattr(g, k) for k in ("mode", "x_bound", "y_low", "y_high")):
            raise TypeError(f"guards[{name!r}] must be a SensitivityGuard, got {type(g).__name__}")
        # a constant y (PSRL's 1) is not what its guard's y range bounds (its rewards)
        wide_y = stat.y_low < stat.y_high and (g.y_low < stat.y_low or g.y_high > stat.y_high)
        if g.x_bound > stat.x_bound or wide_y:
            raise PrivacyParameterError(
                f"guards[{name!r}] enforces ||x|| <= {g.x_bound:g}, y in [{g.y_low:g}, {g.y_high:g}], looser "
                f"than the plan's ||x|| <= {stat.x_bound:g}, y in [{stat.y_low:g}, {stat.y_high:g}] the "
                "noise is counted for: pass the guards of this plan's agent"
            )


def privacy_report_from_calibration(
    algorithm: str,
    cal: Calibration,
    *,
    plan: ReleasePlan | None = None,
    guards: Mapping[str, Any] | None = None,
    label: str | None = None,
) -> dict[str, Any]:
    """The privacy report of ``algorithm`` (one of :data:`ALGORITHMS`) for a calibration ``cal``
    and its release ``plan`` (default: :func:`plan_of`). ``guards`` maps a statistic's name to the
    agent's SensitivityGuard (to describe the enforcement).

    Keys: ``algorithm, title, agent, model, pure, calibration, target (epsilon, delta),
    neighbouring, mechanisms (one dict per released family), statistics (the joint worst case per
    statistic: mu^2 per step and the neighbouring users realising it), paper (budget, steps,
    in_tool_regime), tight (budget, epsilon_at_target_delta, delta_at_target_epsilon, mu, rho,
    method), within_target (paper, tight)``. ``NonPrivate`` gives ``mechanisms = []`` and
    ``epsilon = inf``."""
    check_calibration_of(algorithm, cal)  # another algorithm's: a bare AttributeError in plan_of
    kind = cal.kind
    plan = plan_of(algorithm, cal) if plan is None else _check_plan_fits(plan, cal)  # a given one must fit
    rep: dict[str, Any] = {
        "algorithm": algorithm,
        "title": plan.title,
        "agent": label,
        "model": kind,
        "pure": bool(getattr(cal, "pure", False)),
        "calibration": getattr(cal, "calibration", "paper"),
        "mechanism": plan.mechanism,
        "sampler": sampler_section(plan),
        "target": {"epsilon": getattr(cal, "epsilon", None), "delta": getattr(cal, "delta", None)},
        "outside_guarantee": SIMULATION_ONLY,
        "neighbouring": (
            "user-level: one user (a whole H-step trajectory) replaced; "
            + (
                "every later user's data may change adaptively through the releases (JDP, Billboard lemma)"
                if kind == "jdp"
                else "everything the user sends is randomized on the user's side (LDP)"
                if kind == "ldp"
                else "no privacy"
            )
        ),
    }
    if kind == "none":
        rep.update(
            mechanisms=[],
            statistics=[],
            paper={"budget": (math.inf, 0.0), "steps": [], "in_tool_regime": True},
            tight=tight_section(math.inf, 0.0, 1.0, None, None, "no noise"),
            within_target={"paper": False, "tight": False},
        )
        rep["target"] = {"epsilon": None, "delta": None}
        return rep
    guards = {} if guards is None else guards
    _check_guards(plan, guards)
    scales = {k: check_positive_real(getattr(cal, k), f"cal.{k}") for k in plan.scale_keys}
    stats = _statistics(plan, scales)  # before _entry: sigma 0 / 1e-300 were ZeroDivision / OverflowError
    mechs = [_entry(f, plan, cal, guards) for f in plan.families]
    paper = {"lsvi_ucb": _paper_lsvi, "psrl": _paper_psrl}.get(algorithm, _paper_vtr)(cal, mechs)
    tight = _tight(cal, plan, stats, mechs)
    eps_t, dlt_t = cal.target()
    rep["regret_side"] = regret_side(algorithm, cal)
    rep.update(
        mechanisms=mechs,
        statistics=stats,
        paper=paper,
        tight=tight,
        within_target={
            # the paper's Gaussian argument is made for the continuous law (its Laplace one holds for
            # the discrete Laplace on lattice data, the rounding paid by paper_lattice_factor)
            "paper": _within(paper["budget"], eps_t, dlt_t)
            and paper["in_tool_regime"]
            and (plan.sampler != "discrete" or plan.noise == "laplace"),
            "tight": _within(tight["budget"], eps_t, dlt_t),
        },
    )
    return rep


class PrivacyReport(Mapping[str, Any]):
    """The privacy report of an agent: ``print(report)`` reads it (the text of
    :func:`format_privacy_report`); code reads it as a mapping
    (``report["tight"]["epsilon_at_target_delta"]``)
    or as a plain dict (``to_dict()``)."""

    def __init__(self, data: dict[str, Any]):
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._data)

    def __str__(self) -> str:
        return format_privacy_report(self._data)

    def __repr__(self) -> str:
        t, tight = self._data["target"], self._data["tight"]
        return (
            f"<PrivacyReport {self._data['agent'] or self._data['title']}: target (eps, delta) = "
            f"({_fmt(t['epsilon'])}, {_fmt(t['delta'])}), "
            f"certified eps {_fmt(tight['epsilon_at_target_delta'])}"
            " (print it to read it)>"
        )


def privacy_report(agent: Any) -> PrivacyReport:
    """The privacy report of an agent: its ``release_plan()``, its ``calibration`` and its
    sensitivity guards (``agent.guards``); see :func:`privacy_report_from_calibration`.
    ``agent.privacy_report()`` calls this; ``print`` it to read it."""
    cal = getattr(agent, "calibration", None)
    if not isinstance(cal, Calibration) or not hasattr(agent, "release_plan"):
        raise TypeError(f"{type(agent).__name__} has no calibration and release plan to report on")
    plan = agent.release_plan()
    rep = privacy_report_from_calibration(
        plan.algorithm,
        cal,
        plan=plan,
        guards=getattr(agent, "guards", None),
        label=getattr(agent, "label", None),
    )
    warn_if_over_target(rep)
    return PrivacyReport(rep)


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isinf(x):
            return "inf"
        return f"{x:.4g}"
    return str(x)


def _cosine(x: list[float], x_prime: list[float]) -> str:
    """``", cos(x, x') = c"`` of the worst pair (what separates two users of equal norms and values,
    e.g. Alg. 1's x' = -x), empty when either is 0."""
    norms = math.hypot(*x) * math.hypot(*x_prime)
    if norms == 0.0:
        return ""
    return f", cos(x, x') = {_fmt(sum(u * v for u, v in zip(x, x_prime, strict=True)) / norms)}"


def format_privacy_report(report: Mapping[str, Any]) -> str:
    """A printable text form of :func:`privacy_report` (also ``str(report)``)."""
    check_report(report)
    lines = []
    t = report["target"]
    lines.append(f"Privacy report: {report['title']}" + (f" - {report['agent']}" if report["agent"] else ""))
    lines.append(
        f"  model: {report['model']}{' (pure)' if report['pure'] else ''}, "
        f"calibration: {report['calibration']}, target (eps, delta) = "
        f"({_fmt(t['epsilon'])}, {_fmt(t['delta'])})"
    )
    lines.append(f"  neighbouring: {report['neighbouring']}")
    lines.append(format_sampler(report.get("sampler")))
    if not report["mechanisms"]:
        lines.append("  no mechanism: nothing is private (epsilon = inf)")
        return "\n".join(lines)
    lines.append("  released families:")
    for m in report["mechanisms"]:
        scale = (
            f"sigma = {_fmt(m['scale'])}" if m["noise"] == "gaussian" else f"Laplace b = {_fmt(m['scale'])}"
        )
        sym = f", matrix noise (Z' + Z'^T)/{_fmt(m['sym_divisor'])}" if m["sym_divisor"] else ""
        lines.append(f"   - {m['name']} [{m['paper']}]: {m['site']}")
        if m["draws_per_user"] is not None:
            lines.append(
                f"       statistic {m['statistic']} ({m['form']}); {m['draws_per_user']} {m['counted_as']} "
                f"(paper counts {m['draws_per_user_paper']}), {m['total_draws_per_user']} in all"
            )
        else:
            lines.append(f"       statistic {m['statistic']} ({m['form']}); {m['counted_as']}")
        lines.append(f"       {m['norm']} sensitivity {_fmt(m['sensitivity'])} ({m['sensitivity_source']})")
        lines.append(f"       enforced by: {m['enforced_by']}")
        lines.append(f"       noise: {m['noise']} ({m['scale_key']}), {scale}{sym}")
    for s in report["statistics"]:
        lines.append(
            f"  joint worst case of {s['statistic']} ({', '.join(s['families'])}): mu^2 = "
            f"{_fmt(s['mu_squared_per_step'])} per step, x {s['instances']} steps; realised by "
            f"||x|| = {_fmt(math.hypot(*s['worst_x']))}, y = {_fmt(s['worst_y'])} vs "
            f"||x'|| = {_fmt(math.hypot(*s['worst_x_prime']))}, y' = {_fmt(s['worst_y_prime'])}"
            + _cosine(s["worst_x"], s["worst_x_prime"])
        )
    rs = report.get("regret_side")
    if rs:
        lines.append(
            f"  regret side ({rs['rule']}; post-processing, no privacy cost): {rs['regularization']}; "
            f"bonus {rs['bonus']}; radius {_fmt(rs['radius'])} (used {_fmt(rs['radius_used'])}); "
            f"noise bounds at the worst release: matrix {_fmt(rs['noise_bound_matrix'])}, "
            f"vector {_fmt(rs['noise_bound_vector'])}" + (f"; B = {rs['batches']}" if "batches" in rs else "")
        )
    p = report["paper"]
    lines.append(
        f"  (a) paper's composition argument (App. tools, paper's delta split): "
        f"(eps, delta) = ({_fmt(p['budget'][0])}, {_fmt(p['budget'][1])})"
        + (
            ""
            if p["in_tool_regime"]
            else "  [a per-draw eps >= 1: outside the Gaussian mechanism tool's regime, certifies nothing]"
        )
        + (
            f"  [vacuous: the chain's eps passes {VACUOUS_EPSILON:.1f}, where e^eps overflows, so it "
            "certifies nothing for this noise; the tight accountant (b) is the certificate]"
            if math.isinf(p["budget"][0])
            else ""
        )
    )
    for s in p["steps"]:
        lines.append(f"       {s['step']}: ({_fmt(s['epsilon'])}, {_fmt(s['delta'])})  <- {s['tool']}")
    tt = report["tight"]
    lines.append(f"  (b) tight accountant: {tt['method']}")
    if tt["mu"] is not None:
        lines.append(f"       mu = {_fmt(tt['mu'])}, rho (zCDP) = {_fmt(tt['rho'])}")
    lines.append(
        f"       eps at target delta = {_fmt(tt['epsilon_at_target_delta'])}; "
        f"delta at target eps = {_fmt(tt['delta_at_target_epsilon'])}"
    )
    lines.append(f"  verdict: {verdict_words(report)}")
    lines.append(f"  not covered: {', '.join(SIMULATION_ONLY['outputs'])}: {SIMULATION_ONLY['note']}")
    return "\n".join(lines)


def verdict_words(report: Mapping[str, Any]) -> str:
    """What the two accounts of a report mean together, in words."""
    t, w = report["target"], report["within_target"]
    eps_t, eps_p = report["tight"]["epsilon_at_target_delta"], report["paper"]["budget"][0]
    target = f"(eps, delta) = ({_fmt(t['epsilon'])}, {_fmt(t['delta'])})"
    exact = f"the exact accountant certifies eps = {_fmt(eps_t)} at the target delta"
    if not w["tight"]:
        return f"NOT within the target {target}: {exact}, more than the target (the noise is too small)"
    if w["paper"]:
        return (
            f"within the target {target}: {exact}, and the paper's argument certifies it too "
            f"(eps = {_fmt(eps_p)})"
        )
    if _within(report["paper"]["budget"], t["epsilon"], t["delta"]):
        # the chain's figure is within the target, but the chain does not apply (within_target)
        why: list[str] = [
            "a step of its chain is outside its tools' regime (the Gaussian mechanism's eps < 1)"
        ] * (not report["paper"]["in_tool_regime"])
        if report["sampler"]["name"] == "discrete":
            why.append("its chain is made for the continuous Gaussian, not the discrete sampler in use")
        return (
            f"within the target {target}: {exact}; the paper's composition argument does not certify "
            f"this noise ({'; '.join(why)}; the chain would give eps = {_fmt(eps_p)})"
        )
    if math.isinf(eps_p):
        return (
            f"within the target {target}: {exact}; the paper's composition argument certifies nothing "
            "for this noise (its chain's bound is vacuous, eps = inf: the noise is calibrated for the "
            "exact accountant, not for the appendix's composition chain)"
        )
    return (
        f"within the target {target}: {exact}; the paper's composition argument does not certify this "
        f"noise (it would need eps = {_fmt(eps_p)}: the noise is calibrated for the exact accountant, "
        "not for the appendix's composition chain)"
    )


def summarize_privacy_report(report: dict[str, Any]) -> dict[str, Any]:
    """A compact, JSON-ready digest of :func:`privacy_report` (for run manifests): the target, the
    calibration, the (eps, delta) of the paper's argument and of the tight accountant, the tight
    ``mu``, and per released family its name, scale key and scale, instances, draws, norm and
    sensitivity (the summary's "sigma used" reads the first family). Infinite values become the
    string ``"inf"``."""
    check_report(report)

    def num(x: Any) -> Any:
        return "inf" if isinstance(x, float) and math.isinf(x) else x

    return {
        "algorithm": report["algorithm"],
        "model": report["model"],
        "pure": report["pure"],
        "calibration": report["calibration"],
        "mechanism": report.get("mechanism"),
        "sampler": (report.get("sampler") or {}).get("name"),
        "target": dict(report["target"]),
        "paper": {
            "epsilon": num(report["paper"]["budget"][0]),
            "delta": num(report["paper"]["budget"][1]),
            "in_tool_regime": report["paper"]["in_tool_regime"],
        },
        "tight": {
            "epsilon": num(report["tight"]["budget"][0]),
            "delta": num(report["tight"]["budget"][1]),
            "mu": report["tight"]["mu"],
            "method": report["tight"]["method"],
        },
        "within_target": dict(report["within_target"]),
        "mechanisms": [
            {
                k: mm[k]
                for k in (
                    "name",
                    "scale_key",
                    "scale",
                    "instances",
                    "draws_per_user",
                    "norm",
                    "sensitivity",
                    "noise",
                )
            }
            for mm in report["mechanisms"]
        ],
    }
