"""Sweeps over gymnasium environments learned by interaction (env table ``model = false``): each run is
privrl.learn with the run's own streams, records realized returns and no regret, and the report and
the plot read its returns."""

from __future__ import annotations

import io
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("pandas")

import gymnasium as gym

import privrl
from privrl.agents import LSVIUCB
from privrl.envs import FeatureMap
from privrl.experiment import ConfigError, load_manifest, load_results, summarize, sweep
from privrl.experiment.environments import GymnasiumTask
from privrl.experiment.parsing import build_config
from privrl.experiment.summary import format_table
from privrl.experiment.sweep import run_seed_sequence
from privrl.privacy import JointDP, NonPrivate

LAKE = {"name": "gymnasium", "id": "FrozenLake-v1", "H": 8, "is_slippery": False, "model": False}
BLACKJACK = {"name": "gymnasium", "id": "Blackjack-v1", "H": 4, "model": False, "reward_range": [-1, 1]}
AGENTS = {
    "LSVI": {"algorithm": "LSVI-UCB", "privacy": "none", "batches": "every", "lam": 1.0},
    "JDP": {"algorithm": "LSVI-UCB", "privacy": "jdp", "batches": 4},
}


def _sweep(env=LAKE, **kw):
    args = {"agents": AGENTS, "epsilons": [math.inf, 10.0], "seeds": 2, "episodes": 300, "progress": False}
    return sweep(env=env, **{**args, **kw})


def test_runs_are_privrl_learn_with_the_run_streams():
    """Each run's returns are privrl.learn's, bit for bit, for the agent built on the environment's
    one-hot feature map with the run's agent stream and learn seeded with its environment stream."""
    df, manifest = _sweep()
    assert df["regret"].isna().all()
    config = build_config(
        {"env": LAKE, "agents": AGENTS, "epsilons": [math.inf, 10.0], "seeds": 2, "episodes": 300}
    )
    specs = list(config.studies[0].runs(config.root_seed))
    # the JDP agent runs at eps = inf too: the non-private algorithm with its options
    assert len(specs) == 6 and set(df["run_id"]) == {s.run_id for s in specs}
    for spec in specs:
        agent_seq, env_seq = run_seed_sequence(spec).spawn(2)
        env = gym.make("FrozenLake-v1", is_slippery=False)
        features = FeatureMap.one_hot_for(env, 8)
        privacy = NonPrivate() if spec.privacy == "none" else JointDP(10.0, 1e-5)
        agent = LSVIUCB(features, privacy, episodes=300, seed=agent_seq, **dict(spec.options))
        returns = privrl.learn(agent, env, seed=env_seq, progress=False).returns
        rows = df[df["run_id"] == spec.run_id].sort_values("episode")
        k = rows["episode"].to_numpy()
        assert np.array_equal(rows["cum_return"].to_numpy(), np.cumsum(returns)[k - 1])
        assert np.array_equal(rows["return"].to_numpy(), returns[k - 1])
        record = manifest["runs"][spec.run_id]
        assert record["random_regret"] is None and record["final_regret"] is None
        assert record["env"] == "FrozenLake-v1(H=8, is_slippery=False, learned by interaction)"
        assert record["terminated_early"] > 0  # the lake's holes and goal end episodes before H


def test_threads_give_the_same_table(tmp_path):
    one, _ = _sweep()
    two, _ = _sweep(n_jobs=2)
    cols = ["run_id", "episode", "return", "cum_return"]
    a = one[cols].sort_values(cols[:2]).reset_index(drop=True)
    b = two[cols].sort_values(cols[:2]).reset_index(drop=True)
    assert a.equals(b)


