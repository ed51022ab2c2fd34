"""Saving and loading agents (issue 13, item 1): an agent saved mid-run and loaded in another
process finishes with the same regret array as an uninterrupted run, for every agent; the file is
versioned and checksummed, and loading never runs code from it."""

from __future__ import annotations

import copy
import hashlib
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB, PSRL, UCRLVTR, Agent, UCRLVTRPlus
from privrl.agents.common.saving import FORMAT, MAGIC, SaveFormatError
from privrl.envs import RandomLinearMDP, RiverSwim, RiverSwimMixture
from privrl.exceptions import PrivrlError
from privrl.privacy import JointDP, LocalDP, NonPrivate

RIVER, LINEAR = RiverSwimMixture(S=4, H=3), RandomLinearMDP(S=10, A=3, d=4, H=3, seed=0)
CASES = [
    (UCRLVTR, RIVER, NonPrivate()),
    (UCRLVTR, RIVER, JointDP(1.0, 1e-5)),
    (UCRLVTR, RIVER, JointDP(1.0, 1e-5, mechanism="honaker")),
    (UCRLVTR, RIVER, JointDP(1.0, 1e-5, calibration="practical")),
    (UCRLVTR, RIVER, LocalDP(1.0, 1e-5)),
    (UCRLVTR, RIVER, LocalDP(1.0, 0.0, calibration="practical")),
    (UCRLVTRPlus, RIVER, JointDP(1.0, 1e-5)),
    (UCRLVTRPlus, RIVER, LocalDP(1.0, 1e-5, calibration="practical")),
    (LSVIUCB, LINEAR, NonPrivate()),
    (LSVIUCB, LINEAR, JointDP(1.0, 1e-5)),
    (LSVIUCB, LINEAR, JointDP(1.0, 1e-5, calibration="practical", mechanism="factorization")),
]
#: PSRL (tabular: any FiniteMDP, stationary: it pools over h, and warns on RandomLinearMDP's
#: step-dependent kernel; batches=4 releases three times within the tests' 60 users)
PSRL_CASES = [
    (PSRL, RIVER, NonPrivate()),
    (PSRL, RiverSwim(S=5, H=3), JointDP(1.0, 1e-5)),
]

_CONTINUE = """
import sys, numpy as np, privrl
from privrl.agents import Agent
agent = Agent.load(sys.argv[1])
np.save(sys.argv[2], privrl.run(agent, agent.env, 35, seed=2).regret)
"""


