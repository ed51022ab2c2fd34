"""What a researcher trips on (issue 22): resuming with run's defaults, progress bars on a terminal and
never in a pipe, Ctrl-C, reprs, the last unclear failures (each a clear error naming the argument,
from the API and the CLI) and a typed facade."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import textwrap
import time

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB, UCRLVTR
from privrl.envs import FeatureMap, RiverSwimMixture
from privrl.exceptions import ConfigError, NonFiniteError, PrivacyParameterError, PrivacyWarning
from privrl.experiment import sweep
from privrl.experiment.cli import main
from privrl.privacy import JointDP, LocalDP, NonPrivate

RIVER = RiverSwimMixture(S=4, H=3)


def _py(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=timeout
    )


def test_run_resumes_with_what_is_left_in_a_new_process(tmp_path):
    agent = UCRLVTR(RIVER, JointDP(1.0, 1e-5), episodes=60, seed=0)
    privrl.run(agent, RIVER, 25, seed=1)
    agent.save(tmp_path / "a.privrl")
    out = _py(
        """
        import sys, privrl
        from privrl.agents import Agent
        from privrl.envs import RiverSwimMixture
        agent = Agent.load(sys.argv[1])
        res = privrl.run(agent, RiverSwimMixture(S=4, H=3), seed=2)
        print(res.episodes, agent.k)
        try:
            privrl.run(agent, agent.env, 1)
        except ValueError as e:
            print(e)
        """,
        str(tmp_path / "a.privrl"),
    )
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first == "35 60"
    assert "has run 60: 0 remain, cannot run 1" in second


_LONG_RUN = """
import privrl
from privrl.agents import UCRLVTR
from privrl.envs import RiverSwimMixture
from privrl.privacy import JointDP
env = RiverSwimMixture(S=6, H=20)
agent = UCRLVTR(env, JointDP(1.0, 1e-7), episodes=400_000, seed=0)
print("start", flush=True)
try:
    privrl.run(agent, env, seed=1)
except KeyboardInterrupt:
    k = agent.k
    res = privrl.run(agent, env, 10, seed=2)  # usable: it runs on from the last whole user
    print("interrupted", k, agent.k == k + 10, res.episodes, flush=True)
"""


@pytest.mark.slow
def test_progress_bar_on_a_terminal_and_ctrl_c_within_a_second():
    """On a pseudo-terminal the bar appears once the run takes 2 s; Ctrl-C stops it within 1 s
    and leaves the agent after its last whole user."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a run on an 80-column pseudo-terminal
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # as on a terminal, whatever started pytest
        os.execv(sys.executable, [sys.executable, "-c", _LONG_RUN])
    out, t_sig, t_end = b"", None, None
    deadline = time.time() + 60
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if t_sig is None and b"%|" in out:  # the bar is drawn: interrupt
            os.kill(pid, signal.SIGINT)
            t_sig = time.time()
        if t_sig is not None and b"interrupted" in out and t_end is None:
            t_end = time.time()
    os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert t_sig is not None, text[-2000:]
    assert t_end is not None and t_end - t_sig < 1.0 + 0.5, text[-2000:]  # 0.5 s: the 10 more users
    line = text[text.index("interrupted") :].splitlines()[0]
    assert line.split()[2:] == ["True", "10"]


def test_no_progress_bar_in_a_pipe():
    out = _py(
        """
        import privrl
        from privrl.agents import UCRLVTR
        from privrl.envs import RiverSwimMixture
        env = RiverSwimMixture(S=4, H=3)
        privrl.run(UCRLVTR(env, episodes=2000, seed=0), env, seed=1)
        """
    )
    assert out.returncode == 0 and "%|" not in out.stderr + out.stdout


def test_reprs_say_what_ran():
    agent = UCRLVTR(RIVER, LocalDP(2.0, 1e-5), episodes=30, seed=0)
    res = privrl.run(agent, RIVER, 10, seed=0)
    assert repr(agent) == (
        "UCRLVTR(LDP(eps=2, delta=1e-05), exploration='optimism', K=30, episodes_done=10, "
        "env='RiverSwimMixture(S=4, H=3)')"
    )
    assert repr(res).startswith(
        "RunResult(agent='UCRL-VTR[LDP(eps=2, delta=1e-05)]'"
    ) and "episodes=10" in repr(res)


