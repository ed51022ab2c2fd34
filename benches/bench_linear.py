"""Timings of LSVI-UCB planning and of the linear-MDP workloads of docs/benchmarks.md, in one run.

    python benches/bench_linear.py [--quick] [--numpy-threads N] [--only a,r,b,c,sm]

(a) one planning pass (Alg. 2, lines 15-21) with T = 3000 stored transitions, d = 60, A = 4,
    H = 10, random features ||phi|| <= 1, built from the Rust kernels of privrl.kernels (per h:
    spd_inverse, then one state_values call for V_{h+1}, then u = Phi^T (r + V) and w = inv u
    in numpy), against a vectorised numpy implementation of the same pass (BLAS matmuls, no
    Python loop over samples or actions):
      per-sample: every transition has its own next-state feature block (continuous states);
                  kernels (one state_values call per h over the T blocks) vs numpy.
      finite S:   the T transitions move between S = 250 states (S A = 1000 < T); the kernels
                  from counts (V of the S states, u = sum_r + next_sum^T V: the agent's default
                  path once it has more users than states) and per sample (V read through the
                  next-state index) vs numpy per sample and numpy from counts.
    All passes are checked to agree to 1e-9 before timing.
(r) the Rust agent's own release at the same sizes: a non-private LSVIUCB on
    RandomLinearMDP(S=250, A=4, d=60, H=10) with two batches of 3000 users, timed on the
    observe() of user 3000 (the release follows it), planning="aggregated" and "per_sample",
    against the release of the numpy reference (privrl.agents.lsvi_ucb.reference, the test oracle)
    fed the same users; the weights are checked to agree to 1e-9.
(b) linear-jdp: JDP LSVI-UCB (eps = 1, delta = 1e-5, static batches) on RandomLinearMDP default,
    K = 100,000 (target <= 60 s).
(c) linear-full: non-private LSVI-UCB, an update every episode, SyntheticLinearMDP(H = 15),
    K = 2000, with each planning path.
Also (sm): non-private design-matrix upkeep, Sherman-Morrison vs sums + Cholesky, per release.

numpy's BLAS runs with --numpy-threads threads (default 1: the Rust kernels are single-threaded
by design, seeds run in parallel at the harness level); the setting is printed.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass


def _parse(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: small K, few repeats")
    ap.add_argument("--numpy-threads", type=int, default=1)
    ap.add_argument("--only", default="a,r,b,c,sm")
    return ap.parse_args(argv)


ARGS = _parse(sys.argv[1:]) if __name__ == "__main__" else None
if ARGS is not None:  # BLAS reads these once, when numpy is first imported
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.numpy_threads)

import numpy as np  # noqa: E402

import privrl  # noqa: E402
from privrl import kernels as kn  # noqa: E402
from privrl.agents import LSVIUCB  # noqa: E402
from privrl.agents.lsvi_ucb.reference import of_agent as lsvi_reference  # noqa: E402
from privrl.envs import RandomLinearMDP, SyntheticLinearMDP  # noqa: E402
from privrl.envs.finite import Trajectory  # noqa: E402
from privrl.privacy import JointDP, NonPrivate  # noqa: E402


def best_time(fn, repeats):
    fn()  # warm up
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


# ------------------------------------------------------------------------------ (a) one pass
def numpy_pass_per_sample(designs, phis, rewards, next_rows, beta, A, H):
    """The vectorised numpy LSVI pass: per h one inverse, one (T A, d) x (d, d) matmul for the
    bonuses, one matvec for Phi w, a reshape-max over actions and Phi^T (r + V)."""
    Hn, d, _ = designs.shape
    w, inv = np.zeros((Hn, d)), np.zeros((Hn, d, d))
    for h in range(Hn - 1, -1, -1):
        inv[h] = np.linalg.inv(designs[h])
        target = rewards[h]
        if h < Hn - 1:
            X = next_rows[h]
            q = X @ w[h + 1] + beta * np.sqrt(np.maximum(np.einsum("ij,ij->i", X @ inv[h + 1], X), 0.0))
            target = target + np.clip(q, 0.0, H).reshape(-1, A).max(axis=1)
        w[h] = inv[h] @ (phis[h].T @ target)
    return w


def numpy_pass_aggregated(designs, reward_sum, next_sum, table, beta, A, H):
    Hn, d, _ = designs.shape
    w, inv = np.zeros((Hn, d)), np.zeros((Hn, d, d))
    for h in range(Hn - 1, -1, -1):
        inv[h] = np.linalg.inv(designs[h])
        u = reward_sum[h].copy()
        if h < Hn - 1:
            q = table @ w[h + 1] + beta * np.sqrt(
                np.maximum(np.einsum("ij,ij->i", table @ inv[h + 1], table), 0.0)
            )
            u += next_sum[h].T @ np.clip(q, 0.0, H).reshape(-1, A).max(axis=1)
        w[h] = inv[h] @ u
    return w


def kernel_pass(designs, first, response):
    """The LSVI pass on the Rust kernels: per h (H..1) Lambda_h^{-1} by Cholesky
    (kernels.spd_inverse) and w_h = Lambda_h^{-1} u_h, where u_h = first(h) at the last step and
    response(h, w_{h+1}, Lambda_{h+1}^{-1}) before it (one kernels.state_values call for V_{h+1})."""
    Hn, d, _ = designs.shape
    w, inv = np.zeros((Hn, d)), np.zeros((Hn, d, d))
    for h in range(Hn - 1, -1, -1):
        inv[h] = kn.spd_inverse(designs[h])
        u = first(h) if h == Hn - 1 else response(h, w[h + 1], inv[h + 1])
        w[h] = inv[h] @ u
    return w


def random_unit_ball(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True) * rng.random((n, 1)) ** (1.0 / d)


@dataclass(frozen=True)
class PassSetup:
    T: int = 3000
    d: int = 60
    A: int = 4
    H: int = 10
    S: int = 250
    beta: float = 2.0  # bonuses of the order of the values: Q is neither all clipped nor all greedy
    repeats: int = 10

    @property
    def lam(self) -> float:
        return float(self.d)


def bench_pass(quick):
    setup = PassSetup(repeats=3 if quick else 10)
    T, d, A, H = setup.T, setup.d, setup.A, setup.H
    rng = np.random.default_rng(0)
    print(f"(a) one planning pass, T={T}, d={d}, A={A}, H={H} (numpy BLAS threads: {ARGS.numpy_threads})")
    rewards = bench_pass_continuous(setup, rng)
    bench_pass_finite(setup, rng, rewards)


def bench_pass_continuous(setup, rng):
    """Continuous next states: each transition its own (A, d) block. Returns the rewards drawn."""
    T, d, A, H, beta = setup.T, setup.d, setup.A, setup.H, setup.beta
    phis = [random_unit_ball(rng, T, d) for _ in range(H)]
    rewards = [rng.random(T) for _ in range(H)]
    next_rows = [random_unit_ball(rng, T * A, d) for _ in range(H)]
    designs = np.stack([setup.lam * np.eye(d) + p.T @ p for p in phis])

    def kernels_per_sample():
        def resp(h, w_next, inv_next):
            v = kn.state_values(next_rows[h], w_next, inv_next, beta, A, upper=H, lower=0.0)
            return phis[h].T @ (rewards[h] + v)

        return kernel_pass(designs, lambda h: phis[h].T @ rewards[h], resp)

    def np_per_sample():
        return numpy_pass_per_sample(designs, phis, rewards, next_rows, beta, A, H)

    wk, wn = kernels_per_sample(), np_per_sample()
    assert np.abs(wk - wn).max() <= 1e-9 * np.abs(wn).max(), "kernel and numpy passes disagree"
    t_k, t_n = best_time(kernels_per_sample, setup.repeats), best_time(np_per_sample, setup.repeats)
    print(
        f"    per-sample (continuous states): kernels {t_k * 1e3:7.2f} ms   numpy {t_n * 1e3:7.2f} ms   "
        f"ratio {t_n / t_k:5.2f}x"
    )
    return rewards


def agreeing_times(reference, others, repeats):
    """Best times of `reference` and `others` by name, after checking they agree to 1e-9."""
    ref = reference()
    for f in others:
        assert np.abs(f() - ref).max() <= 1e-9 * np.abs(ref).max(), f.__name__
    return {f.__name__: best_time(f, repeats) for f in (reference, *others)}


def bench_pass_finite(setup, rng, rewards):
    """A finite state set: S states with random features, the T transitions move between them."""
    T, d, A, H, S, beta = setup.T, setup.d, setup.A, setup.H, setup.S, setup.beta
    table = random_unit_ball(rng, S * A, d)
    s = rng.integers(0, S, (T, H + 1))
    a = rng.integers(0, A, (T, H))
    phis = [table[s[:, h] * A + a[:, h]] for h in range(H)]
    designs = np.stack([setup.lam * np.eye(d) + p.T @ p for p in phis])
    nexts = [s[:, h + 1] for h in range(H)]
    reward_sum = np.stack([phis[h].T @ rewards[h] for h in range(H)])
    next_sum = np.zeros((H, S, d))
    for h in range(H):
        np.add.at(next_sum[h], nexts[h], phis[h])
    next_rows = [table.reshape(S, A, d)[nexts[h]].reshape(T * A, d) for h in range(H)]

    def kernels_counts():
        def resp(h, w_next, inv_next):
            v = kn.state_values(table, w_next, inv_next, beta, A, upper=H, lower=0.0)
            return reward_sum[h] + next_sum[h].T @ v

        return kernel_pass(designs, lambda h: reward_sum[h], resp)

    def kernels_indexed():
        def resp(h, w_next, inv_next):
            v = kn.state_values(table, w_next, inv_next, beta, A, upper=H, lower=0.0, states=nexts[h])
            return phis[h].T @ (rewards[h] + v)

        return kernel_pass(designs, lambda h: phis[h].T @ rewards[h], resp)

    def np_per_sample_finite():
        return numpy_pass_per_sample(designs, phis, rewards, next_rows, beta, A, H)

    def np_aggregated():
        return numpy_pass_aggregated(designs, reward_sum, next_sum, table, beta, A, H)

    t = agreeing_times(np_per_sample_finite, (kernels_counts, kernels_indexed, np_aggregated), setup.repeats)
    print(
        f"    finite S={S} (S A = {S * A} < T): "
        f"kernels from counts {t['kernels_counts'] * 1e3:6.2f} ms, "
        f"kernels per-sample {t['kernels_indexed'] * 1e3:6.2f} ms, numpy per-sample "
        f"{t['np_per_sample_finite'] * 1e3:6.2f} ms, numpy from counts {t['np_aggregated'] * 1e3:6.2f} ms"
    )
    counts, indexed = t["kernels_counts"], t["kernels_indexed"]
    print(
        f"      kernels from counts vs numpy per-sample: {t['np_per_sample_finite'] / counts:5.1f}x; "
        f"counts vs counts: {t['np_aggregated'] / counts:4.2f}x; "
        f"per-sample vs per-sample: {t['np_per_sample_finite'] / indexed:4.2f}x"
    )


# ------------------------------------------------------------------------------ (r) the agent's release
def bench_release(quick):
    """One release of the Rust agent (after T users) against the numpy reference's, same users."""
    setup = PassSetup(repeats=3 if quick else 10)
    T, d, A, H, S = setup.T, setup.d, setup.A, setup.H, setup.S
    env = RandomLinearMDP(S=S, A=A, d=d, H=H, seed=0)
    rng = np.random.default_rng(0)
    users = [Trajectory(rng.integers(0, S, H + 1), rng.integers(0, A, H), rng.random(H)) for _ in range(T)]
    print(f"(r) the agent's release after T={T} users, {env.name} (non-private, batches of {T} users)")
    times = {}
    for planning in ("aggregated", "per_sample"):

        def fed_agent(planning=planning):
            # every timing on an agent fed the T - 1 users, as in a run (a deep copy would time
            # the rebuild of the caches a load leaves out, not the release)
            agent = LSVIUCB(
                env, NonPrivate(calibration="paper"), batches=2, episodes=2 * T, seed=1, planning=planning
            )
            for u in users[:-1]:
                agent.observe(u)
            return agent

        def fed_ref():
            ref = lsvi_reference(fed_agent())
            for u in users[:-1]:
                ref.observe(u.states, u.actions, u.rewards)
            return ref

        agent = fed_agent()

        def agent_release():
            a = fed_agent()
            t0 = time.perf_counter()
            a.observe(users[-1])
            seconds = time.perf_counter() - t0
            assert a.batch == 1, "the release follows user T"
            return seconds, a.release().weights

        def reference_release():
            r = fed_ref()
            t0 = time.perf_counter()
            r.observe(users[-1].states, users[-1].actions, users[-1].rewards)
            return time.perf_counter() - t0, r.weights

        (_, wa), (_, wr) = agent_release(), reference_release()
        assert agent.B == 2 and agent.batch == 0, "no release may precede user T"
        assert np.abs(wa - wr).max() <= 1e-9 * np.abs(wr).max(), f"agent ({planning}) and reference disagree"
        times[planning] = min(agent_release()[0] for _ in range(setup.repeats))
        times["reference"] = min(reference_release()[0] for _ in range(setup.repeats))
    print(
        f"    agent from counts {times['aggregated'] * 1e3:7.2f} ms, agent per-sample "
        f"{times['per_sample'] * 1e3:7.2f} ms, numpy reference {times['reference'] * 1e3:7.2f} ms: "
        f"{times['reference'] / times['aggregated']:5.1f}x / {times['reference'] / times['per_sample']:5.1f}x"
    )