def test_rescaled_rewards_and_resume(tmp_path):
    """Blackjack (no transition table): rewards -1 / 0 / 1 mapped by reward_range into [0, 1], so a
    user's return is (H + total reward) / 2 with H = 4 in [0, 4]; rerunning resumes every run."""
    out = tmp_path / "bj"
    df, _ = _sweep(env=BLACKJACK, agents={"LSVI": AGENTS["LSVI"]}, epsilons=[math.inf], outdir=out)
    assert (
        (df["return"] >= 0) & (df["return"] <= 4) & (df["return"] * 2 == np.round(df["return"] * 2))
    ).all()
    again, manifest = _sweep(env=BLACKJACK, agents={"LSVI": AGENTS["LSVI"]}, epsilons=[math.inf], outdir=out)
    assert manifest["n_resumed"] == 2 and manifest["n_computed"] == 0
    assert again.reset_index(drop=True).equals(load_results(out).reset_index(drop=True))
    assert load_manifest(out)["config"]["studies"][0]["env"]["model"] is False


def test_summary_reads_the_returns():
    df, manifest = _sweep()
    summary = summarize(df, manifest)
    for row in summary.itertuples(index=False):
        part = df[(df["agent"] == row.agent) & (df["epsilon"] == row.epsilon)]
        curve = part.groupby("episode")["cum_return"].mean()
        ep, cum = np.r_[0, curve.index.to_numpy()], np.r_[0.0, curve.to_numpy()]
        # the log points are every 3 episodes: the first 10% ends at 30, the last starts at 270
        i, j = int(np.flatnonzero(ep == 30)[0]), int(np.flatnonzero(ep == 270)[0])
        assert row.return_first == pytest.approx(cum[i] / 30, rel=1e-12)
        assert row.return_last == pytest.approx((cum[-1] - cum[j]) / 30, rel=1e-12)
        assert math.isnan(row.regret_mean) and row.verdict == "-"
    text = format_table(summary)
    assert "return (first -> last 10%)" in text.splitlines()[0]
    nonprivate = summary[summary["privacy"] == "none"].iloc[0]
    assert f"{nonprivate.return_first:.3f} -> {nonprivate.return_last:.3f}" in text
    # the non-private agent, a release every user, is learning the deterministic lake (0 -> 0.22)
    assert nonprivate.return_last > nonprivate.return_first + 0.1


def test_model_studies_print_no_return_column():
    df, manifest = sweep(
        env={"name": "RiverSwimMixture", "S": 4, "H": 5},
        agents={"U": {"algorithm": "UCRL-VTR", "privacy": "none"}},
        episodes=50,
        progress=False,
    )
    summary = summarize(df, manifest)
    assert "return (first" not in format_table(summary)
    assert summary.loc[0, "return_last"] == pytest.approx(
        (df["cum_return"].iloc[-1] - df.loc[df["episode"] == 45, "cum_return"].iloc[0]) / 5, rel=1e-12
    )


def test_plot_draws_returns(tmp_path):
    from privrl.experiment import plot
    from privrl.experiment.plots import _window_returns

    df, _ = _sweep()
    out = plot(df, tmp_path / "fig")
    svg = (tmp_path / "fig.svg").read_text()
    assert out["curves"]["gymnasium"] == 3  # LSVI, JDP at eps = inf and at 10
    assert svg.count('id="privrl-curve-lin-0-') == 3 and svg.count('id="privrl-curve-cum-0-') == 3
    assert 'id="privrl-curve-log-' not in svg
    win = _window_returns(df)
    for _, run in win.groupby("run_id"):
        k = run["episode"].to_numpy()
        cum = run["cum_return"].to_numpy()
        for t in range(len(k)):  # K = 300: the mean return over the users since k - 30
            back = [s for s in range(t) if k[s] <= k[t] - 30]
            lo_k, lo_c = (k[back[-1]], cum[back[-1]]) if back else (0, 0.0)
            assert run["window_return"].iloc[t] == pytest.approx((cum[t] - lo_c) / (k[t] - lo_k), rel=1e-12)


