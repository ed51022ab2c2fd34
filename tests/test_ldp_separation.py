"""Issue 14, item 3: under LDP the user-side randomizer, its noise key and its clip count are a
separate object from the server, which never references them: everything reachable from the
server holds no user key, no randomizer, no guard and no raw statistic of any user."""

from __future__ import annotations

import gc
import types

import numpy as np
import pytest

import privrl
from privrl import _core
from privrl.agents import UCRLVTR, UCRLVTRPlus
from privrl.agents.common.base import SensitivityGuard
from privrl.agents.common.statistics import LocalRandomizer
from privrl.envs import RiverSwimMixture
from privrl.kernels import NoiseStream
from privrl.privacy import LocalDP

USER_SIDE = (LocalRandomizer, NoiseStream, _core.NoiseStream, SensitivityGuard, np.random.SeedSequence)


def _referents(obj: object) -> list:
    """What `obj` holds as state. A function's module globals are code, not state: only its
    closure and defaults are followed (a bound method: its instance and function)."""
    if isinstance(obj, types.FunctionType):
        return [c.cell_contents for c in obj.__closure__ or ()] + list(obj.__defaults__ or ())
    if isinstance(obj, types.MethodType):
        return [obj.__self__, obj.__func__]
    return gc.get_referents(obj)


def _reachable(root: object) -> list[object]:
    """Every object reachable from `root` (the server's whole state, as saving it would see)."""
    seen: dict[int, object] = {}
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType)):
            continue
        seen[id(obj)] = obj
        stack.extend(_referents(obj))
    return list(seen.values())


@pytest.mark.parametrize("cls", [UCRLVTR, UCRLVTRPlus])
@pytest.mark.parametrize("engine", ["python", "rust"])
@pytest.mark.parametrize("calibration", ["paper", "practical"])
def test_ldp_server_holds_no_user_key_and_no_raw_statistic(cls, engine, calibration):
    env = RiverSwimMixture(S=4, H=3)
    agent = cls(env, LocalDP(2.0, 1e-5, calibration=calibration), episodes=30, seed=0)
    raw: list[np.ndarray] = []
    if engine == "python":  # record what each user computes before randomizing it
        original = agent.randomizer.privatize

        def spy(X, y, _orig=original):
            raw.append(np.einsum("hi,hj->hij", X, X))
            raw.append(X * np.asarray(y)[:, None])
            return _orig(X, y)

        agent.randomizer.privatize = spy
    privrl.run(agent, env, seed=1, engine=engine)
    servers = [agent.server] + ([agent.server2] if cls is UCRLVTRPlus else [])
    user_side = [agent.randomizer] + ([agent.randomizer2] if cls is UCRLVTRPlus else [])
    for server in servers:
        state = _reachable(server)
        held = [type(o).__name__ for o in state if isinstance(o, USER_SIDE)]
        assert held == [], f"the server references user-side objects: {held}"
        assert not any(o is r for o in state for r in user_side)
        arrays = [o for o in state if isinstance(o, np.ndarray)]
        for stat in raw:  # no raw per-user statistic, as is or per step
            assert not any(a.shape == stat.shape and np.array_equal(a, stat) for a in arrays)
            assert not any(a.shape == stat[0].shape and np.array_equal(a, stat[0]) for a in arrays)
    # the user side does keep its own key and clip count, apart from the server
    assert all(isinstance(r._matrix_noise, NoiseStream) for r in user_side)
    assert agent.clip_count == sum(r.guard.clipped for r in user_side)
