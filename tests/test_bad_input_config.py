"""A number in a sweep's config or arguments that no double holds (an int such as 10**400): refused
as not finite, with the key's name (a ConfigError, a ValueError). float() raised a bare
OverflowError ('int too large to convert to float') from check_number, the parser of config
numbers (found by hB's bad-input fuzz: build_config / sweep with epsilons=[10**400])."""

import contextlib
import math

import pytest

from privrl.common.checks import check_number
from privrl.exceptions import PrivacyParameterError
from privrl.experiment import ConfigError, build_config

CONFIG = {"env": "riverswim", "agents": {"a": {"algorithm": "psrl"}}, "seeds": 1, "episodes": 10}


@pytest.mark.parametrize("value", [10**400, -(10**400)])
def test_an_epsilon_beyond_a_double_is_refused_naming_it(value):
    with pytest.raises(ConfigError, match=r"epsilons\[1\]: must be a finite number"):
        build_config(dict(CONFIG, epsilons=[1.0, value]))


@pytest.mark.parametrize("integer", [False, True])
def test_check_number_refuses_an_int_beyond_a_double_as_not_finite(integer):
    for value in (10**400, -(10**400)):
        with pytest.raises(PrivacyParameterError, match=r"n must be a finite number"):
            check_number(value, "n", integer=integer, allow_inf=True)
    # what a double holds is taken as before: a big int, inf where allowed
    assert check_number(2**60, "n", integer=integer) == 2**60
    assert check_number("inf", "n", allow_inf=True) == math.inf


@pytest.mark.parametrize("key,zero_d,scalar", [("seeds", 1, 1), ("epsilons", 1.0, 1.0)])
def test_sweep_takes_a_0d_array_as_its_number(key, zero_d, scalar):
    # seeds=np.array(1) / epsilons=np.array(1.0) raised 'iteration over a 0-d array' (a TypeError
    # naming no argument) from list(); numpy's scalars were taken, and so is their 0-d array now
    import warnings

    import numpy as np

    from privrl.envs import RiverSwimMixture
    from privrl.experiment import sweep
    from privrl.experiment.parsing import listed

    assert listed(np.array(zero_d)) == scalar and type(listed(np.array(zero_d))) is type(scalar)
    env = RiverSwimMixture(S=3, H=3)
    kw = {"epsilons": [1.0], "seeds": 1, key: np.array(zero_d)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sweep(env, {"u": "ucrl_vtr"}, episodes=3, **kw)
        want = sweep(env, {"u": "ucrl_vtr"}, episodes=3, **dict(kw, **{key: scalar}))
    assert got[0]["regret"].tolist() == want[0]["regret"].tolist()
    with pytest.raises(ConfigError, match=key):
        sweep(env, {"u": "ucrl_vtr"}, episodes=3, **dict(kw, **{key: np.array("x")}))


@pytest.mark.parametrize("key", ["format", "backend", "band"])
@pytest.mark.parametrize("value", [[], ["csv", "parquet"]])
def test_a_choice_given_as_an_array_is_refused_naming_its_key(key, value):
    # `value in (choices)` with an array was numpy's 'truth value of an array is ambiguous', a
    # ValueError naming no key
    import numpy as np

    with pytest.raises(ConfigError, match=rf"^{key}: must be"):
        build_config(dict(CONFIG, epsilons=[1.0], **{key: np.array(value)}))


@pytest.mark.parametrize("value", [[], ["4x4", "8x8"]])
def test_frozen_lake_refuses_a_map_name_array_naming_it(value):
    import numpy as np

    pytest.importorskip("gymnasium")
    from privrl.envs import frozen_lake
    from privrl.exceptions import AssumptionError

    with pytest.raises(AssumptionError, match=r"map_name must be one of"):
        frozen_lake(map_name=np.array(value))


@pytest.mark.parametrize(
    "flag, text, read",
    [("--epsilons", "1e400", "inf"), ("--epsilons", "1,1E400", "inf"), ("--delta", "1e-400", "0.0")],
)
def test_a_float_literal_beyond_a_double_is_refused_not_read_as_inf_or_zero(
    flag, text, read, tmp_path, monkeypatch, capsys
):
    """The float literal's sibling of the int above: epsilons = 1e400 (a TOML file or --epsilons)
    was read as inf, so a jdp agent ran non-private where 1e20 is refused as out of range, and
    delta = 1e-400 (--delta, or the file) as 0, pure DP, where 1e-200 is refused (hB's input
    pass). Refused, naming the number; inf and 0 written as such are taken as before."""
    from privrl.experiment.cli import main

    monkeypatch.chdir(tmp_path)
    head = 'name = "t"\nepisodes = 3\n[env]\nname = "RiverSwimMixture"\nS = 3\nH = 2\n'
    (tmp_path / "c.toml").write_text(head + '[agents.J]\nalgorithm = "UCRL-VTR"\nprivacy = "jdp"\n')
    with pytest.raises(SystemExit, match=r"^2$") if flag == "--delta" else contextlib.nullcontext():
        assert main(["run", "c.toml", "-o", "r", "--no-progress", flag, text]) == 2
    assert (
        f"the number {text.split(',')[-1]} is beyond a double's range, read as {read}"
        in capsys.readouterr().err
    )
    key = "epsilons" if flag == "--epsilons" else "delta"
    (tmp_path / "d.toml").write_text(
        f"{key} = {'[' + text + ']' if key == 'epsilons' else text}\n{head}"
        '[agents.J]\nalgorithm = "UCRL-VTR"\nprivacy = "jdp"\n'
    )
    with pytest.raises(ConfigError, match=r"^CONFIG: .*d\.toml: the number .* is beyond a double's range"):
        from privrl.experiment import load_config

        load_config(tmp_path / "d.toml")
    assert not (tmp_path / "r").exists()
    assert main(["run", "c.toml", "-o", "r", "--no-progress", flag, "inf" if read == "inf" else "0"]) == 0
