"""Privacy reports: every mechanism an agent releases and the (eps, delta) it yields, paper vs tight.

Paper: Luyo et al., App. B (privacy of Cor. 1-2), App. C (Alg. 3), App. D (privacy of Alg. 2), App. "Differential Privacy Tools".
"""
# A report lists, per released mechanism family: which trees / vectors / local randomizers, how
# many noise draws one user's data enters (nodes per user and tree, releases per user), the
# sensitivity (norm, value, where it comes from and how the agent enforces it) and the noise
# scale. It then composes them twice:
#   (a) "paper": the paper's own argument recomputed forward from the appendix's tools with the
#       agent's ACTUAL noise scales and the paper's delta allocation (per node / per release
#       budget from the Gaussian or Laplace mechanism -> advanced composition over the tree's
#       nodes -> over H (and over the B releases in Alg. 2) -> simple composition over the
#       families -> post-processing -> Billboard lemma). For a paper-calibrated agent this comes
#       back at or below the target; for a tight-calibrated one it does not (the paper's tools
#       cannot certify the smaller noise), which is the point of (b).
#   (b) "tight": privrl.privacy.accounting on the exact per-user composition (analytic Gaussian
#       on the composed Gaussian; simple composition of Laplace releases for pure DP).
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from privrl.privacy.accounting import PrivacyAccountant, tree_nodes_per_leaf
from privrl.privacy.calibration import (
    calibrate_lsvi_ucb,
    calibrate_ucrl_vtr,
    calibrate_ucrl_vtr_plus,
    lsvi_ucb_releases,
    lsvi_ucb_u_sensitivity,
    ucrl_vtr_l1_sensitivities,
    ucrl_vtr_l2_sensitivity,
)
from privrl.privacy.mechanisms import (
    advanced_composition,
    billboard_jdp,
    gaussian_mechanism_epsilon,
    laplace_mechanism_epsilon,
    post_processing,
    simple_composition,
)

__all__ = [
    "ALGORITHMS",
    "privacy_report",
    "privacy_report_from_calibration",
    "format_privacy_report",
    "summarize_privacy_report",
    "calibration_comparison",
    "format_calibration_comparison",
]

ALGORITHMS = ("ucrl_vtr", "ucrl_vtr_plus", "lsvi_ucb")
_TITLES = {
    "ucrl_vtr": "UCRL-VTR (Alg. 1)",
    "ucrl_vtr_plus": "UCRL-VTR+ (Alg. 3)",
    "lsvi_ucb": "batched LSVI-UCB (Alg. 2)",
}


# ============================================================================================
# Mechanism inventory
# ============================================================================================
def _guard_text(guard: Any, x: str, y: str, default: str) -> str:
    if guard is None:
        return default
    return (f"SensitivityGuard(mode={guard.mode!r}): ||{x}|| <= {guard.x_bound:g}, "
            f"{y} in [{guard.y_low:g}, {guard.y_high:g}] checked where user data enters the "
            f"mechanism ({'clipped and counted' if guard.mode == 'clip' else 'rejected'})")


def _entry(name: str, paper: str, site: str, statistic: str, instances: int,
           per_instance: Optional[int], per_instance_paper: int, norm: str, sensitivity: float,
           sensitivity_source: str, enforced_by: str, noise: str, scale: float,
           sym_divisor: Optional[float], mechanism: str = "tree",
           l2_multiplier: Optional[float] = None) -> Dict[str, Any]:
    """One mechanism family. ``per_instance``: noise draws a user's data enters per instance
    (tree nodes, releases); ``l2_multiplier``: the user's L2 sensitivity per instance in units
    of ``sensitivity`` (``sqrt(per_instance)`` for trees and independent releases; the
    continual-release mechanism's column-norm multiplier otherwise, ``per_instance`` None)."""
    if l2_multiplier is None:
        l2_multiplier = math.sqrt(per_instance)
    e: Dict[str, Any] = {
        "name": name, "paper": paper, "site": site, "statistic": statistic,
        "instances": instances, "mechanism": mechanism,
        "draws_per_user": per_instance,            # nodes (trees) or releases per instance
        "draws_per_user_paper": per_instance_paper,  # the count the paper's argument uses
        "total_draws_per_user": None if per_instance is None else instances * per_instance,
        "l2_multiplier": l2_multiplier,
        "norm": norm, "sensitivity": sensitivity, "sensitivity_source": sensitivity_source,
        "enforced_by": enforced_by, "noise": noise, "scale": scale, "sym_divisor": sym_divisor,
    }
    if noise == "gaussian":
        e["sigma"] = scale
        e["mu_squared_per_user"] = instances * (l2_multiplier * sensitivity / scale) ** 2
    else:
        e["laplace_b"] = scale
        e["epsilon_per_user"] = instances * per_instance * sensitivity / scale
    return e


