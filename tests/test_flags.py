"""A True / False option is checked by one rule (privrl.common.kinds.check_flag, re-exported by
privrl.common.checks): True, False and numpy's bools, nothing else; each entry point keeps the
exception class its callers catch and the same words. The rule was written at nine places with
four classes, and two of them refused numpy's bools while the others took them."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import privrl
from privrl import kernels as kn
from privrl.agents import UCRLVTR
from privrl.audit import audit_samples
from privrl.common.errors import AssumptionError, ConfigError, PrivacyParameterError, ShapeError
from privrl.envs import ContextualBandit, FeatureMap, RiverSwimMixture
from privrl.experiment import sweep
from privrl.privacy import JointDP, LocalDP

BAD = ("no", "False", None, 1, 0, 1.5)
RNG = np.random.default_rng(0)
X, Y = RNG.normal(size=(12, 3)), np.arange(12) % 3
PLAN = UCRLVTR(RiverSwimMixture(S=4, H=3), JointDP(1.0, 1e-5), episodes=20, seed=0).release_plan()
STAT = PLAN.statistics[0].name
SAMPLES = RNG.standard_normal((40, 2)) + 1.0, RNG.standard_normal((40, 2))
# (option, the call taking it, the class the entry point documents)
ENTRY_POINTS = [
    ("keep_last_node", lambda v: kn.TreeAggregator(3, 4, keep_last_node=v), TypeError),
    ("absorbing", lambda v: FeatureMap.one_hot(2, 2, 2, absorbing=v), ShapeError),
    ("standardize", lambda v: ContextualBandit.from_classification(X, Y, seed=0, standardize=v), ShapeError),
    ("bias", lambda v: ContextualBandit.from_classification(X, Y, seed=0, bias=v), ShapeError),
    ("gaussian", lambda v: audit_samples(*SAMPLES, delta=1e-5, gaussian=v), TypeError),
    ("nonnegative", lambda v: PLAN.with_statistic(STAT, nonnegative=v), PrivacyParameterError),
    ("allow_large_delta", lambda v: JointDP(1.0, 1e-5, allow_large_delta=v), PrivacyParameterError),
    ("allow_large_delta", lambda v: LocalDP(1.0, 1e-5, allow_large_delta=v), PrivacyParameterError),
]


def _lake(v):
    pytest.importorskip("gymnasium")
    return privrl.envs.frozen_lake(H=2, is_slippery=v)


ENTRY_POINTS.append(("is_slippery", _lake, AssumptionError))


IDS = [f"{e[0]}-{i}" for i, e in enumerate(ENTRY_POINTS)]


@pytest.mark.parametrize("name,call,error", ENTRY_POINTS, ids=IDS)
def test_every_flag_takes_a_bool_or_a_numpy_bool_and_refuses_the_rest_in_its_own_class(name, call, error):
    for bad in BAD:
        with pytest.raises(error, match=rf"^{name} must be True or False, got {bad!r}$"):
            call(bad)
    for good in (True, False, np.True_, np.False_):
        call(good)


def test_a_numpy_bool_flag_is_a_python_bool_after_the_check():
    """allow_large_delta refused np.True_ (the only privacy flag that did); it is now taken and
    stored as the bool it means, so the model equals (and reprs as) the one built with True."""
    assert JointDP(1.0, 0.5, allow_large_delta=np.True_) == JointDP(1.0, 0.5, allow_large_delta=True)
    assert JointDP(1.0, 0.5, allow_large_delta=np.True_).allow_large_delta is True


def test_resume_is_checked_before_a_sweep_starts(tmp_path):
    kw = dict(
        env={"name": "RiverSwimMixture", "S": 4, "H": 3},
        agents={"U": {"algorithm": "UCRL-VTR", "privacy": "none"}},
        episodes=5,
        progress=False,
        outdir=tmp_path / "r",
    )
    for bad in BAD:
        with pytest.raises(TypeError, match=rf"^resume must be True or False, got {bad!r}$"):
            sweep(**kw, resume=bad)
    assert not (tmp_path / "r").exists()


def test_a_gymnasium_make_flag_takes_a_python_bool_only(tmp_path):
    """A sweep's gymnasium keywords go to gymnasium.make and into the runs' names as given (their
    repr): np.True_ would name another run than True, so there a bool is a Python bool, as TOML
    gives; the words are the shared rule's, with the TOML hint."""
    pytest.importorskip("gymnasium")
    env = {"name": "gymnasium", "id": "Blackjack-v1", "H": 4, "model": False, "reward_range": [-1, 1]}
    kw = dict(agents={"L": {"algorithm": "LSVI-UCB", "privacy": "none"}}, episodes=5, progress=False)
    for bad in (*BAD, np.True_):
        with pytest.raises(ConfigError, match=rf"natural must be True or False, got {bad!r}"):
            sweep(env={**env, "natural": bad}, outdir=tmp_path / "r", **kw)
    with pytest.raises(ConfigError, match=r"got 'False' \(TOML's booleans are true / false, lower case\)"):
        sweep(env={**env, "natural": "False"}, **kw)


def test_the_rule_has_one_home():
    root = pathlib.Path(privrl.__file__).parent
    homes = [
        p.relative_to(root).as_posix() for p in root.rglob("*.py") if "be True or False" in p.read_text()
    ]
    assert homes == ["common/kinds.py"], homes
