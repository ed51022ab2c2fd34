"""Every public privacy default is the agents': the kernels' noise law, the sampler / mechanism
defaults of the public functions, and the sigma a direct calibration gives against an agent's."""

from __future__ import annotations

import numpy as np
import pytest

from privrl import kernels as kn
from privrl.privacy import JointDP
from privrl.privacy.common import DEFAULT_SAMPLER, node_noise, resolve_sampler


@pytest.mark.parametrize("kind", kn.MECHANISMS)
def test_the_kernels_default_law_is_the_agents_sampler_wherever_the_mechanism_has_it(kind):
    """The kernels defaulted to noise="gaussian" (the continuous law, sampler="float") while the
    agents draw "discrete_gaussian" (DEFAULT_SAMPLER): a default TreeAggregator / BLT /
    NoiseStream drew with the floating-point side channel. Now noise=None is the law a JDP agent
    with this mechanism draws (resolve_sampler's rule): discrete on the tree and BLT, the
    continuous Gaussian on Honaker / the factorization (they have no discrete one)."""
    law = node_noise("gaussian", resolve_sampler("jdp", kind))
    assert kn.make_prefix_mechanism(kind, 2, 4, seed=0).noise_kind == law
    assert kn.PrefixMechanism(kind, (2, 2), 4, seed=0).noise_kind == law
    if kind == "tree":
        assert kn.TreeAggregator(2, 4, seed=0).noise_kind == law == "discrete_gaussian"
    assert law == ("discrete_gaussian" if kind in kn.continual.DISCRETE_MECHANISMS else "gaussian")


def test_a_default_noise_stream_draws_the_agents_exact_law_on_its_lattice():
    """NoiseStream() drew numpy-like float Gaussians; now the exact discrete Gaussian of a default
    agent (DEFAULT_SAMPLER), every draw a multiple of scale * 2^-DEFAULT_GRID_BITS, and privatize
    rounds the data to that lattice first."""
    assert DEFAULT_SAMPLER == "discrete"
    st = kn.NoiseStream(scale=3.0, seed=0)
    assert st.noise_kind == node_noise("gaussian", DEFAULT_SAMPLER)
    unit = st.lattice_unit()
    assert unit == 3.0 * 2.0**-kn.DEFAULT_GRID_BITS
    z = st.vectors(2000, 3)
    assert np.array_equal(z / unit, np.round(z / unit))
    assert abs(z.std() / 3.0 - 1.0) < 0.05
    m = kn.NoiseStream(scale=3.0, seed=0).privatize(np.full((4, 3), 0.1))
    assert np.array_equal(m / unit, np.round(m / unit))
    # the continuous law stays one argument away, and is what it was
    f = kn.NoiseStream("gaussian", 3.0, seed=0).vectors(2000, 3)
    assert not np.array_equal(f / unit, np.round(f / unit))


def _public_callables():
    """(name, callable) of every public function / class of the privacy layer, the agents'
    calibration modules, the audits and the kernels (their __all__)."""
    import importlib

    names = [
        "privrl.kernels",
        "privrl.kernels.continual",
        "privrl.audit",
        "privrl.audit.comparison",
        "privrl.audit.report",
    ]
    names += [
        f"privrl.privacy.{m}" for m in ("accounting", "common", "continual", "mechanisms", "models", "plans")
    ]
    names += [f"privrl.agents.{a}.calibration" for a in ("linucb", "lsvi_ucb", "ucrl_vtr", "ucrl_vtr_plus")]
    for name in names:
        mod = importlib.import_module(name)
        for attr in getattr(mod, "__all__", ()):
            obj = getattr(mod, attr)
            if callable(obj):
                yield f"{name}.{attr}", obj


def test_every_public_sampler_and_mechanism_default_is_the_agents_rule():
    """A public function taking ``sampler`` / ``mechanism`` defaults to None, resolved by the one
    rule the agents use (resolve_sampler / resolve_mechanism); lsvi_ucb_practical_batches
    defaulted to mechanism="tree" while the default agent's (adaptive, Gaussian JDP) server runs
    BLT. The Calibration records are results (their fields are filled by calibrate_*), not
    entries, and are left out."""
    import inspect

    from privrl.privacy.common import Calibration

    seen, wrong = set(), []
    for name, obj in _public_callables():
        if obj in seen or (inspect.isclass(obj) and issubclass(obj, Calibration)):
            continue
        seen.add(obj)
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            continue
        for key in ("sampler", "mechanism"):
            p = params.get(key)
            if p is not None and p.default is not inspect.Parameter.empty and p.default is not None:
                wrong.append(f"{name}({key}={p.default!r})")
    assert len(seen) > 40
    assert wrong == []