def _vtr_inventory(cal: Dict[str, Any], guard: Any, plus: bool, guard2: Any = None) -> List[Dict]:
    H, K, d, kind, pure = cal["H"], cal["K"], cal["d"], cal["kind"], cal["pure"]
    noise = cal["noise"]
    jdp = kind == "jdp"
    n_exact = tree_nodes_per_leaf(K) if jdp else 1
    n_paper = cal["K0"] if jdp else 1
    sym = cal["sym_divisor"]
    if jdp:
        site_m = f"server: {H} binary trees of symmetric d x d matrices over K = {K} leaves"
        site_v = f"server: {H} binary trees of d-vectors over K = {K} leaves"
        what = "nodes per user and tree"
    else:
        site_m = f"user: LocalRandomizer, one symmetric d x d release per step (H = {H})"
        site_v = f"user: LocalRandomizer, one d-vector release per step (H = {H})"
        what = "releases per user and step"
    families = []
    if not plus:
        x_txt = _guard_text(guard, "X_{k,h}", "y_{k,h}", "||X_{k,h}|| <= H, y in [0, H] (assumed)")
        if pure:
            l1m, l1v = ucrl_vtr_l1_sensitivities(H, d)
            families = [
                ("Lambda", "B_{k,h} (X X^T)", "X_{k,h} X_{k,h}^T", site_m, "L1 (entrywise)", l1m,
                 "2 ||X||_1^2 <= 2 d H^2 (calibration.ucrl_vtr_l1_sensitivities)",
                 cal["laplace_b"], x_txt),
                ("u", "g_{k,h} (X y)", "X_{k,h} y_{k,h}", site_v, "L1", l1v,
                 "2 ||X||_1 |y| <= 2 sqrt(d) H^2", cal["laplace_b_vector"], x_txt),
            ]
        else:
            s2 = ucrl_vtr_l2_sensitivity(H)
            families = [
                ("Lambda", "B_{k,h} (X X^T)", "X_{k,h} X_{k,h}^T", site_m, "L2 (Frobenius)", s2,
                 "App. B: ||X X^T||_F <= H^2, neighbours differ by both terms: 2 H^2",
                 cal["sigma_B"], x_txt),
                ("u", "g_{k,h} (X y)", "X_{k,h} y_{k,h}", site_v, "L2", s2,
                 "App. B: ||X y||_2 <= H^2: 2 H^2", cal["sigma_g"], x_txt),
            ]
    else:
        t1 = _guard_text(guard, "phi_V / sigma_bar", "V / sigma_bar",
                         "||phi_V / sigma_bar|| <= sqrt(d) (assumed)")
        t2 = _guard_text(guard2, "phi_{V^2}", "V^2", "||phi_{V^2}|| <= H^2 (assumed)")
        if pure:
            l1 = (2.0 * d * d, 2.0 * d ** 1.5, 2.0 * d * H ** 4, 2.0 * math.sqrt(d) * H ** 4)
            src = ("2 ||x||_1^2 <= 2 d^2", "2 ||x||_1 |y| <= 2 d^{3/2}",
                   "2 ||x||_1^2 <= 2 d H^4", "2 ||x||_1 |y| <= 2 sqrt(d) H^4")
            scales = (cal["sigma_B1"], cal["sigma_f"], cal["sigma_B2"], cal["sigma_g"])
            norm = ("L1 (entrywise)", "L1", "L1 (entrywise)", "L1")
        else:
            l1 = (2.0 * d, 2.0 * d, 2.0 * H ** 4, 2.0 * H ** 4)
            src = ("App. C: ||sigma_bar^-2 phi phi^T||_F <= d: 2d", "||sigma_bar^-2 phi V||_2 <= d: 2d",
                   "||phi_{V^2} phi_{V^2}^T||_F <= H^4: 2 H^4", "||phi_{V^2} V^2||_2 <= H^4: 2 H^4")
            scales = (cal["sigma_B1"], cal["sigma_f"], cal["sigma_B2"], cal["sigma_g"])
            norm = ("L2 (Frobenius)", "L2", "L2 (Frobenius)", "L2")
        families = [
            ("Lambda^", "B^1 (weighted phi_V phi_V^T)", "phi_V phi_V^T / sigma_bar^2", site_m,
             norm[0], l1[0], src[0], scales[0], t1),
            ("u^", "f (weighted phi_V V)", "phi_V V / sigma_bar^2", site_v, norm[1], l1[1], src[1],
             scales[1], t1),
            ("Lambda~", "B^2 (phi_{V^2} phi_{V^2}^T)", "phi_{V^2} phi_{V^2}^T", site_m, norm[2],
             l1[2], src[2], scales[2], t2),
            ("u~", "g (phi_{V^2} V^2)", "phi_{V^2} V^2", site_v, norm[3], l1[3], src[3], scales[3], t2),
        ]
    mech, mult = _continual(cal, jdp)
    out = []
    for name, paper, stat, site, norm_, sens, src_, scale, enf in families:
        is_matrix = name.startswith("Lambda")
        if mech != "tree":
            site = site.replace("binary trees", f"{mech} continual-release mechanisms")
        out.append(_entry(
            name=name, paper=paper, site=site, statistic=stat, instances=H,
            per_instance=n_exact if mech == "tree" else None, per_instance_paper=n_paper,
            norm=norm_, sensitivity=sens, sensitivity_source=src_, enforced_by=enf, noise=noise,
            scale=scale, sym_divisor=sym if is_matrix else None,
            mechanism=mech if jdp else "local randomizer", l2_multiplier=mult))
        out[-1]["counted_as"] = what if mech == "tree" else (
            f"one Gaussian per user and mechanism, L2 multiplier {mult:.4g}")
    return out


