"""Tests of the experiment harness: seeded sweeps independent of n_jobs and executor, the results folder
(atomic per-run files, resume, formats), plots, the report, Dask scale-out and the gymnasium bridges."""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import re
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privrl.exceptions import AssumptionWarning
from privrl.experiment import ConfigError, build_config, load_manifest, load_results, run_sweep, sweep
from privrl.experiment.results import atomic_write, parquet_available
from privrl.experiment.sweep import run_seed_sequence

INF = math.inf
ENV = {"name": "RandomLinearMixtureMDP", "S": 6, "A": 3, "d": 3, "H": 5, "seed": 1}
# the paper's calibration (the defaults are "adaptive"): these tests check the paper's accounting
AGENTS = {
    "UCRL-VTR": {"algorithm": "UCRL-VTR", "privacy": "none", "beta_scale": 0.1, "calibration": "paper"},
    "JDP-UCRL-VTR": {"algorithm": "UCRL-VTR", "privacy": "jdp", "beta_scale": 0.1, "calibration": "paper"},
    "LDP-UCRL-VTR": {
        "algorithm": "UCRL-VTR",
        "privacy": "ldp",
        "beta_scale": 0.1,
        "delta": 0.0,
        "calibration": "paper",
    },
}
SMALL = dict(env=ENV, agents=AGENTS, epsilons=[10.0, 1.0], seeds=[0, 1], episodes=40, log_every=10)


def strip(df: pd.DataFrame) -> pd.DataFrame:
    """Everything but wall_time, the one column that legitimately differs between identical runs."""
    return df.drop(columns="wall_time")


def assert_same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(strip(a), strip(b), check_exact=True)


@pytest.fixture(scope="module")
def serial():
    return sweep(**SMALL)


def test_sweep_table_layout(serial):
    df, manifest = serial
    # none agent once (eps = inf), the two private agents at both epsilons; 2 seeds; K/log_every rows.
    assert len(manifest["runs"]) == (1 + 2 + 2) * 2
    assert len(df) == len(manifest["runs"]) * 4
    assert list(df.columns) == [
        "study",
        "env",
        "agent",
        "algorithm",
        "privacy",
        "epsilon",
        "delta",
        "seed",
        "episode",
        "regret",
        "return",
        "cum_return",
        "wall_time",
        "run_id",
    ]
    none = df[df.agent == "UCRL-VTR"]
    assert set(none.privacy) == {"none"} and np.isinf(none.epsilon).all() and none.delta.isna().all()
    ldp = df[(df.agent == "LDP-UCRL-VTR")]
    assert set(ldp.privacy) == {"ldp"} and set(ldp.epsilon) == {10.0, 1.0} and set(ldp.delta) == {0.0}
    assert set(df[df.agent == "JDP-UCRL-VTR"].delta) == {1e-5}
    for _, run in df.groupby("run_id"):
        assert list(run.episode) == [10, 20, 30, 40]
        assert (np.diff(run.regret) >= -1e-12).all()  # cumulative regret of exact gaps never decreases
        assert (np.diff(run.wall_time) >= 0).all()
        # real seconds: the stamps were np.empty's garbage (denormals like 5e-321) where run's
        # block callbacks skipped a logged episode
        assert (
            np.isfinite(run.wall_time).all() and (run.wall_time > 1e-7).all() and (run.wall_time < 600).all()
        )
    # calibration of every run in the manifest, JSON-safe, with the noise that was actually used
    cal = {r["agent"] + str(r["epsilon"]): r["calibration"] for r in manifest["runs"].values()}
    assert cal["UCRL-VTR" + "inf"]["sigma_B"] is None
    assert (
        cal["LDP-UCRL-VTR1.0"]["pure"] is True
        and cal["LDP-UCRL-VTR1.0"]["sigma_B"] > cal["LDP-UCRL-VTR10.0"]["sigma_B"]
    )
    json.dumps(manifest, allow_nan=False, default=str)


def test_seeds_matter(serial):
    df, _ = serial
    last = df[(df.agent == "UCRL-VTR") & (df.episode == 40)]
    assert last["cum_return"].nunique() == 2  # two seeds, two different environment streams


def test_sweep_identical_for_n_jobs_1_and_2(serial):
    df1, m1 = serial
    df2, m2 = sweep(**SMALL, n_jobs=2)
    assert_same(df1, df2)
    assert {k: v["calibration"] for k, v in m1["runs"].items()} == {
        k: v["calibration"] for k, v in m2["runs"].items()
    }


def test_run_does_not_depend_on_the_other_runs(serial):
    df, _ = serial
    alone, _ = sweep(**{**SMALL, "seeds": [1], "epsilons": [1.0]})
    expected = df[(df.seed == 1) & ((df.epsilon == 1.0) | (df.privacy == "none"))].reset_index(drop=True)
    assert_same(alone, expected)


def test_root_seed_changes_every_run(serial):
    df, _ = serial
    other, _ = sweep(**SMALL, root_seed=7)
    assert not np.array_equal(df.cum_return.to_numpy(), other.cum_return.to_numpy())


def test_seed_sequence_is_a_function_of_the_run_key():
    cfg = build_config({"env": ENV, "agents": AGENTS, "epsilons": [1.0], "seeds": 2, "episodes": 5})
    runs = cfg.runs()
    states = [run_seed_sequence(r).generate_state(4).tolist() for r in runs]
    assert len({tuple(s) for s in states}) == len(runs)
    assert states == [
        run_seed_sequence(r).generate_state(4).tolist()
        for r in build_config(
            {"env": ENV, "agents": AGENTS, "epsilons": [1.0], "seeds": 2, "episodes": 5, "n_jobs": 2}
        ).runs()
    ]


def test_env_object_runs_on_processes(serial):
    from privrl.envs import RandomLinearMixtureMDP

    env = RandomLinearMixtureMDP(S=6, A=3, d=3, H=5, seed=1)
    kw = {**SMALL, "env": env, "agents": {"UCRL-VTR": AGENTS["UCRL-VTR"]}}
    a, _ = sweep(**kw)
    b, _ = sweep(**kw, n_jobs=2)
    assert_same(a, b)
    ref = serial[0][serial[0].agent == "UCRL-VTR"].reset_index(drop=True)
    # same MDP as the spec, but a different study name / run key: same shape, own seeds
    assert len(a) == len(ref) and set(a.env) == {env.name}


def test_results_folder_and_resume(tmp_path, serial):
    df, _ = serial
    out = tmp_path / "sweep"
    first, m1 = sweep(**SMALL, outdir=out)
    assert_same(first, df)
    assert m1["n_computed"] == 10 and m1["status"] == "complete"
    assert_same(load_results(out), df)
    runs = sorted((out / "runs").glob("*.json"))
    assert len(runs) == 10 and not list(out.rglob("*.tmp"))
    manifest = load_manifest(out)
    assert manifest["versions"]["numpy"] == np.__version__ and "git_commit" in manifest
    assert manifest["config"]["studies"][0]["agents"]["LDP-UCRL-VTR"]["beta_scale"] == 0.1
    # drop two finished runs: the rerun recomputes exactly those and leaves the others untouched
    gone = runs[:2]
    for meta in gone:
        meta.unlink()
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    again, m2 = sweep(**SMALL, outdir=out)
    assert (m2["n_computed"], m2["n_resumed"]) == (2, 8)
    assert_same(again, df)
    for p in (out / "runs").iterdir():
        if p.suffix == ".json" and p not in gone:
            assert p.stat().st_mtime_ns == stamps[p.name]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_failing_run_is_recorded_and_the_others_are_saved(tmp_path, serial, n_jobs, monkeypatch):
    from privrl.exceptions import PrivacyParameterError
    from privrl.experiment import SweepError

    # beta = -1 passed config validation (a known option) and failed in the agent's constructor,
    # mid-sweep; the preflight now builds every agent first, so it is a config error up front
    bad = {**AGENTS, "broken": {"algorithm": "UCRL-VTR", "privacy": "none", "beta": -1.0}}
    with pytest.raises(ConfigError, match=r"must be finite and >= 0, got -1\.0") as exc:
        sweep(**{**SMALL, "agents": bad}, outdir=tmp_path / "g", n_jobs=n_jobs)
    assert exc.value.key == "agents.broken.beta" and not (tmp_path / "g").exists()
    # a run that fails only once it runs (noise that makes a design matrix indefinite, say)
    module = importlib.import_module("privrl.experiment.sweep")
    real = module.execute_run

    def execute_run(spec, env=None, progress=None, stop=None):
        if spec.agent == "broken":
            raise PrivacyParameterError("beta must be finite and >= 0, got -1.0")
        return real(spec, env, progress, stop)

    monkeypatch.setattr(module, "execute_run", execute_run)  # the threads backend shares it
    out = tmp_path / "f"
    agents = {**AGENTS, "broken": {"algorithm": "UCRL-VTR", "privacy": "none"}}
    with pytest.raises(SweepError, match=r"2 of 12 runs failed .*broken.*PrivacyParameterError: beta") as err:
        sweep(**{**SMALL, "agents": agents}, outdir=out, n_jobs=n_jobs)
    assert len(err.value.failures) == 2
    manifest = load_manifest(out)
    assert manifest["status"] == "failed" and not (out / "results.parquet").exists()
    failed = [r for r in manifest["runs"].values() if r["status"] == "failed"]
    assert {r["agent"] for r in failed} == {"broken"} and "Traceback" in failed[0]["traceback"]
    assert_same(load_results(out), serial[0])  # every other run finished and was saved


