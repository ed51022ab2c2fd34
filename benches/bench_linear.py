"""Timings of LSVI-UCB planning and of the linear-MDP workloads of docs/benchmarks.md, in one run.

    python benches/bench_linear.py [--quick] [--numpy-threads N] [--only a,b,c]

(a) one planning pass (Alg. 2, lines 15-21) with T = 3000 stored transitions, d = 60, A = 4,
    H = 10, random features ||phi|| <= 1, against a vectorised numpy implementation of the same
    pass (BLAS matmuls, no Python loop over samples or actions):
      per-sample: every transition has its own next-state feature block (continuous states);
                  Rust (one state_values call per h) vs numpy, same arithmetic.
      finite S:   the T transitions move between S = 250 states (S A = 1000 < T); privrl's
                  default (aggregated) pass vs numpy's per-sample pass and vs numpy aggregated.
    All passes are checked to agree to 1e-9 before timing.
(b) linear-jdp: JDP LSVI-UCB (eps = 1, delta = 1e-5, static batches) on RandomLinearMDP default,
    K = 100,000 (target <= 60 s).
(c) linear-full: non-private LSVI-UCB, an update every episode, SyntheticLinearMDP(H = 15),
    K = 2000, with each planning path.
Also: non-private design-matrix upkeep, Sherman-Morrison vs sums + Cholesky, per release.

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
    ap.add_argument("--only", default="a,b,c,sm")
    return ap.parse_args(argv)


ARGS = _parse(sys.argv[1:]) if __name__ == "__main__" else None
if ARGS is not None:  # BLAS reads these once, when numpy is first imported
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.numpy_threads)

import numpy as np  # noqa: E402

import privrl  # noqa: E402
from privrl import kernels as kn  # noqa: E402
from privrl.agents import LSVIUCB  # noqa: E402
from privrl.agents.lsvi_ucb.agent import lsvi_release, response_aggregated, response_per_sample  # noqa: E402
from privrl.envs import RandomLinearMDP, SyntheticLinearMDP  # noqa: E402
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

    def rust_per_sample():
        def resp(h, w_next, inv_next):
            if w_next is None:
                return phis[h].T @ rewards[h]
            return response_per_sample(phis[h], rewards[h], next_rows[h], None, w_next, inv_next, beta, A, H)

        return lsvi_release(designs, resp).weights

    def np_per_sample():
        return numpy_pass_per_sample(designs, phis, rewards, next_rows, beta, A, H)

    wr, wn = rust_per_sample(), np_per_sample()
    assert np.abs(wr - wn).max() <= 1e-9 * np.abs(wn).max(), "Rust and numpy passes disagree"
    t_r, t_n = best_time(rust_per_sample, setup.repeats), best_time(np_per_sample, setup.repeats)
    print(
        f"    per-sample (continuous states): Rust {t_r * 1e3:7.2f} ms   numpy {t_n * 1e3:7.2f} ms   "
        f"ratio {t_n / t_r:5.2f}x"
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

    def rust_aggregated():
        def resp(h, w_next, inv_next):
            if w_next is None:
                return reward_sum[h]
            return response_aggregated(reward_sum[h], next_sum[h], table, w_next, inv_next, beta, A, H)

        return lsvi_release(designs, resp).weights

    def rust_indexed():
        def resp(h, w_next, inv_next):
            if w_next is None:
                return phis[h].T @ rewards[h]
            return response_per_sample(phis[h], rewards[h], table, nexts[h], w_next, inv_next, beta, A, H)

        return lsvi_release(designs, resp).weights

    def np_per_sample_finite():
        return numpy_pass_per_sample(designs, phis, rewards, next_rows, beta, A, H)

    def np_aggregated():
        return numpy_pass_aggregated(designs, reward_sum, next_sum, table, beta, A, H)

    t = agreeing_times(np_per_sample_finite, (rust_aggregated, rust_indexed, np_aggregated), setup.repeats)
    print(
        f"    finite S={S} (S A = {S * A} < T): "
        f"Rust aggregated (default) {t['rust_aggregated'] * 1e3:6.2f} ms, "
        f"Rust per-sample {t['rust_indexed'] * 1e3:6.2f} ms, numpy per-sample "
        f"{t['np_per_sample_finite'] * 1e3:6.2f} ms, numpy aggregated {t['np_aggregated'] * 1e3:6.2f} ms"
    )
    print(
        f"      default pass vs numpy per-sample: {t['np_per_sample_finite'] / t['rust_aggregated']:5.1f}x; "
        f"aggregated vs aggregated: {t['np_aggregated'] / t['rust_aggregated']:4.2f}x; "
        f"per-sample vs per-sample: {t['np_per_sample_finite'] / t['rust_indexed']:4.2f}x"
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
    t, res, agent = timed_run(env, JointDP(1.0, 1e-5), K, batches="static")
    print(
        f"(b) linear-jdp  JDP(eps=1, delta=1e-5) static B={agent.calibration['B']} on {env.name}, K={K}: "
        f"{t:.2f} s ({t / K * 1e6:.0f} us/episode; target <= 60 s at K=100,000), "
        f"final regret {res.final_regret:.1f}, paths {sorted(set(agent.server.paths))}"
    )


def bench_full(quick):
    K = 300 if quick else 2000
    env = SyntheticLinearMDP(H=15)
    regrets = {}
    for planning in ("aggregated", "per_sample"):
        t, res, _ = timed_run(env, NonPrivate(), K, batches="every", beta_scale=1e-3, planning=planning)
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
    if "b" in only:
        bench_jdp(ARGS.quick)
    if "c" in only:
        bench_full(ARGS.quick)
    if "sm" in only:
        bench_design_upkeep(ARGS.quick)


if __name__ == "__main__":
    main()
