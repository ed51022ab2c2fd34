"""LinUCB and ContextualBandit as a new user meets them: bad parameters and inputs get a message
that says what is accepted."""

from __future__ import annotations

import datetime
import decimal
import fractions
import warnings

import numpy as np
import pytest

from privrl import run
from privrl.agents import LinUCB
from privrl.agents.linucb.calibration import calibrate_linucb, linucb_leaf_ends
from privrl.common.errors import (
    AssumptionWarning,
    NonFiniteError,
    PrivacyParameterError,
    ScheduleWarning,
    ShapeError,
)
from privrl.envs import ContextualBandit
from privrl.privacy import JointDP, LocalDP, NonPrivate


def small_bandit(n=60, p=4, A=3, seed=0):
    rng = np.random.default_rng(seed)
    return ContextualBandit.from_classification(rng.normal(size=(n, p)), np.arange(n) % A, seed=1)


@pytest.mark.parametrize("schedule", [1.5, 2.0, 0, -3, "Auto", "geom", None, True, [1, 2], 2**70])
@pytest.mark.parametrize("privacy", [NonPrivate(), JointDP(1.0, 1e-5)])
def test_a_bad_schedule_names_what_is_accepted(schedule, privacy):
    """schedule=1.5 said "schedule must be an integer >= 1", hiding the named schedules."""
    with pytest.raises(PrivacyParameterError, match=r"'auto'.*'geometric'.*'every'.*integer L") as e:
        LinUCB(small_bandit(), privacy, episodes=50, seed=0, schedule=schedule)
    assert repr(schedule) in str(e.value)
    with pytest.raises(PrivacyParameterError, match=r"'auto'.*'geometric'.*'every'.*integer L"):
        calibrate_linucb("jdp", 1.0, 1e-5, 50, 3, 4, schedule)
    with pytest.raises(PrivacyParameterError, match=r"'auto'.*'geometric'.*'every'.*integer L"):
        linucb_leaf_ends("jdp", 50, 4, schedule)


def test_good_schedules_are_taken():
    env = small_bandit()
    for schedule in ("auto", "geometric", "every", 7, np.int64(7)):
        ag = LinUCB(env, JointDP(1.0, 1e-5), episodes=50, seed=0, schedule=schedule)
        assert ag.schedule == schedule and type(ag.schedule) in (str, int)


def test_a_pandas_row_is_featurized_like_its_numpy_row():
    """``env.featurize(X.iloc[0])`` (a pandas Series) was refused with "'Float64DType' object is
    not iterable"."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(30, 4)), columns=list("abcd"))
    X["n"] = pd.array(rng.integers(0, 5, size=30), dtype="Int64")
    env = ContextualBandit.from_classification(X, np.arange(30) % 2, seed=0)
    for i in (0, 7):
        np.testing.assert_array_equal(env.featurize(X.iloc[i]), env.featurize(X.to_numpy(float)[i]))
    ag = LinUCB(env, JointDP(1.0, 1e-5), episodes=10, seed=0)
    assert 0 <= ag.choose(env.featurize(X.iloc[0])) < env.A
    with pytest.raises(ShapeError, match="real numeric"):
        env.featurize(pd.Series(["x"] * 5))


def test_a_raw_feature_row_given_as_a_context_points_to_featurize():
    """``agent.choose(raw_row)`` of a classification bandit (p_raw + 1 features after the
    intercept) only said the shape was wrong; the README's live-user recipe is featurize first."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 5))
    env = ContextualBandit.from_classification(X, np.arange(40) % 2, seed=0)
    ag = LinUCB(env, JointDP(1.0, 1e-5), episodes=10, seed=0, schedule=2)
    for call in (lambda: ag.choose(X[0]), lambda: ag.update(X[0], 0, 1.0)):
        with pytest.raises(ShapeError, match=r"env\.featurize"):
            call()
    with pytest.raises(ShapeError) as e:
        ag.choose(np.zeros(3))  # neither a context nor a raw row: no hint
    assert "featurize" not in str(e.value)
    assert 0 <= ag.choose(env.featurize(X[0])) < env.A


@pytest.mark.parametrize("y", [["1", 1] * 10, ["a", 1] * 10, [True, "x"] * 10, ["a", float("nan")] * 10])
def test_a_list_of_mixed_labels_is_refused_like_a_series_of_them(y):
    """numpy turns the list ["1", 1, ...] into strings: 1 and "1" became one class, "nan" a class
    of its own, where the same labels as a pandas Series (object) are refused."""
    X = np.random.default_rng(5).normal(size=(20, 3))
    with pytest.raises((ShapeError, NonFiniteError)):
        ContextualBandit.from_classification(X, y, seed=0)