@pytest.mark.parametrize(
    ("env", "algorithm", "message"),
    [
        ({**BLACKJACK, "reward_range": "auto"}, "LSVI-UCB", r"give reward_range = \[lo, hi\]"),
        ({**BLACKJACK, "reward_range": [-1, -0.5]}, "LSVI-UCB", "must contain 0, the reward of the steps"),
        ({**BLACKJACK, "reward_range": [0, 0]}, "LSVI-UCB", "needs finite lo < hi"),
        ({**LAKE, "model": "no"}, "LSVI-UCB", "model must be true or false"),
        ({**LAKE, "init_dist": [1.0] + [0.0] * 15}, "LSVI-UCB", "init_dist is a model's start distribution"),
        (LAKE, "UCRL-VTR", "LSVI-UCB runs on it"),
        ({**LAKE, "id": "CartPole-v1", "is_slippery": None}, "LSVI-UCB", "FeatureMap.one_hot_for needs"),
        ({k: v for k, v in BLACKJACK.items() if k != "model"}, "LSVI-UCB", "model = false learns it"),
        (
            {**LAKE, "id": "CliffWalking-v1", "is_slippery": None},
            "LSVI-UCB",
            r"\[-100, 0\], outside \[0, 1\]",
        ),
    ],
)
def test_refused_before_anything_runs(tmp_path, env, algorithm, message):
    env = {k: v for k, v in env.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        sweep(
            env=env, agents={"a": {"algorithm": algorithm, "privacy": "none"}}, episodes=10, outdir=tmp_path
        )
    assert not any(tmp_path.iterdir())


def test_task_is_a_rescaled_learn():
    task = GymnasiumTask("Blackjack-v1", 4, [-1, 1])
    assert task.features.S == 705 and task.features.absorbing == 704 and task.features.A == 2 and task.H == 4
    assert [task.reward(r) for r in (-1, 0, 1)] == [0.0, 0.5, 1.0]
    assert "rewards (r + 1) / 2" in task.name
    assert GymnasiumTask("FrozenLake-v1", 4).reward is None


def test_cli_run_and_report(tmp_path):
    config = tmp_path / "lake.toml"
    config.write_text(
        "episodes = 200\nseeds = 1\n"
        '[env]\nname = "gymnasium"\nid = "FrozenLake-v1"\nH = 8\nis_slippery = false\nmodel = false\n'
        '[agents.LSVI]\nalgorithm = "LSVI-UCB"\nprivacy = "none"\nbatches = "every"\nlam = 1.0\n'
    )
    out = tmp_path / "res"
    cmd = [sys.executable, "-m", "privrl"]
    subprocess.run([*cmd, "run", str(config), "-o", str(out)], check=True, capture_output=True)
    report = subprocess.run([*cmd, "report", str(out)], check=True, capture_output=True, text=True).stdout
    assert "return (first -> last 10%)" in report and "learned by interaction" not in report
    records = json.loads((out / "manifest.json").read_text())["runs"]
    label = "FrozenLake-v1(H=8, is_slippery=False, learned by interaction)"
    assert [r["env"] for r in records.values()] == [label]


def test_the_report_says_which_scale_the_returns_are_on(tmp_path):
    """A study learned by interaction prints returns on the reward_range rescale (Blackjack's -1 / 1
    mapped to 0 / 1): the report states the map under the table, one that does send reward_range's
    ends to 0 and 1, and a study without reward_range is said to be on the environment's own rewards.
    Before, the return column did not say (only the plot's title did)."""
    from privrl.experiment import report

    studies = [
        {"name": "bj", "env": BLACKJACK, "agents": {"L": AGENTS["LSVI"]}},
        {"name": "lake", "env": LAKE, "agents": {"L": AGENTS["LSVI"]}},
    ]
    sweep(studies=studies, episodes=20, outdir=tmp_path / "res", progress=False)
    out = io.StringIO()
    summary = report(tmp_path / "res", file=out)
    notes = {line.split(":")[0]: line for line in out.getvalue().splitlines() if line.startswith("return of")}
    assert set(notes) == {"return of bj", "return of lake"}
    rescale = notes["return of bj"].rpartition("r -> ")[2]
    lo, hi = BLACKJACK["reward_range"]
    assert [eval(rescale, {"r": r}) for r in (lo, 0, hi)] == [0.0, 0.5, 1.0]
    assert notes["return of lake"].endswith("on the environment's own rewards")
    assert dict(zip(summary["study"], summary["reward_rescale"], strict=True)) == {"bj": rescale, "lake": ""}


def test_deterministic_lake_learned_equals_the_model_study():
    """On the non-slippery lake (one start state, deterministic moves) the environment's stream draws
    nothing that matters: a study learned by interaction and the same study on from_gymnasium's model
    (exact regret, absorbing zero-reward states after the holes and the goal, where learn pads with
    reward(0) = 0) give the same users the same returns, bit for bit, non-private and JDP."""
    agents = {"L": {"algorithm": "LSVI-UCB", "privacy": "jdp", "batches": 5}}
    kw = {"agents": agents, "epsilons": [math.inf, 10.0], "seeds": 2, "episodes": 400, "progress": False}
    learned, _ = sweep(env=LAKE, **kw)
    model, _ = sweep(env={k: v for k, v in LAKE.items() if k != "model"}, **kw)
    cols = ["agent", "epsilon", "seed", "episode", "return", "cum_return"]
    a = learned[cols].sort_values(cols[:4]).reset_index(drop=True)
    b = model[cols].sort_values(cols[:4]).reset_index(drop=True)
    assert a.equals(b) and model["regret"].notna().all()
    assert a["cum_return"].max() > 0  # some user reached the goal


def test_a_learned_run_records_its_policy_changes_as_a_model_run_does():
    """On the non-slippery lake the learned study's users play the model study's policies (the same
    agent streams, the same trajectories): each run record's policy_changes, counted by privrl.run
    on the model, is the learned run's too. It was null for every run learned by interaction."""
    agents = {"L": {"algorithm": "LSVI-UCB", "privacy": "jdp", "batches": 5}}
    kw = {"agents": agents, "epsilons": [math.inf, 10.0], "seeds": 2, "episodes": 100, "progress": False}
    _, learned = sweep(env=LAKE, **kw)
    _, model = sweep(env={k: v for k, v in LAKE.items() if k != "model"}, **kw)

    def changes(manifest):
        return {(r["agent"], r["epsilon"], r["seed"]): r["policy_changes"] for r in manifest["runs"].values()}

    counts = changes(learned)
    assert len(counts) == 4 and counts == changes(model)
    assert all(isinstance(n, int) and 1 <= n <= 100 for n in counts.values())


def test_a_gymnasium_object_is_refused_with_its_table():
    """A sweep rebuilds the environment in every run: a gymnasium.Env object is refused with the
    table that names it (the id it was made from)."""
    with pytest.raises(ConfigError, match=r"'id': 'Blackjack-v1'.*'model': False"):
        sweep(env=gym.make("Blackjack-v1"), agents={"a": {"algorithm": "LSVI-UCB"}}, episodes=10)


def test_plot_styles_a_learned_study_as_its_model_study(tmp_path, monkeypatch):
    """A study learned by interaction draws its curves in the table's order, as a model study does:
    the same (agent, epsilon) gets the same colour, line style, marker, legend place and SVG id in
    both rows of a mixed figure (the return curves were drawn in the order of the run ids, sorted
    by name: agent "Z" took agent "A"'s colour and eps = 10 the non-private agent's marker)."""
    import matplotlib.pyplot as plt

    from privrl.experiment import plot

    agents = {"Z": {"algorithm": "LSVI-UCB", "privacy": "none"}, "A": AGENTS["JDP"]}
    model = {k: v for k, v in LAKE.items() if k != "model"}
    studies = [
        {"name": "model", "env": model, "agents": agents},
        {"name": "learned", "env": LAKE, "agents": agents},
    ]
    df, _ = sweep(studies=studies, epsilons=[math.inf, 10.0], seeds=2, episodes=60, progress=False)
    figures = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig) or close(fig))
    plot(df, tmp_path / "fig")
    rows = [ax.get_lines() for ax in figures[0].axes[::2]]  # each row's left panel
    order = list(dict.fromkeys(zip(df["agent"], df["epsilon"], strict=True)))  # the table's groups
    assert len(order) == 3 and all(len(lines) == len(order) for lines in rows)
    for lines in rows:
        # the legend lists the groups in the table's order: Z (non-private), then A at inf and at 10
        for line, (agent, eps) in zip(lines, order, strict=True):
            label = line.get_label()
            assert label.startswith(agent) and (eps == math.inf) == ("eps=" not in label)
    for a, b in zip(*rows, strict=True):
        assert a.get_label() == b.get_label() and a.get_color() == b.get_color()
        assert a.get_linestyle() == b.get_linestyle() and a.get_marker() == b.get_marker()


