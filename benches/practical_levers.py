"""Which lever of the practical calibration buys what: JDP UCRL-VTR at eps = 10, one lever at a time.

    python benches/practical_levers.py [--K 20000] [--seeds 1] [--envs river mix river12]

Every row releases the tight calibration's noise (the privacy guarantee is the same in all rows);
only the mechanism (rows 1-2) or the post-processing of the release changes:
  tight (tree)            : the theorem's constant shift 2 Upsilon and Cor. 1's radius, binary tree
  tight (blt)             : the same with the lowest-variance continual-release mechanism
  practical, no centre    : per-release shift Upsilon_t, floor at lam, directional bonus, ridge centred at 0
  practical, worst bound  : as practical, but Upsilon / C at the worst release of the horizon, not at t
  practical, stat. radius : as practical, without the privacy part gamma_t of the bonus
  practical, full bias    : as practical, but the bias part of gamma_t not scaled by beta_scale
  practical, triangle bound: as practical, ||w - w0|| <= C_w + ||w0|| instead of sqrt(C_w^2 - ||w0||^2)
  practical, shift x 0.1  : as practical, the per-release shift 0.1 Upsilon_t instead of Upsilon_t
  practical, no shift     : as practical, no shift (the eigenvalue floor at lam alone)
  practical (tree)        : the practical rule on the binary tree
  practical               : the default (BLT, per-release bounds, centred ridge, scaled bonus)
beta_scale is the environment's (benches/privacy_cost.py: 0.1 RiverSwimMixture, 0.03 RandomLinearMixtureMDP,
0.3 RiverSwimMixture(S=12), the prior-adversarial check).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import privrl
from privrl.agents import UCRLVTR
from privrl.agents.common.statistics import PracticalRelease, Release
from privrl.envs import RandomLinearMixtureMDP, RiverSwimMixture
from privrl.privacy import JointDP, practical

ENVS = {
    "river": (lambda: RiverSwimMixture(S=6, H=20), 0.1),
    "mix": (lambda: RandomLinearMixtureMDP(), 0.03),
    # prior-adversarial: the centre's greedy policy is "always left" (benches/privacy_cost.py)
    "river12": (lambda: RiverSwimMixture(S=12, H=20), 0.3),
}


class Lever(PracticalRelease):
    """PracticalRelease with one piece switched (see the module docstring)."""

    centre: bool = True
    gamma_mode: str = "scaled"  # "scaled" | "none" | "full_bias"
    triangle: bool = False

    def __call__(self, gram: np.ndarray, target: np.ndarray, users: int) -> Release:
        d, lam = self.d, self.lam
        w0 = self.w0 if self.centre else np.zeros(d)
        ups, C_t = self.matrix_bound(users), self.vector_bound(users)
        shift = self.shift_mult * ups
        ev, vecs = np.linalg.eigh(gram + (lam + shift) * np.eye(d))
        fl = np.maximum(ev, lam)
        corr = (fl - ev).max(axis=1)
        design = np.einsum("hij,hj,hkj->hik", vecs, fl, vecs)
        inverse = np.einsum("hij,hj,hkj->hik", vecs, 1.0 / fl, vecs)
        inverse2 = np.einsum("hij,hj,hkj->hik", vecs, fl**-2.0, vecs)
        pull = (lam + shift) * w0[None, :] + np.einsum("hij,hj,hkj,k->hi", vecs, fl - ev, vecs, w0)
        weights = np.einsum("hij,hj->hi", inverse, target + pull)
        # ||w - centre||: C_w from 0; from w0 Pythagoras, or the triangle inequality C_w + ||w0||
        if not self.centre:
            dist = self.C_w
        elif self.triangle:
            dist = self.C_w + float(np.linalg.norm(w0))
        else:
            dist = self.centre_distance
        if self.gamma_mode == "none":
            gamma = np.zeros(len(corr))
        elif self.gamma_mode == "full_bias":
            gamma = self.noise_scale * (C_t + ups * self.C_w) + (shift + corr) * dist
        else:
            gamma = practical.confidence_noise_width(C_t, ups, self.C_w, shift + corr, dist, self.noise_scale)
        bonus = self.beta**2 * inverse + (gamma**2)[:, None, None] * inverse2
        return Release(design, inverse, weights, users, bonus, gamma)


def run_row(env_key: str, row: str, K: int, seed: int) -> tuple[float, float, float]:
    make, bs = ENVS[env_key]
    env = make()
    cal = "tight" if row.startswith("tight") else "practical"
    mech = "tree" if "tree" in row else "blt"
    agent = UCRLVTR(
        env, JointDP(10.0, 1e-5, calibration=cal, mechanism=mech), episodes=K, seed=seed, beta_scale=bs
    )
    if cal == "practical" and row not in ("practical", "practical (tree)"):
        old = agent.server.post
        assert old is not None
        lever = Lever(
            **{
                k: getattr(old, k)
                for k in (
                    "lam",
                    "d",
                    "C_w",
                    "beta",
                    "noise_scale",
                    "matrix_bound",
                    "vector_bound",
                    "w0",
                    "centre_distance",
                    "shift_mult",
                )
            }
        )
        lever.centre = row != "practical, no centre"
        lever.triangle = row == "practical, triangle bound"
        lever.gamma_mode = {"practical, stat. radius": "none", "practical, full bias": "full_bias"}.get(
            row, "scaled"
        )
        shifts = {"practical, shift x 0.1": 0.1, "practical, no shift": 0.0}
        lever.shift_mult = shifts.get(row, old.shift_mult)
        if row == "practical, worst bound":
            worst_m, worst_v = old.matrix_bound(K), old.vector_bound(K)
            lever.matrix_bound, lever.vector_bound = (lambda t: worst_m), (lambda t: worst_v)
        agent.server.post = lever
        agent._release = agent.server.release()
    t0 = time.perf_counter()
    regret = privrl.run(agent, env, seed=seed + 1).regret
    slope = float(np.log(regret[-1] / regret[K // 2 - 1]) / np.log(2.0))
    return float(regret[-1]), slope, time.perf_counter() - t0


ROWS = [
    "tight (tree)",
    "tight (blt)",
    "practical, no centre",
    "practical, worst bound",
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