def test_a_list_of_text_labels_is_still_taken():
    X = np.random.default_rng(5).normal(size=(20, 3))
    env = ContextualBandit.from_classification(X, ["cat", "dog"] * 10, seed=0)
    assert list(env.classes) == ["cat", "dog"] and env.classes.dtype.kind == "U"
    env = ContextualBandit.from_classification(X, (b"a", b"b") * 10)
    assert list(env.classes) == [b"a", b"b"]


@pytest.mark.parametrize(
    "label",
    [
        lambda i: decimal.Decimal(i),
        lambda i: fractions.Fraction(i, 1),
        lambda i: datetime.date(2000, 1, 1 + i),
    ],
)
def test_labels_an_agent_could_not_load_back_are_refused_at_construction(label):
    """Decimal labels built a bandit whose agent saved, and Agent.load refused the file (its classes
    held decimal.Decimal, a class the loader never reads): refused where they enter instead."""
    X = np.random.default_rng(5).normal(size=(20, 3))
    y = np.empty(20, dtype=object)
    y[:] = [label(i % 2) for i in range(20)]
    with pytest.raises(TypeError, match="integers, strings or booleans"):
        ContextualBandit.from_classification(X, y, seed=0)
    with pytest.raises(TypeError, match="integers, strings or booleans"):
        ContextualBandit.from_classification(X, list(y), seed=0)


@pytest.mark.parametrize(
    "labels",
    [[3, 7], ["cat", "dog"], [np.int64(3), np.int64(7)], [2.0, 5.0], [False, True], [b"a", b"b"]],
)
def test_object_labels_of_the_accepted_types_save_and_load_back(labels, tmp_path):
    """What from_classification takes in an object array (a pandas object column) an agent's file
    carries: the loaded agent's bandit has the same classes and the agent goes on as the original."""
    X = np.random.default_rng(5).normal(size=(20, 3))
    y = np.empty(20, dtype=object)
    y[:] = [labels[i % 2] for i in range(20)]
    env = ContextualBandit.from_classification(X, y, seed=0)
    agent = LinUCB(env, JointDP(1.0, 1e-5), episodes=40, seed=0)
    run(agent, env, episodes=10, seed=1)
    agent.save(tmp_path / "agent")
    loaded = LinUCB.load(tmp_path / "agent")
    assert list(loaded.env.classes) == list(env.classes) == sorted(set(labels))
    a, b = run(agent, env, episodes=10, seed=2), run(loaded, loaded.env, episodes=10, seed=2)
    np.testing.assert_array_equal(a.gaps, b.gaps)