def test_resuming_runs_of_another_commit_warns(tmp_path):
    out = tmp_path / "w"
    base = {**SMALL, "agents": {"UCRL-VTR": AGENTS["UCRL-VTR"]}, "seeds": [0]}
    sweep(**base, outdir=out)
    meta_path = next((out / "runs").glob("*.json"))
    meta = json.loads(meta_path.read_text())
    assert set(meta["producer"]) == {"privrl", "git_commit"}
    meta["producer"]["git_commit"] = "0" * 40
    meta_path.write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match="1 resumed runs .* another privrl version or commit"):
        _, m = sweep(**base, outdir=out)
    assert m["n_resumed"] == 1
    # a record from before producers were written says nothing of its code: it warns too
    meta = json.loads(meta_path.read_text())
    del meta["producer"]
    meta_path.write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match="1 resumed runs .* another privrl version or commit"):
        sweep(**base, outdir=out)


def test_csv_and_parquet_round_trip_exactly(tmp_path, serial):
    df, _ = serial
    csv, _ = sweep(**SMALL, outdir=tmp_path / "csv", format="csv")
    assert (tmp_path / "csv" / "results.csv").exists()
    pd.testing.assert_frame_equal(load_results(tmp_path / "csv"), csv, check_exact=True)
    assert_same(csv, df)
    if parquet_available():
        pq, _ = sweep(**SMALL, outdir=tmp_path / "pq", format="parquet")
        pd.testing.assert_frame_equal(load_results(tmp_path / "pq"), pq, check_exact=True)


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "x.txt"
    target.write_text("old")

    def broken(p: Path) -> None:
        p.write_text("half")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        atomic_write(target, broken)
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]
    atomic_write(target, lambda p: p.write_text("new"))
    assert target.read_text() == "new"


def test_changing_an_option_makes_new_runs(tmp_path):
    out = tmp_path / "s"
    base = {**SMALL, "agents": {"UCRL-VTR": AGENTS["UCRL-VTR"]}, "seeds": [0]}
    _, m1 = sweep(**base, outdir=out)
    changed = {"UCRL-VTR": {**AGENTS["UCRL-VTR"], "beta_scale": 0.5}}
    # the folder's earlier run leaves its manifest: said, not silent (audit 2, item 3)
    with pytest.warns(UserWarning, match="holds 1 runs of another config"):
        _, m2 = sweep(**{**base, "agents": changed}, outdir=out)
    assert m2["n_computed"] == 1 and set(m1["runs"]).isdisjoint(m2["runs"])


def test_a_damaged_run_table_is_recomputed_on_resume_and_named_by_readers(tmp_path):
    """A run table that cannot be read (here: garbage bytes) is recomputed by a resumed sweep, like
    a run that never finished, and load_results names the file instead of a parser traceback."""
    from privrl.experiment.results import ResultStore

    out = tmp_path / "d"
    base = {**SMALL, "agents": {"UCRL-VTR": AGENTS["UCRL-VTR"]}, "seeds": [0]}
    df1, m1 = sweep(**base, outdir=out)
    store = ResultStore(out, "csv")
    run_id = next(iter(m1["runs"]))
    table = store.runs_dir / json.loads(store.meta_path(run_id).read_text())["table"]
    # garbage bytes, and a readable table missing a column (a raw KeyError from report / plot /
    # resume before)
    assert table.suffix == ".parquet"
    cut = tmp_path / "cut.parquet"
    pd.read_parquet(table).drop(columns="cum_return").to_parquet(cut)
    for damage in (b"garbage", cut.read_bytes()):
        table.write_bytes(damage)
        with pytest.raises(ConfigError, match=r"is not a readable run table.*--fresh"):
            load_results(out)
        df2, m2 = sweep(**base, outdir=out)
        assert m2["n_computed"] == 1 and m2["n_resumed"] == len(m1["runs"]) - 1
        pd.testing.assert_frame_equal(
            df1.drop(columns="wall_time", errors="ignore"), df2.drop(columns="wall_time", errors="ignore")
        )
        load_results(out)  # readable again


@pytest.mark.parametrize("band", ["std", "ci95"])
def test_plot_draws_one_curve_per_algorithm_and_epsilon(tmp_path, band):
    from privrl.experiment import plot

    out = tmp_path / "p"
    sweep(**SMALL, outdir=out)
    res = plot(out, band=band)
    png = Path(res["png"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    svg = Path(res["svg"]).read_text()
    # 1 non-private + 2 agents x 2 epsilons, on the linear and on the log-log panel
    assert res["curves"] == {"RandomLinearMixtureMDP": 5}
    assert svg.count('id="privrl-curve-lin-0-') == 5 and svg.count('id="privrl-curve-log-0-') == 5
    assert "slope" in svg


def test_report_table(tmp_path, capsys):
    from privrl.experiment import report

    out = tmp_path / "r"
    df, _ = sweep(**SMALL, outdir=out)
    summary = report(out)
    text = capsys.readouterr().out
    assert len(summary) == 5 and "final regret" in text and "sigma_B=" in text
    row = summary[(summary.agent == "JDP-UCRL-VTR") & (summary.epsilon == 1.0)].iloc[0]
    last = df[(df.agent == "JDP-UCRL-VTR") & (df.epsilon == 1.0) & (df.episode == 40)].regret
    assert row.regret_mean == pytest.approx(last.mean()) and row.regret_std == pytest.approx(last.std())
    assert row.seeds == 2 and row.sigma_name == "sigma_B" and row.sigma > 0
    # the releases spend at most the target epsilon, and the tight accountant never more than the paper
    assert 0 < row.eps_tight <= row.eps_paper <= 1.0 + 1e-9 and "eps certified (tight; paper)" in text
    # in words: what the exact accountant certifies, and whether the paper's argument does too
    assert f"{row.eps_tight:.3g}; paper yes ({row.eps_paper:.3g})" in text
    assert math.isnan(summary[summary.privacy == "none"].eps_paper.iloc[0])


def test_fit_slope():
    from privrl.experiment.summary import fit_slope

    k = np.arange(10, 1001, 10)
    assert fit_slope(k, 3 * np.sqrt(k)) == pytest.approx(0.5)
    assert fit_slope(k, 2.0 * k) == pytest.approx(1.0)
    assert math.isnan(fit_slope(k, np.zeros_like(k, dtype=float)))
    # rounding residue of an optimal agent (1e-13 per episode, growing like k^0.3) has no slope
    assert math.isnan(fit_slope(k, 1e-13 * k**0.3))


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"agents": {"A": {"algorithm": "UCRL-VTRX"}}}, "agents.A.algorithm"),
        ({"agents": {"A": {"algorithm": "UCRL-VTR", "privacy": "gdp"}}}, "agents.A.privacy"),
        ({"agents": {"A": {"algorithm": "UCRL-VTR", "beta_scal": 0.1}}}, "agents.A.beta_scal"),
        ({"agents": {"A": {"privacy": "jdp"}}}, "agents.A.algorithm"),
        ({"epsilons": [1.0, 0.0]}, "epsilons[1]"),
        ({"epsilons": [-1.0]}, "epsilons[0]"),
        ({"epsilons": [float("nan")]}, "epsilons[0]"),
        ({"env": {"name": "NoSuchMDP"}}, "env.name"),
        ({"env": {"name": "RiverSwimMixture", "SS": 6}}, "env.SS"),
        ({"delta": 1.0}, "delta"),
        ({"episodes": 0}, "episodes"),
        ({"seeds": [0, -1]}, "seeds[1]"),
        ({"seeds": [1, 1]}, "seeds"),
        ({"log_every": 0}, "log_every"),
        ({"agents": {"A": {"algorithm": "UCRL-VTR", "delta": -0.1}}}, "agents.A.delta"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_configs_name_the_key(bad, key):
    raw = {"env": {"name": "RiverSwimMixture"}, "agents": {"A": {"algorithm": "UCRL-VTR"}}, **bad}
    with pytest.raises(ConfigError) as err:
        build_config(raw)
    assert str(err.value).startswith(key + ":") and err.value.key == key
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    "env",
    [{"name": "RandomLinearMDP", "S": 2, "A": 2, "d": 2**40, "H": 2}, {"name": "FrozenLake", "H": INF}],
)
def test_an_environment_that_cannot_be_built_is_a_config_error_of_env(env):
    """Fuzzing: a RandomLinearMDP of d = 2^40 asked numpy for 8 TiB (the dense-size check ignored d),
    FrozenLake of H = inf was an OverflowError."""
    with pytest.raises(ConfigError, match=r"^env: ") as err:
        sweep(env=env, agents={"J": {"algorithm": "UCRL-VTR", "privacy": "jdp"}}, episodes=5, progress=False)
    assert err.value.key == "env"