@pytest.mark.parametrize(
    "cls,env,privacy", CASES + PSRL_CASES, ids=lambda x: getattr(x, "label", getattr(x, "__name__", ""))
)
def test_saved_agent_continues_in_another_process(tmp_path, cls, env, privacy):
    full = cls(env, privacy, episodes=60, seed=0)
    privrl.run(full, env, 25, seed=1)
    expected = privrl.run(full, env, 35, seed=2).regret
    half = cls(env, privacy, episodes=60, seed=0)
    privrl.run(half, env, 25, seed=1)
    half.save(tmp_path / "agent.privrl")
    res = subprocess.run(
        [sys.executable, "-c", _CONTINUE, str(tmp_path / "agent.privrl"), str(tmp_path / "regret.npy")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    np.testing.assert_array_equal(np.load(tmp_path / "regret.npy"), expected)


def test_copies_and_pickles_continue_identically():
    agent = UCRLVTR(RIVER, JointDP(1.0, 1e-5), episodes=40, seed=0)
    privrl.run(agent, RIVER, 10, seed=1)
    twin = copy.deepcopy(agent)
    clone = pickle.loads(pickle.dumps(agent))
    runs = [privrl.run(a, a.env, 10, seed=2).regret for a in (agent, twin, clone)]
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[0], runs[2])


def test_load_refuses_other_versions_modified_files_and_code(tmp_path):
    agent = LSVIUCB(LINEAR, JointDP(1.0, 1e-5), episodes=10, seed=0)
    path = tmp_path / "a.privrl"
    agent.save(path)
    assert isinstance(LSVIUCB.load(path), LSVIUCB)
    with pytest.raises(SaveFormatError, match="not a UCRLVTR"):
        UCRLVTR.load(path)
    data = path.read_bytes()
    head, _, payload = data[len(MAGIC) :].partition(b"\n")
    header = json.loads(head)

    def write(h: dict, body: bytes) -> None:
        path.write_bytes(MAGIC + json.dumps(h).encode() + b"\n" + body)

    write({**header, "privrl": "0.0.1"}, payload)
    with pytest.raises(SaveFormatError, match=r"saved by privrl 0\.0\.1"):
        Agent.load(path)
    write({**header, "format": 99}, payload)
    with pytest.raises(SaveFormatError, match="format 99"):
        Agent.load(path)
    write(header, payload[:-1] + bytes([payload[-1] ^ 1]))  # one bit flipped
    with pytest.raises(SaveFormatError, match="checksum"):
        Agent.load(path)

    class Evil:
        def __reduce__(self):
            return (print, ("this must never run",))

    evil = pickle.dumps(Evil())
    write({**header, "sha256": hashlib.sha256(evil).hexdigest()}, evil)  # a consistent, hostile file
    with pytest.raises(SaveFormatError, match=r"builtins\.print"):
        Agent.load(path)
    path.write_bytes(b"not an agent")
    with pytest.raises(SaveFormatError, match="not a saved privrl agent"):
        Agent.load(path)
    for bad in (b"[1, 2]", b"null", b'"x"'):  # valid JSON, not a header
        path.write_bytes(MAGIC + bad + b"\n" + payload)
        with pytest.raises(SaveFormatError, match="not a JSON object"):
            Agent.load(path)
    broken = payload[: len(payload) // 2]  # a checksum that matches a payload that is not a pickle
    write({**header, "sha256": hashlib.sha256(broken).hexdigest()}, broken)
    with pytest.raises(SaveFormatError, match="payload is not a saved agent"):
        Agent.load(path)


def _bandit():
    from privrl.agents import LinUCB
    from privrl.envs import ContextualBandit

    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 3))
    env = ContextualBandit(x / (2 * np.linalg.norm(x, axis=1, keepdims=True)), rng.uniform(size=(6, 2)))
    return [(LinUCB, env, p) for p in (NonPrivate(), JointDP(1.0, 1e-5), LocalDP(1.0, 1e-5))]


@pytest.mark.parametrize("cls, env, privacy", CASES + _bandit())
def test_a_restored_state_with_corrupted_dimensions_is_refused(cls, env, privacy):
    """A saved Rust state edited by hand (a file's checksum can be recomputed) is refused when its
    dimensions disagree with its buffers, instead of allocating from a corrupted dimension (the
    process aborted): every byte of the leading dimensions (H, S, A, d of the MDP agents; arms,
    p, n of LinUCB, 8-byte little-endian) set to 0x7f."""
    agent = cls(env, privacy, episodes=20, seed=0)
    privrl.run(agent, env, episodes=5, seed=1, progress=False)
    restore, (blob,) = agent._core.__reduce__()[:2]
    restore(blob)  # the state as saved restores
    for offset in range(24 if cls.__name__ == "LinUCB" else 32):
        bad = bytearray(blob)
        bad[offset] = 0x7F
        with pytest.raises(PrivrlError, match=r"not a consistent saved|not a saved"):
            restore(bytes(bad))


@pytest.mark.parametrize("cls, env, privacy", PSRL_CASES)
def test_a_restored_psrl_state_with_corrupted_dimensions_is_refused(cls, env, privacy):
    """As above for PSRL's leading S, A, H, K: refused by its Rust check_restored, a corrupted K
    too (it said the constructor's 'batch bounds must rise strictly from 0 to K = 127')."""
    agent = cls(env, privacy, episodes=20, seed=0, batches=4)
    privrl.run(agent, env, episodes=5, seed=1, progress=False)
    restore, (blob,) = agent._core.__reduce__()[:2]
    restore(blob)
    for offset in range(32):
        bad = bytearray(blob)
        bad[offset] = 0x7F
        with pytest.raises(PrivrlError, match=r"not a consistent saved PSRL state"):
            restore(bytes(bad))