@pytest.mark.parametrize(
    "args",
    [["--K", "5"], ["--seeds", "0"], ["--exploration", "greedy"], ["--datasets", "iris"], ["--K", "x"]],
)
def test_benches_bandits_refuses_bad_arguments_before_running(args, tmp_path, capsys):
    """--K 5 printed a table of NaN tenths ("last 10%" was the whole run), --seeds 0 ended in
    "'numpy.float64' object is not iterable", a misspelt dataset or exploration rule in a traceback
    after the other runs."""
    from _helpers import load_bench

    bench = load_bench("bandits.py", "bandits_bench")
    with pytest.raises(SystemExit) as e:
        bench.main([*args, "--privacy", "none", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert "error: argument" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_sparse_and_masked_features_are_refused_with_what_to_do():
    """A scipy sparse X (text features) was "got dtype object (encode text / categorical features
    as numbers first)"; a masked array's masked (missing) entries were used as values."""
    X = np.random.default_rng(6).normal(size=(20, 4))
    y = np.arange(20) % 2
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(ShapeError, match=r"sparse.*toarray"):
        ContextualBandit.from_classification(sparse.csr_matrix(X), y)
    env = ContextualBandit.from_classification(X, y)
    with pytest.raises(ShapeError, match=r"sparse.*toarray"):
        env.featurize(sparse.csr_matrix(X[:2]))
    with pytest.raises(NonFiniteError, match="masked"):
        ContextualBandit.from_classification(np.ma.masked_array(X, mask=X > 1), y)
    unmasked = ContextualBandit.from_classification(np.ma.masked_array(X), y)
    np.testing.assert_array_equal(unmasked.contexts, env.contexts)


@pytest.mark.parametrize("dtype", ["string", "boolean", object])
def test_pandas_missing_labels_are_named_as_missing(dtype):
    """A pandas "string" / "boolean" y with pd.NA was "labels cannot be sorted (boolean value of NA
    is ambiguous): give labels of one type"."""
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(7).normal(size=(6, 2))
    values = [True, False, None, True, False, True]
    if dtype != "boolean":
        values = ["a", "b", pd.NA, "a", "b", "a"]
    with pytest.raises(ShapeError, match="missing labels"):
        ContextualBandit.from_classification(X, pd.Series(values, dtype=dtype))
    full = pd.Series([v for v in values if v is not None and v is not pd.NA], dtype=dtype)
    assert len(ContextualBandit.from_classification(X[: len(full)], full).classes) == 2


def test_the_privacy_report_describes_linucbs_mechanisms():
    """LinUCB's report said "1 blt continual-release mechanisms of symmetric d x d matrices" (it
    runs one per arm, of p x p blocks; docs/privacy.md) and every LDP report "d x d matrice"."""
    env = small_bandit()
    jdp = {
        m["name"]: m["site"]
        for m in LinUCB(env, JointDP(1.0, 1e-5), episodes=50).privacy_report()["mechanisms"]
    }
    assert "per arm" in jdp["Lambda"] and "p x p" in jdp["Lambda"] and "p-vector" in jdp["u"]
    ldp = LinUCB(env, LocalDP(1.0, 1e-5), episodes=50).privacy_report()
    sites = [m["site"] for m in ldp["mechanisms"]]
    assert all("every arm" in s for s in sites) and "p x p" in sites[0]
    import privrl

    other = privrl.agents.UCRLVTR(privrl.envs.RiverSwimMixture(S=6, H=5), LocalDP(1.0, 1e-5), episodes=50)
    text = str(other.privacy_report())
    assert "matrice " not in text and "one symmetric d x d matrix release per step" in text


@pytest.mark.parametrize("value, n", [(0.1, 3), (0.7, 3), (1 / 3, 10), (2.2, 7), (1e5 + 0.1, 3)])
@pytest.mark.parametrize("kw", [{}, {"scale": "max"}, {"bias": False}])
def test_a_constant_column_is_dropped_whatever_its_value(value, n, kw):
    """A column of n equal values is constant: standardize drops it. numpy's std of three 0.1's is
    1.4e-17 (their mean rounds), and the column was kept, "standardized" by that sd into rounding
    noise of order 1 that took a share of every context's unit norm."""
    assert np.full(n, value).std() > 0  # the case: numpy's std of the constant column is not 0
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 2))
    y = np.arange(n) % 2
    with_const = ContextualBandit.from_classification(np.column_stack([X, np.full(n, value)]), y, **kw)
    without = ContextualBandit.from_classification(X, y, **kw)
    assert with_const.p == without.p
    np.testing.assert_array_equal(with_const.contexts, without.contexts)
    x = rng.normal(size=2)
    np.testing.assert_array_equal(with_const.featurize(np.append(x, value)), without.featurize(x))


KWS = [{}, {"scale": "max"}, {"bias": False}, {"standardize": False}, {"standardize": False, "bias": False}]