def _continual(cal: Dict[str, Any], jdp: bool):
    """(mechanism, l2 multiplier or None) of the JDP server's prefix-sum mechanism."""
    mech = cal.get("mechanism", "tree") if jdp else "tree"
    if mech == "tree":
        return "tree", None
    return mech, float(cal["mechanism_l2_multiplier"])


def _lsvi_inventory(cal: Dict[str, Any], guard_text: Optional[str],
                    u_releases: Optional[int]) -> List[Dict]:
    H, d, B, pure = cal["H"], cal["d"], cal["B"], cal["pure"]
    nu = lsvi_ucb_releases(cal["K"], B) if u_releases is None else int(u_releases)
    enf = guard_text or ("||phi(s,a)|| <= 1 (Asm. 1, checked when the LinearMDP is built), "
                         "r in [0, 1], V projected on [0, H]")
    if pure:
        sl, su = 2.0 * d, 2.0 * math.sqrt(d) * (H + 1)
        srcl = "2 ||phi||_1^2 <= 2d (calibration.lsvi_ucb_laplace_scales)"
        srcu = "2 ||phi||_1 (r + V) <= 2 sqrt(d) (H + 1)"
        norm_l, norm_u = "L1 (entrywise)", "L1"
    else:
        sl, su = 2.0, lsvi_ucb_u_sensitivity(H)
        srcl = "App. D: ||phi phi^T||_F <= 1: 2 (the paper's 'L1' used as L2)"
        srcu = "App. D: ||phi (r + V)||_2 <= H + 1, only the changed user's term differs: 2(H + 1)"
        norm_l, norm_u = "L2 (Frobenius)", "L2"
    mech, mult = _continual(cal, True)
    kind_txt = "binary trees" if mech == "tree" else f"{mech} continual-release mechanisms"
    lam = _entry(
        name="Lambda", paper="H^b_h (tree prefix in Lambda~_{b,h})", statistic="phi phi^T",
        site=f"server: {H} {kind_txt} of symmetric d x d matrices over B = {B} batch leaves",
        instances=H, per_instance=tree_nodes_per_leaf(nu) if mech == "tree" else None,
        per_instance_paper=cal["B0"], norm=norm_l, sensitivity=sl, sensitivity_source=srcl,
        enforced_by=enf, noise=cal["noise"], scale=cal["sigma_Lambda"],
        sym_divisor=cal["sym_divisor"], mechanism=mech, l2_multiplier=mult)
    lam["counted_as"] = ("nodes per user and tree" if mech == "tree" else
                         f"one Gaussian per user and mechanism, L2 multiplier {mult:.4g}")
    u = _entry(
        name="u", paper="eta^b_h (fresh per batch release of u~_{b,h})",
        statistic="sum_j phi_j (r_j + V_{b,h+1}(s'_j))",
        site=f"server: {H} x {nu} vector releases (one per batch end and step, fresh noise)",
        instances=H, per_instance=nu, per_instance_paper=B, norm=norm_u, sensitivity=su,
        sensitivity_source=srcu, enforced_by=enf, noise=cal["noise"], scale=cal["sigma_u"],
        sym_divisor=None, mechanism="fresh noise per release")
    u["counted_as"] = "releases per user and step"
    return [lam, u]