def test_the_scaled_batches_called_bare_are_the_default_agents():
    """lsvi_ucb_practical_batches with no mechanism gives the B of a default LSVIUCB(batches=
    "scaled") agent (its own mechanism, BLT, resolved the agent's way)."""
    from privrl.agents import LSVIUCB
    from privrl.agents.lsvi_ucb import calibration as lsvi
    from privrl.envs import RandomLinearMDP

    env = RandomLinearMDP(S=20, A=3, d=4, H=3, seed=0)
    for eps in (1.0, 10.0):
        agent = LSVIUCB(env, JointDP(eps, 1e-5), batches="scaled", episodes=2000, seed=0)
        assert agent.calibration.mechanism == "blt"
        assert lsvi.lsvi_ucb_practical_batches(eps, 1e-5, 3, 2000, 4, 0.05) == agent.B
        assert lsvi.lsvi_ucb_practical_batches(eps, 1e-5, 3, 2000, 4, 0.05, "blt") == agent.B


@pytest.mark.parametrize("mechanism", ["tree", "honaker", "factorization", "blt"])
def test_a_release_plan_built_without_a_sampler_takes_the_agents_rule(mechanism):
    """ReleasePlan defaulted to sampler="discrete" whatever its mechanism: a plan built by hand
    for Honaker's tree or the factorization (no discrete sampler) was accounted with the lattice
    rounding of a sampler they cannot run (sigma_B 304.8513 against the agent's 304.8455 at eps 1,
    delta 1e-5, H 3, K 200, d 4). Now sampler=None resolves as resolve_sampler does, and the plan
    equals the one the calibration builds (release_plan(..., mechanism))."""
    import dataclasses

    from privrl.agents.ucrl_vtr.calibration import release_plan
    from privrl.privacy.common import tight_scales
    from privrl.privacy.plans import ReleasePlan

    built = release_plan("jdp", False, 3, 200, 4, mechanism)
    fields = {f.name: getattr(built, f.name) for f in dataclasses.fields(built) if f.name != "sampler"}
    by_hand = ReleasePlan(**fields)
    assert by_hand.sampler == built.sampler == resolve_sampler("jdp", mechanism)
    assert by_hand == built
    assert tight_scales(by_hand, 1.0, 1e-5) == tight_scales(built, 1.0, 1e-5)


