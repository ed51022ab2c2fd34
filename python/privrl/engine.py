"""The episode engine (issue 12): whole episodes of the built-in agents in Rust.

For UCRL-VTR and UCRL-VTR+ (every calibration, privacy model and mechanism) one call runs a
block of episodes: the user's planning for all h, the rollout on the exact model, the user's
statistics (UCRL-VTR+: weighted by its variance estimate) through the sensitivity guards, the
servers' push and release, and the exact regret.
For LSVI-UCB one call runs the episodes between two releases (a fixed policy); the release,
once per batch, is the Python code of ``LSVIServer.release_batch``.

The engine is bit-identical to the Python path (``privrl.run(..., engine="python")``): it calls
the same Rust kernels, reads the agent's own mechanisms and noise streams, and takes the
environment's uniforms and the tie-breaking seeds from the same numpy generators in the same
order (``tests/test_engine.py`` checks every agent x privacy model). After a run the agent is in
the state the Python path would have left it in, so it can go on either way.

It applies to the built-in agents on a plain ``FiniteMDP`` subclass that keeps the built-in
sampling and exact values; anything else (a user's own agent or environment) runs on the Python
path.
``engine_gap(agent, env)`` says why.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from privrl import _core
from privrl.agents.base import Agent
from privrl.agents.lsvi_ucb import LSVIUCB
from privrl.agents.statistics import PrivatizedStatistics, RawStatistics, Release, released_inverse
from privrl.agents.ucrl_vtr import UCRLVTR
from privrl.agents.ucrl_vtr_plus import UCRLVTRPlus
from privrl.envs.finite import FiniteMDP
from privrl.exceptions import AssumptionError, NonFiniteError
from privrl.privacy import practical

__all__ = ["engine_gap", "run_episodes", "BLOCK"]

#: Episodes per engine call: bounds the uniforms drawn ahead (BLOCK (H + 1) doubles) and how
#: often progress callbacks fire.
BLOCK = 4096

ENGINES = ("auto", "rust", "python")


def engine_gap(agent: Agent, env: FiniteMDP) -> str | None:
    """Why the engine cannot run this agent on this environment, or None when it can."""
    cls = type(env)
    for method in ("sample_episode", "policy_values", "optimal_values"):
        if getattr(cls, method) is not getattr(FiniteMDP, method):
            return f"{cls.__name__} overrides FiniteMDP.{method}"
    replaced = _replaced_methods(agent)
    if replaced:
        return f"{replaced} is replaced on the instance (the engine would bypass it)"
    if type(agent) in (UCRLVTR, UCRLVTRPlus):
        return None
    if type(agent) is LSVIUCB:
        return None
    return f"{type(agent).__name__} is not one of the engine's agents (UCRLVTR, UCRLVTRPlus, LSVIUCB)"


_MODELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


_HOOKS = {
    "agent": ("policy", "observe", "_policy", "_observe", "user_statistics", "sigma_bar"),
    "server": ("receive", "release", "release_batch"),
    "randomizer": ("privatize",),
    "server2": ("receive", "release"),
    "randomizer2": ("privatize",),
}


def _replaced_methods(agent: Agent) -> str | None:
    """A method patched onto the agent, its server or its randomizer (a spy in a test, a user's
    instrumentation): the engine would silently skip it, so such agents run in Python."""
    for part, names in _HOOKS.items():
        obj = agent if part == "agent" else getattr(agent, part, None)
        for name in names:
            if obj is not None and name in getattr(obj, "__dict__", {}):
                return f"{part}.{name}"
    return None


def _model(env: FiniteMDP) -> Any:
    """The Rust copy of the exact model, built once per environment (kept beside it, not on it:
    environments are pickled to worker processes)."""
    try:
        model = _MODELS.get(env)
    except TypeError:  # an unhashable subclass: build it every run
        return _core.FiniteModel(env.P, env.R, env._cdf, env._init_cdf)
    if model is None:
        model = _MODELS[env] = _core.FiniteModel(env.P, env.R, env._cdf, env._init_cdf)
    return model


def _raise(agent: Agent, fault: tuple, designs: list[np.ndarray] = ()) -> None:  # type: ignore[assignment]
    """The exception the Python path raises for the fault the engine stopped at."""
    _, kind, value = fault
    guard = agent.guard  # type: ignore[attr-defined]
    if kind == "nonfinite":
        raise NonFiniteError(
            "user statistic contains NaN or inf: it cannot be brought inside "
            "the sensitivity bound the noise is calibrated for"
        )
    if kind == "rejected":
        raise AssumptionError(
            f"user statistic outside the sensitivity bound (||x|| <= {guard.x_bound:g}, "
            f"y in [{guard.y_low:g}, {guard.y_high:g}]): max ||x|| = {value:.6g}"
        )
    if kind == "not_pd":
        h = int(value)
        for design in designs:  # the regression whose release failed raises the named error
            released_inverse(design[h], h, agent.k, "the shift 2*Upsilon", "the paper's calibration")
    raise RuntimeError(f"episode engine stopped: {kind}")  # pragma: no cover


def run_episodes(
    agent: Agent,
    env: FiniteMDP,
    K: int,
    rng: np.random.Generator,
    callback: Callable[[int, float], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """K episodes of `agent` on `env` with the environment stream `rng`: (gaps, returns,
    initial states, policy changes), as privrl.runner.run's Python loop computes them."""
    v_star = np.ascontiguousarray(env.optimal_values()[0])
    if isinstance(agent, UCRLVTR):
        return _vtr(agent, env, K, rng, v_star, callback)
    assert isinstance(agent, LSVIUCB)
    return _lsvi(agent, env, K, rng, v_star, callback)