# ============================================================================================
# (a) The paper's composition argument, recomputed forward
# ============================================================================================
def _step(what: str, budget, tool: str) -> Dict[str, Any]:
    return {"step": what, "epsilon": budget[0], "delta": budget[1], "tool": tool}


def _tree_equivalent_sigma(m: Dict[str, Any], n_ref: int) -> float:
    """The node sigma of the binary tree (``n_ref`` nodes per user, the paper's K0 / B0) whose
    composition has the same GDP ``mu`` as mechanism ``m``: the paper's tree argument then
    certifies ``m`` too (privrl.privacy.continual). The tree itself: its own sigma."""
    if m.get("mechanism", "tree") == "tree":
        return m["scale"]
    return m["scale"] * math.sqrt(n_ref) / m["l2_multiplier"]


def _paper_vtr(cal: Dict[str, Any], mechs: List[Dict]) -> Dict[str, Any]:
    """Cor. 1 / Cor. 2 / App. C privacy proofs (and the pure-DP variants), forward."""
    eps_t, dlt, H, kind = cal["epsilon"], cal["delta"], cal["H"], cal["kind"]
    F = len(mechs)  # 2 families (Alg. 1) or 4 (Alg. 3)
    steps: List[Dict[str, Any]] = []
    if cal["pure"]:
        budgets = []
        for m in mechs:
            e = laplace_mechanism_epsilon(m["sensitivity"], m["scale"])
            steps.append(_step(f"{m['name']}: one {'node' if kind == 'jdp' else 'release'}",
                               (e, 0.0), "App. Laplace Mechanism"))
            budgets += [(e, 0.0)] * (m["instances"] * m["draws_per_user_paper"])
        total = simple_composition(budgets)
        steps.append(_step(f"all {len(budgets)} noise draws of a user", total,
                           "App. Simple Composition"))
        return {"budget": total, "steps": steps, "in_tool_regime": True}
    if kind == "ldp":
        d1 = dlt / (F * H)
        budgets, regime = [], True
        for m in mechs:
            e1 = gaussian_mechanism_epsilon(m["sensitivity"], m["scale"], d1)
            regime &= e1 < 1.0
            steps.append(_step(f"{m['name']}: one local release", (e1, d1),
                               "App. Gaussian Mechanism (delta/(F H))"))
            budgets += [(e1, d1)] * H
        total = simple_composition(budgets)
        steps.append(_step(f"{F * H} local releases of a user", total, "App. Simple Composition"))
        return {"budget": total, "steps": steps, "in_tool_regime": regime}
    # JDP: family (eps/F, delta/F) <- advanced over H <- tree (advanced over K0 nodes) <- node
    d_fam = dlt / F
    d_h = d_fam / (2 * H)
    K0 = cal["K0"]
    d0 = d_h / (2 * K0)
    fam_budgets, regime = [], True
    for m in mechs:
        e0 = gaussian_mechanism_epsilon(m["sensitivity"], _tree_equivalent_sigma(m, K0), d0)
        regime &= e0 < 1.0
        eq = "" if m.get("mechanism", "tree") == "tree" else (
            f" of the binary tree with the same GDP mu as {m['mechanism']}")
        steps.append(_step(f"{m['name']}: one tree node{eq}", (e0, d0),
                           "App. Gaussian Mechanism (delta/(2F H K0))"))
        tree = advanced_composition(e0, d0, K0, d_h / 2)
        steps.append(_step(f"{m['name']}: tree of step h ({K0} nodes per prefix)", tree,
                           "App. Advanced composition / Tree-based method"))
        fam = advanced_composition(tree[0], tree[1], H, d_fam / 2)
        steps.append(_step(f"{m['name']}: all H = {H} trees", fam, "App. Advanced composition"))
        fam_budgets.append(fam)
    total = simple_composition(fam_budgets)
    steps.append(_step(f"{F} families", total, "App. Simple Composition"))
    total = post_processing(total)
    steps.append(_step("(Lambda~, w~) = post-processing", total, "App. Post-processing"))
    total = billboard_jdp(total)
    steps.append(_step("policies of all users", total, "App. Billboard Lemma (JDP)"))
    return {"budget": total, "steps": steps, "in_tool_regime": regime}