# ------------------------------------------------------------------------------ (b), (c)
def timed_run(env, privacy, K, **kw):
    t0 = time.perf_counter()
    agent = LSVIUCB(env, privacy=privacy, episodes=K, seed=1, **kw)
    res = privrl.run(agent, env, episodes=K, seed=2)
    return time.perf_counter() - t0, res, agent


def bench_jdp(quick):
    K = 10_000 if quick else 100_000
    env = RandomLinearMDP()
    t, res, agent = timed_run(env, JointDP(1.0, 1e-5, calibration="paper"), K, batches="static")
    print(
        f"(b) linear-jdp  JDP(eps=1, delta=1e-5) static B={agent.calibration.B} on {env.name}, K={K}: "
        f"{t:.2f} s ({t / K * 1e6:.0f} us/episode; target <= 60 s at K=100,000), "
        f"final regret {res.final_regret:.1f}, paths {sorted(set(agent._core.paths))}"
    )


def bench_full(quick):
    K = 300 if quick else 2000
    env = SyntheticLinearMDP(H=15)
    regrets = {}
    for planning in ("aggregated", "per_sample"):
        t, res, _ = timed_run(
            env, NonPrivate(calibration="paper"), K, batches="every", beta_scale=1e-3, planning=planning
        )
        regrets[planning] = res.regret
        print(
            f"(c) linear-full non-private LSVI-UCB every episode, {env.name}, K={K}, "
            f"planning={planning:<10}: "
            f"{t:7.2f} s ({t / K * 1e3:.2f} ms/episode), final regret {res.final_regret:.2f}"
        )
    diff = np.abs(regrets["aggregated"] - regrets["per_sample"]).max()
    print(f"    both paths: max |regret difference| = {diff:.3g}")


