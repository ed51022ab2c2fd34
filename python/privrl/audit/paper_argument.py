"""The paper's privacy argument, recomputed forward from the tools of its appendix (App. "Differential
Privacy Tools": Gaussian and Laplace mechanisms, advanced and simple composition, the tree-based method,
post-processing, the Billboard lemma) for UCRL-VTR / UCRL-VTR+ (App. B-C) and LSVI-UCB (App. D), and
private tabular PSRL's own (one Gaussian mechanism per user): the (a) part of the privacy report
(privrl.audit.report)."""

from __future__ import annotations

import math
import sys
from typing import Any

from privrl.privacy.gdp import analytic_gaussian_epsilon
from privrl.privacy.mechanisms import (
    advanced_composition,
    billboard_jdp,
    gaussian_mechanism_epsilon,
    laplace_mechanism_epsilon,
    post_processing,
    simple_composition,
)


def _step(what: str, budget: Any, tool: str) -> dict[str, Any]:
    return {"step": what, "epsilon": budget[0], "delta": budget[1], "tool": tool}


def _tree_equivalent(m: dict[str, Any]) -> tuple[float, str]:
    """The node sigma of the binary tree (the paper's K0 / B0 nodes per user) whose composition has
    the same GDP ``mu`` as the family's mechanism: the paper's tree argument then certifies it too
    (privrl.privacy.continual), and the words that say so in the node's step. The tree itself: its
    own sigma, no words."""
    if m["draws_per_user"] is not None:
        return float(m["scale"]), ""
    sigma = float(m["scale"]) * math.sqrt(m["draws_per_user_paper"]) / float(m["l2_multiplier"])
    return sigma, f" of the binary tree with the same GDP mu as {m['mechanism']}"


#: Past this epsilon (log of the largest double, 709.78) e^eps overflows: an (eps, delta) bound there
#: constrains no event of a representable probability, i.e. it certifies nothing. The chain then
#: reports eps = inf, as advanced_composition already did for an input past it: noise calibrated for
#: the tight accountant, read through the chain's nested advanced compositions (k eps (e^eps - 1)
#: at every level), came out as eps = 6e+32 or 1.5e+91, printed as the paper's guarantee.
VACUOUS_EPSILON = math.log(sys.float_info.max)


def _vacuous(budget: tuple[float, float]) -> tuple[float, float]:
    return (math.inf, budget[1]) if budget[0] > VACUOUS_EPSILON else budget


# The paper's forward argument may reach a step that certifies nothing (epsilon = inf: the tight noise
# at a large target); the public compositions refuse inf as bad input, here it is the answer.
def _compose(budgets: list[tuple[float, float]]) -> tuple[float, float]:
    if any(math.isinf(e) for e, _ in budgets):
        return math.inf, min(1.0, sum(dl for _, dl in budgets))
    return _vacuous(simple_composition(budgets))