def test_a_failed_save_leaves_no_copy_behind(tmp_path):
    """Audit 4: saving over a folder failed in os.replace and left `<path>.tmp` holding the whole
    agent (5 MB for an LSVI-UCB agent). It is refused up front now, and a save that fails while
    writing removes its temporary file."""
    agent = UCRLVTR(RiverSwimMixture(S=4, H=5), JointDP(1.0, 1e-5), episodes=10, seed=0)
    (tmp_path / "folder").mkdir()
    with pytest.raises(IsADirectoryError):
        agent.save(tmp_path / "folder")
    with pytest.raises(FileNotFoundError):
        agent.save(tmp_path / "missing" / "a.privrl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]
    agent.save(tmp_path / "a.privrl")
    agent.save(tmp_path / "a.privrl")  # over an earlier save: replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.privrl", "folder"]
    assert type(agent).load(tmp_path / "a.privrl").k == 0


def test_an_environment_of_the_users_own_subclass_is_saved_as_privrl_data(tmp_path):
    """save() wrote a file that load() always refused ("refers to __main__.MyMix, which privrl
    never saves") when the environment was a subclass of a privrl one: it is saved as its nearest
    privrl class with its data attributes, and the loaded agent continues identically."""
    from privrl.envs import LinearMixtureMDP

    class MyMix(LinearMixtureMDP):
        def __init__(self):
            super().__init__(RIVER.features, RIVER.weights, RIVER.R, RIVER.init_dist, name="mine")
            self.hook = lambda x: x  # not data: left out
            self.note = "kept"

    env = MyMix()
    agent, whole = (UCRLVTR(env, JointDP(1.0, 1e-5), episodes=30, seed=0) for _ in range(2))
    privrl.run(agent, env, 10, seed=1)
    agent.save(tmp_path / "a.bin")
    privrl.run(whole, env, 10, seed=1)
    loaded = UCRLVTR.load(tmp_path / "a.bin")
    assert type(loaded.env) is LinearMixtureMDP and loaded.env.note == "kept"
    assert not hasattr(loaded.env, "hook")
    np.testing.assert_array_equal(
        privrl.run(loaded, MyMix(), seed=2).regret, privrl.run(whole, env, seed=2).regret
    )


def test_every_episode_lsvi_continues_after_load(tmp_path):
    """The adaptive LSVI rule keeps each past release's eigen-decomposition once computed (not
    saved): a loaded agent recomputes it and continues identically."""
    full, half = (LSVIUCB(LINEAR, JointDP(1.0, 1e-5), batches="every", episodes=60, seed=0) for _ in range(2))
    privrl.run(full, LINEAR, 25, seed=1)
    expected = privrl.run(full, LINEAR, 35, seed=2).regret
    privrl.run(half, LINEAR, 25, seed=1)
    half.save(tmp_path / "every.privrl")
    loaded = LSVIUCB.load(tmp_path / "every.privrl")
    np.testing.assert_array_equal(privrl.run(loaded, LINEAR, 35, seed=2).regret, expected)


def test_a_seed_sequence_is_not_consumed_by_the_agent_it_seeds():
    # the agent spawns its streams from a copy: the same SeedSequence seeds the same agent again
    import numpy as np

    from privrl.agents import UCRLVTR
    from privrl.envs import RiverSwimMixture
    from privrl.privacy import JointDP

    env = RiverSwimMixture(S=4, H=5)
    ss = np.random.SeedSequence(11)
    agents = [UCRLVTR(env, JointDP(1.0, 1e-5), episodes=40, seed=ss) for _ in range(2)]
    assert ss.n_children_spawned == 0
    for a in agents:
        privrl.run(a, env, 40, seed=3, progress=False)
    first, second = (a.release() for a in agents)
    assert np.array_equal(first.design, second.design) and np.array_equal(first.weights, second.weights)
    # and a fresh SeedSequence(11) is the same seed as the int 11
    third = UCRLVTR(env, JointDP(1.0, 1e-5), episodes=40, seed=11)
    privrl.run(third, env, 40, seed=3, progress=False)
    assert np.array_equal(third.release().design, first.design)


def _crafted(path, payload):
    """A saved-agent file around `payload`, its header (checksum included) as save() writes it."""
    from privrl import __version__
    from privrl.agents.common.saving import FORMAT, MAGIC

    header = {"format": FORMAT, "privrl": __version__, "sha256": hashlib.sha256(payload).hexdigest()}
    path.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + payload)
    return path