@pytest.mark.parametrize("scale", [1e-160, 1e-200, 1e-300])
@pytest.mark.parametrize("kw", KWS)
def test_tiny_features_give_the_table_of_their_scale_free_shape(scale, kw):
    """The transform is scale-free (standardize divides by the sd, scale divides by a norm), so X
    times 1e-200 gives X's table, as X times 1e150 does. The squares of features below ~1e-154
    underflowed: the column sds were 0 (or off by 1e-5), the table refused with 'the
    standardized features overflowed (too large in magnitude)' or with 'every context must have
    ||x|| <= 1 (... from_classification does)' (a row norm of 1e-300 for rows of norm 1e-200)."""
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(20, 3)), np.arange(20) % 2
    env = ContextualBandit.from_classification(X, y, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy divide-by-zero warning either
        tiny = ContextualBandit.from_classification(X * scale, y, **kw)
        np.testing.assert_allclose(tiny.contexts, env.contexts, rtol=0, atol=1e-12)
        np.testing.assert_allclose(tiny.featurize(X[3] * scale), env.contexts[3], rtol=0, atol=1e-12)


@pytest.mark.parametrize("lam", [1e-310, 5e-324])
@pytest.mark.parametrize(
    "privacy", [NonPrivate(), NonPrivate(calibration="paper"), JointDP(1.0, 1e-5), LocalDP(1.0, 0.0)]
)
def test_a_lam_whose_inverse_overflows_is_refused_by_name(lam, privacy):
    """A subnormal lam (positive, so taken) starts the billboard's inverse I / lam at infinity: the
    private agents released inf to every user before the first release, the non-private one
    was refused with 'regularization lambda must be finite and > 0 with 1/lambda finite, got
    0.000...' and the paper calibration blamed 'beta_scale = 1 times the calibration's radius
    inf'. The agent now names lam; the smallest lam whose inverse is finite is taken."""
    with pytest.raises(PrivacyParameterError, match=r"lam = .* is too small: .*I / lam.*overflows"):
        LinUCB(small_bandit(), privacy, episodes=50, seed=0, lam=lam)
    agent = LinUCB(small_bandit(), privacy, episodes=50, seed=0, lam=1e-300)
    assert np.isfinite(agent.release().inverse).all()


def test_benches_bandits_vw_without_vowpal_wabbit_is_refused_before_running(tmp_path, capsys, monkeypatch):
    """`benches/bandits.py --vw` (docs/privacy-cost.md) without Vowpal Wabbit's package ran every
    LinUCB run of the first dataset (at the default K = 10^5, minutes) and then died in
    ModuleNotFoundError: it is refused up front, naming the package to install."""
    import sys

    from _helpers import load_bench

    monkeypatch.setitem(sys.modules, "vowpalwabbit", None)  # not importable, whether installed or not
    bench = load_bench("bandits.py", "bandits_bench_vw")
    with pytest.raises(SystemExit) as e:
        bench.main(["--vw", "--privacy", "none", "--K", "10", "--seeds", "1", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert "pip install vowpalwabbit" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("X_of", [lambda x: x[:, None], lambda x: np.column_stack([x, np.full(len(x), 3.0)])])
def test_one_feature_column_on_the_unit_sphere_is_warned_of(X_of):
    """A single feature (or a single one left once constant columns are dropped) put on the unit
    sphere by scale="row" keeps only its sign: 2,000 rows became 2 distinct contexts, silently, and
    three classes cut at x = -0.5 / 0.5 lost what separates them. Now an AssumptionWarning names
    scale="max", which keeps the magnitude (2,000 distinct contexts); two columns are not warned of."""
    x = np.random.default_rng(0).normal(size=2000)
    y = np.digitize(x, [-0.5, 0.5])
    with pytest.warns(AssumptionWarning, match=r"only its sign .* scale=\"max\""):
        env = ContextualBandit.from_classification(X_of(x), y)
    assert len(np.unique(env.contexts.round(12), axis=0)) == 2  # the collapse it warns of
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = ContextualBandit.from_classification(X_of(x), y, scale="max")
        ContextualBandit.from_classification(np.column_stack([x, x**2]), y)
    assert len(np.unique(kept.contexts.round(12), axis=0)) == 2000


def test_non_finite_features_are_refused_naming_where_and_what_to_do():
    """NaN / inf in X was refused as a bare "X contains NaN or inf": with 500 rows of 5 features the
    user had to search for it. The message now names the first entry's row and column, how many
    rows hold one, and the remedy (drop or impute those rows)."""
    X, y = np.random.default_rng(0).normal(size=(500, 5)), np.arange(500) % 3
    X[3, 2], X[40, 0], X[40, 4] = np.nan, np.inf, np.nan
    with pytest.raises(NonFiniteError, match=r"X\[3, 2\] = nan, in 2 of its 500 rows; drop or impute"):
        ContextualBandit.from_classification(X, y)


@pytest.mark.parametrize("privacy", [JointDP(1.0, 1e-5), LocalDP(1.0, 1e-5)])
def test_a_single_user_gets_no_schedule_warning(privacy):
    """K = 1 has no later user to read a release, so "none of its users ever sees a release" (and
    its advice, schedule=<int> < K = 1, impossible) was a false alarm; LSVI-UCB and PSRL warn only
    for K > 1. K = 2, whose second user plans on the initial billboard, still warns."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        LinUCB(small_bandit(), privacy, episodes=1, seed=0)
    assert [w for w in caught if issubclass(w.category, ScheduleWarning)] == []
    with pytest.warns(ScheduleWarning, match="none of its users ever sees a release"):
        LinUCB(small_bandit(), privacy, episodes=2, seed=0)