def _advanced(eps: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    if math.isinf(eps):
        return math.inf, min(1.0, k * delta + delta_prime)
    return _vacuous(advanced_composition(eps, delta, k, delta_prime))


def _paper_vtr(cal: Any, mechs: list[dict]) -> dict[str, Any]:
    """Cor. 1 / Cor. 2 / App. C privacy proofs (and the pure-DP variants), forward."""
    dlt, H, kind = cal.target()[1], cal.H, cal.kind
    F = len(mechs)  # 2 families (Alg. 1) or 4 (Alg. 3)
    steps: list[dict[str, Any]] = []
    if cal.pure:
        budgets = []
        for m in mechs:
            e = laplace_mechanism_epsilon(m["sensitivity"], m["scale"])
            steps.append(
                _step(
                    f"{m['name']}: one {'node' if kind == 'jdp' else 'release'}",
                    (e, 0.0),
                    "App. Laplace Mechanism",
                )
            )
            budgets += [(e, 0.0)] * (m["instances"] * m["draws_per_user_paper"])
        total = _compose(budgets)
        steps.append(_step(f"all {len(budgets)} noise draws of a user", total, "App. Simple Composition"))
        return {"budget": total, "steps": steps, "in_tool_regime": True}
    if kind == "ldp":
        d1 = dlt / (F * H)
        budgets, regime = [], True
        for m in mechs:
            e1 = gaussian_mechanism_epsilon(m["sensitivity"], m["scale"], d1)
            regime &= e1 < 1.0
            steps.append(
                _step(f"{m['name']}: one local release", (e1, d1), "App. Gaussian Mechanism (delta/(F H))")
            )
            budgets += [(e1, d1)] * H
        total = _compose(budgets)
        steps.append(_step(f"{F * H} local releases of a user", total, "App. Simple Composition"))
        return {"budget": total, "steps": steps, "in_tool_regime": regime}
    # JDP: family (eps/F, delta/F) <- advanced over H <- tree (advanced over K0 nodes) <- node
    d_fam = dlt / F
    d_h = d_fam / (2 * H)
    K0 = cal.K0
    d0 = d_h / (2 * K0)
    fam_budgets, regime = [], True
    for m in mechs:
        sigma, eq = _tree_equivalent(m)
        e0 = gaussian_mechanism_epsilon(m["sensitivity"], sigma, d0)
        regime &= e0 < 1.0
        steps.append(
            _step(f"{m['name']}: one tree node{eq}", (e0, d0), "App. Gaussian Mechanism (delta/(4F H K0))")
        )
        tree = _advanced(e0, d0, K0, d_h / 2)
        steps.append(
            _step(
                f"{m['name']}: tree of step h ({K0} nodes per prefix)",
                tree,
                "App. Advanced composition / Tree-based method",
            )
        )
        fam = _advanced(tree[0], tree[1], H, d_fam / 2)
        steps.append(_step(f"{m['name']}: all H = {H} trees", fam, "App. Advanced composition"))
        fam_budgets.append(fam)
    total = _compose(fam_budgets)
    steps.append(_step(f"{F} families", total, "App. Simple Composition"))
    total = post_processing(total)
    steps.append(_step("(Lambda~, w~) = post-processing", total, "App. Post-processing"))
    total = billboard_jdp(total)
    steps.append(_step("policies of all users", total, "App. Billboard Lemma (JDP)"))
    return {"budget": total, "steps": steps, "in_tool_regime": regime}


def _paper_lsvi(cal: Any, mechs: list[dict]) -> dict[str, Any]:
    """App. D privacy proof of Alg. 2 (and App. "Pure joint DP in the linear setting"), forward."""
    dlt, H, B, B0 = cal.target()[1], cal.H, cal.B, cal.B0
    lam, u = mechs
    steps: list[dict[str, Any]] = []
    if cal.pure:
        el = laplace_mechanism_epsilon(lam["sensitivity"], lam["scale"])
        eu = laplace_mechanism_epsilon(u["sensitivity"], u["scale"])
        steps.append(_step("Lambda: one tree node", (el, 0.0), "App. Laplace Mechanism"))
        steps.append(_step("u: one release", (eu, 0.0), "App. Laplace Mechanism"))
        total = _compose([(el, 0.0)] * (H * B0) + [(eu, 0.0)] * (H * B))
        steps.append(
            _step(f"H B0 = {H * B0} nodes + H B = {H * B} releases", total, "App. Simple Composition")
        )
        return {"budget": total, "steps": steps, "in_tool_regime": True}
    d_p = dlt / (4 * H)  # delta'  of M^Lambda_h and M^u_h
    d_1 = d_p / (2 * B)  # delta'_1 of one prefix / one u release
    d_0 = d_1 / (2 * B0)  # one node
    sigma, eq = _tree_equivalent(lam)
    e0 = gaussian_mechanism_epsilon(lam["sensitivity"], sigma, d_0)
    steps.append(_step(f"Lambda: one tree node{eq}", (e0, d_0), "App. Gaussian Mechanism"))
    pre = _advanced(e0, d_0, B0, d_1 / 2)
    steps.append(_step(f"Lambda: one prefix sum ({B0} nodes)", pre, "App. Tree-based method"))
    m_l = _advanced(pre[0], pre[1], B, d_p / 2)
    steps.append(_step(f"M^Lambda_h: {B} prefix sums", m_l, "App. Advanced composition"))
    eu = gaussian_mechanism_epsilon(u["sensitivity"], u["scale"], d_1)
    steps.append(_step("u: one release u~_{b,h}", (eu, d_1), "App. Gaussian Mechanism"))
    m_u = _advanced(eu, d_1, B, d_p / 2)
    steps.append(_step(f"M^u_h: {B} releases", m_u, "App. Advanced composition (adaptive)"))
    per_h = _compose([m_l, m_u])
    steps.append(_step("(M^Lambda_h, M^u_h)", per_h, "App. Simple Composition"))
    total = _advanced(per_h[0], per_h[1], H, dlt / 2)
    steps.append(_step(f"H = {H} adaptive steps", total, "App. Advanced composition"))
    total = billboard_jdp(post_processing(total))
    steps.append(
        _step("(Lambda~, w~) and all users' policies", total, "App. Post-processing + Billboard Lemma")
    )
    return {"budget": total, "steps": steps, "in_tool_regime": e0 < 1.0 and eu < 1.0}


def _paper_psrl(cal: Any, mechs: list[dict]) -> dict[str, Any]:
    """Private tabular PSRL's own argument (privrl.agents.psrl.formulas.psrl_sigma), forward: a user
    enters ONE released increment (its batch's), a Gaussian mechanism of sensitivity Delta at std
    sigma (Balle & Wang 2018, Thm. 8: the exact curve, no eps < 1 regime); every other release has
    sensitivity 0 for that user (adaptive composition adds nothing); post-processing and the
    billboard lemma give the policies. No composition over B: the budget is the one mechanism's."""
    (inc,) = mechs
    dlt = cal.target()[1]
    one = (analytic_gaussian_epsilon(inc["scale"], inc["sensitivity"], dlt), dlt)
    steps = [_step(f"{inc['name']}: the user's batch, one release", one, "Analytic Gaussian mechanism")]
    steps.append(
        _step(f"the {cal.releases} releases (sensitivity 0 in the others)", one, "Adaptive composition")
    )
    total = billboard_jdp(post_processing(one))
    steps.append(_step("billboard and all users' policies", total, "Post-processing + Billboard Lemma"))
    return {"budget": total, "steps": steps, "in_tool_regime": True}