def bench_design_upkeep(quick):
    """Non-private Lambda upkeep per release when a release follows every episode."""
    n = 300 if quick else 2000
    rng = np.random.default_rng(0)
    for d, H in ((16, 20), (60, 10)):
        X = rng.dirichlet(np.full(d, 0.3), size=(n, H))
        G = np.zeros((H, d, d))
        t0 = time.perf_counter()
        for k in range(n):
            G += np.einsum("hi,hj->hij", X[k], X[k])
            inv_c = [kn.spd_inverse(G[h] + d * np.eye(d)) for h in range(H)]
        t_sum = (time.perf_counter() - t0) / n
        sms = [kn.RankOneInverse(d, float(d)) for _ in range(H)]
        t0 = time.perf_counter()
        for k in range(n):
            for h in range(H):
                sms[h].update_batch(X[k, h][None])
            inv_s, _ = [sm.inverse() for sm in sms], [sm.matrix() for sm in sms]
        t_sm = (time.perf_counter() - t0) / n
        err = max(np.abs(a - b).max() for a, b in zip(inv_c, inv_s, strict=True))
        print(
            f"    Lambda upkeep d={d}, H={H}: sums + Cholesky {t_sum * 1e6:7.1f} us/release, "
            f"Sherman-Morrison {t_sm * 1e6:7.1f} us/release (max |inverse difference| {err:.1e})"
        )


def main():
    only = set(ARGS.only.split(","))
    if "a" in only:
        bench_pass(ARGS.quick)
    if "r" in only:
        bench_release(ARGS.quick)
    if "b" in only:
        bench_jdp(ARGS.quick)
    if "c" in only:
        bench_full(ARGS.quick)
    if "sm" in only:
        bench_design_upkeep(ARGS.quick)


if __name__ == "__main__":
    main()