def _call(module, name, *args):
    """A pickle (protocol 4) calling module.name(*args) as a payload can."""

    def text(s):
        b = s.encode()
        return b"\x8c" + bytes([len(b)]) + b

    body = b"".join(text(a) if isinstance(a, str) else a for a in args)
    return b"\x80\x04" + text(module) + text(name) + b"\x93" + b"(" + body + b"tR."


def test_load_resolves_only_what_privrl_saves(tmp_path):
    # A payload may name privrl's classes and the restore functions, nothing else a privrl module
    # reaches: os.system through a dotted name, a test hook of the extension, a privrl function
    # that writes files, a non-class attribute; none of them runs.
    from privrl.agents import Agent
    from privrl.agents.common.saving import SaveFormatError

    marker = tmp_path / "ran"
    for module, name, args in [
        ("privrl.agents.common.saving", "os.system", [f"touch {marker}"]),
        ("privrl.agents.common.saving", "Path.touch", []),
        ("privrl._core", "_panic_for_test", []),
        ("privrl.agents.common.saving", "save_agent", []),
        ("privrl.privacy.models", "DEFAULT_CALIBRATION", []),
        ("privrl.experiment.results", "atomic_write", [str(marker), "x"]),
    ]:
        path = _crafted(tmp_path / "evil.bin", _call(module, name, *args))
        with pytest.raises(SaveFormatError, match="never saves"):
            Agent.load(path)
    # the environment rebuilder takes privrl's environment classes only
    rebuild = b"\x80\x04" + b"\x8c\x1bprivrl.agents.common.saving\x8c\x0c_rebuild_env\x93"
    models = b"\x8c\x15privrl.privacy.models\x8c\x07JointDP\x93"
    path = _crafted(tmp_path / "env.bin", rebuild + models + b"}\x86R.")
    with pytest.raises(SaveFormatError, match="not a privrl environment"):
        Agent.load(path)
    assert not marker.exists()


def test_a_corrupted_rust_state_is_refused_or_runs_never_a_panic():
    # Byte flips anywhere in a Rust agent's saved state (what a file edited with its checksum
    # recomputed carries): the restore refuses it or the agent runs; a panic (index out of
    # range, an allocation of a corrupted size) never reaches Python.
    import warnings

    import numpy as np

    from privrl.agents import LSVIUCB, PSRL, UCRLVTR, LinUCB, UCRLVTRPlus
    from privrl.envs import ContextualBandit, RandomLinearMDP, RiverSwimMixture
    from privrl.exceptions import PrivrlError
    from privrl.privacy import JointDP, LocalDP, NonPrivate

    lin, mix = RandomLinearMDP(S=5, A=2, d=3, H=3, seed=0), RiverSwimMixture(S=4, H=4)
    cb = ContextualBandit.from_classification(
        np.random.default_rng(0).random((60, 3)), np.arange(60) % 3, seed=0
    )
    agents = [
        LSVIUCB(lin, JointDP(1.0, 1e-5), episodes=10, seed=0, batches="every"),
        LSVIUCB(lin, NonPrivate(), episodes=10, seed=0, batches="every"),
        LSVIUCB(lin, JointDP(1.0, 1e-5, calibration="paper"), episodes=10, seed=0, batches=3),
        UCRLVTR(mix, JointDP(1.0, 1e-5), episodes=10, seed=0),
        UCRLVTR(mix, JointDP(1.0, 1e-5, mechanism="tree"), episodes=10, seed=0),
        UCRLVTR(mix, JointDP(1.0, 1e-5, mechanism="honaker", sampler="float"), episodes=10, seed=0),
        UCRLVTRPlus(mix, LocalDP(1.0, 1e-5), episodes=10, seed=0, exploration="sampling"),
        LinUCB(cb, JointDP(1.0, 1e-5), episodes=40, seed=0),
        LinUCB(cb, NonPrivate(), episodes=40, seed=0),
        PSRL(mix, JointDP(1.0, 1e-5), episodes=10, seed=0, batches=5),
        PSRL(mix, NonPrivate(), episodes=10, seed=0),
    ]
    rng = np.random.default_rng(2026)
    outcomes = {"refused": 0, "ran": 0, "failed cleanly": 0}
    warnings.simplefilter("ignore")  # a corrupted state clips, warns of its noise, ...
    for agent in agents:
        privrl.run(agent, agent.env, episodes=3, seed=1, progress=False)
        restore, (state,) = agent._core.__reduce__()
        for pos in rng.choice(len(state), size=min(120, len(state)), replace=False):
            flipped = bytearray(state)
            flipped[pos] ^= int(rng.integers(1, 256))
            try:
                core = restore(bytes(flipped))
            except PrivrlError:
                outcomes["refused"] += 1
                continue
            twin = copy.copy(agent)
            twin._core = core
            try:
                privrl.run(twin, twin.env, episodes=2, seed=2, progress=False)
                outcomes["ran"] += 1
            except (PrivrlError, TypeError, ValueError):
                outcomes["failed cleanly"] += 1
    assert outcomes["refused"] > 0 and outcomes["ran"] > 0