def test_tight_calibration_option_reaches_the_privacy_model():
    agents = {
        "paper": {"algorithm": "UCRL-VTR", "privacy": "jdp", "calibration": "paper"},
        "tight": {"algorithm": "UCRL-VTR", "privacy": "jdp", "calibration": "tight"},
    }
    _, manifest = sweep(env=ENV, agents=agents, epsilons=[1.0, INF], episodes=5)
    sigma = {(r["agent"], r["epsilon"]): r["calibration"]["sigma_B"] for r in manifest["runs"].values()}
    assert 0 < sigma["tight", 1.0] < sigma["paper", 1.0]
    assert sigma["tight", "inf"] is None  # eps = inf is non-private whatever the calibration
    with pytest.raises(ConfigError, match=r"^agents\.x\.calibration:"):
        build_config({"env": ENV, "agents": {"x": {"algorithm": "UCRL-VTR", "calibration": "loose"}}})


def test_calibrations_are_the_privacy_models_list(monkeypatch):
    # The config accepts exactly what privrl.privacy.models lists: a new calibration needs no harness change.
    import privrl.privacy.models as models

    practical = {"algorithm": "UCRL-VTR", "privacy": "jdp", "calibration": "practical"}
    assert (
        build_config({"env": ENV, "agents": {"x": practical}}).studies[0].agents["x"].calibration
        == "practical"
    )
    agent = {"algorithm": "UCRL-VTR", "privacy": "jdp", "calibration": "future"}
    with pytest.raises(
        ConfigError, match=r"^agents\.x\.calibration: unknown calibration 'future'; use one of"
    ):
        build_config({"env": ENV, "agents": {"x": agent}})
    monkeypatch.setattr(models, "CALIBRATIONS", (*models.CALIBRATIONS, "future"))
    assert build_config({"env": ENV, "agents": {"x": agent}}).studies[0].agents["x"].calibration == "future"


def test_discrete_sampler_rule_is_the_privacy_models(monkeypatch):
    # The config repeated which mechanisms have a discrete sampler (honaker, factorization written
    # out) and ignored the privacy kind: an LDP agent with mechanism = 'honaker' was told its
    # sampler was wrong, not that only jdp agents choose a mechanism. It now asks the privacy
    # models' rule (privrl.privacy.plans.has_discrete_sampler, behind check_sampler_for).
    import privrl.privacy.plans as plans
    from privrl.exceptions import PrivacyParameterError
    from privrl.privacy.common import check_sampler_for
    from privrl.privacy.continual import MECHANISMS

    def agent(**kw):
        return {"env": ENV, "agents": {"x": {"algorithm": "UCRL-VTR", **kw}}}

    for mechanism in MECHANISMS:
        try:
            check_sampler_for("jdp", mechanism, "discrete")
        except PrivacyParameterError:
            with pytest.raises(ConfigError, match=rf"^agents\.x\.sampler: mechanism '{mechanism}' has no"):
                build_config(agent(privacy="jdp", mechanism=mechanism, sampler="discrete"))
        else:
            build_config(agent(privacy="jdp", mechanism=mechanism, sampler="discrete"))
    with pytest.raises(ConfigError, match=r"^agents\.x\.mechanism: only jdp agents"):
        build_config(agent(privacy="ldp", mechanism="honaker", sampler="discrete"))
    monkeypatch.setattr(plans, "DISCRETE_MECHANISMS", (*plans.DISCRETE_MECHANISMS, "honaker"))
    build_config(agent(privacy="jdp", mechanism="honaker", sampler="discrete"))


def test_mechanism_option_reaches_the_privacy_model():
    agents = {
        "tree": {"algorithm": "UCRL-VTR", "privacy": "jdp", "calibration": "paper"},
        "honaker": {
            "algorithm": "UCRL-VTR",
            "privacy": "jdp",
            "mechanism": "honaker",
            "calibration": "paper",
        },
    }
    df, manifest = sweep(env=ENV, agents=agents, epsilons=[1.0, INF], episodes=5)
    runs = {(r["agent"], r["epsilon"]): r for r in manifest["runs"].values()}
    assert runs["honaker", 1.0]["mechanism"] == "honaker" and runs["tree", 1.0]["mechanism"] is None
    assert runs["honaker", 1.0]["calibration"]["mechanism"] == "honaker"
    assert runs["tree", 1.0]["calibration"]["mechanism"] == "tree"
    assert runs["honaker", 1.0]["label"] == "UCRL-VTR[JDP(eps=1, delta=1e-05, paper, honaker)]"
    # eps = inf is non-private: no mechanism, like no calibration
    assert (
        runs["honaker", "inf"]["mechanism"] is None
        and runs["honaker", "inf"]["calibration"]["sigma_B"] is None
    )
    assert set(df["agent"]) == {"tree", "honaker"}


def test_mechanism_in_a_toml_config(tmp_path):
    from privrl.experiment import load_config

    path = tmp_path / "m.toml"
    path.write_text(
        'episodes = 5\nepsilons = [1.0]\n[[study]]\nenv = "RiverSwimMixture"\n'
        '[study.agents.blt]\nalgorithm = "LSVI-UCB"\nprivacy = "jdp"\nmechanism = "blt"\n'
    )
    cfg = load_config(str(path))
    assert cfg.studies[0].agents["blt"].mechanism == "blt"
    assert cfg.studies[0].agents["blt"].to_dict()["mechanism"] == "blt"
    (run,) = cfg.runs()
    assert run.mechanism == "blt" and run.describe()["mechanism"] == "blt"


def test_run_ids_without_a_mechanism_are_unchanged():
    # Computed before `mechanism` existed: results folders written then still resume, for the
    # continuous samplers those runs used. The default (discrete) sampler gets ids of its own:
    # a float-era folder is not resumed as if its runs had drawn discrete noise.
    def ids(agent):
        cfg = build_config({"env": ENV, "agents": {"t": agent}, "epsilons": [1.0], "episodes": 5})
        return [r.run_id for r in cfg.runs()]

    # ids computed by the code of b659c55 (before the adaptive default): an explicit calibration
    # keeps its id; the default one (the paper's then, "adaptive" now) does not
    float_era = ["RandomLinearMixtureMDP__t__eps1__seed0__d89a9194"]
    tight = ["RandomLinearMixtureMDP__t__eps1__seed0__01582530"]
    practical = ["RandomLinearMixtureMDP__t__eps1__seed0__c20ba13a"]
    jdp = {"algorithm": "UCRL-VTR", "privacy": "jdp"}
    assert ids({**jdp, "sampler": "float", "calibration": "tight"}) == tight
    assert ids({**jdp, "calibration": "practical"}) == practical
    assert ids({**jdp, "sampler": "float"}) != float_era  # the default changed: no resume
    default = ids(jdp)
    assert default != float_era and default == ids(jdp)


def test_make_privacy_passes_the_mechanism_to_jdp_only():
    from privrl.experiment.config import make_privacy
    from privrl.privacy import JointDP, LocalDP, NonPrivate

    assert make_privacy("jdp", 1.0, 1e-5, mechanism="blt") == JointDP(1.0, 1e-5, mechanism="blt")
    assert make_privacy("jdp", 1.0, 1e-5, calibration="tight") == JointDP(1.0, 1e-5, calibration="tight")
    assert make_privacy("ldp", 1.0, 1e-5, calibration="tight") == LocalDP(1.0, 1e-5, calibration="tight")
    # eps = inf: the non-private member of the default (adaptive) calibration
    assert make_privacy("jdp", INF, 1e-5, mechanism="blt") == NonPrivate()
    assert make_privacy("jdp", INF, 1e-5, calibration="paper") == NonPrivate(calibration="paper")


JDP = {"algorithm": "UCRL-VTR", "privacy": "jdp"}


@pytest.mark.parametrize(
    "raw, key, message",
    [
        (
            {"agents": {"x": {**JDP, "mechanism": "cauchy"}}},
            "agents.x.mechanism",
            "unknown mechanism 'cauchy'",
        ),
        ({"agents": {"x": {**JDP, "mechanism": "Tree"}}}, "agents.x.mechanism", "unknown mechanism 'Tree'"),
        ({"agents": {"x": {**JDP, "mechanism": 3}}}, "agents.x.mechanism", "unknown mechanism 3"),
        (
            {"agents": {"x": {**JDP, "privacy": "ldp", "mechanism": "tree"}}},
            "agents.x.mechanism",
            "only jdp agents choose a continual-release mechanism; this one has privacy = 'ldp'",
        ),
        (
            {"agents": {"x": {**JDP, "privacy": "none", "mechanism": "blt"}}},
            "agents.x.mechanism",
            "privacy = 'none'",
        ),
        (
            {"agents": {"x": {**JDP, "delta": 0.0, "mechanism": "factorization"}}},
            "agents.x.mechanism",
            "'factorization' needs Gaussian noise (delta > 0)",
        ),
        ({"delta": 0, "agents": {"x": {**JDP, "mechanism": "honaker"}}}, "agents.x.mechanism", "delta > 0"),
        (
            {
                "study": [
                    {"name": "s", "env": ENV, "delta": 0.0, "agents": {"x": {**JDP, "mechanism": "blt"}}}
                ]
            },
            "study[0].agents.x.mechanism",
            "delta > 0",
        ),
        ({"agents": {"x": {**JDP, "mechansim": "blt"}}}, "agents.x.mechansim", "(besides algorithm, privacy"),
    ],
)
def test_bad_mechanisms_name_the_key(raw, key, message):
    raw = raw if "study" in raw else {"env": ENV, **raw}
    with pytest.raises(ConfigError) as err:
        build_config(raw)
    assert err.value.key == key and str(err.value).startswith(f"{key}: ") and message in str(err.value)


