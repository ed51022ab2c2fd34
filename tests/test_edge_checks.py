"""The public edge's checks read in one Rust pass (helper audit of the per-call overhead) refuse
exactly what their numpy expressions refused, with the same exception and message."""

import numpy as np
import pytest

from privrl import _core
from privrl.common.checks import check_all_finite
from privrl.common.errors import NonFiniteError, ShapeError


def _arrays():
    """Contiguous, strided, transposed, 0-d, empty and 3-d float64 arrays, with NaN / inf / -inf /
    -0.0 / subnormal / huge entries in every position class (vectorized lanes and the tail)."""
    rng = np.random.default_rng(7)
    out = [rng.normal(size=n) for n in (1, 7, 8, 9, 16, 17, 100)]
    out += [rng.normal(size=(5, 5)), rng.normal(size=(6, 14))[:, ::3], rng.normal(size=(4, 6)).T]
    out += [np.array(2.5), np.array(-np.inf), np.zeros(0), np.zeros((3, 0)), rng.normal(size=(2, 3, 4))]
    out += [np.array([-0.0, 5e-324, -1.7e308, 1e300]), np.full(11, -0.0)]
    for n in (3, 8, 13, 40):
        for at in {0, n // 2, n - 1}:
            for bad in (np.nan, np.inf, -np.inf):
                a = rng.normal(size=n)
                a[at] = bad
                out.append(a)
    both = rng.normal(size=24)
    both[[3, 20]] = (np.inf, np.nan)  # an inf and a NaN: NaN, as np.abs(a).max()
    out += [both, both[::-1].copy(), both[::2]]
    return out


def test_max_abs_is_numpys_abs_max():
    """_core.max_abs(a) is np.abs(a).max() (NaN when an entry is NaN, 0 for no entries) on every
    layout; check_all_finite takes its finiteness for np.isfinite(a).all()."""
    for a in _arrays():
        got = _core.max_abs(a)
        want = np.abs(a).max() if a.size else 0.0
        assert (np.isnan(got) and np.isnan(want)) or got == want, a
        assert np.isfinite(got) == bool(np.isfinite(a).all())


def _old_check_all_finite(a, name):
    """check_all_finite before the Rust pass (numpy's isfinite)."""
    if a.size and not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        raise NonFiniteError(
            f"{name} contains a non-finite value {a[tuple(bad)]} at index {tuple(int(i) for i in bad)}"
        )
    return a


def _outcome(f, a):
    try:
        return f(a, "x") is a
    except Exception as e:  # the class and message are what is compared
        return type(e), str(e)


def test_check_all_finite_refuses_what_numpy_refused():
    """The same array back, or the same exception class and message (first bad index in
    logical order), on float64 arrays of every layout and on the dtypes and subclasses still read
    by numpy: ints, bools, float32, big-endian float64 and a masked array (whose masked NaN
    passes, as before)."""
    cases = _arrays()
    cases += [np.arange(6), np.array([True, False]), np.array([1.0, np.nan], dtype=np.float32)]
    cases += [np.array([1.0, np.inf, 2.0], dtype=">f8"), np.array([3.0, 1.0], dtype=">f8")]
    cases += [np.ma.masked_invalid(np.array([1.0, np.nan])), np.ma.array([np.inf, 1.0], mask=[False, True])]
    for a in cases:
        assert _outcome(check_all_finite, a) == _outcome(_old_check_all_finite, a), a
    with pytest.raises(NonFiniteError, match=r"x contains a non-finite value nan at index \(1, 0\)"):
        check_all_finite(np.array([[1.0, np.nan], [3.0, 4.0]]).T, "x")


def _old_bounded_rows(x, name):
    """kernels._bounded_rows before its Rust pre-check (numpy's einsum alone)."""
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.einsum("...i,...i->...", x, x)
    if not np.all(np.isfinite(sq)) and np.all(np.isfinite(x)):
        raise NonFiniteError(f"{name}: ||x||^2 overflows a float (entries up to ~1e154 are representable)")
    return x


def test_rank_one_rows_skip_the_numpy_norm_test_only_where_it_passes():
    """RankOneInverse.update / update_batch skip the ||x||^2 test when every |x_i| <= 1e150 (one
    Rust pass): the squares' sums then stay finite in any order (rows of 10^5 entries at the
    bound included), and the outcome is the numpy test's on both sides of the bound."""
    from privrl.kernels import _SAFE_ENTRY, _bounded_rows

    for n in (1, 5, 8, 10**5):
        edge = np.full(n, -_SAFE_ENTRY)
        assert np.isfinite(np.einsum("i,i->", edge, edge)) and np.isfinite(edge @ edge)
    rng = np.random.default_rng(3)
    cases = [rng.normal(size=5), rng.normal(size=(4, 5)), np.full(3, _SAFE_ENTRY), np.zeros((0, 3))]
    cases += [np.array([1e154, 1.0]), np.array([[1.0, 2.0], [2e154, 1e154]]), np.array([1e151, 0.0])]
    cases += [np.array([np.nan, 1e200]), np.array([np.inf, 1.0]), np.array([[1e300, 1.0], [1.0, np.nan]])]
    for x in cases:
        assert _outcome(_bounded_rows, x) == _outcome(_old_bounded_rows, x), x


def test_value_range_is_numpys_min_and_max():
    from privrl.common.checks import value_range

    rng = np.random.default_rng(5)
    big = np.array([-(2**63), 2**63 - 1, 0], dtype=np.int64)
    cases = [rng.integers(-9, 9, n) for n in (1, 2, 7, 40)] + [big, rng.integers(0, 5, 20)[::3]]
    cases += [
        np.array([3, 1], dtype=np.int32),
        np.array([2**64 - 1, 0], dtype=np.uint64),
        np.arange(6).reshape(2, 3),
    ]
    for x in cases:
        lo, hi = value_range(x)
        assert (lo, hi) == (x.min(), x.max()) and type(lo)(hi) == hi, x


def _old_check_trajectory(agent, t):
    """Agent._check_trajectory before the Rust passes (numpy's min / max / isfinite)."""
    agent._check_budget()
    out = []
    for name, arr, n, hi in (
        ("states", t.states, agent.H + 1, agent.S),
        ("actions", t.actions, agent.H, agent.A),
    ):
        x = np.asarray(arr)
        if x.shape != (n,):
            raise ShapeError(f"trajectory {name} must have shape ({n},) for H = {agent.H}, got {x.shape}")
        if x.dtype.kind not in "iu":
            raise TypeError(f"trajectory {name} must be integers, got dtype {x.dtype}")
        if n and (x.min() < 0 or x.max() >= hi):
            raise ShapeError(f"trajectory {name} must lie in [0, {hi}), got values in [{x.min()}, {x.max()}]")
        out.append(np.ascontiguousarray(x, dtype=np.int64))
    r = np.asarray(t.rewards)
    if r.shape != (agent.H,) or r.dtype.kind not in "biuf":
        raise ShapeError(
            f"trajectory rewards must be {agent.H} real numbers, got shape {r.shape}, dtype {r.dtype}"
        )
    if not np.isfinite(r).all():
        raise NonFiniteError("trajectory rewards contain NaN or inf")
    return out[0], out[1], np.ascontiguousarray(r, dtype=np.float64)


def test_an_agents_trajectory_check_refuses_what_numpy_refused():
    """observe()'s index and reward checks (int64 index vectors and float64 rewards in one Rust
    pass each) return the same arrays, or raise the same exception and message, as numpy's."""
    from privrl.agents import LSVIUCB
    from privrl.envs import FeatureMap, Trajectory

    agent = LSVIUCB(FeatureMap.one_hot(4, 2, 3), privacy=None, episodes=10, seed=0)
    s, a, r = np.array([0, 3, 2, 1]), np.array([1, 0, 1]), np.array([0.5, 1.0, 0.0])
    states = [s, s[::-1], np.array([0, 4, 2, 1]), np.array([-1, 0, 0, 0]), s.astype(np.uint8)]
    states += [np.array([0, 2**64 - 1, 0, 0], dtype=np.uint64), s.astype(np.int32), np.arange(8)[::2], s[:3]]
    actions = [a, np.array([0, 2, 1]), np.array([1, -5, 0], dtype=np.int16), a.astype(float)]
    rewards = [r, np.array([0.0, np.nan, 1.0]), np.array([np.inf, 0, 0]), np.array([1, 0, 1]), r > 0]
    rewards += [np.array([0.5, -np.inf, 0.1])[::-1], r.astype(np.float32), np.array([1.0, np.nan], "f4")]

    def outcome(f, t):
        try:
            return [x.tolist() for x in f(t)]
        except Exception as e:  # the class and message are what is compared
            return type(e), str(e)

    for ss in states:
        for aa in actions:
            for rr in rewards:
                t = Trajectory(ss, aa, rr)
                assert outcome(agent._check_trajectory, t) == outcome(
                    lambda t: _old_check_trajectory(agent, t), t
                ), (ss, aa, rr)


def test_as_f64_shape_check_skips_only_an_equal_shape():
    """as_f64 skips its per-axis loop when the shape equals the one asked for (0.55 us a call):
    the loop's outcome (the array, or the ShapeError naming the axis) on equal, partly free
    (None), mismatched, shorter and list shapes."""
    from privrl.common.checks import as_f64

    def old(x, name, ndim, shape):
        a = as_f64(x, name, ndim)
        for i, (got, want) in enumerate(zip(a.shape, shape, strict=False)):
            if want is not None and got != want:
                raise ShapeError(
                    f"{name} must have shape {tuple('*' if s is None else s for s in shape)}, "
                    f"got {a.shape} (axis {i})"
                )
        return a

    x = np.zeros((3, 4))
    for shape in [
        (3, 4),
        (3, None),
        (None, 4),
        (None, None),
        (4, 3),
        (3, 5),
        (3,),
        [3, 4],
        [3, 5],
        (np.int64(3), 4),
    ]:
        assert _outcome(lambda a, n, s=shape: as_f64(a, n, 2, s), x) == _outcome(
            lambda a, n, s=shape: old(a, n, 2, s), x
        )


def test_scalar_checks_take_a_float_as_before():
    """kernels._scalar and check_finite_real take a built-in float without the numbers.Real
    isinstance (0.3 us a call): the same value, or the same exception and message, as the full
    test on floats (NaN, +-inf, -0.0, extremes), float subclasses, bools, ints, numpy scalars,
    fractions, strings and None."""
    import fractions
    import math
    import numbers

    from privrl.common.checks import check_finite_real
    from privrl.common.errors import PrivacyParameterError
    from privrl.kernels import _scalar

    def old_scalar(x, name):
        if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
            raise TypeError(f"{name} must be a real number, got {x!r}")
        try:
            return float(x)
        except OverflowError:
            raise PrivacyParameterError(f"{name} is too large for a double: {x!r}") from None

    def old_finite(x, name, positive):
        if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
            raise PrivacyParameterError(f"{name} must be a real number, got {x!r}")
        try:
            v = float(x)
        except (OverflowError, ValueError, TypeError):
            raise PrivacyParameterError(f"{name} must be a finite real number, got {x!r}") from None
        if not math.isfinite(v) or v < 0 or (positive and v == 0):
            raise PrivacyParameterError(
                f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {x!r}"
            )
        return v

    class Sub(float):
        pass

    def outcome(f, x):
        try:
            v = f(x)
            return type(v), repr(v)
        except Exception as e:  # the class and message are what is compared
            return type(e), str(e)

    values = [1.5, 0.0, -0.0, math.nan, math.inf, -math.inf, 1e308, 5e-324, -2.0, Sub(2.5), Sub(math.nan)]
    values += [True, 3, 10**400, np.float32(0.5), np.float64(-1.0), np.int64(7), fractions.Fraction(1, 3)]
    values += ["1.5", None, 1 + 0j, np.array(1.0)]
    for x in values:
        assert outcome(lambda v: _scalar(v, "b"), x) == outcome(lambda v: old_scalar(v, "b"), x), x
        for pos in (True, False):
            assert outcome(lambda v, p=pos: check_finite_real(v, "s", p), x) == outcome(
                lambda v, p=pos: old_finite(v, "s", p), x
            ), x


def test_beta_and_beta_scale_together_are_refused():
    """beta replaces the exploration radius and beta_scale multiplies the calibration's: given both,
    beta_scale was silently dropped (beta_used = beta) while calibration.beta_scale, and so every
    sweep record, said 2. Refused at construction (a sweep: "agents.J.beta: replaces ..."); either
    alone as before, and beta with the default beta_scale = 1."""
    from privrl.agents import LSVIUCB, UCRLVTR, LinUCB, UCRLVTRPlus
    from privrl.common.errors import PrivacyParameterError
    from privrl.envs import ContextualBandit, RandomLinearMDP, RiverSwimMixture
    from privrl.privacy import JointDP

    mix, lin = RiverSwimMixture(S=4, H=3), RandomLinearMDP(S=6, A=2, d=3, H=3, seed=0)
    rng = np.random.default_rng(0)
    bandit = ContextualBandit.from_classification(rng.normal(size=(20, 3)), np.arange(20) % 2, seed=1)
    for cls, env in ((UCRLVTR, mix), (UCRLVTRPlus, mix), (LSVIUCB, lin), (LinUCB, bandit)):
        both = r"beta replaces .* \(beta = 3\) .* \(beta_scale = 2\): give one"
        with pytest.raises(PrivacyParameterError, match=both):
            cls(env, JointDP(1.0, 1e-5), episodes=50, beta=3, beta_scale=2)
        assert cls(env, JointDP(1.0, 1e-5), episodes=50, beta=3).calibration.beta_used == 3
        assert cls(env, JointDP(1.0, 1e-5), episodes=50, beta=3, beta_scale=1).calibration.beta_used == 3
        scaled = cls(env, JointDP(1.0, 1e-5), episodes=50, beta_scale=2).calibration
        assert scaled.beta_scale == 2