def test_a_large_delta_is_refused_and_a_delta_above_one_over_k_warns():
    with pytest.raises(PrivacyParameterError, match=r"delta must be < 0\.1.*allow_large_delta=True"):
        JointDP(1.0, 0.5)
    assert JointDP(1.0, 0.5, allow_large_delta=True).delta == 0.5
    with pytest.raises(PrivacyParameterError, match="allow_large_delta"):
        LocalDP(1.0, 0.2)
    with pytest.warns(PrivacyWarning, match=r"delta = 0\.001 > 1/K"):
        UCRLVTR(RIVER, JointDP(1.0, 1e-3), episodes=5000)


def test_feature_maps_refuse_non_finite_features():
    phi = np.eye(4).reshape(2, 2, 4)
    phi[1, 1, 3] = np.nan
    with pytest.raises(NonFiniteError, match="features"):
        FeatureMap(phi, H=3)


def test_sweep_into_a_file_says_so(tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        sweep(
            env={"name": "RiverSwimMixture", "S": 3, "H": 2},
            agents={"a": {"algorithm": "UCRL-VTR", "privacy": "none"}},
            episodes=5,
            outdir=target,
        )


def test_learn_and_run_say_which_to_use():
    gym = pytest.importorskip("gymnasium")
    res = privrl.learn(UCRLVTR(RIVER, NonPrivate(), episodes=20, seed=0), RIVER, seed=1)
    assert res.episodes == 20 and res.regret is not None  # a model: exact regret
    fmap = FeatureMap.one_hot(16, 4, H=4)
    with pytest.raises(TypeError, match=r"use privrl\.learn\(agent, env\)"):
        privrl.run(LSVIUCB(fmap, episodes=5), gym.make("FrozenLake-v1"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--delta", "0.5"], "privrl: error: delta: must be < 0.1"),
        (["--env-arg", "S=abc"], "privrl: error: env.S: expected an integer, got 'abc'"),
        (["--agent", "a:algorithm=UCRL-VTR,privacy=jdp,calibraton=paper"], "did you mean 'calibration'?"),
    ],
)
def test_cli_refuses_with_a_clear_message(tmp_path, capsys, args, message):
    base = ["run", "--env", "RiverSwimMixture", "--episodes", "5", "--seeds", "1", "--epsilons", "1"]
    if "--agent" not in args:
        base += ["--agent", "a:algorithm=UCRL-VTR,privacy=jdp"]
    if "--env-arg" not in args:
        base += ["--env-arg", "S=3,H=2"]
    assert main([*base, *args, "--out", str(tmp_path / "r")]) == 2
    assert message in capsys.readouterr().err


def test_cli_refuses_a_file_as_the_results_folder(tmp_path, capsys):
    target = tmp_path / "f"
    target.write_text("x")
    argv = ["run", "--env", "RiverSwimMixture", "--env-arg", "S=3,H=2", "--episodes", "5", "--seeds", "1"]
    argv += ["--epsilons", "inf", "--agent", "a:algorithm=UCRL-VTR,privacy=none", "--out", str(target)]
    assert main(argv) == 2
    assert "outdir: " in capsys.readouterr().err


@pytest.mark.slow  # mypy in a subprocess
def test_the_facade_is_typed(tmp_path):
    pytest.importorskip("mypy")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        textwrap.dedent(
            """
            import privrl
            from privrl.agents import UCRLVTR
            from privrl.envs import RiverSwimMixture

            env = RiverSwimMixture()
            privrl.run(UCRLVTR(env, episodes=10), env, episodes="10")
            """
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "mypy", str(snippet)], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 1 and 'Argument "episodes" to "run" has incompatible type "str"' in out.stdout, (
        out.stdout
    )


def test_own_finite_mdp_features_say_what_is_wrong_with_them():
    """A FiniteMDP subclass with its own phi holding a NaN was refused with "must be a finite (S, A, d)
    = (3, 2, d) array, got shape (3, 2, 2)": the shape it had was right, the NaN went unnamed; one
    without features said "got shape ()". Each reason now names the problem."""
    from privrl.envs import FiniteMDP

    rng = np.random.default_rng(0)
    S, A, H = 3, 2, 2
    P = rng.dirichlet(np.ones(S), size=(H, S, A))

    class Own(FiniteMDP):
        def __init__(self, features):
            super().__init__(P, np.full((H, S, A), 0.5), np.ones(S) / S)
            if features is not None:
                self.features = features

    phi = np.full((S, A, 2), 0.5)
    assert LSVIUCB.accepts(Own(phi)) is None
    bad = phi.copy()
    bad[1, 0, 1] = np.nan
    cases = [
        (LSVIUCB, Own(bad), "non-finite value nan at index (1, 0, 1)"),
        (LSVIUCB, Own(None), "it has none"),
        (LSVIUCB, Own(phi[:, :1]), r"got shape (3, 1, 2)"),
        (UCRLVTR, Own(np.full((S, A, S, 2), np.inf)), "non-finite value inf at index (0, 0, 0, 0)"),
        (UCRLVTR, Own(phi), r"got shape (3, 2, 2)"),
    ]
    for cls, env, reason in cases:
        assert reason in cls.accepts(env)
        with pytest.raises(TypeError) as err:
            cls(env, episodes=5)
        assert reason in str(err.value) and "got shape ()" not in str(err.value)
    with pytest.raises(NonFiniteError, match=r"^P contains a non-finite value nan at index \(0, 0, 0, 0\)$"):
        FiniteMDP(np.full((H, S, A, S), np.nan), np.zeros((H, S, A)), np.ones(S) / S)


def test_one_hot_linear_mdp_skips_the_dense_product_with_the_same_model():
    """A LinearMDP with one-hot features formed P = phi @ mu^T densely: O(H (S A)^2 S), 7 s of the
    9 s it took to build gymnasium's Taxi (d = 3,000, H = 20), which a sweep repeats for every run.
    With at most one nonzero per row each sum has one term: P and R are a gather, equal to the
    dense product (up to the sign of a zero), for one-hot, scaled one-hot and all-zero rows."""
    from privrl.envs import LinearMDP, tabular_linear_mdp
    from privrl.envs.linear import phi_matmul

    rng = np.random.default_rng(3)
    n, d = 40, 15
    phi = np.zeros((n, d))
    phi[np.arange(n), rng.integers(0, d, n)] = rng.uniform(-1, 1, n)
    phi[[4, 9]] = 0.0
    for X in (rng.normal(size=(3, d, 7)), rng.normal(size=(d, 5)), np.zeros((2, d, 3))):
        assert np.array_equal(phi_matmul(phi, X), np.matmul(phi, X))
    dense = phi.copy()
    dense[0, :2] = 0.5  # two nonzeros in a row: the dense product
    X = rng.normal(size=(d, 4))
    assert np.array_equal(phi_matmul(dense, X), np.matmul(dense, X))

    H, S, A = 3, 6, 2
    P = rng.dirichlet(np.ones(S), size=(H, S, A))
    R = rng.uniform(size=(H, S, A))
    m = tabular_linear_mdp(P, R, np.ones(S) / S)
    assert np.array_equal(m.P, np.matmul(m.features_flat, m.mu.transpose(0, 2, 1)).reshape(H, S, A, S))
    # a permuted one-hot table (columns in another order) and theta-given rewards
    perm = rng.permutation(S * A)
    feats = np.eye(S * A)[perm].reshape(S, A, S * A)
    mu = np.zeros((H, S, S * A))
    mu[:, :, perm] = P.reshape(H, S * A, S).transpose(0, 2, 1)
    theta = np.zeros((H, S * A))
    theta[:, perm] = R.reshape(H, S * A)
    own = LinearMDP(feats, mu, theta, np.ones(S) / S)
    assert np.array_equal(own.P, m.P) and np.array_equal(own.R, R)