def _report(callback, gaps: np.ndarray, done: int, n: int, cum: float) -> float:
    if callback is not None:
        for i in range(done, done + n):
            cum += gaps[i]
            callback(i + 1, cum)
    return cum


def _store(log: tuple, block: tuple, done: int, n: int, fault: tuple | None) -> int:
    """Copy a block's (gaps, returns, starts) into the run's arrays; the episodes it ran."""
    ran = n if fault is None else int(fault[0])
    for dst, src in zip(log, block, strict=True):
        dst[done : done + ran] = src[:ran]
    return ran


def _ties(agent: Agent, n: int) -> np.ndarray | None:
    """n tie-breaking seeds, the draws privrl.kernels' tie_seed would take one by one."""
    if agent.ties == "lowest":
        return None
    return np.ascontiguousarray(agent._tie_rng.bit_generator.random_raw(n) >> np.uint64(1), dtype=np.uint64)


def _parts(agent: UCRLVTR) -> list[tuple]:
    """(server, randomizer, guard, matrix sigma, vector sigma, release attribute) per regression:
    one for UCRL-VTR, two for UCRL-VTR+ (weighted first moments, then second moments)."""
    cal = agent.calibration
    if isinstance(agent, UCRLVTRPlus):
        return [
            (
                agent.server,
                agent.randomizer,
                agent.guard,
                cal.get("sigma_B1"),
                cal.get("sigma_f"),
                "_release",
            ),
            (
                agent.server2,
                agent.randomizer2,
                agent.guard2,
                cal.get("sigma_B2"),
                cal.get("sigma_g"),
                "_release2",
            ),
        ]
    return [(agent.server, agent.randomizer, agent.guard, cal.get("sigma_B"), cal.get("sigma_g"), "_release")]


def _regression(agent: UCRLVTR, part: tuple) -> Any:
    """The engine's view of one regression: the server's own mechanisms, streams and sums."""
    server, randomizer, guard, sigma_m, sigma_v, attr = part
    H, d, rel = agent.H, agent.d, getattr(agent, attr)
    kw: dict[str, Any] = {}
    gram, target = np.zeros((H, d, d)), np.zeros((H, d))
    g: tuple | None = (guard.x_bound, guard.y_low, guard.y_high, guard.mode == "reject")
    if server.mode == "exact":  # the non-private server has no guard
        kw["sms"] = [sm._sm for sm in server._sm]
        target, g = server._target, None
    elif server.mode == "tree":
        kw["grams"] = [t._m for t in server._gram_trees]
        kw["targets"] = [t._m for t in server._target_trees]
    else:
        kw["streams"] = [randomizer._matrix_noise._s, randomizer._vector_noise._s]
        gram, target = server._gram, server._target
    divisor = float(randomizer.sym_divisor) if randomizer is not None else 1.0
    board = (_f64(rel.design), _f64(rel.inverse), _f64(rel.weights))
    spec = (d, float(agent.beta), float(server.lam + server.shift), divisor)
    if server.post is not None:
        kw["practical"] = _practical(agent, server.post, rel, sigma_m, sigma_v)
    return _core.VtrRegression(server.mode, board, (gram, target), spec, g, users=server.users, **kw)


def _vtr(agent: UCRLVTR, env, K, rng, v_star, callback):
    H = agent.H
    parts = _parts(agent)
    regressions = [_regression(agent, p) for p in parts]
    plus = (agent.beta_check, agent.beta_tilde) if isinstance(agent, UCRLVTRPlus) else None
    engine = _core.VtrEngine(_model(env), agent.features._f, regressions, v_star, plus)
    gaps, returns, starts = np.empty(K), np.empty(K), np.empty(K, dtype=np.int64)
    done, cum = 0, 0.0
    while done < K:
        n = min(BLOCK, K - done)
        u = rng.random((n, H + 1))
        bounds = [_bounds(agent, p[0], n) for p in parts]
        g_, r_, s_, clips, fault = engine.run(u, _ties(agent, n * H), bounds)
        ran = _store((gaps, returns, starts), (g_, r_, s_), done, n, fault)
        agent.k += ran
        agent.policy_updates += ran
        for part, reg, c in zip(parts, regressions, clips, strict=True):
            _sync_regression(agent, part, reg, ran)
            part[2].count(c, stacklevel=4)
        agent._plan = None
        if isinstance(agent, UCRLVTRPlus) and ran:
            agent.last_sigma_bar = engine.last_sigma_bar()
        if fault is not None:
            _raise(agent, fault, [reg.billboard()[0].reshape(H, agent.d, agent.d) for reg in regressions])
        cum = _report(callback, gaps, done, n, cum)
        done += n
    return gaps, returns, starts, int(engine.policy_changes)