@pytest.mark.parametrize("cls, env, privacy", CASES + PSRL_CASES)
def test_copy_copy_is_an_independent_agent_on_the_same_environment(cls, env, privacy):
    # copy.copy used to share the Rust state: running the copy moved the original, and two runs
    # branched from one checkpoint stepped one agent.
    agent = cls(env, privacy, episodes=12, seed=3)
    privrl.run(agent, env, episodes=4, seed=1, progress=False)
    twin = copy.copy(agent)
    assert twin.env is agent.env and twin._core is not agent._core
    before = agent.policy().copy()
    mine = privrl.run(twin, env, episodes=5, seed=2, progress=False)
    assert agent.k == 4 and np.array_equal(agent.policy(), before)
    theirs = privrl.run(agent, env, episodes=5, seed=2, progress=False)
    assert twin.k == agent.k == 9
    assert np.array_equal(mine.regret, theirs.regret)
    assert np.array_equal(twin.policy(), agent.policy())


def test_every_privrl_error_is_importable_from_privrl_exceptions(tmp_path):
    """The README's Errors section points users to privrl.exceptions; Agent.load's SaveFormatError
    was only importable from the internal module privrl.agents.common.saving."""
    import importlib
    import pkgutil

    import privrl.exceptions as exceptions

    for mod in pkgutil.walk_packages(privrl.__path__, "privrl."):
        if not mod.name.endswith("__main__"):
            importlib.import_module(mod.name)
    found, todo = set(), [PrivrlError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("privrl.") and sub not in found:
                found.add(sub)
                todo.append(sub)
    missing = sorted(c.__name__ for c in found if getattr(exceptions, c.__name__, None) is not c)
    assert not missing, f"not exported by privrl.exceptions: {missing}"
    assert set(exceptions.__all__) >= {c.__name__ for c in found}

    agent = UCRLVTR(RIVER, NonPrivate(), episodes=5, seed=0)
    path = tmp_path / "agent.privrl"
    agent.save(path)
    data = path.read_bytes()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(exceptions.SaveFormatError, match="checksum"):
        Agent.load(path)


def _env_arrays(env):
    return {k: v for k, v in vars(env).items() if isinstance(v, np.ndarray)}


def test_copies_of_an_agent_keep_its_environment_read_only():
    # numpy's copy of a read-only array is writeable: copy.deepcopy(agent) and pickle gave an
    # environment whose model could be changed in place under its cached optimal values,
    # sampling tables and fingerprint (a zeroed R ran with positive regret as the same MDP)
    from privrl.agents.linucb.agent import LinUCB
    from privrl.envs import ContextualBandit, FeatureMap

    bandit = ContextualBandit(np.eye(2) / 2, [[0.2, 0.8], [0.6, 0.1]], name="toy")
    agents = [cls(env, JointDP(1.0, 1e-5), episodes=10, seed=0) for cls, env, _ in CASES[:1] + CASES[-1:]]
    agents.append(LinUCB(bandit, JointDP(1.0, 1e-5), episodes=10, seed=0))
    agents.append(LSVIUCB(FeatureMap.one_hot(S=3, A=2, H=2), NonPrivate(), episodes=10, seed=0))
    for agent in agents:
        frozen = [k for k, v in _env_arrays(agent.env).items() if not v.flags.writeable]
        assert frozen
        twins = [copy.deepcopy(agent)] + [pickle.loads(pickle.dumps(agent, p)) for p in (4, 5)]
        for twin in twins:
            arrays = _env_arrays(twin.env)
            assert twin.env is not agent.env and sorted(arrays) == sorted(_env_arrays(agent.env))
            assert [k for k in frozen if arrays[k].flags.writeable] == []
            with pytest.raises(ValueError, match="read-only"):
                arrays[frozen[0]][...] = 0.0
    env = copy.deepcopy(RIVER)
    assert "_read_only" not in vars(env) and env.fingerprint() == RIVER.fingerprint()


def test_a_save_that_cannot_be_written_names_the_path_asked_for(tmp_path):
    """agent.save(folder / "missing" / "a.agent") raised FileNotFoundError about
    'a.agent.<pid>.<hex>.tmp', a file the user never named (the save's temporary copy). The error
    names the path passed to save(), and the failed save leaves nothing behind."""
    agent = UCRLVTRPlus(RIVER, JointDP(1.0, 1e-5), episodes=10, seed=0)
    target = tmp_path / "missing" / "a.agent"
    with pytest.raises(FileNotFoundError) as err:
        agent.save(target)
    assert err.value.filename == str(target) and ".tmp" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_an_edited_header_is_refused(tmp_path):
    """The header (agent class, label, episodes done and K) is outside the payload's checksum: a
    file whose header was edited (one byte of its label flipped, its episodes_done changed) loaded
    silently, though a modified file is refused. Each field must now describe the loaded agent."""
    agent = UCRLVTR(RiverSwimMixture(S=4, H=3), JointDP(1.0, 1e-5), episodes=10, seed=0)
    privrl.run(agent, agent.env, episodes=3, seed=0)
    path = tmp_path / "a.privrl"
    agent.save(path)
    assert Agent.load(path).k == 3
    head, _, payload = path.read_bytes()[len(MAGIC) :].partition(b"\n")
    header = json.loads(head)
    edits = {
        "episodes_done": 7,
        "episodes": 11,
        "label": header["label"].replace("blt", "tree"),
        "agent": "privrl.agents.lsvi_ucb.agent.LSVIUCB",
    }
    for key, value in edits.items():
        path.write_bytes(MAGIC + json.dumps({**header, key: value}).encode() + b"\n" + payload)
        with pytest.raises(SaveFormatError, match=f"header's {key} .* the file was modified"):
            Agent.load(path)


def test_copies_of_a_saved_agent_share_its_noise_as_docs_privacy_md_says(tmp_path):
    """docs/privacy.md 'Copies share their noise': two copies of one JDP agent given users that
    differ in one user release Gram matrices whose difference is that user's raw statistic (at
    most the sensitivity 2 H^2), far below the noise; independent agents differ by the noise."""
    from privrl.envs import RandomLinearMixtureMDP
    from privrl.envs.finite import Trajectory

    env = RandomLinearMixtureMDP(seed=0)
    agent = UCRLVTR(env, JointDP(1.0, 1e-5), episodes=100, seed=3)
    privrl.run(agent, env, 10, seed=1)
    agent.save(tmp_path / "a.privrl")
    twin, other = Agent.load(tmp_path / "a.privrl"), UCRLVTR(env, JointDP(1.0, 1e-5), episodes=100, seed=4)
    privrl.run(other, env, 10, seed=1)

    def user(s: int) -> Trajectory:
        return Trajectory(states=np.full(env.H + 1, s), actions=np.zeros(env.H, int), rewards=np.zeros(env.H))

    agent.observe(user(0))
    twin.observe(user(5))
    other.observe(user(5))
    mine, its, theirs = (np.asarray(a.release().design, float) for a in (agent, twin, other))
    sigma = agent.calibration.sigma_B
    assert 0 < np.abs(mine - its).max() <= 2 * env.H**2 < sigma / 10 < np.abs(mine - theirs).max()


@pytest.mark.parametrize(
    "cls,env,privacy", CASES[:2] + CASES[-2:] + PSRL_CASES[1:], ids=lambda x: getattr(x, "label", "")
)
def test_a_rust_state_with_bytes_after_it_is_refused(tmp_path, cls, env, privacy):
    """The Rust agent's state must end where its layout ends: bytes after it (a state of another
    layout with more fields, bytes appended to a file whose checksum was recomputed) are refused,
    never decoded as if they were not there."""
    import struct

    agent = cls(env, privacy, episodes=30, seed=0)
    privrl.run(agent, env, 5, seed=1)
    restore, (state,) = agent._core.__reduce__()[:2]
    with pytest.raises(PrivrlError, match="corrupt or from another version"):
        restore(state + b"\0" * 8)
    agent.save(tmp_path / "a.privrl")
    head, _, payload = (tmp_path / "a.privrl").read_bytes()[len(MAGIC) :].partition(b"\n")
    at = payload.find(state)
    # the state's length before it: BINBYTES (4 bytes) or BINBYTES8 (8 bytes)
    width, fmt = (4, "<I") if payload[at - 5 : at - 4] == b"B" else (8, "<Q")
    assert struct.unpack(fmt, payload[at - width : at]) == (len(state),)
    longer = state + b"\0" * 8
    edited = payload[: at - width] + struct.pack(fmt, len(longer)) + longer + payload[at + len(state) :]
    header = {**json.loads(head), "sha256": hashlib.sha256(edited).hexdigest()}
    (tmp_path / "b.privrl").write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + edited)
    with pytest.raises(SaveFormatError, match="corrupt or from another version"):
        Agent.load(tmp_path / "b.privrl")


