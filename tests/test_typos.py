"""Off the happy path: a mistyped or wrongly cased name gets the close valid one suggested, wherever
a list of valid names exists (config keys, registered names, the choices an option takes)."""

import re

import pytest

from privrl.agents import LSVIUCB, UCRLVTR, LinUCB
from privrl.common.checks import did_you_mean
from privrl.envs import RandomLinearMDP, RiverSwimMixture
from privrl.envs.bandit import ContextualBandit
from privrl.exceptions import PrivacyParameterError
from privrl.experiment import ConfigError
from privrl.experiment.cli import main
from privrl.experiment.parsing import build_config
from privrl.kernels import make_prefix_mechanism
from privrl.privacy import JointDP, LocalDP

RIVER = RiverSwimMixture(S=3, H=2)
ENV = {"name": "RiverSwimMixture", "S": 3, "H": 2}


def test_did_you_mean_ignores_case_and_spells_the_suggestion_as_accepted():
    assert did_you_mean("BLT", ("tree", "honaker", "factorization", "blt")) == "did you mean 'blt'? "
    assert did_you_mean("Random", ("random", "lowest")) == "did you mean 'random'? "
    assert did_you_mean("SS", ["A", "H", "S", "d"]) == "did you mean 'S'? "
    assert did_you_mean("foo", ("optimism", "sampling")) == ""


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: UCRLVTR(RIVER, episodes=5, ties="Random"), "got 'Random'; did you mean 'random'?"),
        (lambda: UCRLVTR(RIVER, episodes=5, exploration="optimsm"), "did you mean 'optimism'?"),
        (lambda: UCRLVTR(RIVER, episodes=5, centre="feasable"), "did you mean 'feasible'?"),
        (lambda: JointDP(1.0, 1e-5, calibration="tigth"), "got 'tigth'; did you mean 'tight'?"),
        (lambda: JointDP(1.0, 1e-5, mechanism="BLT"), "got 'BLT'; did you mean 'blt'?"),
        (lambda: LocalDP(1.0, 1e-5, sampler="Float"), "did you mean 'float'?"),
        (lambda: make_prefix_mechanism("Honaker", 2, 4, scale=1.0, seed=0), "did you mean 'honaker'?"),
        (lambda: make_prefix_mechanism("tree", 2, 4, noise="Gaussian", seed=0), "did you mean 'gaussian'?"),
        (
            lambda: LSVIUCB(RandomLinearMDP(seed=0), JointDP(1.0, 1e-5), episodes=5, batches="evry"),
            "got 'evry'; did you mean 'every'?",
        ),
    ],
)
def test_a_mistyped_choice_names_the_close_one(build, needle):
    with pytest.raises(PrivacyParameterError, match=re.escape(needle)):
        build()