def test_pure_dp_keeps_the_tree_and_an_agent_delta_overrides_the_study():
    agents = {
        "pure": {**JDP, "delta": 0.0, "mechanism": "tree"},
        "approx": {**JDP, "delta": 1e-6, "mechanism": "blt"},
    }
    cfg = build_config({"env": ENV, "delta": 0.0, "agents": agents, "epsilons": [1.0]})
    assert {r.agent: (r.mechanism, r.delta) for r in cfg.runs()} == {
        "pure": ("tree", 0.0),
        "approx": ("blt", 1e-6),
    }


def test_algorithm_names_are_resolved_leniently():
    cfg = build_config(
        {
            "env": "RiverSwimMixture",
            "agents": {"a": {"algorithm": "ucrl_vtr"}, "b": {"algorithm": "UCRLVTR+", "privacy": "LDP"}},
        }
    )
    specs = cfg.studies[0].agents
    assert (
        specs["a"].algorithm == "UCRL-VTR"
        and specs["b"].algorithm == "UCRL-VTR+"
        and specs["b"].privacy == "ldp"
    )


def test_a_missing_algorithm_module_is_a_config_error(monkeypatch):
    from privrl.experiment import config

    monkeypatch.setitem(config.ALGORITHMS, "Ghost", ("privrl.agents.no_such_module", "Ghost"))
    with pytest.raises(ConfigError, match=r"^agents\.g\.algorithm: algorithm 'Ghost' is not available"):
        build_config({"env": "RiverSwimMixture", "agents": {"g": {"algorithm": "ghost"}}})


def test_ucrl_vtr_plus_through_the_harness():
    agents = {"JDP-UCRL-VTR+": {"algorithm": "UCRL-VTR+", "privacy": "jdp", "beta_scale": 0.1}}
    df, manifest = sweep(env=ENV, agents=agents, epsilons=[1.0], seeds=[0], episodes=10, log_every=5)
    assert list(df.algorithm.unique()) == ["UCRL-VTR+"] and len(df) == 2
    json.dumps(manifest, allow_nan=False)


def test_lsvi_ucb_variants_sweep():
    pytest.importorskip("privrl.agents.lsvi_ucb.agent", reason="LSVIUCB not merged yet")
    agents = {
        "LSVI-UCB": {"algorithm": "LSVI-UCB", "privacy": "none", "batches": "every"},
        "JDP-LSVI-UCB": {"algorithm": "LSVI-UCB", "privacy": "jdp", "batches": "static"},
    }
    env = {"name": "RandomLinearMDP", "S": 8, "A": 3, "d": 4, "H": 4, "seed": 0}
    df, manifest = sweep(env=env, agents=agents, epsilons=[1.0], seeds=[0], episodes=30, log_every=10)
    assert set(df.agent) == {"LSVI-UCB", "JDP-LSVI-UCB"} and len(df) == 6
    cal = next(r["calibration"] for r in manifest["runs"].values() if r["privacy"] == "jdp")
    json.dumps(cal, allow_nan=False)


@pytest.mark.parametrize("key", ["episodes", "log_every"])
def test_a_float_size_is_refused_in_a_config_as_by_privrl_run(key):
    """episodes = 30.0 was taken as 30 by sweep() and config files, while privrl.run(episodes=5.0)
    and the agents refuse a float size (check_pos_int, privrl's one integer rule): now refused
    here too, naming the key, in a study as at the top level."""
    import privrl
    from privrl.agents import UCRLVTR
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import PrivacyParameterError

    env = RiverSwimMixture(S=4, H=5)
    with pytest.raises(PrivacyParameterError, match="episodes"):
        privrl.run(UCRLVTR(env, episodes=10, seed=0), env, episodes=5.0)
    raw = {"env": "RiverSwimMixture", "agents": {"J": {"algorithm": "UCRL-VTR"}}}
    with pytest.raises(ConfigError, match=rf"^{key}: must be an integer >= 1, got 30.0$"):
        build_config({**raw, key: 30.0})
    with pytest.raises(ConfigError, match=rf"^study\[0\]\.{key}: must be an integer >= 1, got 30.0$"):
        build_config({"study": [{**raw, key: 30.0}]})
    with pytest.raises(ConfigError, match=rf"^{key}: "):
        sweep(**{**SMALL, key: 30.0})
    assert getattr(build_config({**raw, key: 30}).studies[0], key) == 30


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"n_jobs": 2.0}, "n_jobs: must be an integer >= 1, got 2.0"),
        ({"n_jobs": -1.0}, "n_jobs: must be an integer >= 1, got -1.0"),  # all cores is the integer -1
        ({"n_jobs": True}, "n_jobs: must be an integer >= 1, got True"),
        ({"root_seed": 3.0}, "root_seed: must be an integer in [0, 9223372036854775807], got 3.0"),
        ({"root_seed": -1}, "root_seed: must be an integer in [0, 9223372036854775807], got -1"),
        ({"seeds": [1.0]}, "seeds[0]: (a seed) must be an integer in [0, 2^63), got 1.0"),
        ({"seeds": [0, np.float64(2.0)]}, "seeds[1]: (a seed) must be an integer in [0, 2^63), got "),
        ({"seeds": [0, "1"]}, "seeds[1]: (a seed) must be an integer in [0, 2^63), got '1'"),
    ],
)
def test_n_jobs_root_seed_and_seeds_follow_the_integer_rule(raw, message):
    """n_jobs = 2.0, root_seed = 3.0 and seeds = [1.0] were taken as integers by sweep() and config
    files (check_number's integer=True), and run_sweep(n_jobs=2.5) ran on int(2.5) = 2 workers, while
    episodes = 30.0 and every other size is refused (check_pos_int, privrl's one integer rule): now
    refused here too, naming the key; Python and numpy integers are taken as before."""
    base = {"env": "RiverSwimMixture", "agents": {"J": {"algorithm": "UCRL-VTR"}}, "episodes": 5}
    with pytest.raises(ConfigError) as err:
        build_config({**base, **raw})
    assert str(err.value).startswith(message), str(err.value)
    key = message.partition(":")[0]
    assert err.value.key == key and isinstance(err.value, ValueError)
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        sweep(**{**SMALL, **raw}, progress=False)
    ints = {"n_jobs": np.int64(2), "root_seed": np.int64(3), "seeds": [np.int64(1), 4]}
    config = build_config({**base, **ints})
    assert (config.n_jobs, config.root_seed, config.studies[0].seeds) == (2, 3, (1, 4))
    assert build_config({**base, "n_jobs": -1}).n_jobs >= 1  # -1: all cores
    for n_jobs in (2.5, 2.0, 0):
        with pytest.raises(ConfigError, match=rf"^n_jobs: must be an integer >= 1, got {n_jobs}$"):
            run_sweep(config, n_jobs=n_jobs)


def test_run_sweep_takes_n_jobs_minus_one_as_all_cores(monkeypatch):
    """n_jobs = -1 is all cores in a config, sweep() and privrl run -j -1, but run_sweep(config,
    n_jobs=-1) refused it ("n_jobs: must be an integer >= 1, got -1"). Now the same rule there:
    the run is on all cores (2 here, the cores monkeypatched), and -1.0 / 0 are still refused."""
    import os
    import sys

    sweep_mod = sys.modules["privrl.experiment.sweep"]  # the package's `sweep` is the function
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    seen = []
    real = sweep_mod._threads
    monkeypatch.setattr(
        sweep_mod, "_threads", lambda specs, envs, bar, n: seen.append(n) or real(specs, envs, bar, n)
    )
    config = build_config({**SMALL, "seeds": 2})
    df, _ = run_sweep(config, n_jobs=-1)
    assert seen == [2] and len(df) > 0
    for n_jobs in (-1.0, 0, True):
        with pytest.raises(ConfigError, match=rf"^n_jobs: must be an integer >= 1, got {n_jobs}$"):
            run_sweep(config, n_jobs=n_jobs)


# --------------------------------------------------------------------------------------- Dask
@pytest.mark.slow  # starts a two-worker LocalCluster
def test_dask_cluster_results_equal_local_bit_for_bit(tmp_path, serial):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as cluster:
        df, manifest = sweep(**SMALL, outdir=tmp_path / "dask", scheduler=cluster.scheduler_address)
    assert_same(df, serial[0])
    assert_same(load_results(tmp_path / "dask"), serial[0])
    assert manifest["n_computed"] == 10
    assert sorted(p.name for p in (tmp_path / "dask").iterdir()) == sorted(
        ["manifest.json", "runs", manifest["results_file"]]
    )


