"""Release plans (privrl.privacy.plans): the exact joint worst case against hand values and an
independent search, every tight sigma against dp-accounting's PLD accountant, and one source of
truth: a changed plan moves the guards, the tight noise, the report, the summary and the audit."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from privrl import kernels as kern
from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
from privrl.agents.lsvi_ucb import calibration as lsvi_ucb
from privrl.agents.ucrl_vtr import calibration as ucrl_vtr
from privrl.agents.ucrl_vtr_plus import calibration as ucrl_vtr_plus
from privrl.envs import RandomLinearMDP, RandomLinearMixtureMDP
from privrl.privacy import JointDP, LocalDP, NonPrivate
from privrl.privacy.accounting import gaussian_mu, tree_nodes_per_leaf
from privrl.privacy.common import tight_scales
from privrl.privacy.plans import law_factor, plan_mu, statistic_worst_case

MU1 = gaussian_mu(1.0, 1e-5)


# ------------------------------------------------------------------------------------------
# Independent worst case: random neighbouring users in R^3 (half of them on the bounds)
# ------------------------------------------------------------------------------------------
def _brute_force(plan, stat_name, scales, n=200_000, seed=0):
    rng = np.random.default_rng(seed)
    stat = plan.statistic(stat_name)
    d = min(stat.dim, 3)

    def users():
        x = rng.normal(size=(n, d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        r = np.where(rng.random(n) < 0.5, 1.0, rng.random(n)) * stat.x_bound
        ends = rng.random(n) < 0.5
        y = np.where(
            ends,
            np.where(rng.random(n) < 0.5, stat.y_low, stat.y_high),
            rng.uniform(stat.y_low, stat.y_high, n),
        )
        return x * r[:, None], y

    (x, y), (xp, yp) = users(), users()
    total = np.zeros(n)
    for f in plan.families:
        if f.statistic != stat_name:
            continue
        if f.is_matrix:
            D = np.einsum("ni,nj->nij", x, x) - np.einsum("ni,nj->nij", xp, xp)
            sq = np.einsum("nij,nij->n", D, D)
        else:
            sq = np.sum((x * y[:, None] - xp * yp[:, None]) ** 2, axis=1)
        total += (f.multiplier * law_factor(f) / scales[f.scale_key]) ** 2 * sq
    return float(total.max())


def _plans():
    out = []
    for mech in ("tree", "honaker", "factorization", "blt"):
        out.append(
            ("ucrl_vtr jdp " + mech, ucrl_vtr.release_plan("jdp", False, 4, 300, 3, mech, sampler="float"))
        )
        out.append(
            (
                "ucrl_vtr_plus jdp " + mech,
                ucrl_vtr_plus.release_plan("jdp", False, 3, 300, 3, mech, sampler="float"),
            )
        )
        out.append(
            (
                "lsvi_ucb static " + mech,
                lsvi_ucb.release_plan("jdp", False, 4, 3000, 3, 9, mech, sampler="float"),
            )
        )
        out.append(
            (
                "lsvi_ucb every " + mech,
                lsvi_ucb.release_plan("jdp", False, 4, 60, 3, 60, mech, sampler="float"),
            )
        )
    out.append(("ucrl_vtr ldp", ucrl_vtr.release_plan("ldp", False, 4, 300, 3, sampler="float")))
    out.append(("ucrl_vtr_plus ldp", ucrl_vtr_plus.release_plan("ldp", False, 3, 300, 3, sampler="float")))
    return out


PLANS = _plans()


@pytest.mark.parametrize("name,plan", PLANS, ids=[p[0] for p in PLANS])
def test_worst_case_dominates_an_independent_search(name, plan):
    scales = tight_scales(plan, 1.0, 1e-5)
    for stat in plan.statistics:
        w = statistic_worst_case(plan, stat.name, scales)
        bf = _brute_force(plan, stat.name, scales)
        assert w.value >= bf * (1 - 1e-9)
        assert w.value <= bf * 1.02  # the search gets within 2% of the maximum
        # the reported neighbours realise the value, inside the bounds
        assert np.linalg.norm(w.x) <= stat.x_bound * (1 + 1e-12)
        assert np.linalg.norm(w.x_prime) <= stat.x_bound * (1 + 1e-12)
        assert stat.y_low <= w.y <= stat.y_high and stat.y_low <= w.y_prime <= stat.y_high


def test_worst_case_hand_values():
    # UCRL-VTR, one node pair, sigma = 1: matrix (Z'+Z'^T)/sqrt 2 (law factor 1/sqrt 2) and vector;
    # X' = -X with ||X|| = H, y = y' = H: the matrix does not move, the vector moves by 2 H^2:
    # value 4 H^4 (separate worst cases: (2H^2)^2 / 2 + (2H^2)^2 = 6 H^4; the true matrix worst
    # case ||X X^T - X' X'^T||_F = sqrt 2 H^2 at X orthogonal to X')
    H = 5
    plan = ucrl_vtr.release_plan("ldp", False, H, 10, 4, sampler="float")
    w = statistic_worst_case(plan, plan.statistics[0].name, {"sigma_B": 1.0, "sigma_g": 1.0})
    assert w.value == pytest.approx(4 * H**4, rel=1e-9)
    np.testing.assert_allclose(w.x_prime, -w.x, atol=1e-6)
    # matrix family alone: 2 H^4 / 2 = H^4 (orthogonal users)
    only_matrix = ucrl_vtr.release_plan("ldp", False, H, 10, 4, sampler="float")

    only_matrix = replace(only_matrix, families=only_matrix.families[:1])
    w = statistic_worst_case(only_matrix, only_matrix.statistics[0].name, {"sigma_B": 1.0})
    assert w.value == pytest.approx(H**4, rel=1e-9)
    assert abs(float(w.x @ w.x_prime)) < 1e-6 * H * H
    # one dimension: users are scalars, the angle is 0 or pi
    plan1 = ucrl_vtr.release_plan("ldp", False, H, 10, 1, sampler="float")
    w = statistic_worst_case(plan1, plan1.statistics[0].name, {"sigma_B": 1.0, "sigma_g": 1.0})
    assert w.value == pytest.approx(4 * H**4, rel=1e-9)


@pytest.mark.parametrize("mech", ["tree", "honaker", "factorization", "blt"])
def test_tight_jdp_ucrl_vtr_mu_is_the_hand_formula(mech):
    H, K, d = 10, 10_000, 5
    cal = ucrl_vtr.calibrate_ucrl_vtr(
        "jdp", 1.0, 1e-5, H, K, d, 1.0, calibration="tight", mechanism=mech, sampler="float"
    )
    m = kern.mechanism_profile(mech, K).l2_multiplier
    # per step: m^2 (2 H^2)^2 / sigma^2, H steps
    assert cal.sigma_B == pytest.approx(2 * H * H * m * math.sqrt(H) / MU1, rel=1e-9)
    if mech == "tree":
        assert m == pytest.approx(math.sqrt(tree_nodes_per_leaf(K)))
        assert cal.sigma_B == pytest.approx(8828.29, rel=1e-5)  # the PLD figure, 8,828


# ------------------------------------------------------------------------------------------
# dp-accounting PLD cross-check of every tight sigma, every agent and mechanism
# ------------------------------------------------------------------------------------------
def _pld():
    return pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")


CASES = []
for _mech in ("tree", "honaker", "factorization", "blt"):
    CASES += [
        ("ucrl_vtr", "jdp", _mech, {}),
        ("ucrl_vtr_plus", "jdp", _mech, {}),
        ("lsvi_ucb", "jdp", _mech, {"batches": "static"}),
        ("lsvi_ucb", "jdp", _mech, {"batches": "every"}),
    ]
CASES += [("ucrl_vtr", "ldp", "tree", {}), ("ucrl_vtr_plus", "ldp", "tree", {})]


@pytest.mark.parametrize(
    "alg,kind,mech,extra", CASES, ids=[f"{a}-{k}-{m}-{e.get('batches', '')}" for a, k, m, e in CASES]
)
def test_tight_sigma_matches_pld(alg, kind, mech, extra):
    pld = _pld()
    eps, dlt = 1.0, 1e-5
    H, d = 4, 3
    K = 80 if extra.get("batches") == "every" else 3000
    mod = {"ucrl_vtr": ucrl_vtr, "ucrl_vtr_plus": ucrl_vtr_plus, "lsvi_ucb": lsvi_ucb}[alg]
    calibrate = getattr(mod, f"calibrate_{alg}")
    cw = {} if alg == "lsvi_ucb" else {"C_w": 1.0}
    # the continuous Gaussian (the calibrations' former default sampler), which PLD accounts for
    cal = calibrate(
        kind, eps, dlt, H=H, K=K, d=d, calibration="tight", mechanism=mech, sampler="float", **cw, **extra
    )
    from privrl.audit.report import plan_of

    plan = plan_of(alg, cal)
    scales = {k: getattr(cal, k) for k in plan.scale_keys}

    def composed(factor):
        # one Gaussian per step and statistic, with the step's worst case found independently
        # (random search, a lower bound: PLD then certifies at least what privrl claims)
        out = None
        for stat in plan.statistics:
            s = {k: v * factor for k, v in scales.items()}
            step = math.sqrt(_brute_force(plan, stat.name, s, n=100_000))
            p = pld.from_gaussian_mechanism(
                standard_deviation=1.0, sensitivity=step, value_discretization_interval=1e-4
            ).self_compose(H)
            out = p if out is None else out.compose(p)
        return out

    assert composed(1.0).get_epsilon_for_delta(dlt) <= eps * (1 + 2e-3)
    # and the sigma is not larger than needed: 2% less noise exceeds the target
    assert composed(0.98).get_epsilon_for_delta(dlt) > eps * 1.005
    assert plan_mu(plan, scales) == pytest.approx(MU1, rel=1e-9)


# ------------------------------------------------------------------------------------------
# One source of truth: a changed plan moves everything that reads it
# ------------------------------------------------------------------------------------------
class WiderUCRLVTR(UCRLVTR):
    """A UCRL-VTR whose plan claims statistics twice as large (x and y bounds 2H)."""

    def release_plan(self):
        plan = super().release_plan()
        return plan.with_statistic(plan.statistics[0].name, x_bound=2.0 * self.H, y_high=2.0 * self.H)


def test_a_changed_plan_moves_guard_noise_report_summary_and_audit():
    from privrl import audit as A
    from privrl.experiment.summary import summarize
    from privrl.experiment.sweep import _privacy_digest

    env = RandomLinearMixtureMDP(S=5, A=2, d=3, H=3, seed=0)
    model = JointDP(1.0, 1e-5, calibration="tight")
    base, wide = UCRLVTR(env, model, episodes=64, seed=0), WiderUCRLVTR(env, model, episodes=64, seed=0)
    # guards
    assert (base.guard.x_bound, base.guard.y_high) == (3.0, 3.0)
    assert (wide.guard.x_bound, wide.guard.y_high) == (6.0, 6.0)
    # tight noise: the worst case 2 R y scales by 4
    assert wide.calibration.sigma_B == pytest.approx(4 * base.calibration.sigma_B, rel=1e-9)
    # report: both spend exactly the target; the wide one's statistic is reported with its bounds
    rb, rw = base.privacy_report(), wide.privacy_report()
    assert rb["tight"]["epsilon_at_target_delta"] == pytest.approx(1.0, rel=1e-6)
    assert rw["tight"]["epsilon_at_target_delta"] == pytest.approx(1.0, rel=1e-6)
    assert rw["statistics"][0]["x_bound"] == 6.0 and np.linalg.norm(
        rw["statistics"][0]["worst_x"]
    ) == pytest.approx(6.0)
    # the base agent's noise read through the wide plan spends more than the target
    from privrl.audit.report import privacy_report_from_calibration

    over = privacy_report_from_calibration("ucrl_vtr", base.calibration, plan=wide.release_plan())
    assert over["tight"]["epsilon_at_target_delta"] > 3.0
    # summary's "sigma used" column reads the digest of the plan's first family
    rows = []
    for name in ("base", "wide"):
        rows.append(
            pd.DataFrame(
                {
                    "study": "s",
                    "agent": name,
                    "privacy": "jdp",
                    "epsilon": 1.0,
                    "episode": [64],
                    "regret": [1.0],
                    "run_id": name,
                    "algorithm": "UCRL-VTR",
                    "seed": 0,
                    "wall_time": 0.1,
                }
            )
        )
    runs = {
        "base": {"privacy_report": _privacy_digest(base), "calibration": {}},
        "wide": {"privacy_report": _privacy_digest(wide), "calibration": {}},
    }
    summ = summarize(pd.concat(rows), {"runs": runs}).set_index("agent")
    assert summ.loc["base", "sigma_name"] == "sigma_B"
    assert summ.loc["wide", "sigma"] == pytest.approx(4 * summ.loc["base", "sigma"])
    # audit: its neighbours are the plan's worst pair
    # (float sampler: its tight noise meets the claim on the exact Gaussian curve, which is the
    # audit's effective epsilon; the discrete sampler's is calibrated in zCDP, below that curve)
    res = A.audit_ucrl_vtr_tree(4.0, 1e-5, H=2, d=2, K=8, n_trials=400, plan=None, sampler="float")
    wide_plan = ucrl_vtr.release_plan("jdp", False, 2, 8, 2, mechanism="tree", sampler="float")
    wide_plan = wide_plan.with_statistic(wide_plan.statistics[0].name, x_bound=4.0, y_high=4.0)
    res_wide = A.audit_ucrl_vtr_tree(4.0, 1e-5, H=2, d=2, K=8, n_trials=400, plan=wide_plan)
    # same calibrated target: the effective epsilon of what is audited is the claim in both
    assert res.effective_epsilon == pytest.approx(4.0, rel=1e-3)
    assert res_wide.effective_epsilon == pytest.approx(4.0, rel=1e-3)
    # and with the discrete sampler the same in both, below the claim
    disc = A.audit_ucrl_vtr_tree(4.0, 1e-5, H=2, d=2, K=8, n_trials=400)
    disc_wide = A.audit_ucrl_vtr_tree(
        4.0, 1e-5, H=2, d=2, K=8, n_trials=400, plan=replace(wide_plan, sampler="discrete")
    )
    assert disc.effective_epsilon == pytest.approx(disc_wide.effective_epsilon, rel=1e-3)
    assert disc.effective_epsilon < 4.0


def test_release_plan_on_every_agent():
    mix = RandomLinearMixtureMDP(S=5, A=2, d=3, H=3, seed=0)
    lin = RandomLinearMDP(S=5, A=2, d=3, H=3, seed=0)
    for agent in (
        UCRLVTR(mix, NonPrivate(), episodes=10),
        UCRLVTR(mix, LocalDP(1.0, 1e-5), episodes=10),
        UCRLVTRPlus(mix, JointDP(1.0, 1e-5), episodes=10),
        LSVIUCB(lin, JointDP(1.0, 0.0), episodes=10),
        LSVIUCB(lin, NonPrivate(), episodes=10),
    ):
        plan = agent.release_plan()
        assert plan.model == agent.privacy.kind
        assert set(agent.guards) == {s.name for s in plan.statistics}
        for s in plan.statistics:
            assert agent.guards[s.name].x_bound == s.x_bound
        for f in plan.families:
            assert getattr(agent.calibration, f.scale_key) is not None


def test_plan_functions_refuse_bad_scales_names_and_bounds():
    """Fuzzing: plan_mu(plan, {}) was a KeyError, zero scales a ZeroDivisionError, statistic('x') /
    family('x') KeyErrors, with_statistic(x_bound=1e308) an OverflowError in the worst case and
    with_statistic(dim=0) an IndexError."""
    from privrl.exceptions import PrivacyParameterError
    from privrl.privacy.plans import plan_pure_epsilon

    agent = UCRLVTR(
        RandomLinearMixtureMDP(S=4, A=2, d=3, H=3, seed=0), JointDP(1.0, 1e-5), episodes=20, seed=0
    )
    plan, scales = agent.release_plan(), agent.calibration.to_dict()
    pure = ucrl_vtr.release_plan("jdp", True, 3, 20, 3)  # the same agent's Laplace plan
    name = plan.statistics[0].name
    for bad, match in [
        ({}, r"scales has no noise scale for \['sigma_B'"),
        ({"sigma_B": 0.0, "sigma_g": 0.0}, r"scales\['sigma_B'\] must be finite and > 0"),
        ({"sigma_B": 1.0, "sigma_g": float("nan")}, r"scales\['sigma_g'\] must be finite and > 0"),
        ({"sigma_B": "1", "sigma_g": 1.0}, r"scales\['sigma_B'\] must be a real number"),
        ({"sigma_B": 1e-200, "sigma_g": 1.0}, "overflows a double"),
    ]:
        for f in (plan_mu, lambda p, s: statistic_worst_case(p, name, s), plan_pure_epsilon):
            p = pure if f is plan_pure_epsilon else plan  # each law's own plan (same scale keys)
            if f is plan_pure_epsilon and match == "overflows a double":
                assert f(p, bad) > 1e199  # linear in 1 / scale: finite
                continue
            with pytest.raises(PrivacyParameterError, match=match):
                f(p, bad)
    for lookup in (plan.statistic, plan.family):
        with pytest.raises(PrivacyParameterError, match="the plan has no"):
            lookup("x")
    with pytest.raises(PrivacyParameterError, match="overflows a double"):
        plan_mu(plan.with_statistic(name, x_bound=1e308), scales)
    for change, match in [
        ({"dim": 0}, "dim must be an integer >= 1"),
        ({"x_bound": 0.0}, "x_bound must be finite and > 0"),
        ({"y_low": 5.0}, "need y_low <= y_high"),
    ]:
        with pytest.raises(PrivacyParameterError, match=match):
            plan.with_statistic(name, **change)
    assert plan_mu(plan.with_statistic(name, x_bound=4.0), scales) > plan_mu(plan, scales) > 0


def _old_best_angle(A, S, a, b, y, yp, free_angle):
    lin = S * a * b * y * yp
    if not free_angle:
        return np.where(lin > 0.0, -1.0, 1.0) * np.ones_like(a)
    quad = A * a * a * b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(quad > 0.0, -lin / (2.0 * quad), np.where(lin > 0.0, -1.0, 1.0))
    return np.clip(c, -1.0, 1.0)


def _old_refine(A, S, y, yp, a0, b0, free_angle):
    """_refine as it was (np.meshgrid, np.clip, np.unravel_index)."""
    from privrl.privacy.quartic import _objective

    c0 = float(_old_best_angle(A, S, np.array(a0), np.array(b0), y, yp, free_angle))
    val = float(_objective(A, S, np.array(a0), np.array(b0), np.array(c0), y, yp))
    steps, h = np.linspace(-1.0, 1.0, 9), 0.01
    while h > 1e-12:
        a = np.clip(a0 + h * steps, 0.0, 1.0)
        b = np.clip(b0 + h * steps, 0.0, 1.0)
        aa, bb = np.meshgrid(a, b, indexing="ij")
        cc = _old_best_angle(A, S, aa, bb, y, yp, free_angle)
        g = _objective(A, S, aa, bb, cc, y, yp)
        i, j = (int(v) for v in np.unravel_index(int(np.argmax(g)), g.shape))
        if g[i, j] >= val:
            val, a0, b0, c0 = float(g[i, j]), float(a[i]), float(b[j]), float(cc[i, j])
        h /= 3.0
    best = [a0, b0, c0]
    for k, special in enumerate(((0.0, 1.0), (0.0, 1.0), (-1.0, 0.0, 1.0))):
        target = min(special, key=lambda t: abs(t - best[k]))
        if abs(target - best[k]) < 1e-3:
            trial = list(best)
            trial[k] = target
            sval = float(_objective(A, S, *(np.array(v) for v in trial), y, yp))
            if sval >= val * (1 - 1e-12):
                val, best = max(val, sval), trial
    return val, (best[0], best[1], best[2])


def _old_maximise(A, S, y_low, y_high, free_angle):
    """maximise as it was: per vertex a 101 x 101 grid, then _refine from its 3 best points, one by one."""
    from privrl.privacy.quartic import _objective

    ys = sorted({float(y_low), float(y_high)})
    best = (-math.inf, (0.0, 0.0, 1.0, 0.0, 0.0))
    for y in ys:
        for yp in ys:
            ab = np.linspace(0.0, 1.0, 101)
            a, b = np.meshgrid(ab, ab, indexing="ij")
            g = _objective(A, S, a, b, _old_best_angle(A, S, a, b, y, yp, free_angle), y, yp)
            vertex = (-math.inf, (0.0, 0.0, 1.0))
            for idx in np.argsort(g, axis=None)[::-1][:3]:
                i, j = (int(v) for v in np.unravel_index(int(idx), g.shape))
                val, pt = _old_refine(A, S, y, yp, float(ab[i]), float(ab[j]), free_angle)
                if val > vertex[0]:
                    vertex = (val, pt)
            if vertex[0] > best[0]:
                best = (vertex[0], (*vertex[1], y, yp))
    return best


def test_the_worst_case_search_is_bit_identical_to_one_search_at_a_time():
    """_refine searches from every start at once (rows of (n, 9, 9) arrays) and clips with np.minimum /
    np.maximum (an LSVI-UCB calibration spent most of its time in the searches' numpy calls): the
    same searches, the same maximum, to the bit, whether a start is searched alone or with others."""
    from privrl.privacy import quartic

    c = np.array([-np.inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, np.nan])
    np.testing.assert_array_equal(np.minimum(np.maximum(c, -1.0), 1.0), np.clip(c, -1.0, 1.0))
    assert np.signbit(np.minimum(np.maximum(c, -1.0), 1.0)[4])  # -0.0 stays -0.0, as np.clip keeps it
    rng = np.random.default_rng(3)
    for free in (False, True):
        cases, wants = [], []
        for k in range(30):
            A, S = (0.0 if k % 7 == 0 else float(10 ** rng.uniform(-6, 3))), float(10 ** rng.uniform(-6, 3))
            y, yp = (float(v) for v in rng.uniform(-2, 2, 2))
            a0, b0 = (float(v) for v in rng.integers(0, 101, 2) / 100)
            want = _old_refine(A, S, y, yp, a0, b0, free)
            assert quartic._refine(A, S, [(y, yp, (a0, b0))], 0.01, free) == [want]
            cases.append((A, S, y, yp, a0, b0))
            wants.append(want)
        A, S = cases[1][:2]  # one (A, S), many starts at once
        together = quartic._refine(A, S, [(y, yp, (a0, b0)) for _, _, y, yp, a0, b0 in cases], 0.01, free)
        assert together == [_old_refine(A, S, y, yp, a0, b0, free) for _, _, y, yp, a0, b0 in cases]
        for A, S, y, yp, _, _ in cases[:10]:
            y_low, y_high = min(y, yp, 0.0), max(y, yp)
            assert quartic.maximise.__wrapped__(A, S, y_low, y_high, free) == _old_maximise(
                A, S, y_low, y_high, free
            )


# ------------------------------------------------------------------------------------------
# A plan given to a calibration must be one of its algorithm, model, noise law and H
# ------------------------------------------------------------------------------------------
def test_a_calibration_refuses_a_plan_of_another_algorithm_model_law_or_H():
    """calibrate_*(plan=...) took any plan: a JDP UCRL-VTR calibration given the LDP plan was
    calibrated as if a user entered one release (sigma_B 12.23 instead of the JDP plan's 24.46 at
    eps 4, H 2, K 8, d 2: half the noise, certified as (4, 1e-5)-JDP), another H's plan set the
    noise of these statistics, another algorithm's failed with a bare KeyError ('sigma_B',
    'sigma_Lambda') and a non-plan with an AttributeError. Each is refused naming what does not
    fit (privrl.privacy.plans.check_plan), and the plans each calibration builds itself still
    calibrate to the same noise."""
    from privrl.agents.linucb import calibration as linucb
    from privrl.exceptions import PrivacyParameterError

    def vtr(plan):
        return ucrl_vtr.calibrate_ucrl_vtr("jdp", 4.0, 1e-5, 2, 8, 2, 1.0, calibration="tight", plan=plan)

    own = ucrl_vtr.release_plan("jdp", False, 2, 8, 2, "tree", None)
    assert vtr(own).scale("sigma_B") == ucrl_vtr.calibrate_ucrl_vtr(
        "jdp", 4.0, 1e-5, 2, 8, 2, 1.0, calibration="tight", mechanism="tree"
    ).scale("sigma_B")
    refused = {
        "model 'ldp'": ucrl_vtr.release_plan("ldp", False, 2, 8, 2, None, None),
        "H 3": ucrl_vtr.release_plan("jdp", False, 3, 8, 2, "tree", None),
        "algorithm 'lsvi_ucb'": lsvi_ucb.release_plan("jdp", False, 2, 8, 2, 2),
        "algorithm 'ucrl_vtr_plus'": ucrl_vtr_plus.release_plan("jdp", False, 2, 8, 2),
        "noise 'laplace'": ucrl_vtr.release_plan("jdp", True, 2, 8, 2, None, None),
    }
    for what, plan in refused.items():
        with pytest.raises(
            PrivacyParameterError, match=rf"release plan does not fit the calibration: plan .*{what}"
        ):
            vtr(plan)
    with pytest.raises(TypeError, match=r"plan must be a ReleasePlan or None, got 'x'"):
        vtr("x")
    with pytest.raises(PrivacyParameterError, match=r"plan algorithm 'ucrl_vtr' \(calibration: 'lsvi_ucb'\)"):
        lsvi_ucb.calibrate_lsvi_ucb("jdp", 4.0, 1e-5, 2, 8, 2, plan=own)
    with pytest.raises(
        PrivacyParameterError, match=r"plan algorithm 'ucrl_vtr' \(calibration: 'ucrl_vtr_plus'\)"
    ):
        ucrl_vtr_plus.calibrate_ucrl_vtr_plus("jdp", 4.0, 1e-5, 2, 8, 2, 1.0, plan=own)
    with pytest.raises(
        PrivacyParameterError, match=r"plan algorithm 'ucrl_vtr' \(calibration: 'linucb'\), .*H 2"
    ):
        linucb.calibrate_linucb("jdp", 4.0, 1e-5, 100, 3, 4, plan=own)
    # LinUCB's own plan goes through the UCRL-VTR calibration it is built on (its release at H = 1)
    mine = linucb.release_plan("jdp", False, 100, 4)
    assert linucb.calibrate_linucb("jdp", 4.0, 1e-5, 100, 3, 4, plan=mine).scale("sigma_g") == (
        linucb.calibrate_linucb("jdp", 4.0, 1e-5, 100, 3, 4).scale("sigma_g")
    )


def test_a_calibration_and_the_report_refuse_a_plan_of_another_K_d_or_batches():
    """A plan of the right algorithm, model, law and H but another K, d or batch count was taken:
    its tree nodes, dimensions or releases per user set the noise. Measured before the check:
    UCRL-VTR JDP tight at K = 1000 given the K = 8 plan: sigma_B 24.46 instead of 38.68, certified
    as (4, 1e-5)-JDP (its own report: (6.84, 1e-5)); pure at d = 7 given the d = 2 plan: b 64.0
    instead of 224.0 (report: eps 10.74); LSVI-UCB at K = 1000 (B 16) given the B = 3 plan:
    sigma_u 12.97 instead of 35.53 (13.43); LinUCB at K = 1000 given the K = 10 plan: sigma_g
    3.82 instead of 7.64 (9.08). The report took the K = 8 plan with the K = 1000 calibration and
    said (2.38, 1e-5). Each is refused (privrl.privacy.plans.check_plan_shape); a what-if plan of
    wider bounds is still taken."""
    from privrl.agents.linucb import calibration as linucb
    from privrl.audit.report import privacy_report_from_calibration
    from privrl.exceptions import PrivacyParameterError

    def vtr(delta, d, plan):
        return ucrl_vtr.calibrate_ucrl_vtr("jdp", 4.0, delta, 2, 1000, d, 1.0, calibration="tight", plan=plan)

    misfit = r"release plan does not fit the calibration: plan capacity 8 \(calibration: 1000\)"
    k8 = ucrl_vtr.release_plan("jdp", False, 2, 8, 2, "tree", None)
    with pytest.raises(PrivacyParameterError, match=misfit):
        vtr(1e-5, 2, k8)
    with pytest.raises(PrivacyParameterError, match=r"plan statistic dims \(2,\) \(calibration: \(7,\)\)"):
        vtr(0.0, 7, ucrl_vtr.release_plan("jdp", True, 2, 1000, 2, None, None))
    with pytest.raises(PrivacyParameterError, match=r"plan capacity 2 \(calibration: 15\)"):
        lsvi_ucb.calibrate_lsvi_ucb(
            "jdp",
            4.0,
            1e-5,
            2,
            1000,
            2,
            calibration="tight",
            plan=lsvi_ucb.release_plan("jdp", False, 2, 1000, 2, 3),
        )
    with pytest.raises(PrivacyParameterError, match=r"plan capacity 3 \(calibration: 250\)"):
        linucb.calibrate_linucb("jdp", 4.0, 1e-5, 1000, 3, 4, plan=linucb.release_plan("jdp", False, 10, 4))
    own = ucrl_vtr.calibrate_ucrl_vtr(
        "jdp", 4.0, 1e-5, 2, 1000, 2, 1.0, calibration="tight", mechanism="tree"
    )
    with pytest.raises(PrivacyParameterError, match=misfit):
        privacy_report_from_calibration("ucrl_vtr", own, plan=k8)
    k1000 = ucrl_vtr.release_plan("jdp", False, 2, 1000, 2, "tree", None)
    wide = k1000.with_statistic(k1000.statistics[0].name, x_bound=4.0, y_high=4.0)
    assert vtr(1e-5, 2, wide).scale("sigma_B") > 1.9 * vtr(1e-5, 2, k1000).scale("sigma_B")
    assert vtr(1e-5, 2, k1000).scale("sigma_B") == own.scale("sigma_B")
    assert privacy_report_from_calibration("ucrl_vtr", own, plan=k1000)["within_target"]["tight"]


def test_a_plan_without_continual_mechanisms_may_be_of_another_K():
    """check_plan_shape compares the capacity only where a continual-release mechanism counts a
    user's draws by it: the LDP randomizer's noise is the same for any K (sigma_B 12.23 at eps 4,
    delta 1e-5, H 2, d 2, for the K = 8 and K = 1000 plans), so the agent's K = 1000 LDP plan is
    taken by a K = 1000 calibration and by the K = 1 audit of the randomizer."""
    from privrl.audit.shipped import audit_ldp_randomizer

    def ldp(K, plan):
        return ucrl_vtr.calibrate_ucrl_vtr("ldp", 4.0, 1e-5, 2, K, 2, 1.0, calibration="tight", plan=plan)

    k1000 = ucrl_vtr.release_plan("ldp", False, 2, 1000, 2, None, None)
    assert ldp(1000, ucrl_vtr.release_plan("ldp", False, 2, 8, 2, None, None)).scale("sigma_B") == (
        ldp(1000, None).scale("sigma_B")
    )
    assert ldp(1, k1000).scale("sigma_B") == ldp(1000, None).scale("sigma_B")
    res = audit_ldp_randomizer(4.0, 1e-5, H=2, d=2, n_trials=200, plan=k1000)
    assert res.effective_epsilon == pytest.approx(4.0, rel=1e-3)


def test_the_plan_functions_refuse_a_non_plan_with_a_type_error():
    """tight_scales, plan_mu, plan_pure_epsilon and statistic_worst_case given another object than
    a ReleasePlan failed inside with a bare AttributeError ('str' object has no attribute 'ratios'
    / 'scale_keys' / 'statistic'); a TypeError names the argument, as the calibrations' check_plan."""
    from privrl.privacy.plans import plan_pure_epsilon

    calls = {
        "tight_scales": lambda p: tight_scales(p, 1.0, 1e-5),
        "plan_mu": lambda p: plan_mu(p, {"sigma_B": 1.0, "sigma_g": 1.0}),
        "plan_pure_epsilon": lambda p: plan_pure_epsilon(p, {"sigma_B": 1.0, "sigma_g": 1.0}),
        "statistic_worst_case": lambda p: statistic_worst_case(p, "X_{k,h}, y_{k,h}", {"sigma_B": 1.0}),
    }
    for call in calls.values():
        with pytest.raises(TypeError, match=r"plan must be a ReleasePlan, got 'x'"):
            call("x")
    plan = ucrl_vtr.release_plan("jdp", False, 2, 8, 2, "tree", "float")
    assert calls["plan_mu"](plan) > 0 and tight_scales(plan, 1.0, 1e-5)["sigma_B"] > 0