def test_a_saved_file_carries_the_released_noise_as_docs_privacy_md_says(tmp_path):
    """docs/privacy.md: a saved file is as sensitive as the users' data, since it holds the noise
    streams' keys: the loaded agent's noise in the current release is the original's, exactly."""
    agent = UCRLVTR(RIVER, JointDP(1.0, 1e-5), episodes=40, seed=3)
    privrl.run(agent, RIVER, 10, seed=1)
    agent.save(tmp_path / "a.privrl")
    loaded = Agent.load(tmp_path / "a.privrl")
    for mine, its in zip(agent._core.noise(0), loaded._core.noise(0), strict=True):
        assert np.abs(mine).max() > 0
        np.testing.assert_array_equal(mine, its)


def _renamed(src, dst, old: bytes, new: bytes) -> None:
    """`src` with the pickled name `old` replaced by `new` (same length) and the checksum recomputed."""
    head, _, payload = src.read_bytes()[len(MAGIC) :].partition(b"\n")
    assert len(old) == len(new) and payload.count(b"\x8c" + bytes([len(old)]) + old) >= 1
    edited = payload.replace(b"\x8c" + bytes([len(old)]) + old, b"\x8c" + bytes([len(new)]) + new)
    header = {**json.loads(head), "sha256": hashlib.sha256(edited).hexdigest()}
    dst.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + edited)