def test_linucb_schedule_typo_names_the_close_one():
    bandit = ContextualBandit([[0.5, 0.0], [0.0, 0.5]], [[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(PrivacyParameterError, match=re.escape("got 'geometrc'; did you mean 'geometric'?")):
        LinUCB(bandit, JointDP(1.0, 1e-5), episodes=5, schedule="geometrc")


def test_a_choice_without_a_close_one_is_refused_as_before():
    with pytest.raises(PrivacyParameterError) as exc:
        UCRLVTR(RIVER, episodes=5, exploration="foo")
    assert str(exc.value) == "exploration must be one of 'optimism', 'sampling', got 'foo'"


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("mechanism", "BLT", "unknown mechanism 'BLT'; did you mean 'blt'?"),
        ("calibration", "Tight", "unknown calibration 'Tight'; did you mean 'tight'?"),
        ("sampler", "discret", "unknown sampler 'discret'; did you mean 'discrete'?"),
        ("privacy", "jpd", "unknown privacy model 'jpd'; did you mean 'jdp'?"),
    ],
)
def test_config_choices_suggest_the_close_one(option, value, needle):
    with pytest.raises(ConfigError, match=re.escape(needle)) as exc:
        build_config({"env": ENV, "agents": {"J": {"algorithm": "UCRL-VTR", option: value}}})
    assert exc.value.key == f"agents.J.{option}"


def test_cli_suggests_the_close_mechanism(tmp_path, capsys):
    argv = ["run", "--env", "RiverSwimMixture", "--env-arg", "S=3,H=2", "-K", "5", "--seeds", "1"]
    argv += ["--agent", "J:algorithm=UCRL-VTR,mechanism=BLT", "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "privrl: error: agents.J.mechanism: unknown mechanism 'BLT'; did you mean 'blt'?" in err
    assert "Traceback" not in err and not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("raw", "key", "needle"),
    [
        (
            {"env": ENV, "agents": {"J": {"algorithm": "UCRL-VTR", "beta_scal": 0.1}}},
            "agents.J.beta_scal",
            "(UCRL-VTR accepts beta, beta_scale,",
        ),
        (
            {"env": ENV, "agents": {"J": {"algorithm": "linucb", "ridge": 1.0}}},
            "agents.J.ridge",
            "unknown option; LinUCB accepts ",
        ),
        (
            {"env": {"name": "frozenlake", "HH": 8}, "agents": {"J": {"algorithm": "LSVI-UCB"}}},
            "env.HH",
            "(FrozenLake accepts ",
        ),
    ],
)
def test_an_unknown_option_names_the_algorithm_or_environment_as_the_config_does(raw, key, needle):
    """It said '__init__ accepts ...' for an agent option and 'frozen_lake accepts ...' for an
    environment built by a function: the names of Python internals, not of the config."""
    with pytest.raises(ConfigError, match=re.escape(needle)) as exc:
        build_config(raw)
    assert exc.value.key == key
    assert "__init__" not in str(exc.value) and "frozen_lake" not in str(exc.value)


@pytest.mark.parametrize("typo", ["algoritm", "Algorithm", "algorthm"])
def test_a_misspelled_algorithm_key_is_named(typo):
    """`algoritm = "UCRL-VTR"` said only 'agents.J.algorithm: missing': the key written, which is why
    it is missing, was not named."""
    with pytest.raises(ConfigError, match=re.escape("unknown key; did you mean 'algorithm'?")) as exc:
        build_config({"env": ENV, "agents": {"J": {typo: "UCRL-VTR", "privacy": "jdp"}}})
    assert exc.value.key == f"agents.J.{typo}"
    assert "UCRL-VTR, UCRL-VTR+, LSVI-UCB, LinUCB" in str(exc.value)


def test_a_missing_algorithm_without_a_near_key_is_still_missing():
    with pytest.raises(ConfigError, match=re.escape("missing (one of UCRL-VTR")) as exc:
        build_config({"env": ENV, "agents": {"J": {"privacy": "jdp"}}})
    assert exc.value.key == "agents.J.algorithm"


def test_cli_names_the_misspelled_algorithm_key(tmp_path, capsys):
    argv = ["run", "--env", "RiverSwimMixture", "--env-arg", "S=3,H=2", "-K", "5", "--seeds", "1"]
    argv += ["--agent", "J:algoritm=UCRL-VTR", "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "privrl: error: agents.J.algoritm: unknown key; did you mean 'algorithm'?" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("resume", ["no", "false", 0, 1, None])
def test_sweep_refuses_a_resume_that_is_not_a_bool(tmp_path, resume):
    """sweep(..., resume="no") was taken as true: the folder's finished runs were loaded, not
    recomputed, while the caller believed they were (progress= was already checked)."""
    from privrl.experiment import sweep

    kw = {
        "env": ENV,
        "agents": {"U": {"algorithm": "UCRL-VTR", "privacy": "none"}},
        "episodes": 5,
        "progress": False,
        "outdir": tmp_path / "r",
    }
    _, first = sweep(**kw)
    with pytest.raises(TypeError, match=re.escape(f"resume must be True or False, got {resume!r}")):
        sweep(**kw, resume=resume)
    _, fresh = sweep(**kw, resume=False)
    assert (first["n_resumed"], fresh["n_resumed"], fresh["n_computed"]) == (0, 0, 1)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--env-arg", "S=3,H=2", "--agent", "J:algorithm=UCRL-VTR,beta_scale=0.1,beta_scale=0.2"],
            "privrl: error: --agent J: beta_scale is given twice (0.1 and 0.2); give it once",
        ),
        (
            ["--env-arg", "S=3,H=2,S=4", "--agent", "J:algorithm=UCRL-VTR"],
            "privrl: error: --env-arg: S is given twice (3 and 4); give it once",
        ),
        (
            ["--env-arg", "S=3,H=2", "--env-arg", "S=4", "--agent", "J:algorithm=UCRL-VTR"],
            "privrl: error: --env-arg: S is given twice (3 and 4); give it once",
        ),
    ],
)
def test_cli_refuses_a_key_given_twice(tmp_path, capsys, flags, message):
    """The last of two values silently won (beta_scale=0.1,beta_scale=0.2 ran at 0.2; S=3,...,S=4
    at S = 4): one of the two settings the user wrote was dropped without a word."""
    argv = [
        "run",
        "--env",
        "RiverSwimMixture",
        "-K",
        "5",
        "--seeds",
        "1",
        *flags,
        "--out",
        str(tmp_path / "r"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and not (tmp_path / "r").exists()


def test_cli_env_arg_still_overrides_the_config(tmp_path):
    from privrl.experiment import load_manifest

    config = tmp_path / "c.toml"
    config.write_text(
        'episodes = 5\nseeds = 1\n[env]\nname = "RiverSwimMixture"\nS = 3\nH = 2\n'
        '[agents.U]\nalgorithm = "UCRL-VTR"\nprivacy = "none"\n'
    )
    out = tmp_path / "r"
    assert main(["run", str(config), "--env-arg", "S=4", "--out", str(out), "--no-progress"]) == 0
    (study,) = load_manifest(out)["config"]["studies"]
    assert study["env"] == {"name": "RiverSwimMixture", "S": 4, "H": 2}


@pytest.mark.parametrize(
    ("option", "needle"),
    [("episodes", "the top-level or [[study]] `episodes`"), ("seed", "`seeds` and `root_seed`")],
)
def test_an_agent_spec_setting_what_the_sweep_sets_is_told_where_it_goes(option, needle):
    """`episodes = 5` in an agent table was told "did you mean 'epsilons'?": the wrong key, for a
    setting that exists, per study."""
    with pytest.raises(ConfigError, match=re.escape("not an agent option: ")) as exc:
        build_config({"env": ENV, "agents": {"J": {"algorithm": "UCRL-VTR", option: 5}}})
    assert exc.value.key == f"agents.J.{option}"
    assert needle in str(exc.value) and "epsilons'?" not in str(exc.value)