@pytest.mark.parametrize("log_every", [100, 300])
def test_report_returns_are_the_first_and_last_tenth_whatever_the_log_grid(tmp_path, log_every):
    """The report's 'return (first -> last 10%)' is the mean return of the first and the last 30 of
    K = 300 users whatever log_every: read off a sweep that logs every episode (the same runs: the
    run key has no log_every). Before, a grid of one row per 100 episodes gave the first and last
    thirds, and one row per run (log_every = K) the whole run's mean twice ('no learning')."""
    from privrl.experiment import report

    kw = {"agents": {"L": AGENTS["LSVI"]}, "epsilons": [math.inf], "seeds": 2, "episodes": 300}
    full, _ = _sweep(**kw, log_every=1)
    coarse, manifest = _sweep(**kw, log_every=log_every, outdir=tmp_path / "res")
    ends = [df.loc[df["episode"] == 300, "cum_return"].to_numpy() for df in (full, coarse)]
    assert np.array_equal(*ends)
    returns = np.stack([run["return"].to_numpy() for _, run in full.groupby("seed")])  # (seeds, K)
    first, last = returns[:, :30].mean(), returns[:, -30:].mean()
    assert last > first  # the non-private agent learns the lake: the two ends differ
    for summary in (summarize(coarse, manifest), report(tmp_path / "res", file=io.StringIO())):
        assert summary.loc[0, "return_first"] == pytest.approx(first, rel=1e-12, abs=1e-12)
        assert summary.loc[0, "return_last"] == pytest.approx(last, rel=1e-12, abs=1e-12)


