"""Bad inputs to the release-plan builders give a clear PrivacyParameterError naming the argument.

Each algorithm's public ``release_plan`` (``privrl.agents.<algorithm>.calibration``) builds what the
calibrations, reports and audits read. LSVI-UCB's and PSRL's checked none of their arguments and
every builder read ``pure`` by truthiness: ``kind=nan`` gave a plan of model nan, ``d=nan`` (PSRL
``S=nan``) one of dimension nan, ``d=0`` one of dimension 0 and ``pure="no"`` (or None, 0.5, an
array) a Laplace plan of a Gaussian release, all accepted without a word (found by hA's
adversarial-input pass). They check what their calibrations check now.
"""

import math

import numpy as np
import pytest

from privrl.agents.linucb.calibration import release_plan as linucb_plan
from privrl.agents.lsvi_ucb.calibration import release_plan as lsvi_plan
from privrl.agents.psrl.calibration import release_plan as psrl_plan
from privrl.agents.ucrl_vtr.calibration import release_plan as vtr_plan
from privrl.agents.ucrl_vtr_plus.calibration import release_plan as plus_plan
from privrl.common.errors import PrivacyParameterError

BUILDERS = {
    "ucrl_vtr": (vtr_plan, dict(kind="jdp", pure=False, H=2, K=8, d=2)),
    "ucrl_vtr_plus": (plus_plan, dict(kind="jdp", pure=False, H=2, K=8, d=2)),
    "lsvi_ucb": (lsvi_plan, dict(kind="jdp", pure=False, H=2, K=8, d=2, B=2)),
    "linucb": (linucb_plan, dict(kind="jdp", pure=False, K=8, p=2)),
    "psrl": (psrl_plan, dict(kind="jdp", H=2, K=8, S=2, A=2, B=2)),
}
CASES = [(name, arg) for name, (_, kw) in BUILDERS.items() for arg in kw]
BAD = {
    "kind": [math.nan, None, "ldpp", 3],
    "pure": ["no", None, 0.5, 1, np.array([True])],
}
BAD_INT = [math.nan, 0, -1, 2.5, None, "2", True]


@pytest.mark.parametrize("name, arg", CASES)
def test_a_bad_argument_is_refused_by_name(name, arg):
    build, kw = BUILDERS[name]
    for bad in BAD.get(arg, BAD_INT):
        with pytest.raises(PrivacyParameterError, match=rf"^{arg} must be "):
            build(**{**kw, arg: bad})


@pytest.mark.parametrize("name", ["lsvi_ucb", "psrl"])
def test_a_model_the_algorithm_has_not_is_refused(name):
    build, kw = BUILDERS[name]
    with pytest.raises(PrivacyParameterError, match=r"^kind must be one of 'none', 'jdp', got 'ldp'"):
        build(**{**kw, "kind": "ldp"})


@pytest.mark.parametrize("name", list(BUILDERS))
def test_valid_arguments_build_the_same_plan(name):
    build, kw = BUILDERS[name]
    plan = build(**kw)
    assert plan == build(**{k: np.int64(v) if type(v) is int else v for k, v in kw.items()})
    if "pure" in kw:
        assert build(**{**kw, "pure": np.bool_(True)}) == build(**{**kw, "pure": True})
        assert build(**{**kw, "pure": True}).noise == "laplace" and plan.noise == "gaussian"


def test_the_tight_tools_check_the_budget_given_with_a_plan():
    """tight_scales and plan_target (privrl.privacy.common) did not check the (epsilon, delta)
    given with the plan: tight_scales(a Laplace plan, None, 0.0) raised a bare TypeError
    ('unsupported operand type(s) for -'), an array epsilon or delta 'unhashable type' (the
    cache), epsilon=True was read as 1 (sigma_B 49.95 for a (True, 1e-5) budget), and
    plan_target / paper_lattice_factor of a non-plan a bare AttributeError (hA's adversarial-input
    pass). Each is refused by name; the calibrations' own calls give the same scales."""
    from privrl.privacy.common import paper_lattice_factor, plan_target, tight_scales

    gauss = vtr_plan("jdp", False, 2, 8, 2)
    lap = vtr_plan("jdp", True, 2, 8, 2, mechanism="tree")
    for fn in (tight_scales, plan_target):
        for plan in (gauss, lap):
            for eps in (None, True, np.array([1.0]), math.nan, 0.0, -1.0):
                with pytest.raises(PrivacyParameterError, match=r"^epsilon must be "):
                    fn(plan, eps, 1e-5 if plan is gauss else 0.0)
        for dlt in (None, np.array([1e-5]), 0.0, 1.0, math.nan):
            with pytest.raises(PrivacyParameterError, match=r"^delta must be "):
                fn(gauss, 1.0, dlt)
        with pytest.raises(TypeError, match=r"^plan must be a ReleasePlan, got 'x'"):
            fn("x", 1.0, 1e-5)
    with pytest.raises(TypeError, match=r"^plan must be a ReleasePlan, got None"):
        paper_lattice_factor(None, 1.0)
    assert tight_scales(gauss, 1.0, 1e-5) == tight_scales(gauss, np.float64(1.0), np.float64(1e-5))
    assert tight_scales(lap, 1.0, 0.0) == tight_scales(lap, 1, 0)
    assert plan_target(gauss, 1.0, 1e-5) == pytest.approx(0.268, abs=1e-3)


