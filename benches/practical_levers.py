"""Which lever of the practical calibration buys what: JDP UCRL-VTR at eps = 10, one lever at a time.

    python benches/practical_levers.py [--K 20000] [--seeds 1] [--envs river mix river12]

Every row releases the tight calibration's noise (the privacy guarantee is the same in all rows);
only the mechanism (rows 1-2) or the post-processing of the release changes:
  tight (tree)            : the theorem's constant shift 2 Upsilon and Cor. 1's radius, binary tree
  tight (blt)             : the same with the lowest-variance continual-release mechanism
  practical, no centre    : per-release shift Upsilon_t, floor at lam, directional bonus, ridge centred at 0
                            (UCRLVTR(..., centre="zero"))
  practical, stat. radius : as practical, without the privacy part gamma_t of the bonus
  practical, full bias    : as practical, but the bias part of gamma_t not scaled by beta_scale
  practical, triangle bound: as practical, ||w - w0|| <= C_w + ||w0|| instead of sqrt(C_w^2 - ||w0||^2)
  practical, shift x 0.1  : as practical, the per-release shift 0.1 Upsilon_t instead of Upsilon_t
  practical, no shift     : as practical, no shift (the eigenvalue floor at lam alone)
  practical (tree)        : the practical rule on the binary tree
  practical               : the default (BLT, per-release bounds, centred ridge, scaled bonus)
The release runs in Rust (rust/agents/vtr.rs); a lever changes one of the public constants it reads
(privrl.agents.common.specs.PracticalSpec: shift_mult, noise_scale, centre_distance) before the agent
is built. An earlier row, "practical, worst bound" (Upsilon_t and C_t at the worst release of the
horizon), has no such constant: the Rust release evaluates the noise bounds at each release's
variance factor, so that row is gone.
beta_scale is the environment's (benches/privacy_cost.py: 0.1 RiverSwimMixture, 0.03 RandomLinearMixtureMDP,
0.3 RiverSwimMixture(S=12), the prior-adversarial check).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

import privrl
from privrl.agents import UCRLVTR
from privrl.envs import RandomLinearMixtureMDP, RiverSwimMixture
from privrl.privacy import JointDP

ENVS = {
    "river": (lambda: RiverSwimMixture(S=6, H=20), 0.1),
    "mix": (lambda: RandomLinearMixtureMDP(), 0.03),
    # prior-adversarial: the centre's greedy policy is "always left" (benches/privacy_cost.py)
    "river12": (lambda: RiverSwimMixture(S=12, H=20), 0.3),
}


class Lever(UCRLVTR):
    """UCRLVTR whose practical release has one piece switched (see the module docstring)."""

    def __init__(self, *args, row: str, **kwargs):
        self.row = row
        super().__init__(*args, **kwargs)

    def _practical(self, cal, sigma_m, sigma_v, radius, which):
        spec = super()._practical(cal, sigma_m, sigma_v, radius, which)
        if self.row == "practical, stat. radius":  # gamma_t = 0
            return dataclasses.replace(spec, noise_scale=0.0)
        if self.row == "practical, full bias":
            # gamma_t = s (C_t + Upsilon_t C_w) + (S_t + ||E||) D: the Rust release computes
            # s (C_t + Upsilon_t C_w + (S_t + ||E||) D'), so D' = D / s
            assert spec.noise_scale > 0
            return dataclasses.replace(spec, centre_distance=spec.centre_distance / spec.noise_scale)
        if self.row == "practical, triangle bound":
            return dataclasses.replace(spec, centre_distance=self.C_w + float(np.linalg.norm(spec.w0)))
        shifts = {"practical, shift x 0.1": 0.1, "practical, no shift": 0.0}
        if self.row in shifts:
            return dataclasses.replace(spec, shift_mult=shifts[self.row])
        return spec


def run_row(env_key: str, row: str, K: int, seed: int) -> tuple[float, float, float]:
    make, bs = ENVS[env_key]
    env = make()
    cal = "tight" if row.startswith("tight") else "practical"
    mech = "tree" if "tree" in row else "blt"
    agent = Lever(
        env,
        JointDP(10.0, 1e-5, calibration=cal, mechanism=mech),
        episodes=K,
        seed=seed,
        beta_scale=bs,
        centre="zero" if row == "practical, no centre" else "feasible",
        row=row,
    )
    t0 = time.perf_counter()
    regret = privrl.run(agent, env, seed=seed + 1).regret
    slope = float(np.log(regret[-1] / regret[K // 2 - 1]) / np.log(2.0))
    return float(regret[-1]), slope, time.perf_counter() - t0


ROWS = [
    "tight (tree)",
    "tight (blt)",
    "practical, no centre",
    "practical, stat. radius",
    "practical, full bias",
    "practical, triangle bound",
    "practical, shift x 0.1",
    "practical, no shift",
    "practical (tree)",
    "practical",
]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, default=20_000)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--envs", nargs="+", default=list(ENVS))
    ap.add_argument("--rows", nargs="+", default=ROWS, choices=ROWS, metavar="ROW", help="levers to run")
    args = ap.parse_args(argv)
    print(
        f"JDP UCRL-VTR, eps = 10, K = {args.K}, {args.seeds} seed(s): "
        "final regret (slope over the second half)"
    )
    print(f"{'lever':<26}" + "".join(f"{e:>26}" for e in args.envs))
    for row in args.rows:
        cells = []
        for env_key in args.envs:
            res = [run_row(env_key, row, args.K, s) for s in range(args.seeds)]
            r = np.array([x[0] for x in res])
            cells.append(f"{r.mean():>12,.0f} +- {r.std():>6,.0f} ({np.mean([x[1] for x in res]):.2f})")
        print(f"{row:<26}" + "".join(f"{c:>26}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