def test_a_horizon_beyond_the_time_limit_is_refused(tmp_path):
    """FrozenLake-v1's TimeLimit truncates an episode at 100 steps: with H = 101 every episode
    that lasted would end at step 100 and be padded (a zero reward after it), a problem other than
    the lake's H-step one (the model study of the same table runs all H steps). Refused before
    anything is written, naming the limit and the keyword that lifts it; with it the sweep runs."""
    lake = {**LAKE, "H": 101}
    kw = {"agents": {"L": AGENTS["LSVI"]}, "episodes": 5, "progress": False}
    with pytest.raises(ConfigError, match=r"H = 101 .* max_episode_steps = 100") as info:
        sweep(env=lake, outdir=tmp_path / "res", **kw)
    assert info.value.key == "env" and not (tmp_path / "res").exists()
    df, _ = sweep(env={**lake, "max_episode_steps": 101}, **kw)
    assert len(df) == 5 and df["cum_return"].notna().all()


@pytest.mark.parametrize(
    "bad", [[-1], [-1, 1, 2], ["a", 1], 5, [False, True], {"lo": -1, "hi": 1}, "[-1, 1]"]
)
@pytest.mark.parametrize("model", [False, True])
def test_a_malformed_reward_range_is_refused_by_name(tmp_path, bad, model):
    """reward_range is 'auto' or [lo, hi], two numbers: anything else is a ConfigError that names
    reward_range and what it got, before anything is written (a one-number list was 'not enough
    values to unpack', a table 'could not convert string to float: lo', and [false, true] ran as
    [0, 1])."""
    env = {**LAKE, "model": model, "reward_range": bad}
    with pytest.raises(ConfigError, match=r"reward_range must be 'auto' or \[lo, hi\], two numbers, got"):
        sweep(env=env, agents={"a": AGENTS["LSVI"]}, episodes=5, outdir=tmp_path / "res", progress=False)
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("value", ["False", "no", 0, 1])
def test_a_boolean_make_keyword_takes_a_boolean(tmp_path, value):
    """gymnasium reads any truthy value as True: natural = "False" (what `--env-arg natural=False`
    gives: TOML's booleans are lower case) played Blackjack with the natural bonus. A keyword whose
    default is True or False (the registration's or the constructor's) takes a boolean, as
    is_slippery does; refused before anything is written."""
    env = {**BLACKJACK, "natural": value}
    with pytest.raises(ConfigError, match=f"natural must be True or False, got {value!r}"):
        sweep(env=env, agents={"a": AGENTS["LSVI"]}, episodes=5, outdir=tmp_path / "res", progress=False)
    assert not (tmp_path / "res").exists()
    natural = {**BLACKJACK, "natural": True}
    df, _ = sweep(env=natural, agents={"a": AGENTS["LSVI"]}, episodes=5, progress=False)
    assert len(df) == 5


