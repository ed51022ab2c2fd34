"""What limits private PSRL on FrozenLake (its schedule, cap, prior and noise handling): the study
behind /work/notes/probes50/psrl_study.md. One process, a few seconds per run.

    python benches/psrl_study.py learn VARIANT ... [--env slip|det] [--eps 10] [--seeds 0-9]
    python benches/psrl_study.py board [--slip 1] [--eps 10] [--seeds 0-9] [--draws 100]
    python benches/psrl_study.py denoise [--slip 1] [--eps 10] [--seeds 0-9]
    python benches/psrl_study.py cliff [--seeds 0-2] [--priors uniform reward value]

``learn``: privrl.learn(PSRL(FeatureMap.one_hot_for(env, H), JointDP(eps, 1e-5) or NonPrivate(),
episodes=K, seed=s), env, seed=10_000 + s); prints the last 10% of users' success per seed. A
VARIANT is comma-separated key=value ("" the default agent): B=<int> | geom (App. D's B, batch
sizes doubling) | dbl (batch sizes 1, 2, 4, ... up to K), m=<int>, alpha0=<float> | 1/S (the
agent's default, formulas.psrl_prior; alpha0=1 the uniform prior it had before).
``board``: the final billboard of the default agent, and the exact value on FrozenLake's model of
users' posterior draws with and without the release's noise in them (counts, rewards).
``denoise``: the numpy reference's runs (reference.run_reference on FrozenLake's model) with the
counts projected on the simplex (the agent's) or clipped at 0. ``cliff``: non-private users of the
reference on CliffWalking (H 30, rewards (r + 100) / 100), the agent's priors against one
pseudo-observation at the top of the known range (cliff_run's priors).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from typing import Any

import gymnasium as gym
import numpy as np

import privrl
from privrl import _core
from privrl.agents import PSRL
from privrl.agents.psrl import reference
from privrl.agents.psrl.formulas import psrl_prior, psrl_reward_prior
from privrl.agents.psrl.reference import Billboard, capped_increment, greedy_plan, policy_values
from privrl.envs import FeatureMap, from_gymnasium
from privrl.privacy import JointDP, NonPrivate

PROJECT = reference.simplex_project


def seeds(spec: str) -> range:
    """Seeds ``"lo-hi"`` (inclusive) or one seed ``"s"``."""
    lo, _, hi = spec.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def show(label: str, xs: list[float], t0: float) -> None:
    se = np.std(xs, ddof=1) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
    vals = " ".join(f"{x:.3f}" for x in xs)
    print(f"{label}: mean {np.mean(xs):.4f} se {se:.4f} [{vals}] ({time.time() - t0:.0f}s)", flush=True)


def frozen(slip: bool) -> tuple[Any, int]:
    return gym.make("FrozenLake-v1", is_slippery=slip), 20 if slip else 8


def agent_for(
    env: Any, H: int, eps: float, seed: int, K: int, v: dict[str, Any], rebuild: bool = False
) -> Any:
    """The agent of variant ``v``: PSRL's constructor, its core rebuilt (same seeds) when the
    variant's bounds or alpha0 are not the constructor's (or ``rebuild``: the default variant's
    rebuilt core draws as the constructor's, tests/test_bench_psrl_study.py)."""
    privacy = NonPrivate() if math.isinf(eps) else JointDP(eps, 1e-5)
    B = v.get("B", "static")
    made: dict[str, Any] = {}  # the constructor's core arguments (its seeds among them)
    real = _core.PsrlAgent

    def record(**kw: Any) -> Any:
        made.update(kw)
        return real(**kw)

    _core.PsrlAgent = record  # type: ignore[misc]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = PSRL(FeatureMap.one_hot_for(env, H), privacy, episodes=K, seed=seed, m=v.get("m", 1),
                         batches=B if isinstance(B, int) else "static")  # fmt: skip
    finally:
        _core.PsrlAgent = real  # type: ignore[misc]
    bounds = agent.bounds
    if B == "geom":  # App. D's number of batches, sizes doubling: b_j = round(K (2^j - 1) / (2^B - 1))
        j = np.arange(agent.B + 1)
        bounds = np.round(K * (2.0**j - 1) / (2.0**agent.B - 1)).astype(np.int64)
    if B == "dbl":  # releases after users 1, 3, 7, ..., 2^i - 1 < K
        bounds = np.array([0] + [2**i - 1 for i in range(1, 64) if 2**i - 1 < K] + [K])
    alpha0 = 1.0 / agent.S if v.get("alpha0") == "1/S" else float(v.get("alpha0", made["alpha0"]))
    if rebuild or B in ("geom", "dbl") or alpha0 != made["alpha0"]:
        agent.bounds = np.asarray(bounds)
        made.update(bounds=[int(b) for b in bounds], alpha0=alpha0)
        agent._core = real(**made)
    return agent


