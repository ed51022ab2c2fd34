"""Whole runs of the Rust agents against their numpy references, in one process (issues 12 and 20).

    python benches/engine.py [--quick] [--reference-episodes N] [--only NAME ...] [--json FILE]

For each workload of docs/benchmarks.md it runs the agent with privrl.run for the workload's K and
prints its cost per episode and whole-run time; then it runs the paper-shaped numpy reference of
the same algorithm (privrl.agents.<algorithm>.reference, fed the agent's own noise) in lockstep with a
second, identical agent for N episodes, times the reference alone and prints the ratio reference /
Rust. The FrozenLake rows (gymnasium's 4x4 map, not slippery, H = 8, one-hot features d = 64)
also give the ratios issue 20 asks for, measured in the same run: LSVI-UCB with a release every
episode against static batches under JDP, and privrl.learn on the gymnasium environment against
privrl.run on its model. frozen-psrl is PSRL (JDP eps 10) on the slippery map's model, H = 20:
its reference is fed the agent's own recorded draws, exploration and noise (_psrl_reference_cost).

What is timed: privrl.run on a freshly built agent, from its first episode to its last (the
agent's construction and calibration are outside the timer; one-time costs inside it, such as the
discrete samplers' tables, about a millisecond, are counted). ``privrl.run`` is looked up before
the timer: its first lookup imports the harness (privrl.experiment, with pandas: ~0.3 s), which
until issue 23 fell inside the first workload's timer and added ~30 us per episode to mixture-ldp
at K = 10^4. With --peer, the official LDP-UCRL-VTR code is timed the same way: its module,
environment and agent built outside the timer, its first N episodes inside.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import privrl
from privrl.agents import LSVIUCB, PSRL, UCRLVTR, UCRLVTRPlus
from privrl.agents.lsvi_ucb.reference import of_agent as lsvi_reference
from privrl.agents.psrl.reference import Billboard, Replay, capped_increment, user_policy
from privrl.agents.ucrl_vtr.reference import of_agent as vtr_reference
from privrl.agents.ucrl_vtr_plus.reference import of_agent as plus_reference
from privrl.envs import (
    FeatureMap,
    HardToLearn,
    RandomLinearMDP,
    RandomLinearMixtureMDP,
    RiverSwimMixture,
    SyntheticLinearMDP,
    from_gymnasium,
)
from privrl.privacy import JointDP, LocalDP, NonPrivate


@dataclass
class Workload:
    name: str
    what: str
    K: int
    make: Callable  # () -> (env, agent factory)
    reference: bool = True  # False: the agent is not the paper's algorithm (no numpy reference)


def _frozen_lake(slippery: bool = False, H: int = 8):
    import gymnasium as gym

    return from_gymnasium(gym.make("FrozenLake-v1", is_slippery=slippery), H=H)


WORKLOADS = [
    Workload("mixture-ldp", "LDP UCRL-VTR, HardToLearn d=5 H=6", 10_000, lambda: (
        env := HardToLearn(d=5, H=6, K=10_000, seed=0),
        lambda: UCRLVTR(env, LocalDP(1.0, 1e-5, calibration="paper"), episodes=10_000, seed=1))),
    Workload("mixture-jdp", "JDP UCRL-VTR, RandomLinearMixtureMDP", 10_000, lambda: (
        env := RandomLinearMixtureMDP(),
        lambda: UCRLVTR(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=10_000, seed=1))),
    Workload("river-jdp", "JDP UCRL-VTR, RiverSwimMixture S=6 H=20", 100_000, lambda: (
        env := RiverSwimMixture(S=6, H=20),
        lambda: UCRLVTR(env, JointDP(1.0, 1e-7, calibration="paper"), episodes=100_000, seed=1))),
    Workload("river-practical", "JDP UCRL-VTR practical (BLT), same river", 100_000, lambda: (
        env := RiverSwimMixture(S=6, H=20),
        lambda: UCRLVTR(env, JointDP(10.0, 1e-7, calibration="practical"), episodes=100_000, seed=1))),
    Workload("mixture-plus", "JDP UCRL-VTR+, RandomLinearMixtureMDP", 10_000, lambda: (
        env := RandomLinearMixtureMDP(),
        lambda: UCRLVTRPlus(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=10_000, seed=1))),
    Workload("linear-jdp", "JDP LSVI-UCB static, RandomLinearMDP", 100_000, lambda: (
        env := RandomLinearMDP(),
        lambda: LSVIUCB(env, JointDP(1.0, 1e-7, calibration="paper"), episodes=100_000, seed=1))),
    Workload("linear-full", "LSVI-UCB every episode, SyntheticLinearMDP H=15", 2_000, lambda: (
        env := SyntheticLinearMDP(H=15),
        lambda: LSVIUCB(env, NonPrivate(calibration="paper"), batches="every", episodes=2_000, seed=1))),
    Workload("frozen-every", "LSVI-UCB every episode, FrozenLake one-hot", 20_000, lambda: (
        env := _frozen_lake(),
        lambda: LSVIUCB(
            env, NonPrivate(calibration="paper"), batches="every", episodes=20_000, seed=1, lam=1.0))),
    Workload("frozen-jdp", "JDP LSVI-UCB static (eps 10), FrozenLake one-hot", 20_000, lambda: (
        env := _frozen_lake(),
        lambda: LSVIUCB(env, JointDP(10.0, 1e-5, calibration="paper"), episodes=20_000, seed=1, lam=1.0))),
    # the LSVI-UCB a user gets by default (calibration "adaptive", per-user sampling): non-private,
    # its release after each of ceil(sqrt(d H K)) batches is privrl's costliest path per episode
    Workload("linear-def", "LSVI-UCB defaults, non-private, RandomLinearMDP", 2_000, lambda: (
        env := RandomLinearMDP(),
        lambda: LSVIUCB(env, NonPrivate(), episodes=2_000, seed=1)), reference=False),
    Workload("linear-jdp-def", "JDP LSVI-UCB defaults (eps 1), RandomLinearMDP", 10_000, lambda: (
        env := RandomLinearMDP(),
        lambda: LSVIUCB(env, JointDP(1.0, 1e-5), episodes=10_000, seed=1)), reference=False),
    # the same pair with the defaults a user gets (calibration "adaptive", per-user sampling):
    # not the paper's algorithms, so no numpy reference
    Workload("frozen-every-def", "LSVI-UCB every episode, defaults, FrozenLake one-hot", 20_000, lambda: (
        env := _frozen_lake(),
        lambda: LSVIUCB(env, NonPrivate(), batches="every", episodes=20_000, seed=1)), reference=False),
    Workload("frozen-jdp-def", "JDP LSVI-UCB static (eps 10), defaults, FrozenLake one-hot", 20_000, lambda: (
        env := _frozen_lake(),
        lambda: LSVIUCB(env, JointDP(10.0, 1e-5), episodes=20_000, seed=1)), reference=False),
    # PSRL as privrl.learn's FrozenLake rows run it (slippery, H 20; its default discrete sampler,
    # B = 6 batches: the first release at user 3,333); its reference is fed the agent's own draws
    Workload("frozen-psrl", "JDP PSRL (eps 10), slippery FrozenLake H=20", 20_000, lambda: (
        env := _frozen_lake(slippery=True, H=20),
        lambda: PSRL(env, JointDP(10.0, 1e-5), episodes=20_000, seed=1))),
]  # fmt: skip


def _reference_of(agent):
    if isinstance(agent, UCRLVTRPlus):
        return plus_reference(agent)
    if isinstance(agent, UCRLVTR):
        return vtr_reference(agent)
    ref = lsvi_reference(agent)
    return ref


def _psrl_reference_cost(agent: PSRL, env, n: int) -> float:
    """Seconds per episode of PSRL's numpy reference (privrl.agents.psrl.reference) fed the agent's
    own draws, as tests/test_psrl_agent.py replays them: the core records each user's draws (the
    record cleared per user), the reference draws the same user's policy from them (checked equal)
    and, at a batch's end, publishes the same release from the recorded noise. Timed: user_policy,
    and capped_increment + publish at a release (with Replay's checks of each draw's parameters);
    200 users hold no release (the first is at user 3,333), so the ratio is the users' plans'."""
    S, H, core = agent.S, agent.H, agent._core  # the record has no public face: the tests' hook
    board = Billboard(S, agent.A, float(agent.calibration.sigma or 0.0), core.grid_bits)
    rng, batch, j, spent = np.random.default_rng(2), [], 0, 0.0
    for k in range(n):
        core.set_record(True)  # starting clears it: this user's draws only
        pi = agent.policy()
        traj = env.sample_episode(pi, rng)
        agent.observe(traj)
        noise_log, explore_log = core.draw_record()
        noise, explore = Replay(noise_log), Replay(explore_log)
        batch.append((traj.states[:-1], traj.actions, traj.rewards, traj.states[1:]))
        t0 = time.perf_counter()
        ref_pi = user_policy(board, H, explore)
        if k + 1 == agent.bounds[j + 1] and j + 1 < agent.B:
            rows = np.array(batch, float).transpose(1, 0, 2)
            board.publish(*capped_increment(*rows, S, agent.A, agent.m), noise)
            batch, j = [], j + 1
        spent += time.perf_counter() - t0
        if not np.array_equal(ref_pi, pi) or (noise.i, explore.i) != (len(noise_log), len(explore_log)):
            raise AssertionError(f"user {k}: the reference's policy or draws are not the agent's")
    core.set_record(False)
    return spent / n


def _reference_cost(make: Callable, env, n: int) -> float:
    """Seconds per episode of the numpy reference, run in lockstep with an agent (same users)."""
    agent = make()
    if isinstance(agent, PSRL):
        return _psrl_reference_cost(agent, env, n)
    ref = _reference_of(agent)
    rng = np.random.default_rng(2)
    spent = 0.0
    for _ in range(n):
        pi = agent.policy()
        traj = env.sample_episode(pi, rng)
        agent.observe(traj)
        t0 = time.perf_counter()
        if isinstance(agent, LSVIUCB):
            ref.policy()
            ref.observe(traj.states, traj.actions, traj.rewards)
        else:
            ref.plan()
            ref.observe(traj.states, traj.actions)
        spent += time.perf_counter() - t0
    return spent / n


def measure(w: Workload, quick: bool, n_ref: int) -> dict:
    env, make = w.make()
    K = min(w.K, 5_000) if quick else w.K
    agent = make()
    run = privrl.run  # resolved before the timer: its first use imports the harness (module doc)
    t0 = time.perf_counter()
    res = run(agent, env, K, seed=2, progress=False)
    seconds = time.perf_counter() - t0
    rust = seconds / K
    ref = _reference_cost(make, env, n_ref) if w.reference and n_ref > 0 else None
    return {
        "name": w.name,
        "what": w.what,
        "K": K,
        "rust_us": 1e6 * rust,
        "run_s": seconds,
        "reference_us": None if ref is None else 1e6 * ref,
        "ratio": None if ref is None else ref / rust,
        "regret": float(res.final_regret),
    }


class PlainLake:
    """A deterministic gymnasium toy-text environment's transitions in plain Python (FrozenLake
    without slip): the same spaces, start, observations, rewards (FrozenLake's ints) and ends as
    `env` (checked in tests/test_bench_engine.py), at ~0.2 us a reset or step, so that privrl.learn
    on it times privrl's own work."""

    def __init__(self, env) -> None:
        base = env.unwrapped
        self.action_space, self.observation_space, self.spec = env.action_space, env.observation_space, None
        self.start = int(np.flatnonzero(base.initial_state_distrib)[0])
        assert base.initial_state_distrib[self.start] == 1.0, "a deterministic start"
        self.table = {}
        for s, moves in base.P.items():
            for a, outcomes in moves.items():
                assert len(outcomes) == 1, "deterministic transitions only (is_slippery=False)"
                _, nxt, r, end = outcomes[0]
                self.table[s, a] = (int(nxt), r, end)
        self.s = self.start

    def reset(self, seed=None, options=None):
        self.s = self.start
        return self.s, {}

    def step(self, a):
        self.s, r, end = self.table[self.s, a]
        return self.s, r, end, False, {}


def learn_vs_run(K: int) -> dict:
    """privrl.learn on the gymnasium FrozenLake against privrl.run on its model (static JDP).

    Both sides are timed in steady state: the functions are looked up (privrl.run's first lookup
    imports the harness, pandas included: ~0.4 s) and each runs once untimed before the timed runs.
    Both do the same users: FrozenLake without slip is deterministic, so the two agents release the
    same billboards (checked). Also timed: the same users' env.reset / env.step calls on the
    gymnasium environment alone, replayed from the recorded actions (learn's floor: it must make
    them), and on its unwrapped FrozenLakeEnv (what the TimeLimit / OrderEnforcing /
    PassiveEnvChecker wrappers add). privrl's own share: privrl.learn on PlainLake, the same map's
    transitions in plain Python (~0.2 us a call against gymnasium's ~6), the same users again.
    """
    import gymnasium as gym

    model = _frozen_lake()
    fmap = FeatureMap.one_hot(16, 4, H=8)
    run, learn = privrl.run, privrl.learn

    def agent(env):
        return LSVIUCB(env, JointDP(10.0, 1e-5, calibration="paper"), episodes=K, seed=1, lam=1.0)

    def make_gym():
        return gym.make("FrozenLake-v1", is_slippery=False)

    actions: list[list[int]] = []

    class Record(gym.Wrapper):  # the untimed pass's actions, user by user
        def reset(self, **kw):
            actions.append([])
            return self.env.reset(**kw)

        def step(self, action):
            actions[-1].append(int(action))
            return self.env.step(action)

    ran, learnt = agent(model), agent(fmap)
    run(ran, model, seed=2, progress=False)  # untimed: warm-up, and the same users on both sides
    learn(learnt, Record(make_gym()), seed=2, progress=False)
    plain = agent(fmap)
    learn(plain, PlainLake(make_gym()), seed=2, progress=False)
    mine, theirs, own = ran.release(), learnt.release(), plain.release()
    fields = ("design", "weights", "users")
    same = all(np.array_equal(getattr(a, f), getattr(theirs, f)) for a in (mine, own) for f in fields)
    times = {}
    for name, env in (("run", model), ("learn", make_gym()), ("own", PlainLake(make_gym()))):
        a = agent(model if name == "run" else fmap)
        t0 = time.perf_counter()
        (run if name == "run" else learn)(a, env, seed=2, progress=False)
        times[name] = (time.perf_counter() - t0) / K
    for name, env in (("env", make_gym()), ("unwrapped", make_gym().unwrapped)):
        t0 = time.perf_counter()
        for k, acts in enumerate(actions):
            env.reset(seed=2 if k == 0 else None)
            for act in acts:
                env.step(act)
        times[name] = (time.perf_counter() - t0) / K
    return {
        "run_us": 1e6 * times["run"],
        "learn_us": 1e6 * times["learn"],
        "ratio": times["learn"] / times["run"],
        "env_us": 1e6 * times["env"],
        "unwrapped_us": 1e6 * times["unwrapped"],
        "env_ratio": times["env"] / times["run"],
        "own_us": 1e6 * times["own"],
        "own_ratio": times["own"] / times["run"],
        "same_users": same,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="K <= 5000 per workload")
    ap.add_argument("--reference-episodes", type=int, default=200, help="0 skips the numpy references")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument(
        "--peer",
        help="the official LDP-UCRL-VTR code's run.py (github uclaml/LDP-UCRL-VTR): time it on the "
        "mixture-ldp workload beside privrl's agent",
    )
    ap.add_argument("--peer-episodes", type=int, default=30)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rows = [
        measure(w, args.quick, args.reference_episodes)
        for w in WORKLOADS
        if not args.only or w.name in args.only
    ]
    print(f"{'workload':<18}{'K':>8}{'Rust us/ep':>12}{'run s':>8}{'numpy ref us/ep':>17}{'ratio':>8}  what")
    for r in rows:
        ref, ratio = ("-", "-") if r["ratio"] is None else (f"{r['reference_us']:.1f}", f"{r['ratio']:.1f}x")
        head = f"{r['name']:<18}{r['K']:>8}{r['rust_us']:>12.1f}{r['run_s']:>8.2f}"
        print(f"{head}{ref:>17}{ratio:>8}  {r['what']}")
    print()
    by = {r["name"]: r for r in rows}
    out: dict = {"rows": rows}
    for every, static, key, which in (
        ("frozen-every", "frozen-jdp", "every_vs_static", "paper calibration"),
        ("frozen-every-def", "frozen-jdp-def", "every_vs_static_defaults", "defaults"),
    ):
        if every in by and static in by:
            ratio = by[every]["rust_us"] / by[static]["rust_us"]
            out[key] = ratio
            print(
                f"FrozenLake ({which}): a release every episode costs {ratio:.2f}x static JDP batches"
                " per episode (target <= 3)"
            )
    if not args.only or "frozen-learn" in args.only:
        lr = learn_vs_run(2_000 if args.quick else 10_000)
        out["learn_vs_run"] = lr
        print(
            f"FrozenLake: privrl.learn on gymnasium {lr['learn_us']:.1f} us/user, privrl.run on the model "
            f"{lr['run_us']:.1f} us/episode: {lr['ratio']:.2f}x (target <= 3); the same users' "
            f"env.reset/step alone {lr['env_us']:.1f} us/user ({lr['env_ratio']:.2f}x run; "
            f"unwrapped env {lr['unwrapped_us']:.1f}); privrl's own share (learn on a plain-Python copy "
            f"of the map) {lr['own_us']:.1f} us/user ({lr['own_ratio']:.2f}x run); same users on all sides: "
            f"{lr['same_users']}"
        )
    if args.peer:
        peer = peer_ratio(args.peer, args.peer_episodes, by.get("mixture-ldp"))
        out["peer"] = peer
        print(
            f"Official LDP-UCRL-VTR run.py (HardToLearn d=5 H=6, eps=1): {peer['peer_us']:,.0f} "
            f"us/episode over {peer['episodes']} episodes; privrl's LDP UCRL-VTR (paper, discrete) "
            f"{peer['privrl_us']:.1f} us/episode: {peer['ratio']:,.0f}x (target >= 3,000)"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


def peer_ratio(path: str, episodes: int, ours: dict | None) -> dict:
    """Per-episode time of the official LDP-UCRL-VTR code (its own HardToLearn(5, 6, 10^4), eps = 1)
    over its first `episodes` episodes (its cost per episode grows with nothing but K's constants),
    against privrl's mixture-ldp workload measured in the same run."""
    import importlib.util
    import random

    spec = importlib.util.spec_from_file_location("ldp_ucrl_vtr_run", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    np.random.seed(0)  # noqa: NPY002 (the peer code draws from numpy's global generator)
    random.seed(0)
    env = mod.HardToLearn(d=5, H=6, K=10_000)
    agent = mod.LDP_UCRL_VTR(env, K=10_000, epsilon=1.0)
    # the loop of its run(), without the progress bar
    t0 = time.perf_counter()
    for k in range(episodes):
        env.reset()
        if k != 0:
            agent.update_user(k)
        done = 0
        while not done:
            s, h = env.current_state, env.current_timestep
            a = int(np.argmax(agent.Q[h, s]))
            _, s_, done = env.advance(a)
            agent.update_server(s, a, s_, h)
        agent.current_regret()
    peer_us = (time.perf_counter() - t0) / episodes * 1e6
    if ours is None:
        ours = measure(WORKLOADS[0], False, 1)
    return {
        "episodes": episodes,
        "peer_us": peer_us,
        "privrl_us": ours["rust_us"],
        "ratio": peer_us / ours["rust_us"],
    }


if __name__ == "__main__":
    main()