@pytest.mark.slow  # starts a one-worker LocalCluster
def test_dask_workers_warnings_are_raised_in_the_sweeps_process(capfd):
    """A warning raised in a Dask worker (the agent's PrivacyWarning for delta > 1/K) was printed by
    the worker in Python's format, past the caller's filters; it is relayed as on --backend
    processes: a warning of the sweep's caller (pytest.warns sees it), none printed by the worker.
    Two threads in the worker: its runs record their warnings at once."""
    distributed = pytest.importorskip("distributed")
    from privrl.exceptions import PrivacyWarning

    agents = {"J": {"algorithm": "UCRL-VTR", "privacy": "jdp", "delta": 0.09}}
    kw = dict(env="RiverSwimMixture", epsilons=[1.0], seeds=2, episodes=20, progress=False)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None, silence_logs=40
        ) as cluster,
        pytest.warns(PrivacyWarning, match=r"delta = 0.09 > 1/K = 0.05"),
    ):
        _df, manifest = sweep(agents=agents, scheduler=cluster.scheduler_address, **kw)
    assert manifest["status"] == "complete" and len(manifest["runs"]) == 2
    assert "1/K" not in capfd.readouterr().err  # the worker printed nothing of it


def test_runs_recording_warnings_at_once_in_threads_get_their_own():
    """relay.recorded in several threads of one process (a Dask worker's): each run gets the warnings
    of its own thread, also when the first to start ends first, and the warning state is restored
    once the last ends (warnings.catch_warnings, process-wide, mixed the runs' records up)."""
    import threading
    import warnings
    from concurrent.futures import ThreadPoolExecutor

    from privrl.experiment.relay import recorded

    both_warned, a_done = threading.Barrier(2), threading.Event()

    def run(tag: str) -> dict:
        warnings.warn(f"{tag} first", UserWarning, stacklevel=1)
        both_warned.wait(timeout=30)
        if tag == "b":
            assert a_done.wait(timeout=30)
            warnings.warn("b after a ended", UserWarning, stacklevel=1)
        return {}

    before = (list(warnings.filters), warnings.showwarning)
    with ThreadPoolExecutor(2) as pool:
        fa, fb = pool.submit(recorded, run, "a"), pool.submit(recorded, run, "b")
        a = fa.result(timeout=30)
        a_done.set()
        b = fb.result(timeout=30)
    assert [w[1] for w in a["warnings"]] == ["a first"]
    assert [w[1] for w in b["warnings"]] == ["b first", "b after a ended"]
    assert (list(warnings.filters), warnings.showwarning) == before


def test_a_warning_on_its_way_when_the_last_run_ends_is_shown_not_dropped():
    """The sweep's thread raises a finished run's warnings again while other runs still record: the
    warnings module may fetch the recorder's showwarning just before the last run ends and restores
    the state. That warning was dropped (the recorder found neither a run's sink nor the showwarning
    it had replaced, cleared at the end; the CLI test of a thread sweep lost its one warning line
    about one time in five under load). It is shown by the showwarning the recorder replaced."""
    import warnings

    from privrl.experiment.relay import recorded

    shown: list[str] = []

    def collect(message, category, filename, lineno, file=None, line=None):
        shown.append(str(message))

    with warnings.catch_warnings():
        warnings.showwarning = collect
        fetched = recorded(lambda: {"show": warnings.showwarning})["show"]  # the recorder's, mid-run
        assert warnings.showwarning is collect  # the last run ended: the state is restored
        fetched("a finished run's warning", UserWarning, "sweep.py", 1)  # the call it was fetched for
    assert shown == ["a finished run's warning"]


@pytest.mark.parametrize("action", ["ignore", "error"])
def test_the_sweeps_own_warnings_meet_the_users_filters_while_runs_record(action):
    """The recorder's filter "always" (process-wide) also caught the sweep's own thread: a finished
    run's warning raised again there while another run still recorded (a thread sweep) was shown past
    the user's "ignore" or "error" filter, and obeyed it once no run was in flight: which one a user
    got depended on the timing. The filter is now the runs' threads' only."""
    import threading
    import warnings

    from privrl.experiment.relay import recorded, reemit

    inside, leave = threading.Event(), threading.Event()

    def run() -> dict:
        inside.set()
        assert leave.wait(timeout=30)
        return {}

    shown: list[str] = []
    finished = {"warnings": [(UserWarning, "a finished run's warning", "sweep.py", 1)]}
    with warnings.catch_warnings():
        warnings.simplefilter(action, UserWarning)
        warnings.showwarning = lambda message, *_a, **_k: shown.append(str(message))
        t = threading.Thread(target=recorded, args=(run,))
        t.start()
        try:
            assert inside.wait(timeout=30)  # another run records
            if action == "error":
                with pytest.raises(UserWarning, match="a finished run's warning"):
                    reemit(dict(finished), {})
            else:
                reemit(dict(finished), {})
        finally:
            leave.set()
            t.join(timeout=30)
    assert shown == []


# ---------------------------------------------------------------------------------- gymnasium
BUILT_INS = [
    ("HardToLearn", {"d": 3, "H": 4, "K": 100}),
    ("RandomLinearMixtureMDP", {"S": 5, "A": 2, "d": 3, "H": 4}),
    ("RiverSwimMixture", {"S": 4, "H": 5}),
    ("RandomLinearMDP", {"S": 6, "A": 3, "d": 4, "H": 4}),
    ("SyntheticLinearMDP", {"H": 4, "n_actions": 8}),
    ("RiverSwim", {"S": 4, "H": 5}),
]


@pytest.mark.parametrize("name, kwargs", BUILT_INS, ids=[b[0] for b in BUILT_INS])
def test_every_builtin_env_is_a_gymnasium_env(name, kwargs):
    gymnasium = pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env

    from privrl.envs import as_gymnasium
    from privrl.experiment.config import make_env

    # SyntheticLinearMDP is a published instance that exceeds Asm. 1's mu bound by a constant (it warns).
    expect = (
        pytest.warns(AssumptionWarning, match="Asm. 1") if name == "SyntheticLinearMDP" else nullcontext()
    )
    with expect:
        mdp = make_env({"name": name, **kwargs})
    env = as_gymnasium(mdp)
    assert isinstance(env, gymnasium.Env)
    check_env(env, skip_render_check=True)

    def episode(seed):
        obs, _ = env.reset(seed=seed)
        states, rewards = [obs], []
        for h in range(mdp.H):
            a = h % mdp.A
            obs, r, term, trunc, _ = env.step(a)
            assert env.observation_space.contains(obs) and not term and trunc == (h == mdp.H - 1)
            assert r == mdp.R[h, states[-1], a] and 0.0 <= r <= 1.0
            states.append(obs)
            rewards.append(r)
        return states, rewards

    assert episode(3) == episode(3)


def test_privrl_envs_registered_with_gymnasium():
    gymnasium = pytest.importorskip("gymnasium")
    from privrl.experiment.environments import register_gymnasium_envs

    ids = register_gymnasium_envs()
    env = gymnasium.make("privrl/RiverSwim-v0", S=5, H=7)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.n == 5 and obs == 0
    for _ in range(7):
        obs, _, _, trunc, _ = env.step(1)
    assert trunc and "privrl/RandomLinearMDP-v0" in ids


def _gym_id(prefix: str) -> str:
    gymnasium = pytest.importorskip("gymnasium")
    ids = sorted(k for k in gymnasium.registry if k.startswith(prefix + "-v"))
    if not ids:
        pytest.skip(f"no {prefix} in this gymnasium")
    return ids[-1]


def test_frozen_lake_table_as_linear_mdp():
    from privrl.envs import LinearMDP
    from privrl.experiment.environments import gymnasium_linear_mdp

    mdp = gymnasium_linear_mdp(_gym_id("FrozenLake"), H=20)
    assert isinstance(mdp, LinearMDP) and (mdp.S, mdp.A, mdp.d) == (16, 4, 64)
    assert 0 < float(mdp.optimal_values()[0] @ mdp.init_dist) <= 1


# Taxi's one-hot linear MDP has S*A = 3000 features per state: a short horizon keeps it small.
@pytest.mark.parametrize(
    "prefix, lo, hi, H",
    [("CliffWalking", -100.0, 0.0, 15), pytest.param("Taxi", -10.0, 20.0, 3, marks=pytest.mark.slow)],
)
def test_negative_reward_tables_need_a_rescale(prefix, lo, hi, H):
    from privrl.exceptions import AssumptionError
    from privrl.experiment.environments import gymnasium_linear_mdp, reward_bounds

    gymnasium = pytest.importorskip("gymnasium")
    gid = _gym_id(prefix)
    with pytest.raises(AssumptionError, match="outside"):
        gymnasium_linear_mdp(gid, H=15)
    env = gymnasium.make(gid)
    assert reward_bounds(env.unwrapped.P) == (lo, hi)
    mdp = gymnasium_linear_mdp(gid, H=H, reward_range="auto")
    assert mdp.R.min() >= 0 and mdp.R.max() <= 1
    # the affine map preserves the optimal policy: brute-force the original MDP's optimal values
    base = env.unwrapped
    S, A = mdp.S, mdp.A
    P, R = np.zeros((S, A, S)), np.zeros((S, A))
    terminal = set()
    for s, acts in base.P.items():
        for a, trans in acts.items():
            for p, ns, r, t in trans:
                P[s, a, ns] += p
                R[s, a] += p * r
                terminal |= {ns} if t else set()
    for s in terminal:
        P[s], R[s] = 0.0, 0.0
        P[s, :, s] = 1.0
    V = np.zeros(S)
    for _ in range(H):
        V = (R + P @ V).max(axis=1)
    v_scaled = mdp.optimal_values()[0]
    np.testing.assert_allclose(v_scaled, (V - H * lo) / (hi - lo), atol=1e-9)
    with pytest.raises(AssumptionError, match="must contain"):
        gymnasium_linear_mdp(gid, H=2, reward_range=[lo + 1, hi])