def _paper_lsvi(cal: Dict[str, Any], mechs: List[Dict]) -> Dict[str, Any]:
    """App. D privacy proof of Alg. 2 (and App. "Pure joint DP in the linear setting"), forward."""
    dlt, H, B, B0 = cal["delta"], cal["H"], cal["B"], cal["B0"]
    lam, u = mechs
    steps: List[Dict[str, Any]] = []
    if cal["pure"]:
        el = laplace_mechanism_epsilon(lam["sensitivity"], lam["scale"])
        eu = laplace_mechanism_epsilon(u["sensitivity"], u["scale"])
        steps.append(_step("Lambda: one tree node", (el, 0.0), "App. Laplace Mechanism"))
        steps.append(_step("u: one release", (eu, 0.0), "App. Laplace Mechanism"))
        total = simple_composition([(el, 0.0)] * (H * B0) + [(eu, 0.0)] * (H * B))
        steps.append(_step(f"H B0 = {H * B0} nodes + H B = {H * B} releases", total,
                           "App. Simple Composition"))
        return {"budget": total, "steps": steps, "in_tool_regime": True}
    d_p = dlt / (4 * H)        # delta'  of M^Lambda_h and M^u_h
    d_1 = d_p / (2 * B)        # delta'_1 of one prefix / one u release
    d_0 = d_1 / (2 * B0)       # one node
    e0 = gaussian_mechanism_epsilon(lam["sensitivity"], _tree_equivalent_sigma(lam, B0), d_0)
    eq = "" if lam.get("mechanism", "tree") == "tree" else (
        f" of the binary tree with the same GDP mu as {lam['mechanism']}")
    steps.append(_step(f"Lambda: one tree node{eq}", (e0, d_0), "App. Gaussian Mechanism"))
    pre = advanced_composition(e0, d_0, B0, d_1 / 2)
    steps.append(_step(f"Lambda: one prefix sum ({B0} nodes)", pre, "App. Tree-based method"))
    m_l = advanced_composition(pre[0], pre[1], B, d_p / 2)
    steps.append(_step(f"M^Lambda_h: {B} prefix sums", m_l, "App. Advanced composition"))
    eu = gaussian_mechanism_epsilon(u["sensitivity"], u["scale"], d_1)
    steps.append(_step("u: one release u~_{b,h}", (eu, d_1), "App. Gaussian Mechanism"))
    m_u = advanced_composition(eu, d_1, B, d_p / 2)
    steps.append(_step(f"M^u_h: {B} releases", m_u, "App. Advanced composition (adaptive)"))
    per_h = simple_composition([m_l, m_u])
    steps.append(_step("(M^Lambda_h, M^u_h)", per_h, "App. Simple Composition"))
    total = advanced_composition(per_h[0], per_h[1], H, dlt / 2)
    steps.append(_step(f"H = {H} adaptive steps", total, "App. Advanced composition"))
    total = billboard_jdp(post_processing(total))
    steps.append(_step("(Lambda~, w~) and all users' policies", total,
                       "App. Post-processing + Billboard Lemma"))
    regime = e0 < 1.0 and eu < 1.0
    return {"budget": total, "steps": steps, "in_tool_regime": regime}


# ============================================================================================
# (b) Tight accountant
# ============================================================================================
def _tight(cal: Dict[str, Any], mechs: List[Dict]) -> Dict[str, Any]:
    acc = PrivacyAccountant()
    for m in mechs:
        if m["noise"] == "gaussian":
            # one Gaussian per instance with the user's whole L2 sensitivity on it
            acc.add_gaussian(m["sensitivity"] * m["l2_multiplier"], m["scale"], m["instances"],
                             m["name"])
        else:
            acc.add_laplace(m["sensitivity"], m["scale"], m["total_draws_per_user"], m["name"])
    eps_t, dlt_t = cal["epsilon"], cal["delta"]
    if cal["pure"]:
        e = acc.epsilon(0.0)
        return {"budget": (e, 0.0), "epsilon_at_target_delta": e, "delta_at_target_epsilon":
                acc.delta(eps_t), "mu": None, "rho": acc.rho,
                "composed_sensitivity_over_sigma": None, "method": acc.method()}
    e = acc.epsilon(dlt_t)
    dd = acc.delta(eps_t)
    return {"budget": (e, dlt_t), "epsilon_at_target_delta": e, "delta_at_target_epsilon": dd,
            "mu": acc.mu, "rho": acc.rho, "composed_sensitivity_over_sigma": acc.mu,
            "method": acc.method()}


