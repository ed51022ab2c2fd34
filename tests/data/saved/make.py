"""Writes the saved-agent golden files that tests/test_saved_files.py loads.

    python tests/data/saved/make.py [NAME ...]

One small agent per kind of Rust state (agent x privacy model x release rule x exploration), run
for SAVED_AFTER episodes on a tiny environment with fixed seeds and saved to
``format<FORMAT>/<name>.privrl``; next to it ``<name>.json`` records the uninterrupted agent's
continuation (CONTINUE episodes at seed CONTINUE_SEED: regret and returns as exact hex floats, and
a SHA-256 of its release after them). The test loads each file with today's code and checks that
the continuation is reproduced bit for bit: a change of a saved state's layout (a Rust agent's
fields, bincode's encoding, a Python attribute) that would make an old file load as something
else fails it, unless ``FORMAT`` (privrl/agents/common/saving.py) is bumped, which refuses the old
files. After a bump, run this script: it writes ``format<new>/``; keep the old folder (the test
checks that its files are refused with a SaveFormatError) or delete it.

Names write only those cases (a new agent kind's files, leaving the others as they were saved:
they are what pins the older code's layout). Rerunning it at an unchanged FORMAT must leave the
JSON files unchanged (the .privrl files hold
the privrl version in their header; everything else is deterministic).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

import privrl
from privrl.agents import LSVIUCB, PSRL, UCRLVTR, LinUCB, UCRLVTRPlus
from privrl.agents.common.saving import FORMAT
from privrl.envs import ContextualBandit, RandomLinearMDP, RandomLinearMixtureMDP, RiverSwim
from privrl.privacy import JointDP, LocalDP, NonPrivate

HERE = Path(__file__).resolve().parent
EPISODES, SAVED_AFTER, CONTINUE, CONTINUE_SEED = 10, 4, 5, 2


def _bandit() -> ContextualBandit:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 2))
    return ContextualBandit(x / (2 * np.linalg.norm(x, axis=1, keepdims=True)), rng.uniform(size=(4, 2)))


def mix() -> RandomLinearMixtureMDP:
    return RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, seed=1)


def lin() -> RandomLinearMDP:
    return RandomLinearMDP(S=4, A=2, d=2, H=2, seed=0)


def cases() -> dict[str, Callable[[], Any]]:
    """name -> a fresh agent (each with its own environment)."""
    jdp, ldp = JointDP(1.0, 1e-5), LocalDP(1.0, 1e-5)
    kw: dict[str, Any] = dict(episodes=EPISODES, seed=0)
    return {
        "ucrl_vtr_jdp": lambda: UCRLVTR(mix(), jdp, **kw),
        "ucrl_vtr_ldp": lambda: UCRLVTR(mix(), ldp, **kw),
        "ucrl_vtr_plus_jdp": lambda: UCRLVTRPlus(mix(), jdp, **kw),
        "lsvi_ucb_jdp_static": lambda: LSVIUCB(lin(), jdp, exploration="optimism", **kw),
        "lsvi_ucb_jdp_static_sampling": lambda: LSVIUCB(lin(), jdp, exploration="sampling", **kw),
        "lsvi_ucb_nonprivate_every": lambda: LSVIUCB(lin(), NonPrivate(), batches="every", **kw),
        "linucb_jdp": lambda: LinUCB(_bandit(), jdp, exploration="optimism", **kw),
        "linucb_jdp_sampling": lambda: LinUCB(_bandit(), jdp, exploration="sampling", **kw),
        "linucb_ldp": lambda: LinUCB(_bandit(), ldp, **kw),
        # PSRL on a stationary tabular model (it pools over h); 5 batches: releases at users 2, 4, 6, 8
        "psrl_jdp": lambda: PSRL(RiverSwim(S=3, H=2), jdp, batches=5, **kw),
        "psrl_nonprivate": lambda: PSRL(RiverSwim(S=3, H=2), NonPrivate(), **kw),
    }


def release_digest(agent: Any) -> str:
    """SHA-256 of the agent's current release (every array's float64 bytes, in field order)."""
    h = hashlib.sha256()
    rel = agent.release()
    for f in fields(rel):
        value = getattr(rel, f.name)
        h.update(f.name.encode())
        if value is not None:
            h.update(np.ascontiguousarray(np.asarray(value, dtype=np.float64)).tobytes())
    return h.hexdigest()


def continuation(agent: Any) -> dict[str, Any]:
    """What the test compares: CONTINUE more episodes of `agent` on its environment."""
    res = privrl.run(agent, agent.env, CONTINUE, seed=CONTINUE_SEED)
    return {
        "regret": [float(x).hex() for x in res.regret],
        "returns": [float(x).hex() for x in res.returns],
        "episodes_done": int(agent.k),
        "release_sha256": release_digest(agent),
    }


def main(names: list[str]) -> int:
    out = HERE / f"format{FORMAT}"
    out.mkdir(exist_ok=True)
    every = cases()
    unknown = sorted(set(names) - set(every))
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; known: {sorted(every)}")
    chosen = {n: every[n] for n in names} if names else every
    for name, make in chosen.items():
        agent = make()
        privrl.run(agent, agent.env, SAVED_AFTER, seed=1)
        agent.save(out / f"{name}.privrl")
        record = {"agent": agent.label, "format": FORMAT, "saved_after": SAVED_AFTER, **continuation(agent)}
        (out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    sizes = sum(p.stat().st_size for p in out.iterdir())
    print(f"wrote {len(chosen)} saved agents to {out} ({sizes / 1024:.0f} KiB in the folder)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