class _Corridor(gym.Env):
    """Two states, two actions; registered by the test below only, in this process."""

    def __init__(self):
        self.observation_space, self.action_space = gym.spaces.Discrete(2), gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        return int(action), float(action), False, False, {}


def test_an_id_registered_in_the_script_only_says_why_workers_miss_it():
    """An id registered by gymnasium.register in the calling process passes the checks there, but
    the worker processes of backend = "processes" import modules only and never see it: each run's
    error says so and what to do (it was gymnasium's bare 'Namespace ... not found. Have you
    installed the proper package?'). On threads the same sweep runs."""
    gym.register("privrl_test/Corridor-v0", entry_point=_Corridor)
    try:
        env = {"name": "gymnasium", "id": "privrl_test/Corridor-v0", "H": 2, "model": False}
        kw = {"env": env, "agents": {"a": AGENTS["LSVI"]}, "seeds": 2, "episodes": 5, "progress": False}
        df, _ = sweep(**kw, n_jobs=2)
        assert len(df) == 10
        hint = r"worker process.*register it at the import of a module"
        with pytest.raises(privrl.experiment.SweepError, match=hint):
            sweep(**kw, n_jobs=2, backend="processes")
    finally:
        gym.registry.pop("privrl_test/Corridor-v0")


def test_two_studies_on_threads_each_get_their_environment(monkeypatch):
    """The threads of a sweep share the process's one-environment cache: a run must get its
    environment even when a run of another study, on another thread, replaces the cache's entry
    between the store and the read (forced here: the store of the lake waits until the other
    thread has cleared the cache; the run read the entry back and failed with a KeyError)."""
    import importlib
    import threading

    sweep_module = importlib.import_module("privrl.experiment.sweep")  # the module, not the function
    config = build_config(
        {
            "study": [
                {"name": "lake", "env": LAKE, "agents": {"a": AGENTS["LSVI"]}},
                {"name": "blackjack", "env": BLACKJACK, "agents": {"a": AGENTS["LSVI"]}},
            ]
        }
    )
    lake, blackjack = config.runs()
    stored, cleared = threading.Event(), threading.Event()

    class Pausing(dict):
        def clear(self):
            super().clear()
            cleared.set()

        def __setitem__(self, key, value):
            super().__setitem__(key, value)
            if "FrozenLake" in key:  # the other thread may clear the cache now
                cleared.clear()  # (this thread's own clear came before the store)
                stored.set()
                cleared.wait(1.0)

    monkeypatch.setattr(sweep_module, "_ENV_CACHE", Pausing())
    got = {}

    def other():
        stored.wait(5.0)
        got["blackjack"] = sweep_module._env_for(blackjack)

    thread = threading.Thread(target=other)
    thread.start()
    got["lake"] = sweep_module._env_for(lake)
    thread.join()
    assert got["lake"].id == "FrozenLake-v1" and got["blackjack"].id == "Blackjack-v1"