def test_the_rounding_and_shape_helpers_refuse_a_non_plan_with_a_type_error():
    """plan_rounding_mu, plan_rounding_epsilon, plan_rounded_draws, rounding_per_draw,
    check_plan_shape, law_factor (privrl.privacy.plans) and sampler_fields (privrl.privacy.common)
    given 'x' or None failed inside with a bare AttributeError ("'str' object has no attribute
    'families'", ... 'is_matrix'; hA's adversarial-input pass). A TypeError names the argument, as
    plan_mu / tight_scales do; a plan's own numbers are unchanged."""
    from privrl.privacy.common import sampler_fields
    from privrl.privacy.plans import (
        check_plan_shape,
        law_factor,
        plan_rounded_draws,
        plan_rounding_epsilon,
        plan_rounding_mu,
        rounding_per_draw,
    )

    plan = vtr_plan("jdp", False, 2, 8, 2)
    fam = plan.families[0]
    calls = {
        "plan_rounding_mu": plan_rounding_mu,
        "plan_rounding_epsilon": plan_rounding_epsilon,
        "plan_rounded_draws": plan_rounded_draws,
        "rounding_per_draw": lambda p: rounding_per_draw(p, fam),
        "check_plan_shape": lambda p: check_plan_shape(p, plan),
        "sampler_fields": lambda p: sampler_fields(p, "jdp"),
        "sampler_fields none": lambda p: sampler_fields(p, "none"),
    }
    for bad in ("x", None):
        for call in calls.values():
            with pytest.raises(TypeError, match=rf"^plan must be a ReleasePlan, got {bad!r}$"):
                call(bad)
        with pytest.raises(TypeError, match=rf"^own must be a ReleasePlan, got {bad!r}$"):
            check_plan_shape(plan, bad)
        for call in (law_factor, lambda f: rounding_per_draw(plan, f)):
            with pytest.raises(TypeError, match=rf"^f must be a ReleasedFamily, got {bad!r}$"):
                call(bad)
    assert law_factor(fam) == fam.sym_divisor / 2  # the matrix law (Z' + Z'^T)/c, d = 2
    assert rounding_per_draw(plan, fam) == 2.0**-24 * (fam.sym_divisor / 2) * 2
    assert plan_rounding_mu(plan) > 0 and plan_rounding_epsilon(plan) > 0 and plan_rounded_draws(plan) > 0
    check_plan_shape(plan, plan)
    assert sampler_fields(plan, "jdp") == {"sampler": "discrete", "grid_bits": 24}