@pytest.mark.parametrize(
    "old, new, refused",
    [
        (b"calibration", b"calibratioN", "the saved UCRLVTR lacks calibration and has unknown calibratioN"),
        (b"guards", b"guardz", "lacks guards and has unknown guardz"),
        (b"sigma_B", b"sigma_b", r"UCRLVTR\.calibration \(UCRLVTRCalibration\) lacks sigma_B"),
        (b"allow_large_delta", b"allow_large_delt4", r"UCRLVTR\.privacy \(JointDP\) lacks allow_large_delta"),
    ],
)
def test_a_file_with_renamed_attributes_is_refused_at_load(tmp_path, old, new, refused):
    """A file whose Python part was edited (an attribute renamed) with its checksum recomputed
    loaded, then failed later (privacy_report() raised AttributeError): refused at load, naming
    what differs."""
    agent = UCRLVTR(RIVER, JointDP(1.0, 1e-5), episodes=20, seed=0)
    privrl.run(agent, RIVER, 3, seed=1)
    agent.save(tmp_path / "a.privrl")
    Agent.load(tmp_path / "a.privrl").privacy_report()
    _renamed(tmp_path / "a.privrl", tmp_path / "b.privrl", old, new)
    with pytest.raises(SaveFormatError, match=f"not an agent privrl saves .*{refused}"):
        Agent.load(tmp_path / "b.privrl")