@pytest.mark.parametrize("log_every", [3, 100])
def test_the_return_panel_says_how_many_users_it_averages(tmp_path, monkeypatch, log_every):
    """The learned study's left panel averages each point over the users since the last logged
    episode at or before k - K / 10: about K / 10 users on the default grid, and on a grid coarser
    than K / 10 (log_every = 100 at K = 300) as many as the widest such window, which its axis label
    then gives (it said 'last K/10 users' whatever the grid)."""
    import matplotlib.pyplot as plt

    from privrl.experiment import plot

    df, _ = _sweep(agents={"L": AGENTS["LSVI"]}, epsilons=[math.inf], log_every=log_every)
    figures = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig) or close(fig))
    plot(df, tmp_path / "fig")
    label = figures[0].axes[0].get_ylabel()
    k = np.r_[0, np.sort(df["episode"].unique())]
    widest = max(k[i] - k[k <= k[i] - 30].max(initial=0) for i in range(1, len(k)))  # K / 10 = 30
    if widest <= 1.25 * 30:
        assert label == "mean return per episode, last K/10 users"
    else:
        assert f"last K/10 to {widest:g} users" in label


def test_summary_of_a_truncated_table_reads_its_own_returns():
    """summarize(df[df.episode <= k], manifest) summarizes the first k users (K = k in its row):
    its returns are those of the table's own first and last tenth, not the full runs' that the
    records hold (a summary's columns describe one K)."""
    df, manifest = _sweep(agents={"L": AGENTS["LSVI"]}, epsilons=[math.inf], log_every=1)
    head = df[df["episode"] <= 150]
    row = summarize(head, manifest).iloc[0]
    returns = np.stack([run["return"].to_numpy() for _, run in head.groupby("seed")])  # (seeds, 150)
    assert row.K == 150
    assert row.return_first == pytest.approx(returns[:, :15].mean(), rel=1e-12, abs=1e-12)
    assert row.return_last == pytest.approx(returns[:, -15:].mean(), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_a_task_object_runs_as_its_table(backend):
    """sweep(env=GymnasiumTask(...)) is the table's sweep: under the same study name the same runs
    give the same returns bit for bit (threads share the object, processes get a pickled copy), and
    the manifest records the task's fingerprint."""
    agents = {"L": {"algorithm": "LSVI-UCB", "privacy": "none"}}
    kw = {"seeds": 2, "episodes": 200, "progress": False}
    table, _ = sweep(studies=[{"name": "bj", "env": BLACKJACK, "agents": agents}], **kw)
    task = GymnasiumTask("Blackjack-v1", 4, [-1, 1])
    obj, manifest = sweep(
        studies=[{"name": "bj", "env": task, "agents": agents}], n_jobs=2, backend=backend, **kw
    )
    cols = ["agent", "epsilon", "seed", "episode", "return", "cum_return"]
    a = table[cols].sort_values(cols[:4]).reset_index(drop=True)
    b = obj[cols].sort_values(cols[:4]).reset_index(drop=True)
    assert a.equals(b)
    env = manifest["config"]["studies"][0]["env"]
    assert env["id"] == "Blackjack-v1" and env["H"] == "4" and env["reward_range"] == "(-1.0, 1.0)"


def test_the_environment_label_names_the_make_keywords():
    """The results table's env column (the run records', the report's and the plots' titles) named
    an environment by its id and H only: the slippery lake and the other, or the 4x4 map and the
    8x8, had the same label, so two sweeps' tables could not be told apart (and a table pasted beside
    another was mislabeled). The label now states the gymnasium.make keywords (sorted); without any
    it is as before."""
    from privrl.experiment.registry import make_env

    base = {"name": "gymnasium", "id": "FrozenLake-v1", "H": 8}
    labels = {
        (model, kw): make_env({**base, **dict([kw] if kw else []), "model": model}).name
        for model in (True, False)
        for kw in (None, ("is_slippery", True), ("is_slippery", False), ("map_name", "8x8"))
    }
    assert len(set(labels.values())) == len(labels)  # eight environments, eight labels
    assert labels[True, None] == "FrozenLake-v1(H=8)"  # no keywords: the label of before
    assert labels[False, None] == "FrozenLake-v1(H=8, learned by interaction)"
    assert labels[True, ("is_slippery", False)] == "FrozenLake-v1(H=8, is_slippery=False)"
    assert labels[False, ("map_name", "8x8")] == "FrozenLake-v1(H=8, map_name='8x8', learned by interaction)"
    # with a reward rescale too, which the report still reads off the label
    task = GymnasiumTask("Blackjack-v1", 4, [-1, 1], natural=True)
    assert task.name == "Blackjack-v1(H=4, natural=True, rewards (r + 1) / 2, learned by interaction)"
    from privrl.experiment.environments import reward_rescale

    assert reward_rescale(task.name) == "(r + 1) / 2"
    df, _ = _sweep(env={**LAKE, "is_slippery": True}, episodes=20, seeds=1, epsilons=[math.inf])
    assert set(df["env"]) == {"FrozenLake-v1(H=8, is_slippery=True, learned by interaction)"}


def test_a_mistyped_make_keyword_is_told_the_keywords_the_environment_takes():
    """A gymnasium.make keyword mistyped in an env table (is_slipery = false) was refused with
    gymnasium's TypeError alone ("got an unexpected keyword argument 'is_slipery'"): it now also
    gets the close keyword and every keyword the environment takes (read off its registration and
    constructor), on both paths (model = false and the model)."""
    import inspect

    from gymnasium.envs.toy_text.blackjack import BlackjackEnv
    from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv

    from privrl.exceptions import AssumptionError
    from privrl.experiment.environments import gymnasium_linear_mdp

    def keywords(cls):  # an environment's make keywords: its constructor's, as installed
        return ", ".join(sorted(p for p in inspect.signature(cls).parameters if p != "self"))

    takes = keywords(FrozenLakeEnv)
    for make in (
        lambda: GymnasiumTask("FrozenLake-v1", 8, is_slipery=False),
        lambda: gymnasium_linear_mdp("FrozenLake-v1", 8, is_slipery=False),
    ):
        with pytest.raises(AssumptionError) as info:
            make()
        message = str(info.value)
        assert "unexpected keyword argument 'is_slipery'" in message
        assert message.endswith(f"(did you mean 'is_slippery'? FrozenLake-v1 takes {takes})"), message
    with pytest.raises(AssumptionError) as info:
        GymnasiumTask("Blackjack-v1", 4, [-1, 1], zzz=True)  # nothing close: the list alone
    assert str(info.value).endswith(f" (Blackjack-v1 takes {keywords(BlackjackEnv)})")
    with pytest.raises(ConfigError, match=r"^env: gymnasium\.make.*\(did you mean 'natural'\?"):
        _sweep(env={**BLACKJACK, "natual": True}, episodes=5, seeds=1)


def test_the_environment_label_tells_start_distributions_apart():
    """A gymnasium env table's init_dist (the model's start distribution) was not in its label: two
    sweeps of FrozenLake from two starts had the same env column. The label now carries a digest
    of the distribution's values (the same values, list or array, the same digest); without one it
    is as before."""
    from privrl.experiment.registry import make_env

    base = {"name": "gymnasium", "id": "FrozenLake-v1", "H": 8}
    corner, uniform = [1.0] + [0.0] * 15, [1 / 16] * 16

    def label(**kw):
        return make_env({**base, **kw}).name

    assert label() == "FrozenLake-v1(H=8)"
    names = {label(init_dist=corner), label(init_dist=uniform), label()}
    assert len(names) == 3 and label(init_dist=corner) == label(init_dist=np.array(corner))
    assert re.fullmatch(
        r"FrozenLake-v1\(H=8, is_slippery=False, init_dist #[0-9a-f]{8}\)",
        label(is_slippery=False, init_dist=uniform),
    )
    cliff = {"name": "gymnasium", "id": "CliffWalking-v1", "H": 8, "reward_range": "auto"}
    start = [0.0] * 36 + [1.0] + [0.0] * 11  # the usual start, given
    assert re.fullmatch(
        r"CliffWalking-v1\(H=8, init_dist #[0-9a-f]{8}, rewards \(r \+ 100\) / 100\)",
        make_env({**cliff, "init_dist": start}).name,
    )