def test_gymnasium_env_in_a_sweep_config():
    pytest.importorskip("gymnasium")
    from privrl.envs import LinearMDP
    from privrl.experiment.config import make_env

    env = {"name": "gymnasium", "id": _gym_id("CliffWalking"), "H": 10, "reward_range": "auto"}
    cfg = build_config({"env": env, "agents": {"A": {"algorithm": "UCRL-VTR"}}})
    assert cfg.studies[0].env_spec == env
    assert isinstance(make_env(env), LinearMDP)
    if importlib.util.find_spec("privrl.agents.lsvi_ucb.agent") is not None:
        df, _ = sweep(
            env=env,
            agents={"LSVI-UCB": {"algorithm": "LSVI-UCB", "privacy": "none"}},
            episodes=5,
            log_every=5,
        )
        assert len(df) == 1 and df.env.iloc[0].startswith("CliffWalking")


def test_summarize_refuses_what_is_not_a_results_table():
    """Fuzzing: summarize(pd.DataFrame()) was a KeyError 'study'."""
    from privrl.experiment import summarize

    for bad, missing in [(pd.DataFrame(), "study"), (pd.DataFrame({"regret": [1.0]}), "study, agent")]:
        with pytest.raises(ConfigError, match=f"^df: not a privrl results table: no column {missing}"):
            summarize(bad)
    for bad_df, bad_manifest in [(None, None), (pd.DataFrame(), [])]:
        with pytest.raises(TypeError, match="must be"):
            summarize(bad_df, bad_manifest)


def test_report_table_shows_infinite_epsilon(tmp_path, capsys):
    """The tight LSVI-UCB noise at eps = 10 cannot be certified by the paper's argument: the summary
    shows that epsilon as inf (the manifest stores the string "inf"), not as missing."""
    from privrl.experiment import report

    out = tmp_path / "inf"
    sweep(
        env={"name": "RandomLinearMDP", "S": 10, "A": 3, "d": 4, "H": 3, "seed": 0},
        agents={"tight": {"algorithm": "LSVI-UCB", "privacy": "jdp", "calibration": "tight"}},
        epsilons=[10.0],
        seeds=1,
        episodes=20,
        outdir=out,
    )
    summary = report(out)
    text = capsys.readouterr().out
    row = summary.iloc[0]
    assert math.isinf(row.eps_paper) and row.eps_tight == pytest.approx(10.0, rel=1e-3)
    assert "10; paper no" in text  # the paper's argument cannot certify the tight noise (eps inf)


_LINEAR = {"name": "RandomLinearMDP", "S": 6, "A": 2, "d": 3, "H": 3}
_NEEDS_GYM = pytest.mark.skipif(importlib.util.find_spec("gymnasium") is None, reason="needs gymnasium")


@pytest.mark.parametrize(
    "env, agent, key, needle",
    [
        ({"name": "RiverSwimMixture", "S": 0}, {"algorithm": "UCRL-VTR"}, "env", "S >= 2"),
        ("RiverSwimMixture", {"algorithm": "LSVI-UCB"}, "agents.a.algorithm", "needs a LinearMDP"),
        ("RandomLinearMDP", {"algorithm": "UCRL-VTR+"}, "agents.a.algorithm", "needs a LinearMixtureMDP"),
        ("RiverSwimMixture", {"algorithm": "UCRL-VTR", "beta_scale": -1}, "agents.a.beta_scale", ">= 0"),
        # options only the agent's own checks know (audit item 3): the preflight builds the agent
        ("RiverSwimMixture", {"algorithm": "UCRL-VTR", "exploration": "foo"}, "agents.a.exploration", "of"),
        (_LINEAR, {"algorithm": "LSVI-UCB", "batches": "foo"}, "agents.a.batches", "'static', 'scaled'"),
        (_LINEAR, {"algorithm": "LSVI-UCB", "batches": 0}, "agents.a.batches", r"an int in \[1, K=5\]"),
        (_LINEAR, {"algorithm": "LSVI-UCB", "privacy": "ldp"}, "agents.a.privacy", "LocalDP is not"),
        pytest.param(
            {"name": "FrozenLake", "H": 4, "map_name": "9x9"},
            {"algorithm": "LSVI-UCB", "privacy": "none"},
            "env",
            "map_name must be one of",
            marks=_NEEDS_GYM,
        ),
        pytest.param(
            {"name": "FrozenLake", "H": 4, "is_slippery": "no"},
            {"algorithm": "LSVI-UCB", "privacy": "none"},
            "env",
            "is_slippery must be True or False",
            marks=_NEEDS_GYM,
        ),
    ],
)
def test_bad_sweep_is_refused_before_the_folder_is_touched(tmp_path, env, agent, key, needle):
    """Invalid environment arguments, an algorithm that does not fit the environment and a
    negative beta_scale are refused before anything is written: an existing results folder keeps
    its manifest and merged results."""
    out = tmp_path / "kept"
    sweep(**SMALL, outdir=out)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert "manifest.json" in before and any(n.startswith("results.") for n in before)
    with pytest.raises(ConfigError, match=needle) as exc:
        sweep(env=env, agents={"a": agent}, epsilons=[1.0], seeds=1, episodes=5, outdir=out)
    assert exc.value.key == key
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_tiny_delta_is_a_delta_error():
    """delta = 5e-324 underflowed the compositions (a ZeroDivisionError, or 'epsilon ... got inf');
    it is refused at the edge with a message about delta."""
    with pytest.raises(ConfigError, match="must be 0 \\(pure DP\\) or >= 1e-100") as exc:
        build_config({"env": ENV, "agents": AGENTS, "delta": 5e-324})
    assert exc.value.key == "delta"


_SCRIPT = """
import math
from privrl.experiment import sweep

def main():
    df, _ = sweep(
        env={"name": "RiverSwimMixture", "S": 4, "H": 3},
        agents={"a": {"algorithm": "UCRL-VTR", "privacy": "none", "beta_scale": 0.1}},
        epsilons=[math.inf], seeds=2, episodes=5, n_jobs=2, outdir="out", progress=False,
        backend=BACKEND)
    print("rows", len(df))
"""