def parse(spec: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in filter(None, spec.split(",")):
        k, val = part.split("=")
        out[k] = int(val) if val.isdigit() else (val if k == "B" or val == "1/S" else float(val))
    return out


def learn(a: argparse.Namespace) -> None:
    for spec in a.variants:
        t0, xs = time.time(), []
        for s in seeds(a.seeds):
            env, H = frozen(a.env == "slip")
            agent = agent_for(env, H, a.eps, s, a.K, parse(spec))
            ret = np.asarray(privrl.learn(agent, env, seed=10_000 + s, progress=False).returns)
            xs.append(float((ret > 0.5)[-a.K // 10 :].mean()))
        show(f"{a.env} eps={a.eps} {spec or 'default'}", xs, t0)


def model_draw(Nt, Rt, v, rng, count_noise=True, reward_noise=True):  # type: ignore[no-untyped-def]
    """reference.posterior_model with the release's noise optionally left out of the counts / rewards
    (the agent's priors: Dirichlet(psrl_prior(S) + N), Beta(a0 + R, b0 + n - R) of psrl_reward_prior;
    it drew the earlier Dirichlet(1 + N) and Beta(1 + R, 1 + n - R))."""
    sd = math.sqrt(v)
    S, A, _ = Nt.shape
    N = PROJECT(Nt + (sd * rng.standard_normal((S, A, S)) if count_noise else 0.0))
    n = N.sum(2)
    R = np.clip(Rt + (sd * rng.standard_normal((S, A)) if reward_noise else 0.0), 0.0, n)
    G = rng.gamma(psrl_prior(S) + N)
    a0, b0 = psrl_reward_prior()
    ga, gb = rng.gamma(a0 + R), rng.gamma(b0 + n - R)
    return G / G.sum(2, keepdims=True), ga / (ga + gb)


def board(a: argparse.Namespace) -> None:
    model = from_gymnasium(gym.make("FrozenLake-v1", is_slippery=bool(a.slip)), H=20 if a.slip else 8)
    P, H = model.P[0], model.H
    R3 = np.broadcast_to(model.R[0][:, :, None], P.shape)
    cases = {"plug-in greedy": None, "posterior (agent)": (1, 1), "no reward noise": (1, 0),
             "no count noise": (0, 1), "no noise (blind)": (0, 0)}  # fmt: skip
    rows: dict[str, list[float]] = {k: [] for k in cases}
    t0 = time.time()
    for s in seeds(a.seeds):
        env, _ = frozen(bool(a.slip))
        ag = agent_for(env, H, a.eps, s, a.K, {})
        privrl.learn(ag, env, seed=10_000 + s, progress=False)
        Nt, Rt, j = ag.billboard()
        v = j * float(ag.calibration.sigma or 0.0) ** 2
        rng = np.random.default_rng([s, 99])
        for key, how in cases.items():
            if how is None:
                rows[key].append(float(policy_values(ag.greedy_policy()[None], P, R3, 0)[0]))
                continue
            pis = [greedy_plan(*model_draw(Nt, Rt, v, rng, *how), H, rng) for _ in range(a.draws)]
            rows[key].append(float(policy_values(np.stack(pis), P, R3, 0).mean()))
    for key, xs in rows.items():
        show(f"{'slip' if a.slip else 'det'} eps={a.eps} board {key}", xs, t0)


def denoise(a: argparse.Namespace) -> None:
    model = from_gymnasium(gym.make("FrozenLake-v1", is_slippery=bool(a.slip)), H=20 if a.slip else 8)
    P, H = model.P[0], model.H
    R3 = np.broadcast_to(model.R[0][:, :, None], P.shape).copy()
    for name, fn in (("proj", PROJECT), ("clip", lambda Y: np.maximum(Y, 0.0))):
        reference.simplex_project = fn  # posterior_model reads the module's name
        t0, xs = time.time(), []
        try:
            for s in seeds(a.seeds):
                run = reference.run_reference(P, R3, 0, H, a.K, a.eps, 1e-5, s)
                xs.append(float(run.returns[-a.K // 10 :].mean()))
        finally:
            reference.simplex_project = PROJECT
        show(f"{'slip' if a.slip else 'det'}-ref eps={a.eps} {name}", xs, t0)


def plan(P: np.ndarray, r: np.ndarray, H: int, rng: np.random.Generator, top: Any) -> np.ndarray:
    """reference.greedy_plan, with ``top`` (S, A) the probability of a fictitious next state worth the
    range's maximum, 1 per remaining step (None: none)."""
    S, A, _ = P.shape
    pi, V = np.empty((H, S), np.int64), np.zeros(S)
    for h in reversed(range(H)):
        Q = r + P @ V + (0.0 if top is None else top * (H - h - 1))
        best = Q.max(1, keepdims=True)
        pi[h] = np.where(Q - best >= -reference.TIE, rng.random((S, A)), -1.0).argmax(1)
        V = best[:, 0]
    return pi


def cliff_run(seed: int, K: int, prior: str, H: int = 30) -> float:
    """prior "uniform" (Beta(1 + R, 1 + n - R) rewards, the agent's until formulas.psrl_reward_prior),
    "reward" (Beta(1 + R, n - R): one pseudo-observation paying 1, the agent's now) or "value" (that,
    and Dirichlet(1/S + N, 1) over the S states and one fictitious state paying 1 per step to the
    end: one pseudo-transition to the top of the value range). Transitions: the agent's
    Dirichlet(1/S + N) (formulas.psrl_prior) in all three; the first version drew Dirichlet(1 + N),
    the prior before 613e793 (48 pseudo-counts per row on CliffWalking), under which psrl_study.md's
    item 5 measured "reward" 0.000-0.001."""
    model = from_gymnasium(gym.make("CliffWalking-v1"), H=H, reward=lambda r: (r + 100.0) / 100.0)
    P, r = model.P[0], model.R[0]
    S, A, _ = P.shape
    alpha0 = psrl_prior(S)  # the agent's transition prior
    start = int(np.argmax(model.init_dist))
    env_rng, rng = np.random.default_rng([seed, 0]), np.random.default_rng([seed, 2])
    bb = Billboard(S, A, 0.0)
    Pc = np.cumsum(P, 2)
    Pc[..., -1] = 1.0
    ok = np.zeros(K, bool)
    for k in range(K):
        N = PROJECT(bb.N)
        n = N.sum(2)
        R = np.clip(bb.R, 0.0, n)
        G = rng.gamma(alpha0 + N)
        g_top = rng.gamma(np.ones((S, A))) if prior == "value" else np.zeros((S, A))
        total = G.sum(2) + g_top
        ga, gb = rng.gamma(1.0 + R), rng.gamma(1.0 + n - R if prior == "uniform" else n - R)  # shape 0: 0
        pi = plan(G / total[:, :, None], ga / (ga + gb), H, rng, g_top / total if prior == "value" else None)
        traj, s, ret = np.zeros((4, 1, H)), start, 0.0
        for h in range(H):
            act = pi[h, s]
            s2 = int((Pc[s, act] < env_rng.random()).sum())
            traj[:, 0, h] = s, act, r[s, act], s2
            ret, s = ret + r[s, act], s2
        dN, dR = capped_increment(traj[0], traj[1], traj[2], traj[3], S, A, 1)
        bb.N, bb.R = bb.N + dN, bb.R + dR  # non-private: a release after every user, no noise
        ok[k] = ret > 0.99 * H + 1e-9
    return float(ok[-K // 10 :].mean())


def cliff(a: argparse.Namespace) -> None:
    for prior in a.priors:
        t0 = time.time()
        show(f"cliff none prior={prior}", [cliff_run(s, a.K, prior) for s in seeds(a.seeds)], t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("learn")
    p.add_argument("variants", nargs="+")
    p.add_argument("--env", choices=("slip", "det"), default="slip")
    for name, extra in (("board", True), ("denoise", False), ("cliff", False)):
        q = sub.add_parser(name)
        if name != "cliff":
            q.add_argument("--slip", type=int, default=1)
        if extra:
            q.add_argument("--draws", type=int, default=100)
        if name == "cliff":
            q.add_argument("--priors", nargs="+", default=["uniform", "reward", "value"])
    for q in sub.choices.values():
        q.add_argument("--eps", type=float, default=10.0)
        q.add_argument("--seeds", default="0-9")
        q.add_argument("--K", type=int, default=20_000)
    a = ap.parse_args()
    {"learn": learn, "board": board, "denoise": denoise, "cliff": cliff}[a.cmd](a)


if __name__ == "__main__":
    main()