def test_a_release_plan_checks_the_numbers_its_certificate_reads():
    """ReleasePlan took any H, capacity, model, noise, sampler and grid_bits (hA's adversarial-input
    pass): grid_bits=nan (or 0.0, -3, 2.5, True, 1000) was accepted and plan_rounding_mu returned
    NaN (a Laplace plan at 1000 was certified with no rounding at all, a lattice no sampler has),
    capacity=0 on BLT left the rounding out of the tight sigma_B (49.95131 for 49.95140), -3 a
    bare 'math domain error', and sampler='Discrete' was accounted as the float release. A plan
    refuses them as the calibrations do; the plans the builders make are the same."""
    from dataclasses import replace

    from privrl.privacy.plans import ReleasePlan

    plan = vtr_plan("jdp", False, 2, 8, 2, mechanism="blt")
    bad = {
        "grid_bits": (r"must be an integer in \[0, 64\]", [math.nan, 0.0, -3, 2.5, True, 65, 1000, "24"]),
        "capacity": ("must be an integer >= 1", [0, -3, math.nan, 2.5, True, "8", None]),
        "H": ("must be an integer >= 1", [0, -1, math.nan, 2.5, True, "2", None]),
        "model": ("must be one of 'none', 'jdp', 'ldp'", ["JDP", "dp", None, math.nan, 1]),
        "noise": ("must be one of 'gaussian', 'laplace'", ["Gaussian", None, math.nan, 0]),
        "sampler": ("must be one of 'discrete', 'float'", ["Discrete", "float ", math.nan, 1]),
    }
    for name, (words, values) in bad.items():
        for value in values:
            with pytest.raises(PrivacyParameterError, match=rf"^{name} {words}, got "):
                replace(plan, **{name: value})
    with pytest.raises(PrivacyParameterError, match=r"^noise must be None for model 'none', got 'gaussian'"):
        replace(plan, model="none", noise="gaussian", sampler="float")
    for name, value in {"grid_bits": 0, "capacity": np.int64(8), "H": np.int64(2)}.items():
        same = replace(plan, **{name: value})
        assert type(getattr(same, name)) is int and getattr(same, name) == value
    assert replace(plan, grid_bits=64).grid_bits == 64 and replace(plan, grid_bits=np.int64(24)) == plan
    for kind, pure in (("none", False), ("ldp", True), ("jdp", True)):
        built = vtr_plan(kind, pure, 2, 8, 2)
        assert ReleasePlan(**{k: getattr(built, k) for k in built.__dataclass_fields__}) == built


@pytest.mark.parametrize(
    "part, change, match",
    [
        ("family", {"instances": 0}, "instances must be an integer >= 1"),
        ("family", {"draws": 0}, "draws must be an integer >= 1"),
        ("family", {"draws_paper": -1}, "draws_paper must be an integer >= 1"),
        ("family", {"multiplier": math.nan}, "multiplier must be finite and > 0"),
        ("family", {"l2_sensitivity": -2.0}, "l2_sensitivity must be finite and > 0"),
        ("family", {"l1_sensitivity": math.inf}, "l1_sensitivity must be finite and > 0"),
        ("family", {"scale_ratio": 0.0}, "scale_ratio must be finite and > 0"),
        ("family", {"sym_divisor": 0.0}, "sym_divisor must be finite and > 0"),
        ("family", {"form": "outer product"}, "form must be one of"),
        ("family", {"site": "server"}, "site must be one of"),
        ("statistic", {"dim": 0}, "dim must be an integer >= 1"),
        ("statistic", {"x_bound": math.nan}, "x_bound must be finite and > 0"),
        ("statistic", {"y_low": 3.0, "y_high": 1.0}, r"need y_low <= y_high, got \[3.0, 1.0\]"),
        ("statistic", {"nonnegative": "yes"}, "nonnegative"),
    ],
)
def test_a_family_or_statistic_built_by_hand_checks_its_numbers(part, change, match):
    """ReleasedFamily and UserStatistic checked nothing when built directly (or with
    dataclasses.replace, as a what-if plan is): a family of instances=0 made plan_mu 0, no privacy
    loss certified for a release that has one, draws=0 or a nan multiplier / sensitivity went into
    the worst case, a nan x_bound was reported as 'overflows a double' (hA2's pass). Both check the
    numbers a certificate reads where they are built; the builders' own are unchanged."""
    from dataclasses import replace

    from privrl.privacy.plans import plan_mu

    plan = vtr_plan(kind="jdp", pure=False, H=2, K=8, d=2)
    fam = plan.families[0]
    if part == "family" and "sym_divisor" in change:
        fam = next(f for f in plan.families if f.sym_divisor is not None)
    scales = dict.fromkeys(plan.scale_keys, 3.0)
    if change == {"instances": 0}:  # what it certified before: a release with no privacy loss
        assert plan_mu(plan, scales) > 0
    with pytest.raises(PrivacyParameterError, match=match):
        replace(fam if part == "family" else plan.statistics[0], **change)
    for b, kw in BUILDERS.values():  # every builder's plan passes its own checks
        built = b(**kw)
        assert [replace(f) for f in built.families] == list(built.families)
        assert [replace(s) for s in built.statistics] == list(built.statistics)
