"""Raw privrl._core entry points that aborted, panicked or hung on malformed input (fuzzing of
the binding's surface): each now raises a privrl error, and the valid calls are unchanged."""

import pickle

import numpy as np
import pytest

from privrl import _core
from privrl.common.errors import PrivacyParameterError

SEED = b"\x01" * 32


@pytest.mark.parametrize("buffers", [_core.MAX_BLT_BUFFERS + 1, 2**31, 2**63])
def test_blt_parameters_refuses_too_many_buffers(buffers):
    # 2^31 buffers aborted the process (allocation), 2^63 panicked (capacity overflow)
    with pytest.raises(PrivacyParameterError, match="blt buffers"):
        _core.blt_parameters(100, buffers)
    theta, omega = _core.blt_parameters(100, _core.MAX_BLT_BUFFERS)
    assert len(theta) == len(omega) == _core.MAX_BLT_BUFFERS


@pytest.mark.parametrize("capacity", [2**63, 2**64 - 1])
def test_honaker_refuses_capacity_beyond_2_63(capacity):
    # T >= 2^63 indexed past the 63 levels of the multiplier's table (a PanicException)
    with pytest.raises(PrivacyParameterError, match="honaker capacity"):
        _core.PrefixMechanism("honaker", False, 3, capacity, "gaussian", 1.0, SEED)
    m = _core.PrefixMechanism("honaker", False, 3, 2**63 - 1, "gaussian", 1.0, SEED)
    assert np.isfinite(m.l2_multiplier) and m.l2_multiplier > 1


def test_guard_with_inconsistent_bounds_is_refused():
    from privrl.agents import SensitivityGuard
    from privrl.agents.common.specs import GuardSpec

    x, y = np.ones((2, 3)), np.full(2, 0.5)
    # a guard changed after it was built: y_low > y_high panicked in f64::clamp
    g = SensitivityGuard(1.0, 0.0, 1.0)
    g.y_low = 2.0
    with pytest.raises(PrivacyParameterError, match="sensitivity guard"):
        g.apply(x, y)
    nan = float("nan")
    for bounds in ((1.0, 0.0, -1.0), (1.0, nan, 1.0), (-1.0, 0.0, 1.0)):
        spec = GuardSpec(*bounds, False)
        xx = x.copy()  # x_bound = -1 flipped the rows' signs silently
        with pytest.raises(PrivacyParameterError, match="sensitivity guard"):
            _core.apply_guard(spec, xx, y.copy())
        assert np.array_equal(xx, x)
    assert _core.apply_guard(GuardSpec(1.0, -np.inf, np.inf, False), x.copy(), y.copy()) == 2


def _edited(obj, pos, value):
    restore, args = obj.__reduce__()
    state = bytearray(args[-1])
    state[pos] = value
    return restore, (*args[:-1], bytes(state))


def test_restored_noise_stream_is_checked_like_a_built_one():
    s = _core.NoiseStream("discrete_gaussian", 1.0, SEED, 10)
    restore, args = _edited(s, 12, 0xFF)  # grid_bits 10 -> 255: vectors() never returned
    with pytest.raises(PrivacyParameterError, match="grid_bits"):
        restore(*args)
    assert np.array_equal(pickle.loads(pickle.dumps(s)).vectors(2, 3), s.vectors(2, 3))


def test_restored_mixture_features_are_checked():
    m = _core.MixtureFeatures(np.random.default_rng(0).random((4, 2, 3)))
    restore, args = _edited(m, 22, 0xFF)  # d = 3 -> ~2^62: phi_v aborted the process
    with pytest.raises(PrivacyParameterError, match="mixture features"):
        restore(*args)
    restore, args = _edited(m, 0, 0)  # n_rows 4 -> 0: phi_v panicked (chunk size 0)
    with pytest.raises(PrivacyParameterError, match="mixture features"):
        restore(*args)
    v = np.array([0.3, 0.7])
    assert np.array_equal(pickle.loads(pickle.dumps(m)).phi_v(v), m.phi_v(v))


def test_vtr_agent_refuses_a_centre_of_the_wrong_length(monkeypatch):
    # the practical rule's centre w0 is indexed by the features' d: a w0 of another length made
    # _core.VtrAgent index past its end (a PanicException); the binding refuses it
    import dataclasses

    from privrl.agents import UCRLVTR
    from privrl.envs import RiverSwimMixture
    from privrl.privacy import NonPrivate

    specs = []
    real = _core.VtrAgent
    monkeypatch.setattr(_core, "VtrAgent", lambda spec: specs.append(spec) or real(spec))
    UCRLVTR(RiverSwimMixture(S=3, H=3), NonPrivate(), episodes=10, seed=0)
    spec = specs[0]
    reg = spec.regressions[0]
    d = spec.features.shape[-1]
    for n in (0, d - 1, d + 1):
        practical = dataclasses.replace(reg.practical, w0=np.zeros(n))
        bad = dataclasses.replace(spec, regressions=[dataclasses.replace(reg, practical=practical)])
        with pytest.raises(ValueError, match=f"w0 has {n} entries, the features d = {d}"):
            real(bad)
    real(spec)  # the genuine spec still builds


def test_sherman_morrison_does_not_cancel_at_a_tiny_lam():
    """Lambda^{-1} - u u^T / (1 + x^T u) cancels where 1 + x^T u is huge (lam = 1e-12): the inverse of
    Lambda = 1 + 1e-12 came out 1.000122 (d = 1, the one-hot path), a dense d = 3 inverse off by a
    relative 9e-5 after three unit rows (condition number 8.75). Both must be the inverse of the
    matrix kept beside them, as at lam = 1 (the same bits there: below x^T u = 1e6 the update is
    unchanged)."""
    from privrl.agents import LinUCB
    from privrl.envs.bandit import ContextualBandit
    from privrl.kernels import RankOneInverse
    from privrl.privacy import NonPrivate

    env = ContextualBandit(np.ones((1, 1)), np.array([[0.2, 0.8]]))
    agent = LinUCB(env, NonPrivate(), episodes=10, seed=0, lam=1e-12)
    for n in range(1, 4):
        agent.update(0, 1, 1.0)
        rel = agent.release()
        assert rel.design[1, 0, 0] == n + 1e-12
        assert rel.inverse[1, 0, 0] == pytest.approx(1 / (n + 1e-12), rel=1e-12)
        assert rel.weights[1, 0] == pytest.approx(n / (n + 1e-12), rel=1e-12)
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(3, 3))
    xs /= np.linalg.norm(xs, axis=1, keepdims=True)
    for lam in (1e-12, 1.0):
        r = RankOneInverse(3, lam)
        for x in xs:
            r.update(x)
        assert np.linalg.cond(r.matrix()) < 10  # three unit rows: well conditioned (8.75)
        np.testing.assert_allclose(r.inverse(), np.linalg.inv(r.matrix()), rtol=1e-9, atol=1e-9)