@pytest.mark.parametrize("backend", ["threads", "processes"])
@pytest.mark.parametrize("guarded", [True, False])
def test_sweep_from_a_plain_script(tmp_path, guarded, backend):
    """On threads (the default) a plain script needs no guard. On processes the workers re-import
    the user's script: guarded, it runs; unguarded, it fails with a message that says what to add
    (not a bare BrokenProcessPool)."""
    import subprocess
    import sys

    call = 'if __name__ == "__main__":\n    main()\n' if guarded else "main()\n"
    (tmp_path / "script.py").write_text(f"BACKEND = {backend!r}\n" + _SCRIPT + call)
    res = subprocess.run(
        [sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    if guarded or backend == "threads":
        assert res.returncode == 0 and "rows 10" in res.stdout, res.stderr  # 2 seeds x 5 episodes
    else:
        assert res.returncode != 0, res.stdout
        # the parent's error and each worker's say what to add. The two workers print their
        # tracebacks on one stderr at once, and Python writes an exception's type, ": " and message
        # in separate writes: under load CI saw "RuntimeError: RuntimeErrorsweep() called ...". The
        # message itself is one write: look for it whole, and for the workers' RuntimeError apart.
        assert "RuntimeError: a sweep worker process died" in res.stderr, res.stderr
        worker = "sweep() called while a worker process imports your script: put the sweep"
        assert f'{worker} under `if __name__ == "__main__":`' in res.stderr, res.stderr
        assert res.stderr.count("RuntimeError") >= 2, res.stderr  # the parent's and a worker's


def test_threads_and_processes_give_the_same_results(tmp_path):
    """The backend changes where runs execute, never what they compute."""
    frames = [
        sweep(**{**SMALL, "seeds": 3}, n_jobs=2, backend=b, outdir=tmp_path / b)[0].drop(columns="wall_time")
        for b in ("threads", "processes")
    ]
    pd.testing.assert_frame_equal(frames[0], frames[1])
    with pytest.raises(ConfigError, match="backend"):
        sweep(**SMALL, n_jobs=2, backend="fibers")


def test_manifest_labels_simulation_only_outputs(tmp_path):
    """Regret, returns and clip counts come from the users' raw data: the manifest says they are
    outside the guarantee, and every labelled output is one the folder really holds."""
    out = tmp_path / "label"
    df, manifest = sweep(**SMALL, outdir=out)
    label = load_manifest(out)["simulation_only"]
    assert label == manifest["simulation_only"] and "NOT private" in label["note"]
    run = next(iter(load_manifest(out)["runs"].values()))
    for name in label["outputs"]:
        assert (
            name in df.columns
            or name in run
            or name in json.loads(next((out / "runs").glob("*.json")).read_text())
        ), name


def test_progress_bars_when_interactive(monkeypatch, capsys):
    """progress=None (the default) shows the bars only in an interactive session."""
    import sys

    sweep_module = sys.modules["privrl.experiment.sweep"]  # the package re-exports the function
    small = {**SMALL, "seeds": [0], "epsilons": [10.0]}
    sweep(**small)
    assert "runs" not in capsys.readouterr().err  # pytest's capture is not a terminal
    monkeypatch.setattr(sweep_module, "interactive", lambda: True)
    sweep(**small)
    assert "runs" in capsys.readouterr().err


def test_git_commit_of_an_installed_build(monkeypatch):
    """Outside a checkout (a `pip install .`), the manifest names the commit the Rust core was
    built from (recorded by rust/build.rs), or None for a build outside git."""
    import re

    from privrl import _core
    from privrl.experiment import results

    assert re.fullmatch(r"([0-9a-f]{40}(-dirty)?)?", _core.GIT_COMMIT)
    monkeypatch.setattr(results, "_source_commit", lambda: None)
    assert results._git_commit() == (_core.GIT_COMMIT or None)


def test_verdict_of_a_negligible_regret():
    from privrl.experiment.summary import verdict

    # an optimal agent's rounding residue grows linearly: its slope is 1, its rate negligible
    assert verdict(1.0, 1e-5) == "learned (< 0.001 regret per episode)"
    assert verdict(1.0, 0.1) == "not learning yet (linear)"
    assert verdict(0.3) == "learned" and verdict(0.7, 0.5) == "learning"


def test_verdict_reads_the_level_against_the_random_policy(tmp_path):
    """The verdict read only the slope: a fixed policy 2% of the random policy's regret per episode
    from optimal (linear, slope 1) was "not learning yet (linear)", like one at 90%. A linear curve
    at most 5% of the uniformly random policy's regret per episode is now "near-optimal"; the sweep
    records that scale per run (random_regret, the model's exact value), and summarize reads it."""
    from itertools import product

    from privrl.envs import RandomLinearMixtureMDP, RiverSwimMixture
    from privrl.experiment.summary import NEAR_OPTIMAL_SHARE, summarize, verdict

    assert verdict(1.0, 0.02, 1.0).startswith("near-optimal (linear at 2.0% of the random")
    assert verdict(1.0, 0.9, 1.0) == verdict(1.0, 0.9) == "not learning yet (linear)"
    assert verdict(1.0, 0.02) == "not learning yet (linear)"  # no scale recorded: as before
    assert verdict(0.7, 0.02, 1.0) == "learning" and verdict(0.3, 0.02, 1.0) == "learned"
    assert verdict(1.0, NEAR_OPTIMAL_SHARE * 1.01, 1.0) == "not learning yet (linear)"
    ep = np.arange(1, 1001)
    frames = [
        pd.DataFrame({"study": "s", "agent": name, "privacy": "none", "epsilon": math.inf, "algorithm": "x",
                      "seed": 0, "run_id": name, "episode": ep, "regret": rate * ep, "wall_time": 0.0})
        for name, rate in (("near", 0.02), ("far", 0.9))
    ]  # fmt: skip
    runs = {"near": {"random_regret": 1.0}, "far": {"random_regret": 1.0}}
    got = summarize(pd.concat(frames), {"runs": runs}).set_index("agent").verdict
    assert got["near"].startswith("near-optimal") and got["far"] == "not learning yet (linear)"
    # the random policy's regret: exact (a uniformly random table per (h, s) plays as the random
    # policy, each (h, s) being visited at most once an episode), checked by enumerating the tables
    env = RandomLinearMixtureMDP(S=2, A=2, d=2, H=2, seed=4)
    tables = [np.array(t).reshape(2, 2) for t in product(range(2), repeat=4)]
    v_rand = np.mean([env.initial_value(env.policy_values(t)) for t in tables])
    assert env.random_regret() == pytest.approx(env.initial_value(env.optimal_values()) - v_rand, abs=1e-12)
    assert env.random_regret() > 0
    out = tmp_path / "rand"
    sweep(
        env={"name": "RiverSwimMixture", "S": 4, "H": 3},
        agents={"a": {"algorithm": "UCRL-VTR", "privacy": "none"}},
        seeds=1,
        episodes=20,
        outdir=out,
        progress=False,
    )
    (record,) = load_manifest(out)["runs"].values()
    assert record["random_regret"] == pytest.approx(RiverSwimMixture(S=4, H=3).random_regret(), rel=1e-12)


def test_config_typos_get_a_suggestion():
    """A mistyped key, environment or option names the closest valid one; an [[agents]] list
    (a natural TOML guess) is told the table form."""
    typo_env = {"name": "RiverSwimMixtur"}
    typo_option = {"a": {"algorithm": "UCRL-VTR", "beta_scal": 0.1}}
    cases = [
        ({"env": ENV, "agents": AGENTS, "seed": 2}, "seed", "did you mean 'seeds'?"),
        ({"env": typo_env, "agents": AGENTS}, "env.name", "did you mean 'RiverSwimMixture'?"),
        ({"env": ENV, "agents": typo_option}, "agents.a.beta_scal", "did you mean 'beta_scale'?"),
        ({"env": ENV, "agents": [{"algorithm": "UCRL-VTR"}]}, "agents", r"one \[agents\.NAME\] table"),
    ]
    for raw, key, needle in cases:
        with pytest.raises(ConfigError, match=needle) as exc:
            build_config(raw)
        assert exc.value.key == key


def test_wall_time_is_stamped_at_every_logged_episode_of_a_block(monkeypatch):
    """Audit 5: with log_every = 500 and K = 2000, privrl.run's block callbacks (256 users, then
    up to 4096) never landed on a logged episode, so every wall_time was uninitialised memory
    (read as int64: the episode numbers). Each logged episode now gets its block's time, counted
    since the agent was built: at least the run's own time up to that block, at most the time since
    the run's environment was ready (clock readings around the stamps: the run's wall_time is read
    after its last block, so comparing the last stamp with it failed about 1 time in 100 on a loaded
    machine, when the sweep's thread was descheduled after the last callback)."""
    import time

    from privrl.experiment import runner

    sweep_module = importlib.import_module("privrl.experiment.sweep")  # the module, not the function
    clock: dict = {"blocks": []}  # (users done, reading before the stamp, reading after it)
    env_for, run = sweep_module._env_for, runner.run

    def ready(*args, **kwargs):  # execute_run reads its build time after this returns
        env = env_for(*args, **kwargs)
        clock["env"] = time.perf_counter()
        return env

    def timed_run(*args, callback, **kwargs):
        def stamped(k, cum):
            before = time.perf_counter()
            callback(k, cum)
            clock["blocks"].append((k, before, time.perf_counter()))

        clock["start"] = time.perf_counter()  # after the build
        return run(*args, callback=stamped, **kwargs)

    monkeypatch.setattr(sweep_module, "_env_for", ready)
    monkeypatch.setattr(runner, "run", timed_run)
    df, _ = sweep(
        {"name": "RiverSwimMixture", "S": 4, "H": 5},
        {"U": {"algorithm": "UCRL-VTR", "privacy": "none"}},
        episodes=2000,
        log_every=500,
        progress=False,
    )
    assert list(df.episode) == [500, 1000, 1500, 2000]
    wt = df.wall_time.to_numpy()
    assert np.isfinite(wt).all() and (wt > 1e-7).all() and (np.diff(wt) >= 0).all()
    assert clock["env"] <= clock["start"] and clock["blocks"][-1][0] == 2000
    for episode, stamp in zip(df.episode, wt, strict=True):
        _, before, after = next(b for b in clock["blocks"] if b[0] >= episode)  # the block reaching it
        assert before - clock["start"] <= stamp <= after - clock["env"], (episode, clock)


def test_sweep_takes_one_epsilon_and_numpy_counts():
    """Audit 5: sweep(epsilons=1.0) and sweep(seeds=np.int64(2)) were TypeErrors (not iterable),
    epsilons="inf" was split into characters, and numpy integers were refused as "must be an
    integer, got np.int64(20)"."""
    env, agents = (
        {"name": "RiverSwimMixture", "S": 4, "H": 5},
        {"U": {"algorithm": "UCRL-VTR", "privacy": "jdp"}},
    )
    base, m0 = sweep(env, agents, epsilons=[1.0], seeds=[0, 1], episodes=20, progress=False)
    for kw in (
        {"epsilons": 1.0, "seeds": 2},
        {"epsilons": np.float64(1.0), "seeds": np.int64(2)},
        {"epsilons": np.array([1.0]), "seeds": np.arange(2), "episodes": np.int64(20)},
    ):
        df, m = sweep(env, agents, **{"episodes": 20, **kw}, progress=False)
        assert list(m["runs"]) == list(m0["runs"])
        pd.testing.assert_frame_equal(strip(df), strip(base))
    df, _ = sweep(env, agents, epsilons="inf", episodes=20, progress=False)
    assert list(df.epsilon.unique()) == [math.inf]


def test_plot_and_plot_runs_refuse_what_they_cannot_draw(tmp_path):
    """Audit 5: plot_runs([]) was pandas' "No objects to concatenate", plot_runs([1, 2]) an
    AttributeError, plot(value="bogus") and a foreign DataFrame a KeyError; runs of different
    lengths were averaged into one curve (a single run past the shorter one's end)."""
    import privrl
    from privrl.agents import UCRLVTR
    from privrl.envs import RiverSwimMixture
    from privrl.experiment import plot
    from privrl.experiment.plots import plot_runs
    from privrl.privacy import NonPrivate

    env = RiverSwimMixture(S=4, H=5)
    runs = [privrl.run(UCRLVTR(env, NonPrivate(), episodes=K, seed=0), env, seed=0) for K in (20, 10)]
    for results, needle in (
        ([], "plot_runs takes"),
        ({}, "nothing to plot"),
        ([1, 2], "plot_runs takes"),
        (runs, "different lengths"),
    ):
        with pytest.raises(ConfigError, match=needle):
            plot_runs(results, tmp_path / "r")
    assert plot_runs(runs[:1], tmp_path / "r")["png"]
    df, _ = sweep(**{**SMALL, "seeds": [0]}, progress=False)
    with pytest.raises(ConfigError, match="value: must be one of regret, return, cum_return, got 'bogus'"):
        plot(df, tmp_path / "p", value="bogus")
    with pytest.raises(ConfigError, match="source: not a privrl results table: no column study"):
        plot(pd.DataFrame({"a": [1]}), tmp_path / "p")


def test_sweep_takes_a_contextual_bandit_object():
    """Audit 5: sweep(env=<ContextualBandit>) was refused ("expected ... a privrl FiniteMDP")
    although a FiniteMDP object is taken and LinUCB sweeps run on registered bandits."""
    from privrl.envs import ContextualBandit

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    env = ContextualBandit.from_classification(X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0), seed=0)
    agents = {"L": {"algorithm": "LinUCB", "privacy": "jdp"}, "N": {"algorithm": "LinUCB", "privacy": "none"}}
    kw = dict(epsilons=[1.0], seeds=2, episodes=100, log_every=50, progress=False)
    df, manifest = sweep(env, agents, **kw)
    assert len(manifest["runs"]) == 4 and set(df.algorithm) == {"LinUCB"}
    assert (df.regret > 0).all() and np.isfinite(df.regret).all()
    df2, _ = sweep(env, agents, n_jobs=2, **kw)
    pd.testing.assert_frame_equal(strip(df), strip(df2))


def test_one_seed_has_no_spread_and_ci95_uses_t_beyond_thirty_seeds(tmp_path):
    """One seed was reported as "mean +- 0.0" (std 0, a zero-width band); the ci95 band used the
    normal's 1.96 above 31 seeds (up to 4% too narrow)."""
    import io

    from privrl.experiment import report
    from privrl.experiment.summary import curves, t975

    # published Student-t 0.975 quantiles (df 30, 40, 60, 120) and the normal limit
    for df, q in ((30, 2.042), (31, 2.040), (40, 2.021), (60, 2.000), (120, 1.980), (10**9, 1.960)):
        assert round(t975(df), 3) == q
    df, _ = sweep(**{**SMALL, "seeds": [0]}, outdir=tmp_path / "one")
    buf = io.StringIO()
    table = report(tmp_path / "one", file=buf)
    assert table["regret_std"].isna().all() and " +- -" in buf.getvalue()
    band = curves(df, band="ci95")
    assert band["half"].isna().all() and band["std"].isna().all()


def test_run_ids_tell_environment_objects_apart_by_what_the_agents_read(tmp_path):
    # Same P, R and initial distribution, another C_w (UCRL-VTR reads it) or another feature map
    # (LSVI-UCB reads it): a results folder of the first environment must not be resumed as the
    # second's (it was, with the first's regret).
    from privrl.envs import LinearMDP, LinearMixtureMDP, RandomLinearMDP, RiverSwimMixture, tabular_linear_mdp

    b = RiverSwimMixture(S=5, H=8)

    def mixture(C_w):
        return LinearMixtureMDP(b.features, b.weights, b.R, b.init_dist, C_w=C_w, name="river")

    r = RandomLinearMDP(S=10, A=3, d=4, H=5, seed=0)
    low = LinearMDP(r.features, r.mu, r.theta, r.init_dist, name="lin")
    onehot = tabular_linear_mdp(r.P, r.R, r.init_dist, name="lin")
    kw = dict(epsilons=[1.0], seeds=1, episodes=60, progress=False)
    for (e1, e2), agent in (
        ((mixture(None), mixture(50.0)), {"algorithm": "UCRL-VTR", "privacy": "jdp"}),
        ((low, onehot), {"algorithm": "LSVI-UCB", "privacy": "jdp", "batches": 5}),
    ):
        out = tmp_path / agent["algorithm"]
        sweep(env=e1, agents={"A": agent}, outdir=out, **kw)
        with pytest.warns(UserWarning, match="runs of another config"):
            second, manifest = sweep(env=e2, agents={"A": agent}, outdir=out, **kw)
        alone, _ = sweep(env=e2, agents={"A": agent}, **kw)
        assert manifest["n_resumed"] == 0 and manifest["n_computed"] == 1
        assert second.regret.iloc[-1] == alone.regret.iloc[-1]


def test_run_ids_of_an_environment_without_features_are_unchanged():
    # the fingerprint gained features and C_w only where an environment has them: a plain finite
    # MDP keeps the id it had (computed by the code of 64369ed)
    from privrl.envs import FiniteMDP

    P = np.full((2, 2, 2, 2), 0.5)
    env = FiniteMDP(P, np.full((2, 2, 2), 0.25), np.array([1.0, 0.0]), name="two")
    cfg = build_config({"env": env, "agents": {"t": {"algorithm": "UCRL-VTR", "privacy": "none"}}})
    assert cfg.studies[0].env_fingerprint() == {"object": repr(env), "sha256": "165301253926c8d2"}


def test_a_sweep_env_with_seed_none_draws_one_model_per_study(tmp_path):
    """sweep({"name": "RandomLinearMixtureMDP", "seed": None}, ...) rebuilt the environment in every
    run, and seed=None draws a model from OS entropy at each construction: every run of the study
    had its own model. The seed is now drawn once per study when the config is built and recorded in
    the manifest's config, so the runs share one model and the recorded int reruns (and resumes)
    the sweep; each build of a config draws its own. An environment whose seed=None draws nothing
    (ClassificationBandit: no shuffle) keeps None."""
    env = {**ENV, "seed": None}
    agents = {"N": {"algorithm": "UCRL-VTR", "privacy": "none", "beta_scale": 0.1}}
    kw = dict(agents=agents, epsilons=[INF], seeds=[0, 1, 2], episodes=20, log_every=10)
    df, m = sweep(env=env, **kw, outdir=tmp_path / "a")
    seed = m["config"]["studies"][0]["env"]["seed"]
    assert (
        isinstance(seed, int) and load_manifest(tmp_path / "a")["config"]["studies"][0]["env"]["seed"] == seed
    )
    assert set(df["env"]) == {f"RandomLinearMixtureMDP(S=6, A=3, d=3, H=5, seed={seed})"}
    again, m2 = sweep(env={**ENV, "seed": seed}, **kw, outdir=tmp_path / "a")
    assert (m2["n_computed"], m2["n_resumed"]) == (0, 3)
    assert_same(again, sweep(env={**ENV, "seed": seed}, **kw)[0])
    assert_same(again, df)
    seeds = {build_config({"env": env, "agents": agents}).studies[0].env["seed"] for _ in range(2)}
    assert len(seeds) == 2 and all(isinstance(s, int) for s in seeds)
    bandit = {"name": "ClassificationBandit", "dataset": "digits", "seed": None}
    linucb = {"L": {"algorithm": "LinUCB", "privacy": "none"}}
    assert build_config({"env": bandit, "agents": linucb}).studies[0].env["seed"] is None


def test_a_notebook_without_ipywidgets_gets_a_text_bar_and_no_warning():
    """tqdm.auto in a Jupyter kernel without ipywidgets warned "IProgress not found. Please update
    jupyter and ipywidgets" before falling back to the text bar; the bar works without a widget, so
    privrl's bars come up with no warning (a fresh process: tqdm.auto warns on its first import)."""
    import subprocess
    import sys

    code = """
import sys, types, warnings
try:
    import ipywidgets  # noqa: F401
    print("has-ipywidgets"); raise SystemExit
except ImportError:
    pass
class ZMQInteractiveShell:  # what tqdm.autonotebook looks for (tqdm 4.70)
    config = {"IPKernelApp": {}}
sys.modules["IPython"] = types.SimpleNamespace(get_ipython=lambda: ZMQInteractiveShell())
sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")
with warnings.catch_warnings(record=True) as seen:  # tqdm.auto catches a warning raised as error
    warnings.simplefilter("always")
    from privrl.experiment.progress import bar
    b = bar(3, "users", True)
    b.update(3); b.close()
import tqdm.notebook, tqdm.std
text = isinstance(b, tqdm.std.tqdm) and not isinstance(b, tqdm.notebook.tqdm_notebook)
print(text, [str(w.message) for w in seen])
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    if res.stdout.strip() == "has-ipywidgets":
        pytest.skip("ipywidgets is installed: tqdm.auto gives the notebook widget")
    assert res.stdout.strip() == "True []"  # the text bar, no warning
