"""A regret failure probability p so small that the noise bounds' per-bound failure probability
alpha = p / (6 K H) (UCRL-VTR, LSVI-UCB) or p / (24 K H) (UCRL-VTR+) has an overflowing inverse:
every private calibration refuses it naming p (it was refused as "Upsilon must be finite and
>= 0, got inf", an internal name, by all but LSVI-UCB's practical one), and a non-private radius
that overflows names p instead of blaming beta_scale. The largest such p is computed, not
hard-coded: the refusal starts exactly where 1 / alpha overflows."""

import math
import warnings

import pytest

from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
from privrl.common.errors import PrivacyParameterError
from privrl.envs import RandomLinearMDP, RiverSwimMixture
from privrl.privacy import JointDP, LocalDP, NonPrivate
from privrl.privacy.bounds import check_bound_alpha

K, H = 10**7, 20
AGENTS = [
    (UCRLVTR, lambda: RiverSwimMixture(S=6, H=H), 6.0, ("jdp", "ldp")),
    (UCRLVTRPlus, lambda: RiverSwimMixture(S=6, H=H), 24.0, ("jdp", "ldp")),
    (LSVIUCB, RandomLinearMDP, 6.0, ("jdp",)),
]
CALIBRATIONS = ("paper", "tight", "practical", "adaptive")


def _privacy(kind, calibration, p, pure=False):
    if kind == "none":
        return NonPrivate(calibration=calibration, p=p)
    model = JointDP if kind == "jdp" else LocalDP
    return model(1.0, 0.0 if pure else 1e-9, calibration=calibration, p=p)


def _build(cls, env, privacy):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(env, privacy, episodes=K, seed=1)


@pytest.mark.parametrize("cls,make_env,factor,kinds", AGENTS)
def test_every_private_calibration_refuses_a_tiny_p_naming_it(cls, make_env, factor, kinds):
    env = make_env()
    for kind in kinds:
        for calibration in CALIBRATIONS:
            for pure in (False, True):
                with pytest.raises(PrivacyParameterError, match=r"p = 1e-300 is too small for the noise"):
                    _build(cls, env, _privacy(kind, calibration, 1e-300, pure))


@pytest.mark.parametrize("factor,text", [(6.0, "6 K H"), (24.0, "24 K H")])
def test_the_refusal_starts_where_one_over_alpha_overflows(factor, text):
    split = factor * K * H

    # the smallest p with a finite 1 / (p / split), found by stepping down one ulp at a time
    def finite(x):
        return math.isfinite(1.0 / (x / split))

    p = split / 1.7976931348623157e308
    while finite(math.nextafter(p, 0.0)):
        p = math.nextafter(p, 0.0)
    while not finite(p):
        p = math.nextafter(p, 1.0)
    assert check_bound_alpha(p, split, text, K, H) == p / split
    below = math.nextafter(p, 0.0)
    with pytest.raises(PrivacyParameterError, match=rf"alpha = p / \({text}\)"):
        check_bound_alpha(below, split, text, K, H)


def test_a_larger_p_still_builds_every_private_agent_with_finite_bounds():
    for cls, make_env, _, kinds in AGENTS:
        env = make_env()
        for kind in kinds:
            cal = _build(cls, env, _privacy(kind, "paper", 1e-100)).calibration
            bounds = [getattr(cal, f) for f in ("Upsilon", "C", "Upsilon1", "C1") if hasattr(cal, f)]
            assert bounds and all(math.isfinite(b) and b > 0 for b in bounds), (cls, kind)


def test_a_non_private_radius_that_overflows_names_p_not_beta_scale():
    env = RiverSwimMixture(S=6, H=H)
    for calibration in ("paper", "tight", "practical"):
        with pytest.raises(PrivacyParameterError, match=r"radius is inf at p = 1e-300") as e:
            _build(UCRLVTRPlus, env, _privacy("none", calibration, 1e-300))
        assert "beta_scale" not in str(e.value)
    # the non-private agents whose radius stays finite still build
    assert math.isfinite(_build(UCRLVTR, env, _privacy("none", "paper", 1e-300)).beta)
    assert math.isfinite(_build(LSVIUCB, RandomLinearMDP(), _privacy("none", "paper", 1e-300)).beta)


@pytest.mark.parametrize("p", [0.0, -0.0, -1e-3, 1.0, 1.5, math.inf, math.nan])
def test_check_bound_alpha_refuses_a_p_outside_the_open_interval_like_the_privacy_models(p):
    # p = 0 asks for noise bounds that never fail: the noise is Gaussian / Laplace, unbounded, so
    # no finite bound holds with probability 1 (log(1 / alpha) = inf); it divided by zero.
    with pytest.raises(PrivacyParameterError, match=r"p must be in \(0, 1\)"):
        check_bound_alpha(p, 6.0 * K * H, "6 K H", K, H)


@pytest.mark.parametrize("split", [0.0, -60.0, math.inf, math.nan])
def test_check_bound_alpha_refuses_a_split_that_is_not_a_positive_count(split):
    with pytest.raises(PrivacyParameterError, match=r"split must be finite and > 0"):
        check_bound_alpha(0.05, split, "6 K H", K, H)


@pytest.mark.parametrize("p", [5e-324, 1e-320])
def test_a_p_whose_alpha_underflows_to_zero_is_refused_naming_p_not_divided_by(p):
    # p / (6 K H) rounds to 0.0 for p this close to the smallest double: 1 / alpha raised
    # ZeroDivisionError from every private linear agent's constructor, not the refusal naming p
    assert p / (6.0 * K * H) == 0.0
    with pytest.raises(PrivacyParameterError, match=r"is too small for the noise"):
        check_bound_alpha(p, 6.0 * K * H, "6 K H", K, H)
    env = RiverSwimMixture(S=6, H=H)
    for kind in ("jdp", "ldp"):
        with pytest.raises(PrivacyParameterError, match=r"is too small for the noise"):
            _build(UCRLVTR, env, _privacy(kind, "adaptive", p))


@pytest.mark.parametrize("split", [5e-324, 1e-300, 0.01, 0.5])
def test_check_bound_alpha_refuses_a_split_below_one_bound(split):
    # split counts the bounds p is shared among: below 1, alpha = p / split exceeded p and was
    # returned as a failure probability of 5.0, 5e298 or inf
    with pytest.raises(PrivacyParameterError, match=r"split must be >= 1"):
        check_bound_alpha(0.05, split, "6 K H", K, H)
    assert check_bound_alpha(0.05, 1.0, "1", K, H) == 0.05