def test_plan_mu_and_plan_pure_epsilon_refuse_a_plan_of_the_other_noise_law():
    """plan_mu of a Laplace plan returned the GDP parameter of a Gaussian release with the Laplace
    scales (and plan_pure_epsilon of a Gaussian plan the epsilon of a Laplace release): numbers of
    a release the plan never makes, read as if they certified it. Each measures its own law (and a
    plan without noise), and refuses the other."""
    from privrl.common.errors import PrivacyParameterError
    from privrl.privacy.plans import plan_pure_epsilon

    gauss = ucrl_vtr.release_plan("jdp", False, 2, 8, 2, "tree", "float")
    laplace = ucrl_vtr.release_plan("jdp", True, 2, 8, 2, "tree", "float")
    assert (gauss.noise, laplace.noise) == ("gaussian", "laplace")
    scales = dict.fromkeys(gauss.scale_keys, 3.0)
    assert plan_mu(gauss, scales) > 0 and plan_pure_epsilon(laplace, scales) > 0
    with pytest.raises(PrivacyParameterError, match="plan noise 'laplace': this function measures gaussian"):
        plan_mu(laplace, scales)
    with pytest.raises(PrivacyParameterError, match="plan noise 'gaussian': this function measures laplace"):
        plan_pure_epsilon(gauss, scales)
    # statistic_worst_case (the geometry of a worst pair, read by the audits of either law) takes both
    name = gauss.statistics[0].name
    assert min(statistic_worst_case(p, name, scales).value for p in (gauss, laplace)) > 0