# ============================================================================================
# Entry points
# ============================================================================================
def _within(budget, eps_t: float, dlt_t: float, rel: float = 1e-9) -> bool:
    return budget[0] <= eps_t * (1 + rel) and budget[1] <= dlt_t * (1 + rel) + 1e-300


def privacy_report_from_calibration(algorithm: str, cal: Dict[str, Any], *, guard: Any = None,
                                    guard2: Any = None, guard_text: Optional[str] = None,
                                    u_releases: Optional[int] = None,
                                    label: Optional[str] = None) -> Dict[str, Any]:
    """The privacy report of ``algorithm`` in :data:`ALGORITHMS` for the calibration dict ``cal``
    of the matching ``calibrate_*`` (no agent needed). ``guard``/``guard2`` are the agent's
    :class:`~privrl.agents.base.SensitivityGuard` objects (to describe the enforcement);
    ``u_releases`` overrides the number of u releases per user and step of Alg. 2 (default
    ``lsvi_ucb_releases(K, B)``, the number of batch-end releases, each summing all earlier users).

    Keys: ``algorithm, title, agent, model, pure, calibration, target (epsilon, delta),
    neighbouring, mechanisms (list of dicts, see :func:`_entry`), paper (budget, steps,
    in_tool_regime), tight (budget, epsilon_at_target_delta, delta_at_target_epsilon, mu, rho,
    method), within_target (paper, tight)``. ``NonPrivate`` gives ``mechanisms = []`` and
    ``epsilon = inf``.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    kind = cal["kind"]
    rep: Dict[str, Any] = {
        "algorithm": algorithm, "title": _TITLES[algorithm], "agent": label, "model": kind,
        "pure": bool(cal.get("pure", False)), "calibration": cal.get("calibration", "paper"),
        "target": {"epsilon": cal.get("epsilon"), "delta": cal.get("delta")},
        "neighbouring": ("user-level: one user (a whole H-step trajectory) replaced; "
                         + ("every later user's data may change adaptively through the "
                            "releases (JDP, Billboard lemma)" if kind == "jdp" else
                            "everything the user sends is randomized on the user's side (LDP)"
                            if kind == "ldp" else "no privacy")),
    }
    if kind == "none":
        rep.update(mechanisms=[], paper={"budget": (math.inf, 0.0), "steps": [],
                                         "in_tool_regime": True},
                   tight={"budget": (math.inf, 0.0), "epsilon_at_target_delta": math.inf,
                          "delta_at_target_epsilon": 1.0, "mu": None, "rho": None,
                          "composed_sensitivity_over_sigma": None, "method": "no noise"},
                   within_target={"paper": False, "tight": False})
        rep["target"] = {"epsilon": None, "delta": None}
        return rep
    if algorithm == "lsvi_ucb":
        mechs = _lsvi_inventory(cal, guard_text, u_releases)
        paper = _paper_lsvi(cal, mechs)
    else:
        mechs = _vtr_inventory(cal, guard, algorithm == "ucrl_vtr_plus", guard2)
        paper = _paper_vtr(cal, mechs)
    tight = _tight(cal, mechs)
    eps_t, dlt_t = cal["epsilon"], cal["delta"]
    rep.update(mechanisms=mechs, paper=paper, tight=tight,
               within_target={"paper": _within(paper["budget"], eps_t, dlt_t)
                              and paper["in_tool_regime"],
                              "tight": _within(tight["budget"], eps_t, dlt_t)})
    return rep


def privacy_report(agent: Any) -> Dict[str, Any]:
    """The privacy report of an agent (``UCRLVTR``, ``UCRLVTRPlus``, ``LSVIUCB``), built from its
    calibration dict, its privacy model and its sensitivity guards; see
    :func:`privacy_report_from_calibration` for the keys. ``agent.privacy_report()`` calls this."""
    name = getattr(agent, "name", "")
    cal = getattr(agent, "calibration", None)
    if not isinstance(cal, dict):
        raise TypeError(f"{type(agent).__name__} has no calibration dict to report on")
    label = getattr(agent, "label", None)
    if name == "UCRL-VTR+":
        return privacy_report_from_calibration(
            "ucrl_vtr_plus", cal, guard=getattr(agent, "guard", None),
            guard2=getattr(agent, "guard2", None), label=label)
    if name == "UCRL-VTR":
        return privacy_report_from_calibration("ucrl_vtr", cal, guard=getattr(agent, "guard", None),
                                               label=label)
    if name.startswith("LSVI"):
        return privacy_report_from_calibration(
            "lsvi_ucb", cal, guard_text=_lsvi_guard_text(agent),
            label=label)
    raise TypeError(f"no privacy report for agent {name!r} ({type(agent).__name__})")


def _lsvi_guard_text(agent: Any) -> Optional[str]:
    guard = getattr(agent, "guard", None)
    if guard is None:
        return None
    return (_guard_text(guard, "phi(s_h, a_h)", "r_h", None)
            + "; V_{h+1} projected on [0, H], so r + V in [0, H + 1]")


# ============================================================================================
# Text form
# ============================================================================================
def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isinf(x):
            return "inf"
        return f"{x:.4g}"
    return str(x)


def format_privacy_report(report: Dict[str, Any]) -> str:
    """A printable text form of :func:`privacy_report`."""
    lines = []
    t = report["target"]
    lines.append(f"Privacy report: {report['title']}" + (f" - {report['agent']}" if report["agent"] else ""))
    lines.append(f"  model: {report['model']}{' (pure)' if report['pure'] else ''}, "
                 f"calibration: {report['calibration']}, target (eps, delta) = "
                 f"({_fmt(t['epsilon'])}, {_fmt(t['delta'])})")
    lines.append(f"  neighbouring: {report['neighbouring']}")
    if not report["mechanisms"]:
        lines.append("  no mechanism: nothing is private (epsilon = inf)")
        return "\n".join(lines)
    lines.append("  released mechanisms:")
    for m in report["mechanisms"]:
        scale = f"sigma = {_fmt(m['scale'])}" if m["noise"] == "gaussian" else f"Laplace b = {_fmt(m['scale'])}"
        sym = f", matrix noise (Z' + Z'^T)/{_fmt(m['sym_divisor'])}" if m["sym_divisor"] else ""
        lines.append(f"   - {m['name']} [{m['paper']}]: {m['site']}")
        if m["draws_per_user"] is not None:
            lines.append(f"       statistic {m['statistic']}; {m['draws_per_user']} {m['counted_as']} "
                         f"(paper counts {m['draws_per_user_paper']}), {m['total_draws_per_user']} in all")
        else:
            lines.append(f"       statistic {m['statistic']}; {m['counted_as']}")
        lines.append(f"       {m['norm']} sensitivity {_fmt(m['sensitivity'])} ({m['sensitivity_source']})")
        lines.append(f"       enforced by: {m['enforced_by']}")
        lines.append(f"       noise: {m['noise']}, {scale}{sym}")
    p = report["paper"]
    lines.append(f"  (a) paper's composition argument (App. tools, paper's delta split): "
                 f"(eps, delta) = ({_fmt(p['budget'][0])}, {_fmt(p['budget'][1])})"
                 + ("" if p["in_tool_regime"] else "  [a per-draw eps >= 1: outside the Gaussian "
                    "mechanism tool's regime, certifies nothing]"))
    for s in p["steps"]:
        lines.append(f"       {s['step']}: ({_fmt(s['epsilon'])}, {_fmt(s['delta'])})  <- {s['tool']}")
    tt = report["tight"]
    lines.append(f"  (b) tight accountant: {tt['method']}")
    if tt["mu"] is not None:
        lines.append(f"       mu = sqrt(sum Delta^2/sigma^2) = {_fmt(tt['mu'])}, rho (zCDP) = {_fmt(tt['rho'])}")
    lines.append(f"       eps at target delta = {_fmt(tt['epsilon_at_target_delta'])}; "
                 f"delta at target eps = {_fmt(tt['delta_at_target_epsilon'])}")
    w = report["within_target"]
    lines.append(f"  within target: paper argument {'yes' if w['paper'] else 'NO'}, "
                 f"tight accountant {'yes' if w['tight'] else 'NO'}")
    return "\n".join(lines)


def summarize_privacy_report(report: Dict[str, Any]) -> Dict[str, Any]:
    """A compact, JSON-ready digest of :func:`privacy_report` (for run manifests): the target,
    the calibration, the (eps, delta) of the paper's argument and of the tight accountant, the
    tight accountant's ``mu``, and per mechanism its name, instances, draws per user, norm,
    sensitivity, noise and scale. Infinite values become the string ``"inf"``."""
    def num(x):
        if isinstance(x, float) and math.isinf(x):
            return "inf"
        return x
    return {
        "algorithm": report["algorithm"], "model": report["model"], "pure": report["pure"],
        "calibration": report["calibration"], "target": dict(report["target"]),
        "paper": {"epsilon": num(report["paper"]["budget"][0]),
                  "delta": num(report["paper"]["budget"][1]),
                  "in_tool_regime": report["paper"]["in_tool_regime"]},
        "tight": {"epsilon": num(report["tight"]["budget"][0]),
                  "delta": num(report["tight"]["budget"][1]), "mu": report["tight"]["mu"],
                  "method": report["tight"]["method"]},
        "within_target": dict(report["within_target"]),
        "mechanisms": [{k: mm[k] for k in ("name", "instances", "draws_per_user", "norm",
                                            "sensitivity", "noise", "scale")}
                       for mm in report["mechanisms"]],
    }


# ============================================================================================
# Paper vs tight side by side (for the demo / README)
# ============================================================================================
_SIGMA_KEYS = {
    "ucrl_vtr": ("sigma_B",),
    "ucrl_vtr_plus": ("sigma_B1", "sigma_B2"),
    "lsvi_ucb": ("sigma_Lambda", "sigma_u"),
}
_RADIUS_KEYS = {"ucrl_vtr": "beta", "ucrl_vtr_plus": "beta_hat", "lsvi_ucb": "beta"}


def calibration_comparison(algorithm: str, kind: str, epsilon: float, delta: float, H: int,
                           K: int, d: int, C_w: float = 1.0, p: float = 0.05,
                           batches: Any = "static") -> Dict[str, Any]:
    """Paper vs tight calibration of one algorithm at one privacy level: the noise scales, their
    ratio paper / tight, the radius beta of both, and the epsilon each release actually spends
    under the tight accountant. Keys: ``algorithm, kind, epsilon, delta, H, K, d, paper, tight
    (the two calibration dicts), rows (list of {quantity, paper, tight, ratio})``."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    cals = {}
    for c in ("paper", "tight"):
        if algorithm == "ucrl_vtr":
            cals[c] = calibrate_ucrl_vtr(kind, epsilon, delta, H, K, d, C_w, p, calibration=c)
        elif algorithm == "ucrl_vtr_plus":
            cals[c] = calibrate_ucrl_vtr_plus(kind, epsilon, delta, H, K, d, C_w, p, calibration=c)
        else:
            cals[c] = calibrate_lsvi_ucb(kind, epsilon, delta, H, K, d, p, batches, calibration=c)
    rows = []
    keys = _SIGMA_KEYS[algorithm] + (_RADIUS_KEYS[algorithm],)
    if algorithm == "lsvi_ucb":
        keys += ("c_K",)
    else:
        keys += ("Upsilon",) if algorithm == "ucrl_vtr" else ("Upsilon1", "Upsilon2")
    for k in keys:
        a, b = cals["paper"][k], cals["tight"][k]
        rows.append({"quantity": k, "paper": a, "tight": b,
                     "ratio": (a / b) if (a is not None and b) else None})
    spent = {}
    for c in ("paper", "tight"):
        r = privacy_report_from_calibration(algorithm, cals[c])
        spent[c] = r["tight"]["epsilon_at_target_delta"]
    rows.append({"quantity": "eps spent (tight accountant)", "paper": spent["paper"],
                 "tight": spent["tight"], "ratio": None})
    return {"algorithm": algorithm, "kind": kind, "epsilon": epsilon, "delta": delta, "H": H,
            "K": K, "d": d, "paper": cals["paper"], "tight": cals["tight"], "rows": rows}


def format_calibration_comparison(cmp: Dict[str, Any]) -> str:
    """Text table of :func:`calibration_comparison`."""
    head = (f"{_TITLES[cmp['algorithm']]} {cmp['kind'].upper()} eps={cmp['epsilon']:g} "
            f"delta={cmp['delta']:g} H={cmp['H']} K={cmp['K']} d={cmp['d']}")
    lines = [head, f"  {'quantity':<30}{'paper':>14}{'tight':>14}{'paper/tight':>14}"]
    for r in cmp["rows"]:
        lines.append(f"  {r['quantity']:<30}{_fmt(r['paper']):>14}{_fmt(r['tight']):>14}"
                     f"{_fmt(r['ratio']):>14}")
    return "\n".join(lines)