def _cases():
    from privrl.agents import LSVIUCB, UCRLVTR, LinUCB, UCRLVTRPlus
    from privrl.envs import ContextualBandit, RandomLinearMDP, RiverSwimMixture

    river = RiverSwimMixture(S=4, H=3)
    linear = RandomLinearMDP(S=20, A=3, d=4, H=3, seed=0)
    bandit = ContextualBandit(np.eye(3)[:2] * 0.5, np.array([[0.1, 0.9], [0.8, 0.2]]))
    return [
        ("ucrl_vtr", UCRLVTR, river, lambda a: {"H": 3, "d": a.d, "C_w": float(river.C_w)}),
        ("ucrl_vtr_plus", UCRLVTRPlus, river, lambda a: {"H": 3, "d": a.d, "C_w": float(river.C_w)}),
        ("lsvi_ucb", LSVIUCB, linear, lambda a: {"H": 3, "d": 4}),
        ("linucb", LinUCB, bandit, lambda a: {"arms": 2, "p": 3}),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("model", ["jdp", "ldp", "pure"])
def test_every_calibration_entry_called_bare_gives_the_agents_noise(case, model):
    """calibrate_<algorithm>, release_plan, tight_scales and privacy_report_from_calibration called
    with no calibration / mechanism / sampler give what the agent with the same epsilon uses: every
    field its calibration sets at construction (every sigma, the sampler, grid_bits, mechanism),
    its plan, and the report's sampler / mechanism / tight budget (the four algorithms; LinUCB's
    calibrate_linucb was compared with the agent's only through its plan)."""
    import importlib

    from privrl.audit.report import privacy_report_from_calibration
    from privrl.privacy import LocalDP
    from privrl.privacy.common import tight_scales

    name, cls, env, extra = case
    if name == "lsvi_ucb" and model == "ldp":
        pytest.skip("no LDP algorithm for linear MDPs")
    privacy = LocalDP(1.0, 1e-5) if model == "ldp" else JointDP(1.0, 0.0 if model == "pure" else 1e-5)
    K = 200
    agent = cls(env, privacy, episodes=K, seed=0)
    mod = importlib.import_module(f"privrl.agents.{name}.calibration")
    cal = getattr(mod, f"calibrate_{name}")(privacy.kind, 1.0, privacy.delta, K=K, **extra(agent))

    def at_construction(c):  # without what only an agent records (the radii it uses, its centre)
        skip = ("beta_scale", "centre", "planning")
        return {k: v for k, v in c.to_dict().items() if not k.endswith("_used") and k not in skip}

    assert at_construction(cal) == at_construction(agent.calibration)
    assert cal.sampler == agent.calibration.sampler == "discrete"
    plan_args = (privacy.kind, privacy.pure) + (
        (K, 3) if name == "linucb" else (3, K, agent.d) + ((agent.B,) if name == "lsvi_ucb" else ())
    )
    plan = mod.release_plan(*plan_args)
    assert plan == agent.release_plan()
    assert tight_scales(plan, 1.0, privacy.delta) == tight_scales(agent.release_plan(), 1.0, privacy.delta)
    direct, shipped = privacy_report_from_calibration(name, cal), agent.privacy_report()
    for key in ("sampler", "mechanism", "tight", "paper", "within_target"):
        assert direct[key] == shipped[key], key


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_a_calibration_given_a_plan_takes_its_mechanism_and_refuses_another(case):
    """calibrate_<algorithm>(..., plan=P) with mechanism / sampler None resolved them without P: a
    tree plan under the default calibration gave the tree's sigma in a calibration labelled BLT
    (UCRL-VTR, H 5, K 1000, d 4, eps 1: sigma_B 1318.98, BLT's own 705.23), which an agent would run
    as BLT and its report account as BLT (eps 0.504 for a target of 1). Now the plan's mechanism and
    sampler are the calibration's (the same fields as naming them), and a plan of another mechanism
    or sampler than the ones named is refused."""
    import importlib

    from privrl.common.errors import PrivacyParameterError

    name, cls, env, extra = case
    K = 200
    agent = cls(env, JointDP(1.0, 1e-5), episodes=K, seed=0)
    mod = importlib.import_module(f"privrl.agents.{name}.calibration")
    calibrate = getattr(mod, f"calibrate_{name}")
    plan_args = ("jdp", False) + ((K, 3) if name == "linucb" else (3, K, agent.d))
    plan_args += (agent.B,) if name == "lsvi_ucb" else ()
    tree = mod.release_plan(*plan_args, mechanism="tree")
    assert agent.calibration.mechanism == "blt" and tree.mechanism == "tree"
    given = calibrate("jdp", 1.0, 1e-5, K=K, plan=tree, **extra(agent))
    named = calibrate("jdp", 1.0, 1e-5, K=K, mechanism="tree", **extra(agent))
    assert given.to_dict() == named.to_dict()
    assert given.mechanism == "tree" and given.sampler == tree.sampler
    with pytest.raises(PrivacyParameterError, match="release plan is one of mechanism 'tree'"):
        calibrate("jdp", 1.0, 1e-5, K=K, plan=tree, mechanism="blt", **extra(agent))
    with pytest.raises(PrivacyParameterError, match="sampler 'float' asked for"):
        calibrate("jdp", 1.0, 1e-5, K=K, plan=tree, sampler="float", **extra(agent))


def test_every_audit_defaults_to_the_agents_sampler():
    """Each public audit, called with no sampler, audits the agents' default discrete noise
    (tests/test_one_home checked audit_ucrl_vtr_tree only)."""
    import privrl.audit as A

    for f, kw in (
        (A.audit_ucrl_vtr_tree, {"H": 1, "d": 1, "K": 2}),
        (A.audit_ldp_randomizer, {"H": 1, "d": 1}),
        (A.audit_lsvi_u_release, {"H": 1, "d": 1, "K": 4, "batches": 2}),
        (A.audit_lsvi_server, {"d": 1, "K": 4, "batches": 2}),
        (A.audit_ucrl_vtr_agent, {"K": 2, "n_fit": 10}),
        (A.audit_linucb_agent, {"K": 2, "n_fit": 10}),
    ):
        assert f"{DEFAULT_SAMPLER}, x1 noise" in f(4.0, n_trials=20, **kw).name, f.__name__
