"""Run an agent against an environment with exact regret (Sec. 2.1):
R(K) = sum_k V*_1(s_1^k) - V^{pi_k}_1(s_1^k), pi_k the policy the user of episode k executes."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privrl import _core
from privrl.agents.common.base import Agent
from privrl.common.checks import check_seed
from privrl.common.memory import refuse_over_memory
from privrl.envs.bandit import ContextualBandit
from privrl.envs.finite import FiniteMDP
from privrl.experiment.progress import bar
from privrl.experiment.steps import attach_partial, note_stop, users_now, users_to_run

#: Most episodes per call into Rust: bounds the uniforms drawn ahead, how often progress callbacks
#: fire and how long Ctrl-C waits (the block size then adapts to ~0.2 s per call).
BLOCK = 4096
_BLOCK_SECONDS = 0.2
_FIRST_BLOCK = 16


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

    def __repr__(self) -> str:
        return (
            f"RunResult(agent={self.agent!r}, env={self.env!r}, episodes={self.episodes}, "
            f"final_regret={self.final_regret:.6g}, wall_time={self.wall_time:.3g}s, seed={self.seed!r})"
        )


def run(
    agent: Agent,
    env: FiniteMDP | ContextualBandit,
    episodes: int | None = None,
    seed: Any = None,
    callback: Callable[[int, float], None] | None = None,
    engine: str | None = None,
    progress: bool | None = None,
) -> RunResult:
    """Run `agent` for `episodes` users (default: all it has left of the K it was calibrated
    for) on `env`, with exact regret.

    `seed` drives the environment's stream only (initial states and transitions); the agent's
    ties, exploration and privacy noise come from the agent's own seed. `callback(k, cum_regret)`
    runs after each block of users, not after each user: the first block is 16 users, the next
    ones about 0.2 s of work each, at most 4,096 users (BLOCK), so k jumps (16, 2764, 6860, ... for
    JDP UCRL-VTR on RiverSwimMixture). It is a progress hook: its return value is ignored, it cannot
    stop the run inside a block, and an exception it raises ends the run after that block's users
    (the agent is left there and can run on; the exception's ``partial`` is the RunResult of the
    users run so far). To stop after user k, run
    ``episodes=k`` and call run again with the same numpy Generator as ``seed`` (an int seed would
    restart the environment's stream): the two results are the one run's, bit for bit. Every agent
    runs in Rust, one call per block of users (a callback per user would cost a call per user:
    1.36 s against 0.71 s measured for that agent at K = 20,000); `engine` is accepted for one
    release and ignored (a DeprecationWarning).
    `progress`: a progress bar (None: in a terminal or a notebook, once the run has taken 2 s).
    Ctrl-C is raised when the block in flight returns (~0.2 s): the agent is left after the last
    whole user and can run on. Whatever stops the run (Ctrl-C, the callback raising, an error of
    the agent at a user) leaves with its own exception, carrying ``exc.partial``: the RunResult of
    the users of this call the agent observed (``agent.k`` moved by ``exc.partial.episodes``), and a
    note saying so; a numpy Generator given as `seed` is left after those users' uniforms, so
    ``run(agent, env, seed=that generator)`` continues the run (after ``agent.save`` and
    ``Agent.load`` too) and the two results concatenate to the uninterrupted run's, bit for bit.
    """
    if engine is not None:
        warnings.warn(
            "privrl.run(engine=...) is deprecated and ignored: every agent runs its episodes in Rust",
            DeprecationWarning,
            stacklevel=2,
        )
    if not isinstance(agent, Agent):
        raise TypeError(f"agent must be a privrl Agent, got {type(agent).__name__}")
    if not isinstance(env, (FiniteMDP, ContextualBandit)):
        raise TypeError(
            f"privrl.run needs an environment with an exact model for exact regret; "
            f"{type(env).__name__} has none: use privrl.learn(agent, env) for realized returns"
        )
    agent.check_env(env)
    first: Any  # what the agent's Rust run takes besides the uniforms: the bandit's means, or the model
    if isinstance(env, ContextualBandit):
        # per user two uniforms (its context, uniform over the table's rows, and its Bernoulli
        # reward); exact regret from the bandit's means
        width, first, name = 2, np.ascontiguousarray(env.means), env.name
        changes = lambda: int(agent._core.releases)  # noqa: E731
    else:
        v_star = np.ascontiguousarray(env.optimal_values()[0])
        state = _core.Run(env.P, env.R, env._cdf, env._init_cdf, v_star, **env.kernel_factors())
        width, first, name = env.H + 1, state, getattr(env, "name", None) or type(env).__name__
        changes = lambda: int(state.policy_changes)  # noqa: E731
    return _run_users(
        agent, width, (agent._core.run, first), episodes, seed, callback, progress, name, changes
    )


def _run_users(
    agent: Agent,
    width: int,
    call: tuple[Callable, Any],
    episodes: int | None,
    seed: Any,
    callback: Any,
    progress: Any,
    env_name: str,
    changes: Callable[[], int],
) -> RunResult:
    """The users of a run in blocks of ~0.2 s of work, each one Rust call ``method(first,
    uniforms)`` (`call` = (method, first)) on a (users, width) block of the environment stream's
    uniforms; `changes()` counts the policy changes so far. A stop leaves as :func:`run` says (the
    generator after the uniforms of the users that ran: :func:`_stopped`)."""
    K = users_to_run(agent, episodes, "run")
    if callback is not None and not callable(callback):  # found after a whole block of users before
        raise TypeError(f"callback must be a callable (k, cumulative regret), got {callback!r}")
    # the result's per-episode arrays (numpy's "Unable to allocate 7.28 TiB" at 10^12 before)
    refuse_over_memory(
        "privrl.run",
        4.0 * K,
        f"four arrays over its episodes = {K} (regret, gaps, returns, initial states)",
        "Pass fewer episodes= per call: the agent runs on from where a run stopped.",
    )
    rng = np.random.default_rng(check_seed(seed))
    gaps, returns = np.empty(K), np.empty(K)
    starts = np.empty(K, dtype=np.int64)
    method, first = call
    pbar = bar(K, agent.label, progress)
    t0 = time.perf_counter()

    def result(n: int) -> RunResult:
        """The RunResult of the first n users of this call."""
        return RunResult(
            regret=np.cumsum(gaps[:n]),
            gaps=gaps[:n],
            returns=returns[:n],
            initial_states=starts[:n],
            calibration=agent.calibration.to_dict(),
            wall_time=time.perf_counter() - t0,
            agent=agent.label,
            env=env_name,
            seed=seed,
            policy_changes=changes(),
        )

    # a first block small enough for Ctrl-C to stop a slow agent at once (256 users took 5 s on
    # JDP LSVI-UCB with a release every user); the uniforms are drawn in stream order whatever
    # the blocks, so the run does not depend on them
    done, cum, block = 0, 0.0, _FIRST_BLOCK
    start, drawn, before = 0, 0, rng.bit_generator.state
    got: list = []  # a block's (gaps, returns, starts), kept by list.extend: see below
    try:
        while done < K:
            n = min(block, K - done)
            start, before = done, rng.bit_generator.state  # the stream before this block's uniforms
            drawn = done + n
            u = rng.random((n, width))
            tb = time.perf_counter()
            try:
                # Ctrl-C during the call raises as it returns (at the next bytecode): a Python-level
                # call's result would be lost with the users the agent took; list.extend stores it
                # in C first, and map calls the Rust method from C (no bytecode in between)
                got.extend(map(method, (first,), (u,)))
            finally:
                agent._sync_guards()
            g, r, s = got[0]
            gaps[done : done + n], returns[done : done + n], starts[done : done + n] = g, r, s
            done += n
            got.clear()
            if callback is not None:
                cum += float(g.sum())
                callback(done, cum)
            if pbar is not None:
                pbar.update(n)
            block = _next_block(block, n, time.perf_counter() - tb)
    except BaseException as e:
        done = _stopped(e, done, start, drawn, before, got, rng, width, (gaps, returns, starts))
        now = users_now(agent)  # None while another thread holds the agent
        note_stop(
            e,
            f"privrl.run stopped after {done} of its {K} users (agent.k = {now}): the exception's "
            f".partial is the RunResult of those {done} users; privrl.run(agent, env, seed=rng) with "
            "the numpy Generator given as seed continues the run where it stopped",
        )
        attach_partial(e, result(done))
        raise
    finally:
        if pbar is not None:
            pbar.close()
    return result(K)


def _stopped(
    e: BaseException,
    done: int,
    start: int,
    drawn: int,
    before: Mapping[str, Any],
    got: list,
    rng: np.random.Generator,
    width: int,
    into: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> int:
    """After a stop: the users of this call whose results are stored, made the users the agent
    observed. A block the agent ran whose results were not stored yet (Ctrl-C as the Rust call
    returned: `got`; a Rust error at a user of the block: its users before it, the error's `_block`)
    is stored; a block call that raised without one ran no user (refused: AgentInUseError, a bad
    argument). Read from the blocks, not from agent.k, which another thread may hold. The generator,
    which drew the uniforms of users [start, drawn), is put back after the uniforms of the users
    that ran (`before` is its state at `start`), as if the stop had come between two users."""
    block = getattr(e, "_block", None)
    if block is not None:
        del e._block  # type: ignore[attr-defined]
        got[:] = [block]
    if got and done == start:  # the block ran (in full, or up to its failing user): store it
        ran = start + len(got[0][0])
        for out, values in zip(into, got[0], strict=True):
            out[start:ran] = values
        done = ran
    if done < drawn:  # uniforms drawn for users that did not run: undrawn
        rng.bit_generator.state = before
        if done > start:
            rng.random((done - start, width))
    return done


def _next_block(block: int, n: int, seconds: float) -> int:
    """The next block size: about _BLOCK_SECONDS of work, at most BLOCK episodes."""
    if n < block:
        return block
    per = seconds / max(n, 1)
    return int(min(BLOCK, max(1, _BLOCK_SECONDS / max(per, 1e-9))))
