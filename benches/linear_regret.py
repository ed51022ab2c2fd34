"""Final regret of the LSVI-UCB family (Sec. 4, Alg. 2) on RandomLinearMDP (default size), K = 10^4.

    python benches/linear_regret.py [--quick] [--episodes K] [--seeds N] [--jobs J]

Rows: LSVI-UCB (non-private, an update every episode), batched LSVI-UCB (non-private, static
schedule with the B that JDP uses at the same eps: "static" itself gives B = K without an eps),
JDP batched (Alg. 2, App. D's B), JDP non-batched (Rem. 2, B = K), pure JDP (delta = 0, B of App.
"Pure joint DP"), at eps in {10, 1}. Columns: beta_scale = 1 (App. D's beta) and a tuned
beta_scale. The calibrated betas differ by orders of magnitude between the non-private and the
private rows (c_K enters beta), so the tuning grid is a grid of radii beta_used in
{0.1, 0.3, 1, 3, 10} (the scale of the values, H = 20) and the table reports the beta_scale =
beta_used / beta it corresponds to. Mean +- sd over seeds; the uniformly random policy's regret
is printed for reference.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import privrl
from privrl.agents import LSVIUCB
from privrl.agents.lsvi_ucb.calibration import calibrate_lsvi_ucb
from privrl.envs import RandomLinearMDP
from privrl.privacy import JointDP, NonPrivate

RADII = (0.1, 0.3, 1.0, 3.0, 10.0)
EPSILONS = (10.0, 1.0)
DELTA = 1e-5


def uniform_policy_regret(env, K):
    return K * env.random_regret()


def configs(K):
    """(row label, eps or None, privacy, batches)."""
    out = [("LSVI-UCB (every)", None, NonPrivate(calibration="paper"), "every")]
    for eps in EPSILONS:
        B = calibrate_lsvi_ucb("jdp", eps, DELTA, 20, K, 16, calibration="paper").B
        out += [
            (f"batched LSVI-UCB (B={B})", eps, NonPrivate(calibration="paper"), B),
            ("JDP batched (static)", eps, JointDP(eps, DELTA, calibration="paper"), "static"),
            ("JDP non-batched (B=K)", eps, JointDP(eps, DELTA, calibration="paper"), "every"),
            ("pure JDP (static)", eps, JointDP(eps, 0.0, calibration="paper"), "static"),
        ]
    return out


def one_run(job):
    privacy, batches, K, seed, beta_scale = job
    env = RandomLinearMDP()
    agent = LSVIUCB(env, privacy=privacy, batches=batches, episodes=K, seed=seed, beta_scale=beta_scale)
    res = privrl.run(agent, env, seed=1000 + seed)
    return res.final_regret, agent.calibration.B, agent.calibration.beta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="K = 1000, one seed")
    ap.add_argument("--episodes", type=int, default=None)
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    K = args.episodes or (1000 if args.quick else 10_000)
    seeds = list(range(args.seeds or (1 if args.quick else 2)))
    env = RandomLinearMDP()
    t0 = time.perf_counter()
    rows = configs(K)
    jobs, keys = [], []
    for r, (_, _, priv, batches) in enumerate(rows):
        beta = calibrate_lsvi_ucb(**priv.as_kwargs(), H=env.H, K=K, d=env.d, batches=batches).beta
        for scale in (1.0, *(rad / beta for rad in RADII)):
            for s in seeds:
                jobs.append((priv, batches, K, s, scale))
                keys.append((r, scale))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(one_run, jobs))
    table: dict = {}
    info: dict = {}
    for (r, scale), (reg, B, beta) in zip(keys, results, strict=True):
        table.setdefault(r, {}).setdefault(scale, []).append(reg)
        info[r] = (B, beta)
    print(
        f"final regret at K={K} on {env.name}, mean +- sd over seeds {seeds}; "
        f"uniform random policy: {uniform_policy_regret(env, K):.0f}; delta = {DELTA:g} (pure: 0)"
    )
    head = (
        f"{'algorithm':<26}{'eps':>5}{'B':>7}{'beta (App. D)':>15}{'beta_scale=1':>20}{'tuned':>20}"
        "  tuned beta_scale (beta_used)"
    )
    print(head)
    print("-" * len(head))
    for r, (label, eps, _, _) in enumerate(rows):
        B, beta = info[r]
        by_scale = {sc: (np.mean(v), np.std(v)) for sc, v in table[r].items()}
        best = min((sc for sc in by_scale if sc != 1.0), key=lambda sc: by_scale[sc][0])
        m1, s1 = by_scale[1.0]
        mt, st = by_scale[best]
        print(
            f"{label:<26}{'-' if eps is None else f'{eps:g}':>5}{B:>7}{beta:>15.3g}"
            f"{m1:>13.0f} +- {s1:<4.0f}{mt:>13.0f} +- {st:<4.0f}  {best:.2g} ({best * beta:.2g})"
        )
    grid = "  ".join(f"{rad:g}" for rad in RADII)
    print(
        f"\ntuning grid (beta_used): {grid}; "
        f"wall time {time.perf_counter() - t0:.0f} s with {args.jobs} processes"
    )
    print("all tuned values (beta_used: mean regret):")
    for r, (label, eps, _, _) in enumerate(rows):
        beta = info[r][1]
        cells = "  ".join(
            f"{sc * beta:.2g}: {np.mean(v):.0f}" for sc, v in sorted(table[r].items()) if sc != 1.0
        )
        print(f"  {label:<26}{'-' if eps is None else f'{eps:g}':>5}  {cells}")


if __name__ == "__main__":
    main()