def _f64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def _practical(agent: UCRLVTR, post: Any, rel: Release, sigma_m: Any, sigma_v: Any) -> tuple:
    """A server's PracticalRelease as the engine's constants (the same numbers its noise-bound
    closures compute, privrl.privacy.practical.noise_bounds_at)."""
    cal = agent.calibration
    gaussian = None
    if cal["kind"] != "none" and cal["noise"] == "gaussian":
        d, alpha = agent.d, cal["alpha"]
        gaussian = (
            float(sigma_m),
            float(sigma_v),
            float(cal["sym_divisor"]),
            practical.matrix_bound_factor(d, alpha),
            practical.vector_bound_factor(d, alpha),
        )
    consts = (post.lam, post.shift_mult, post.beta**2, post.C_w, post.centre_distance, post.noise_scale)
    noisy = cal["kind"] != "none"
    assert rel.bonus is not None and rel.gamma is not None  # a practical billboard has both
    return consts, _f64(post.w0), gaussian, noisy, _f64(rel.bonus), _f64(rel.gamma)


def _bounds(agent: UCRLVTR, server: Any, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The practical noise bounds of the next n releases when the engine has no formula for them
    (pure DP: the Laplace sum bounds of privrl.privacy.bounds), from the release's own closures."""
    post = server.post
    if post is None or agent.calibration["kind"] == "none" or agent.calibration["noise"] == "gaussian":
        return None
    ts = range(server.users + 1, server.users + n + 1)
    return np.array([post.matrix_bound(t) for t in ts]), np.array([post.vector_bound(t) for t in ts])


def _sync_regression(agent: UCRLVTR, part: tuple, reg: Any, ran: int) -> None:
    """Leave a regression as the Python path would: its server's count and sums, the billboard."""
    server, attr = part[0], part[5]
    H, d = agent.H, agent.d
    server.users += ran
    if ran:
        server.received_types.add(PrivatizedStatistics if server.mode == "local" else RawStatistics)
    design, inverse, weights = reg.billboard()
    bonus, gamma = reg.practical()
    release = Release(
        design.reshape(H, d, d),
        inverse.reshape(H, d, d),
        weights.reshape(H, d),
        server.users,
        bonus.reshape(H, d, d) if len(bonus) else None,
        gamma if len(gamma) else None,
    )
    setattr(agent, attr, release)
    gram, target = reg.sums()
    if server.mode == "exact":
        server._target[...] = target.reshape(H, d)
    elif server.mode == "local":
        server._gram[...] = gram.reshape(H, d, d)
        server._target[...] = target.reshape(H, d)


def _lsvi(agent: LSVIUCB, env, K, rng, v_star, callback):
    H = agent.H
    server, guard = agent.server, agent.guard
    g = (guard.x_bound, guard.y_low, guard.y_high, guard.mode == "reject")
    engine = _core.LsviEngine(_model(env), server.table, g, v_star)
    sms = [sm._sm for sm in server.exact] if server.exact is not None else []
    gaps, returns, starts = np.empty(K), np.empty(K), np.empty(K, dtype=np.int64)
    ends = sorted(agent._update_after)
    done, cum = 0, 0.0
    while done < K:
        pi = np.ascontiguousarray(agent.policy(), dtype=np.int64)
        nxt = next((e for e in ends if e > agent.k), agent.K)  # the release after user e
        n = min(BLOCK, K - done, nxt - agent.k)
        u = rng.random((n, H + 1))
        g_, r_, s_, clips, fault = engine.run(
            pi,
            u,
            server.reward_sum,
            server.next_sum,
            (server.states, server.actions, server.rewards),
            server.n,
            server.batch_gram if server.private else None,
            sms,
        )
        ran = _store((gaps, returns, starts), (g_, r_, s_), done, n, fault)
        server.n += ran
        guard.count(clips, stacklevel=4)
        if fault is not None:
            agent.k += ran
            _raise(agent, fault)
        agent.k += ran
        agent._end_of_batch()  # blocks end where batches do
        cum = _report(callback, gaps, done, n, cum)
        done += n
    return gaps, returns, starts, int(engine.policy_changes)
