"""The agents' memory checks (privrl.common.memory): an agent whose dense state cannot fit
in physical memory is refused with a ResourceError at construction; before, UCRL-VTR, UCRL-VTR+
and LinUCB at d = 10^5 aborted the process (a failed allocation of 80 GB), LSVI-UCB already
refused (tests/test_lsvi_ucb.py)."""

from __future__ import annotations

import numpy as np
import pytest

from privrl.agents import UCRLVTR, LinUCB, UCRLVTRPlus
from privrl.agents.linucb.agent import DENSE_PER_ARM
from privrl.agents.ucrl_vtr.agent import DENSE_PER_STEP
from privrl.common import memory
from privrl.envs import ContextualBandit, RiverSwimMixture
from privrl.exceptions import ResourceError
from privrl.privacy import JointDP, NonPrivate

RIVER = RiverSwimMixture(S=4, H=3)  # d = 3 mixture features


def _bandit(p: int = 5, arms: int = 3) -> ContextualBandit:
    x = np.eye(p)[: min(p, 4)] * 0.5
    return ContextualBandit(x, np.full((len(x), arms), 0.5))


@pytest.mark.parametrize("cls, regressions", [(UCRLVTR, 1), (UCRLVTRPlus, 2)])
def test_mixture_agents_refuse_what_cannot_fit(monkeypatch, cls, regressions):
    need = 8 * DENSE_PER_STEP * regressions * RIVER.H * 3**2  # bytes of the lower bound
    monkeypatch.setattr(memory, "physical_memory", lambda: need - 1)
    with pytest.raises(ResourceError, match=r"H = 3, d = 3.*this machine has"):
        cls(RIVER, JointDP(1.0, 1e-5), episodes=10, seed=0)
    monkeypatch.setattr(memory, "physical_memory", lambda: need)
    cls(RIVER, JointDP(1.0, 1e-5), episodes=10, seed=0)
    monkeypatch.setattr(memory, "physical_memory", lambda: None)  # the OS does not say
    cls(RIVER, NonPrivate(), episodes=10, seed=0)


def test_linucb_refuses_what_cannot_fit(monkeypatch):
    env = _bandit(p=5, arms=3)
    need = 8 * DENSE_PER_ARM * 3 * 5**2
    monkeypatch.setattr(memory, "physical_memory", lambda: need - 1)
    with pytest.raises(ResourceError, match=r"A = 3 arms, p = 5"):
        LinUCB(env, NonPrivate(), episodes=10, seed=0)
    monkeypatch.setattr(memory, "physical_memory", lambda: need)
    LinUCB(env, NonPrivate(), episodes=10, seed=0)


def test_a_huge_linucb_is_refused_on_this_machine():
    """p = 10^5 contexts over 10 arms: 1.5 TB of p x p matrices, refused before any allocation."""
    x = np.zeros((2, 100_000))
    x[0, 0] = x[1, 1] = 1.0
    with pytest.raises(ResourceError, match="GiB"):
        LinUCB(ContextualBandit(x, np.full((2, 10), 0.5)), NonPrivate(), episodes=10, seed=0)


def test_the_public_sherman_morrison_kernel_refuses_what_cannot_fit():
    """Audit 5: kernels.RankOneInverse(10**9) aborted the process (a failed 8e18-byte allocation)
    and RankOneInverse(2**32) overflowed d * d in Rust and wrote past a tiny buffer (SIGSEGV)."""
    from privrl import _core, kernels
    from privrl.exceptions import ShapeError

    for d in (10**5, 10**9, 2**32):
        with pytest.raises(ResourceError, match=rf"RankOneInverse keeps Lambda and its inverse \(d = {d}\)"):
            kernels.RankOneInverse(d, 1.0)
    with pytest.raises(ShapeError, match="a d x d matrix does not fit in memory"):
        _core.ShermanMorrison(2**32, 1.0, 8)  # the Rust edge itself, past the Python check
    assert kernels.RankOneInverse(3, 2.0).inverse()[0, 0] == 0.5


def test_a_sweep_whose_tables_cannot_fit_is_refused_before_it_runs(monkeypatch, tmp_path):
    """sweep(K = 10^9, log_every = 1): its logged episodes and their time stamps alone (16 GB) were
    allocated before privrl.run could refuse the run's own arrays, and the run table of 10^9 rows
    after it: `privrl run` grew past 15 GiB in 25 s on this 24 GiB machine (hB's input pass). The
    sweep counts its rows (16 numbers each) before anything is built or written."""
    from privrl.experiment import sweep

    agents = {"N": {"algorithm": "UCRL-VTR", "privacy": "none"}}
    env = {"name": "RiverSwimMixture", "S": 3, "H": 2}
    need = 8 * 16 * (100 + 100)  # two seeds, K = 100 logged every episode
    monkeypatch.setattr(memory, "physical_memory", lambda: need - 1)
    with pytest.raises(ResourceError, match=r"the sweep keeps 200 table rows.*larger log_every"):
        sweep(env, agents, seeds=2, episodes=100, log_every=1, outdir=tmp_path / "r", progress=False)
    assert not (tmp_path / "r").exists()
    monkeypatch.setattr(memory, "physical_memory", lambda: need)
    df, _ = sweep(env, agents, seeds=2, episodes=100, log_every=1, progress=False)
    assert len(df) == 200
    monkeypatch.undo()
    with pytest.raises(ResourceError, match=r"the sweep keeps 1,000,000,000,000 table rows"):
        sweep(env, agents, episodes=10**12, log_every=1, progress=False)
