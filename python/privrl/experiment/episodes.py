"""The episodes of ``privrl.learn`` on a gymnasium environment: one user per episode of the agent's
horizon, padded after the environment's end (the loop of experiment.interact.learn, issue 20)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing, nullcontext
from typing import Any, TypeVar

import numpy as np

from privrl import _core
from privrl.agents.common.base import Agent
from privrl.common.errors import AgentInUseError
from privrl.envs.gym import time_limit
from privrl.experiment.progress import bar
from privrl.experiment.spaces import absorbing_state, identity, state_index
from privrl.experiment.steps import (
    REWARD_RANGE,
    SelfLoops,
    attach_partial,
    learn_stop,
    note_stop,
    reset_observation,
    step_parts,
    users_now,
    warn_self_truncated,
)

__all__ = ["learn_episodes"]

Result = TypeVar("Result")


def learn_episodes(
    agent: Agent,
    env: Any,
    K: int,
    seed: Any,
    state: Callable[[Any], int],
    reward: Callable[[float], float] | None,
    pad: float,
    callback: Callable[[int, float], None] | None,
    progress: bool | None,
    result: Callable[[np.ndarray, int, int], Result],
) -> Result:
    """K users on `env`, padded after the environment's end; ``result(returns, early, changes)``
    of their returns, how many the environment ended early and how often the users' policy
    changed. A stop leaves as ``privrl.learn`` says, with ``partial``: that result over the users of
    this call the agent observed.

    The user's policy is read from Rust once per user but converted to nested lists (and shown to
    the policy-change count) only when the agent computed a new one (``policy_updates`` moved: at
    a release, or every user when each user draws its own model; otherwise it is the previous
    user's table). What the environment hands back is checked where it enters, each check's
    common case inline (the functions of experiment.steps and spaces.state_index for the rest,
    which give the messages): a reset's ``(obs, info)`` and a step's five-tuple as tuples, a
    reward that is a finite float or (FrozenLake's) an int without a rescale, a state index that
    is a plain int in range; ``state`` is not called when it is the observation itself. The steps
    after the environment's end are filled in one loop without it. The users' returns are summed
    a block of users at a time (one numpy reduction instead of one a user, ~1 us each), the same
    bits as each user's ``rewards.sum()``.
    """
    H, S = agent.H, agent.S
    z = absorbing_state(agent)  # -1: none, the padding self-loops at the last observed state
    limit = time_limit(env)  # a time limit below H was warned of up front; else a truncation is said
    said = limit is not None and limit < H  # at the first episode the environment cuts before H
    loops = SelfLoops(z < 0)  # self-loops at a state users act from: said once
    core = agent._core
    reset, step = env.reset, env.step  # learn checked that both exist
    mapped = state is not identity  # else the observation is the state index itself
    raw = reward is None  # then a float or an int reward within REWARD_RANGE is stored as it is
    big = REWARD_RANGE  # (NaN fails the comparison: step_parts refuses it, as inf and the larger)
    returns = np.empty(K)
    # the users' rewards, a row each, summed a block of users at a time (each row's sum the same bits
    # as rewards.sum() of that row alone: numpy's pairwise sum, row by row); blocks of one user with
    # a callback, which is handed each user's return
    block = 1 if callback is not None else max(1, min(K, 1024, 65536 // H))
    rows = np.empty((block, H), dtype=np.float64)
    views = list(rows)  # row j: user first + j's rewards (a contiguous (H,) array, as observe takes)
    first = j = 0  # the first user of the block, and user k's row in it
    early = 0
    states = np.empty(H + 1, dtype=np.int64)
    actions = np.empty(H, dtype=np.int64)
    pi: list[list[int]] = []
    pi_of = -1  # the policy_updates count `pi` was read at
    changes = _core.PolicyChanges()
    pbar = bar(K, agent.label, progress)
    k0 = core.k  # the users the agent had before this call
    k, h = 0, -1  # where a failure stopped the loop (h = -1: at reset)
    # the early ends before user k, and the policy changes before its policy if it was a new one
    early_before, changes_before = 0, -1
    with closing(pbar) if pbar is not None else nullcontext():  # the bar closed however it ends
        try:
            for k in range(K):
                h, early_before, changes_before = -1, early, -1
                rewards = views[j]
                out = reset(seed=seed if k == 0 else None)
                obs = out[0] if type(out) is tuple and len(out) == 2 else reset_observation(out, "user", k)
                table = core.policy()  # plans the arriving user's policy if it is due
                if core.policy_updates != pi_of:
                    pi, pi_of = table.tolist(), core.policy_updates
                    changes_before = changes.count
                    changes.see(table)
                s = state(obs) if mapped else obs
                s = s if type(s) is int and 0 <= s < S and s != z else state_index(s, S, z)
                states[0] = s
                t, term = H - 1, False  # the last real step, and whether it ended the episode
                for h in range(H):
                    a = pi[h][s]
                    out = step(a)
                    if (
                        type(out) is tuple
                        and len(out) == 5
                        and raw
                        and type(out[2]) is bool
                        and type(out[3]) is bool
                        and (type(r := out[1]) is int or type(r) is float)
                        and -big <= r <= big
                    ):
                        obs, r, terminated, truncated, _ = out  # an int reward is stored as float(r)
                    else:
                        obs, r, terminated, truncated = step_parts(out, reward, "user", k, h)
                    s = state(obs) if mapped else obs
                    s = s if type(s) is int and 0 <= s < S and s != z else state_index(s, S, z)
                    actions[h], rewards[h], states[h + 1] = a, r, s
                    if terminated or truncated:  # the environment's end: the steps after it padded
                        t, term = h, bool(terminated)
                        early += h < H - 1
                        # the first episode the environment cuts before H (truncated, not ended): said once
                        said = said or (
                            h < H - 1
                            and not terminated
                            and bool(truncated)
                            and warn_self_truncated(f"user {k + 1}'s episode", h, H, "the agent's")
                        )
                        pad_episode(states, actions, rewards, pi, t, z if z >= 0 else s, pad)
                        h = H - 1  # as a stop after the episode names it
                        break
                loops.see(states, t, term, H, k)
                core.observe(states, actions, rewards)  # checked here, step by step
                agent._sync_guards()
                j += 1
                if j == block:  # the block's returns
                    returns[first : k + 1], first, j = rows.sum(axis=1), k + 1, 0
                if callback is not None:
                    callback(k + 1, returns[k])
                if pbar is not None:
                    pbar.update(1)
        except BaseException as e:  # the user's own error or privrl's, with where it stopped
            # the users the agent observed, read from the agent: a Ctrl-C that lands as observe returns
            # is raised after the agent took user k (a flag set after observe would miss it); a call
            # refused because another thread holds the agent (AgentInUseError) changed nothing
            now = users_now(agent)
            kept = k if now is None or isinstance(e, AgentInUseError) else now - k0
            whole = kept == k + 1  # user k observed (the callback or Ctrl-C after it), else left out
            returns[first:kept] = rows[: max(kept - first, 0)].sum(axis=1)  # the block's users kept
            count = changes.count if whole or changes_before < 0 else changes_before
            partial = result(returns[:kept].copy(), early if whole else early_before, count)
            note_stop(e, learn_stop(k, K, h, whole, now))
            attach_partial(e, partial)
            raise
    returns[first:] = rows[: K - first].sum(axis=1)
    return result(returns, early, changes.count)


def pad_episode(
    states: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    pi: list[list[int]],
    t: int,
    s: int,
    pad: float,
) -> None:
    """An episode the environment ended at step t: at state `s` (the absorbing state, or the last
    observed one) from step t + 1 on, each step the policy's action there, paid `pad`."""
    states[t + 1] = s
    for h in range(t + 1, len(actions)):
        actions[h], rewards[h], states[h + 1] = pi[h][s], pad, s
