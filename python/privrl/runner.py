"""Run an agent against an environment with exact regret (Sec. 2.1):
R(K) = sum_k V*_1(s_1^k) - V^{pi_k}_1(s_1^k), pi_k the policy the user of episode k executes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privrl.agents.base import Agent, check_episodes
from privrl.engine import ENGINES, engine_gap, run_episodes
from privrl.envs.finite import FiniteMDP


@dataclass
class RunResult:
    """Per-episode exact regret and returns of one run.

    regret: cumulative exact regret after each episode (K,); gaps: per-episode exact regret
    V*_1(s_1^k) - V^{pi_k}_1(s_1^k) (K,); returns: realized returns (K,); initial_states (K,);
    calibration: the paper's quantities the agent used; wall_time in seconds.
    """

    regret: np.ndarray
    gaps: np.ndarray
    returns: np.ndarray
    initial_states: np.ndarray
    calibration: dict
    wall_time: float
    agent: str
    env: str
    seed: Any
    policy_changes: int
    extra: dict = field(default_factory=dict)

    @property
    def episodes(self) -> int:
        return len(self.regret)

    @property
    def final_regret(self) -> float:
        return float(self.regret[-1]) if len(self.regret) else 0.0


def run(
    agent: Agent,
    env: FiniteMDP,
    episodes: int | None = None,
    seed: Any = None,
    callback: Callable[[int, float], None] | None = None,
    engine: str = "auto",
) -> RunResult:
    """Run `agent` for `episodes` users (default: the K it was calibrated for) on `env`.

    `seed` drives the environment's stream only (initial states and transitions); the agent's
    tie-breaking and privacy noise come from the agent's own seed. `callback(k, cum_regret)` is
    called once per episode (progress bars; with the engine, after each block of episodes).

    `engine`: "auto" runs the built-in agents on the Rust episode engine (privrl.engine) when it
    applies and on the Python loop below otherwise; "rust" requires the engine (ValueError
    saying why it does not apply); "python" forces the loop. Both give bit-identical results.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    _check_run(agent, env)
    K = agent.K if episodes is None else check_episodes(episodes)
    if agent.K - agent.k < K:
        raise ValueError(
            f"{agent.label} is calibrated for {agent.K} episodes and has run {agent.k}; cannot run {K} more"
        )
    rng = np.random.default_rng(
        seed
        if isinstance(seed, np.random.SeedSequence)
        else np.random.SeedSequence(seed)
        if seed is not None
        else None
    )
    gap = engine_gap(agent, env) if engine != "python" else "engine='python'"
    if engine == "rust" and gap is not None:
        raise ValueError(f"the episode engine does not apply: {gap}")
    if gap is None:
        t0 = time.perf_counter()
        gaps, returns, starts, changes = run_episodes(agent, env, K, rng, callback)
        return _result(agent, env, seed, gaps, returns, starts, changes, time.perf_counter() - t0)
    v_star = env.optimal_values()[0]
    gaps = np.empty(K)
    returns = np.empty(K)
    starts = np.empty(K, dtype=np.int64)
    last_pi: np.ndarray | None = None
    last_v = np.empty(0)  # V^{pi_k}_1 of the last distinct policy
    changes = 0
    t0 = time.perf_counter()
    cum = 0.0
    for k in range(K):
        pi = agent.policy()
        if last_pi is None or not np.array_equal(pi, last_pi):
            last_v = env.policy_values(pi)[0]
            last_pi = pi
            changes += 1
        traj = env.sample_episode(pi, rng)
        s1 = int(traj.states[0])
        gaps[k] = v_star[s1] - last_v[s1]
        returns[k] = float(traj.rewards.sum())
        starts[k] = s1
        agent.observe(traj)
        if callback is not None:
            cum += gaps[k]
            callback(k + 1, cum)
    return _result(agent, env, seed, gaps, returns, starts, changes, time.perf_counter() - t0)


def _check_run(agent: Any, env: Any) -> None:
    if not isinstance(agent, Agent):
        raise TypeError(f"agent must be a privrl Agent, got {type(agent).__name__}")
    if agent.env is not env:
        raise ValueError("the agent was built for a different environment object")
    if not isinstance(env, FiniteMDP):
        raise TypeError(
            f"privrl.run needs the exact model for exact regret; {type(env).__name__} has none: "
            "use privrl.learn(agent, gymnasium_env) for realized returns"
        )


def _result(agent, env, seed, gaps, returns, starts, changes, wall) -> RunResult:
    return RunResult(
        regret=np.cumsum(gaps),
        gaps=gaps,
        returns=returns,
        initial_states=starts,
        calibration=dict(getattr(agent, "calibration", {})),
        wall_time=wall,
        agent=agent.label,
        env=getattr(env, "name", None) or type(env).__name__,
        seed=seed,
        policy_changes=changes,
    )
