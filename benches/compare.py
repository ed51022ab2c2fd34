"""Time each Rust kernel against its numpy reference on the same inputs, in one run.

    python benches/compare.py [--json FILE] [--quick]

Prints a table of (kernel, d, n, rust_s, numpy_s, speedup); times are seconds per call
(best of several repeats), speedup = numpy_s / rust_s. Kernels:
  q_argmax      optimistic Q for n rows (n/10 states x 10 actions) + per-state argmax with
                random ties (privrl.kernels.optimistic_values vs reference.optimistic_values_ref)
  sherman_morrison_1000   a batch of 1000 rank-one updates (n = updates per call is 1000)
  tree_release  one push + prefix release of a d x d symmetric Gaussian matrix tree of
                capacity T = n (averaged over the steps timed; Rust: the fused push_release
                call, numpy: the reference's push then release)
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from privrl import kernels as kn
from privrl.kernels import reference as R

DIMS = [5, 16, 64, 200]
SIZES = [100, 10_000]


def best_time(fn, repeats: int = 5, min_time: float = 0.05) -> float:
    """Best per-call time over `repeats` rounds, each looping until `min_time` elapsed."""
    fn()  # warm up
    best = math.inf
    for _ in range(repeats):
        calls, t0 = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            el = time.perf_counter() - t0
            if el >= min_time:
                break
        best = min(best, el / calls)
    return best


def spd_inverse(rng, d):
    m = rng.standard_normal((d, d))
    return np.linalg.inv(m @ m.T / d + np.eye(d))


def bench_q(rng, d, n, quick):
    A = 10
    phi = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    w = rng.standard_normal(d)
    inv = spd_inverse(rng, d)
    g1, g2 = np.random.default_rng(1), np.random.default_rng(1)
    rust = best_time(lambda: kn.optimistic_values(phi, w, inv, 1.0, A, upper=10.0, lower=0.0, rng=g1))
    ref = best_time(lambda: R.optimistic_values_ref(phi, w, inv, 1.0, A, upper=10.0, lower=0.0, rng=g2))
    return rust, ref


def bench_sm(rng, d, n, quick):
    xs = rng.uniform(-1, 1, (1000, d)) / math.sqrt(d)

    def rust():
        sm = kn.RankOneInverse(d, 1.0)
        sm.update_batch(xs)

    def ref():
        sm = R.ShermanMorrisonRef(d, 1.0)
        sm.update_batch(xs)

    return best_time(rust, 3), best_time(ref, 1 if quick else 3, 0.0)


def bench_tree(rng, d, n, quick):
    steps = n if d <= 16 else min(n, 200)
    if quick:
        steps = min(steps, 200)
    leaf = np.full((d, d), 0.5)

    def rust():
        tr = kn.TreeAggregator((d, d), n, noise="gaussian", scale=1.0, seed=3)  # numpy's law
        for _ in range(steps):
            tr.push_release(leaf)  # one call per step: push the leaf, release the prefix

    def ref():
        tr = R.TreeAggregatorRef((d, d), n, sigma=1.0, rng=np.random.default_rng(3))
        for _ in range(steps):
            tr.push(leaf)
            tr.release()

    return best_time(rust, 3, 0.0) / steps, best_time(ref, 3, 0.0) / steps


KERNELS = {"q_argmax": bench_q, "sherman_morrison_1000": bench_sm, "tree_release": bench_tree}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the table as a JSON list to this file")
    ap.add_argument("--quick", action="store_true", help="fewer repeats and steps (smoke run)")
    ap.add_argument("--kernels", nargs="*", default=list(KERNELS), choices=list(KERNELS))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'kernel':<24}{'d':>5}{'n':>8}{'rust_s':>13}{'numpy_s':>13}{'speedup':>10}")
    for name in args.kernels:
        for d in DIMS:
            for n in SIZES:
                if name == "sherman_morrison_1000" and n != SIZES[0]:
                    continue  # the batch size is fixed at 1000 updates
                rust, ref = KERNELS[name](rng, d, n, args.quick)
                n_out = 1000 if name == "sherman_morrison_1000" else n
                row = {
                    "kernel": name,
                    "d": d,
                    "n": n_out,
                    "rust_s": rust,
                    "numpy_s": ref,
                    "speedup": ref / rust,
                }
                rows.append(row)
                print(f"{name:<24}{d:>5}{n_out:>8}{rust:>13.3e}{ref:>13.3e}{ref / rust:>9.1f}x", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