@pytest.mark.parametrize(
    "name, value, refused",
    [
        ("ties", 3, "its ties is a int, not a string"),
        ("H", "3", "its H is a str, not an integer"),
        ("calibration", None, "its calibration is a NoneType, not a Calibration"),
        ("guards", {"x": 1}, "its guards is a dict, not a dict of SensitivityGuard"),
    ],
)
def test_a_file_whose_attributes_have_other_types_is_refused_at_load(tmp_path, name, value, refused):
    agent = LSVIUCB(LINEAR, JointDP(1.0, 1e-5), episodes=10, seed=0)
    setattr(agent, name, value)
    agent.save(tmp_path / "a.privrl")
    with pytest.raises(SaveFormatError, match=f"not an agent privrl saves .*{refused}"):
        Agent.load(tmp_path / "a.privrl")


@pytest.mark.parametrize("cls, env, privacy", CASES + _bandit() + PSRL_CASES)
def test_every_agent_holds_the_attributes_its_class_declares_it_saves(cls, env, privacy):
    """Agent._SAVED (what Agent.load accepts) is what today's agents hold, fresh and mid-run: an
    attribute added or renamed must change the declaration (and the save FORMAT)."""
    from privrl.agents.common.saved_shape import saved_shape_problem

    agent = cls(env, privacy, episodes=20, seed=0)
    assert set(vars(agent)) == cls._SAVED and saved_shape_problem(agent) is None
    privrl.run(agent, env, 3, seed=1)
    assert set(vars(agent)) == cls._SAVED and saved_shape_problem(agent) is None


@pytest.mark.parametrize(
    "fmt, refused",
    [
        (
            str(FORMAT),
            rf"the header's save format is the str '{FORMAT}', not an integer "
            rf"\(this privrl reads format {FORMAT}\)",
        ),
        (float(FORMAT), rf"the header's save format is the float {FORMAT}\.0, not an integer"),
        (True, r"the header's save format is the bool True, not an integer"),
        (None, r"the header's save format is the NoneType None, not an integer"),
        ("absent", rf"the header has no save format \(this privrl reads format {FORMAT}\)"),
        (FORMAT + 1, rf"save format {FORMAT + 1}, this privrl reads format {FORMAT}$"),
    ],
)
def test_a_header_of_another_format_says_what_it_holds(tmp_path, fmt, refused):
    """A header holding the string "2" was refused as "save format '2', this privrl reads format 2"
    (which reads as the same format): the message now names the value's type."""
    agent = UCRLVTR(RIVER, NonPrivate(), episodes=5, seed=0)
    agent.save(tmp_path / "a.privrl")
    head, _, payload = (tmp_path / "a.privrl").read_bytes()[len(MAGIC) :].partition(b"\n")
    header = json.loads(head)
    assert header["format"] == FORMAT
    if fmt == "absent":
        del header["format"]
    else:
        header["format"] = fmt
    (tmp_path / "a.privrl").write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + payload)
    with pytest.raises(SaveFormatError, match=refused):
        Agent.load(tmp_path / "a.privrl")
