"""Rust kernels against their numpy references, noise statistics, and error handling."""

import math
import subprocess
import sys

import numpy as np
import pytest

from privrl import kernels as kn
from privrl.exceptions import (
    AssumptionError,
    CapacityError,
    NonFiniteError,
    NotPositiveDefiniteError,
    PrivacyParameterError,
    PrivrlError,
    SeedError,
    ShapeError,
)
from privrl.kernels import reference as R


def rel_close(a, b, tol=1e-10):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)
    return float(np.abs(a - b).max()) <= tol * scale


def spd(rng, d, ridge=1.0):
    m = rng.standard_normal((d, d))
    return m @ m.T / d + ridge * np.eye(d)


# ---------------------------------------------------------------- batched Q


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("d", [1, 5, 16, 33])
def test_optimistic_q_matches_reference(seed, d):
    rng = np.random.default_rng(seed * 100 + d)
    n = int(rng.integers(1, 700))
    phi = rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    inv = np.linalg.inv(spd(rng, d))
    beta = float(rng.uniform(0, 3))
    off = rng.uniform(0, 1, n)
    for upper, lower in [(math.inf, -math.inf), (2.0, 0.0)]:
        got = kn.optimistic_q(phi, w, inv, beta, upper=upper, lower=lower, offset=off)
        want = R.optimistic_q_ref(phi, w, inv, beta, upper=upper, lower=lower, offset=off)
        assert rel_close(got, want)


def test_optimistic_values_lowest_ties_match_reference():
    rng = np.random.default_rng(3)
    A, S, d = 7, 300, 9
    phi = rng.standard_normal((S * A, d))
    inv = np.linalg.inv(spd(rng, d))
    w = rng.standard_normal(d)
    q, v, a = kn.optimistic_values(phi, w, inv, 0.3, A, upper=1.0, lower=0.0, ties="lowest")
    qr, vr, ar = R.optimistic_values_ref(phi, w, inv, 0.3, A, upper=1.0, lower=0.0, ties="lowest")
    assert rel_close(q, qr) and rel_close(v, vr)
    assert np.array_equal(a, ar)


def test_random_ties_uniform_and_reproducible():
    q = np.array([[1.0, 1.0, 0.0, 1.0]] * 6000)
    _v, a = kn.greedy(q, ties="random", rng=np.random.default_rng(0))
    assert set(np.unique(a)) == {0, 1, 3}
    counts = np.bincount(a, minlength=4)
    assert counts[2] == 0
    # each of 3 maximizers w.p. 1/3: binomial sd = sqrt(6000 * 2/9) ~ 36.5
    assert np.all(np.abs(counts[[0, 1, 3]] - 2000) < 5 * 36.5)
    _, a2 = kn.greedy(q, ties="random", rng=np.random.default_rng(0))
    assert np.array_equal(a, a2)
    _, low = kn.greedy(q, ties="lowest")
    assert np.all(low == 0)


def test_q_bad_inputs():
    phi = np.ones((4, 3))
    inv = np.eye(3)
    with pytest.raises(ShapeError):
        kn.optimistic_q(phi, np.ones(2), inv, 1.0)
    with pytest.raises(ShapeError):
        kn.optimistic_q(phi, np.ones(3), np.eye(2), 1.0)
    with pytest.raises(NonFiniteError):
        kn.optimistic_q(np.full((4, 3), np.nan), np.ones(3), inv, 1.0)
    with pytest.raises(PrivacyParameterError):
        kn.optimistic_q(phi, np.ones(3), inv, -1.0)
    with pytest.raises(ShapeError):
        kn.optimistic_values(phi, np.ones(3), inv, 1.0, n_actions=3)


def test_mechanism_shape_message_says_a_vector_is_an_int():
    """TreeAggregator((3,), ...) (numpy's way to write a vector's shape) said "matrix mechanisms
    need a square shape (d, d)", not how to ask for a vector; the int form works."""
    with pytest.raises(ShapeError, match=r"int n \(a vector.*got \(3,\); for a vector pass the int 3"):
        kn.TreeAggregator((3,), capacity=4, seed=0)
    with pytest.raises(ShapeError, match=r"\(d, d\) \(a symmetric"):
        kn.make_prefix_mechanism("blt", (2, 2, 2), capacity=4, seed=0)
    tree = kn.TreeAggregator(3, capacity=4, seed=0)
    tree.push(np.ones(3))
    assert tree.release().shape == (3,)


# ---------------------------------------------------------------- rank-one updates


@pytest.mark.parametrize("d", [1, 4, 16])
def test_sherman_morrison_matches_reference(d):
    rng = np.random.default_rng(d)
    xs = rng.standard_normal((500, d)) / math.sqrt(d)
    sm = kn.RankOneInverse(d, lam=1.5, refactor_every=10**9)
    sm.update_batch(xs[:250])
    for x in xs[250:]:
        sm.update(x)
    ref = R.ShermanMorrisonRef(d, 1.5)
    ref.update_batch(xs)
    assert rel_close(sm.matrix(), ref.matrix)
    assert rel_close(sm.inverse(), ref.inverse)
    assert rel_close(sm.inverse(), np.linalg.inv(ref.matrix))
    u = rng.standard_normal(d)
    assert rel_close(sm.solve(u), np.linalg.solve(ref.matrix, u))
    # exactly symmetric
    assert np.array_equal(sm.inverse(), sm.inverse().T)


def test_sherman_morrison_long_run_accuracy():
    d = 50
    rng = np.random.default_rng(7)
    sm = kn.RankOneInverse(d, lam=1.0)
    for _ in range(100):
        xs = rng.uniform(-1, 1, (1000, d))
        xs /= np.maximum(1.0, np.linalg.norm(xs, axis=1, keepdims=True))
        sm.update_batch(xs)
    assert sm.updates == 100_000
    err = np.abs(sm.matrix() @ sm.inverse() - np.eye(d)).max()
    assert err <= 1e-8
    assert sm.inverse_error() <= 1e-8


def test_spd_inverse_and_not_pd():
    rng = np.random.default_rng(1)
    a = spd(rng, 6)
    assert rel_close(kn.spd_inverse(a), np.linalg.inv(a))
    b = rng.standard_normal(6)
    assert rel_close(kn.spd_solve(a, b), np.linalg.solve(a, b))
    indefinite = np.diag([1.0, -0.5, 2.0])
    with pytest.raises(NotPositiveDefiniteError) as ei:
        kn.spd_inverse(indefinite)
    assert isinstance(ei.value, np.linalg.LinAlgError)
    assert kn.min_eigenvalue(indefinite) == pytest.approx(-0.5)


def test_non_symmetric_matrices_are_refused():
    """min_eigenvalue([[1, 2], [0, 1]]) returned 0.0 and optimistic_q took a non-symmetric inv: both
    used (a + a^T) / 2 without a word. Rounding asymmetry (np.linalg.inv) is still taken."""
    lower = np.array([[1.0, 2.0], [0.0, 1.0]])
    with pytest.raises(
        AssumptionError, match=r"matrix must be symmetric: \|matrix\[0, 1\] - matrix\[1, 0\]\| = 2"
    ):
        kn.min_eigenvalue(lower)
    assert kn.min_eigenvalue(lower + lower.T) == pytest.approx(0.0, abs=1e-12)
    phi, w = np.ones((4, 3)) / 3, np.ones(3)
    skew = np.eye(3) + 1e-6 * np.triu(np.ones((3, 3)), 1)
    for call in (
        lambda inv: kn.optimistic_q(phi, w, inv, 1.0),
        lambda inv: kn.optimistic_values(phi, w, inv, 1.0, 2),
        lambda inv: kn.state_values(phi, w, inv, 1.0, 2),
    ):
        with pytest.raises(AssumptionError, match=r"inv must be symmetric: .* exceeds 1e-10 x its largest"):
            call(np.arange(9.0).reshape(3, 3))
        with pytest.raises(AssumptionError, match="inv must be symmetric"):
            call(skew)
    # within 1e-10 of the largest entry: taken, as the kernel's symmetrized matrix
    near = np.eye(3) * 1e3 + 1e-8 * np.triu(np.ones((3, 3)), 1)
    assert rel_close(kn.optimistic_q(phi, w, near, 1.0), kn.optimistic_q(phi, w, 0.5 * (near + near.T), 1.0))
    rng = np.random.default_rng(5)
    inv = np.linalg.inv(spd(rng, 40))
    assert not np.array_equal(inv, inv.T)  # rounding
    kn.optimistic_q(rng.standard_normal((5, 40)), rng.standard_normal(40), inv, 1.0)
    assert kn.min_eigenvalue(inv) > 0
    # shape and finiteness errors are unchanged
    with pytest.raises(ShapeError):
        kn.min_eigenvalue(np.ones((2, 3)))
    with pytest.raises(NonFiniteError):
        kn.min_eigenvalue([[np.nan, 1.0], [0.0, 1.0]])


def test_rank_one_bad_inputs():
    with pytest.raises(PrivacyParameterError):
        kn.RankOneInverse(3, lam=0.0)
    with pytest.raises(PrivacyParameterError):
        kn.RankOneInverse(0, lam=1.0)
    sm = kn.RankOneInverse(3, lam=1.0)
    with pytest.raises(ShapeError):
        sm.update(np.ones(4))
    with pytest.raises(NonFiniteError):
        sm.update(np.array([1.0, np.inf, 0.0]))
    with pytest.raises(ShapeError):
        sm.update_batch(np.ones((2, 2)))


# ---------------------------------------------------------------- tree-based mechanism


def test_tree_zero_noise_exact_prefix_and_node_counts():
    rng = np.random.default_rng(0)
    T = 300
    tr = kn.TreeAggregator(3, T, noise="none", seed=0)
    total = np.zeros(3)
    for t in range(1, T + 1):
        x = rng.standard_normal(3)
        total += x
        tr.push(x)
        assert np.allclose(tr.release(), total, atol=1e-12)
        assert tr.nodes_used == bin(t).count("1")
        assert tr.nodes_used <= tr.max_nodes == math.ceil(math.log2(T) + 1)
    with pytest.raises(CapacityError):
        tr.push(np.zeros(3))


@pytest.mark.parametrize("shape", [4, (3, 3)])
def test_tree_aggregation_matches_reference_bit_for_bit(shape):
    """Feed the reference the node noises the Rust tree drew: same releases exactly."""
    rng = np.random.default_rng(5)
    tr = kn.TreeAggregator(shape, 200, noise="gaussian", scale=3.0, seed=11, keep_last_node=True)
    ref = R.TreeAggregatorRef(shape, 200)
    for _ in range(200):
        x = rng.standard_normal(tr.shape)
        if tr.symmetric:
            x = x + x.T
        tr.push(x)
        ref.push(x, node_noise=tr.last_node_noise())
        assert tr.nodes_used == ref.nodes_used
        assert np.allclose(tr.release(), ref.release(), rtol=1e-12, atol=1e-9)


def test_tree_live_memory_is_logarithmic():
    T = 10**6
    tr = kn.TreeAggregator((2, 2), T, noise="gaussian", scale=1.0, seed=0)
    peak = 0
    for _ in range(2**14 - 1):  # step count with popcount 14
        tr.push_zero()
        peak = max(peak, tr.live_nodes)
    assert tr.nodes_used == 14
    assert peak <= math.ceil(math.log2(T) + 1)
    assert tr.nodes_drawn == 2**14 - 1  # exactly one node noise per step, drawn lazily


def test_tree_same_seed_same_stream():
    def stream(seed):
        tr = kn.TreeAggregator((5, 5), 64, scale=2.0, seed=seed)
        out = []
        for _ in range(64):
            tr.push_zero()
            out.append(tr.release())
        return np.array(out)

    a, b = stream(123), stream(123)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, stream(124))
    # no seed: OS entropy, different streams
    assert not np.array_equal(stream(None), stream(None))


@pytest.mark.parametrize("t", [1, 6, 7, 13, 64])
def test_tree_gaussian_vector_variance(t):
    sigma, reps = 2.5, 2500
    vals = np.empty((reps, 8))
    for r in range(reps):
        tr = kn.TreeAggregator(8, 64, noise="gaussian", scale=sigma, seed=r)
        for _ in range(t):
            tr.push_zero()
        vals[r] = tr.noise()
    nodes = bin(t).count("1")
    want = nodes * sigma**2
    assert tr.release_variance() == (pytest.approx(want), pytest.approx(want))
    # 20000 draws: the variance estimate has relative sd sqrt(2/20000) = 1%
    assert abs(vals.var() / want - 1) < 0.05
    assert abs(vals.mean()) < 5 * math.sqrt(want / vals.size)


@pytest.mark.parametrize("noise,divisor", [("gaussian", math.sqrt(2)), ("gaussian", 2.0), ("laplace", 2.0)])
def test_tree_symmetric_matrix_variance(noise, divisor):
    scale, reps, d, t = 1.7, 2000, 4, 11  # popcount(11) = 3
    vals = np.empty((reps, d, d))
    for r in range(reps):
        tr = kn.TreeAggregator((d, d), 32, noise=noise, scale=scale, seed=1000 + r, divisor=divisor)
        for _ in range(t):
            tr.push_zero()
        vals[r] = tr.noise()
        assert np.array_equal(vals[r], vals[r].T)
    entry_var = scale**2 if noise == "gaussian" else 2 * scale**2
    off_want = 3 * 2 * entry_var / divisor**2  # (Z'_ij + Z'_ji)/c
    diag_want = 3 * 4 * entry_var / divisor**2  # 2 Z'_ii / c
    off, diag = tr.release_variance()
    assert off == pytest.approx(off_want) and diag == pytest.approx(diag_want)
    iu = np.triu_indices(d, 1)
    off_emp = vals[:, iu[0], iu[1]].var()
    diag_emp = vals[:, np.arange(d), np.arange(d)].var()
    # 12000 off-diagonal draws (rel. sd 1.3% Gaussian, ~2.5% Laplace sums); 8000 diagonal
    assert abs(off_emp / off_want - 1) < 0.05 + (0.03 if noise == "laplace" else 0)
    assert abs(diag_emp / diag_want - 1) < 0.05 + (0.03 if noise == "laplace" else 0)


def test_laplace_scale_single_node():
    b, reps = 0.8, 4000
    vals = np.array(
        [
            kn.TreeAggregator(16, 4, noise="laplace", scale=b, seed=r).__class__ and _one_release(b, r)
            for r in range(reps)
        ]
    )
    # Laplace(b): var 2b^2, E|x| = b
    assert abs(vals.var() / (2 * b * b) - 1) < 0.05
    assert abs(np.abs(vals).mean() / b - 1) < 0.03


def _one_release(b, seed):
    tr = kn.TreeAggregator(16, 4, noise="laplace", scale=b, seed=seed)
    tr.push_zero()
    return tr.noise()


def test_tree_bad_inputs():
    with pytest.raises(PrivacyParameterError):
        kn.TreeAggregator(3, 10, scale=0.0)
    with pytest.raises(PrivacyParameterError):
        kn.TreeAggregator(3, 10, scale=-1.0)
    with pytest.raises(PrivacyParameterError):
        kn.TreeAggregator(3, 10, scale=float("nan"))
    with pytest.raises(PrivacyParameterError):
        kn.TreeAggregator(3, 0)
    with pytest.raises(ShapeError):
        kn.TreeAggregator((3, 4), 10)
    tr = kn.TreeAggregator((2, 2), 10, seed=0)
    with pytest.raises(ShapeError):
        tr.push(np.ones(4))
    with pytest.raises(NonFiniteError):
        tr.push(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError):
        kn.TreeAggregator(3, 10, noise="cauchy", seed=0)


# ---------------------------------------------------------------- mixture features


def test_mixture_phi_v_matches_reference():
    rng = np.random.default_rng(2)
    S, A, d = 9, 3, 4
    f = rng.standard_normal((S, A, S, d)) * (rng.random((S, A, S, 1)) < 0.3)
    mf = kn.MixtureFeatures(f)
    assert mf.nnz == int((np.abs(f).sum(-1) > 0).sum())
    for _ in range(5):
        v = rng.uniform(0, 5, S)
        assert rel_close(mf.phi_v(v), R.phi_v_ref(f, v))
    with pytest.raises(ShapeError):
        mf.phi_v(np.ones(S + 1))


# ---------------------------------------------------------------- panics and the exception family


def test_rust_panic_is_a_python_exception_not_an_abort():
    code = (
        "import privrl._core as c\n"
        "try:\n    c._panic_for_test()\n"
        "except BaseException as e:\n    print('caught', type(e).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "caught PanicException" in out.stdout


def test_exception_family():
    for cls in (ShapeError, NonFiniteError, PrivacyParameterError, CapacityError):
        assert issubclass(cls, PrivrlError) and issubclass(cls, ValueError)
    assert issubclass(NotPositiveDefiniteError, np.linalg.LinAlgError)


@pytest.mark.parametrize("kind", ["tree", "honaker", "factorization"])
def test_push_release_equals_push_then_release(kind):
    from privrl.kernels import make_prefix_mechanism

    rng = np.random.default_rng(0)
    a = make_prefix_mechanism(kind, (3, 3), 20, "gaussian", 1.5, 7, math.sqrt(2))
    b = make_prefix_mechanism(kind, (3, 3), 20, "gaussian", 1.5, 7, math.sqrt(2))
    for _ in range(20):
        x = rng.standard_normal((3, 3))
        x = x + x.T
        got = a.push_release(x)
        b.push(x)
        assert np.array_equal(got, b.release())
    with pytest.raises(ShapeError):
        a.push_release(np.ones(3))


def test_spd_kernels_and_sigma_bar_refuse_what_they_would_silently_change():
    """Audit 5: spd_solve([[4, 1], [0, 3]], [1, 1]) solved (A + A^T) / 2 ([0.213, 0.298]; numpy:
    [0.167, 0.333]); spd_inverse and floored_release did the same; sigma_bar took NaN inputs (the
    kernel's clamps hid them: a finite sigma-bar) and a negative radius."""
    from privrl.exceptions import AssumptionError, NonFiniteError, PrivacyParameterError

    a = np.array([[4.0, 1.0], [0.0, 3.0]])
    for call in (
        lambda: kn.spd_solve(a, [1.0, 1.0]),
        lambda: kn.spd_inverse(a),
        lambda: kn.floored_release(a[None], [[1.0, 2.0]], 1.0, 0.5, np.zeros(2)),
    ):
        with pytest.raises(AssumptionError, match="must be symmetric"):
            call()
    s = np.array([[4.0, 1.0], [1.0, 3.0]])
    assert np.allclose(kn.spd_solve(s, [1.0, 1.0]), np.linalg.solve(s, [1.0, 1.0]), rtol=1e-12)
    X, eye = np.full((2, 2), 0.5), np.tile(np.eye(2), (2, 1, 1))
    ok = kn.sigma_bar(X, X, X, eye, None, X, eye, 1.0, 1.0)
    assert np.isfinite(ok).all()
    with pytest.raises(NonFiniteError):
        kn.sigma_bar(X * np.nan, X, X, eye, None, X, eye, 1.0, 1.0)
    with pytest.raises(PrivacyParameterError, match="tilde_radius"):
        kn.sigma_bar(X, X, X, eye, None, X, eye, float("nan"), 1.0)
    with pytest.raises(PrivacyParameterError, match="beta_check"):
        kn.sigma_bar(X, X, X, eye, None, X, eye, 1.0, -1.0)
    with pytest.raises(ShapeError):
        kn.sigma_bar(X, X, X, eye[:1], None, X, eye, 1.0, 1.0)


def test_kernel_seeds_are_checked_as_privrl_errors():
    """Audit 5: greedy(q, rng="abc" / 1.5 / RandomState / SeedSequence) leaked AttributeError and
    rng=-1 was taken; a mechanism's seed=-1 was a builtin ValueError and seed=True was seed 1.
    They were PrivacyParameterError, now SeedError (a PrivrlError, ValueError and TypeError)."""
    q = np.ones((1, 2))
    for rng in ("abc", 1.5, np.random.RandomState(0), np.random.SeedSequence(0), -1, True):
        with pytest.raises(SeedError, match="rng must be None"):
            kn.greedy(q, rng=rng)
    assert kn.greedy(q, rng=3)[1].tolist() == kn.greedy(q, rng=3)[1].tolist()
    assert kn.greedy(q, rng=np.random.default_rng(0))[1].shape == (1,)
    # the tie seed is 63 bits: larger ints were masked into that range, so rng=2**63 broke ties
    # as rng=0 and rng=2**64 + 1 as rng=1 (distinct seeds, one stream); they are refused
    ties = np.zeros((64, 4))
    assert kn.greedy(ties, rng=2**63 - 1)[1].tolist() != kn.greedy(ties, rng=0)[1].tolist()
    for rng in (2**63, 2**64 + 1, np.uint64(2**63)):
        # SeedError (a ValueError and a TypeError) since seeds stopped raising PrivacyParameterError
        with pytest.raises(SeedError, match=r"rng must be None, an integer in \[0, 2\^63\)"):
            kn.greedy(ties, rng=rng)
        with pytest.raises(SeedError, match="rng must be None"):
            kn.optimistic_values(np.zeros((2, 1)), np.zeros(1), np.eye(1), 0.0, 2, rng=rng)
    with pytest.raises(SeedError, match="seed must be >= 0"):
        kn.TreeAggregator(2, 4, seed=-1)
    with pytest.raises(TypeError, match="seed must be None, an int"):
        kn.TreeAggregator(2, 4, seed=True)


def test_index_arrays_are_integers():
    """Audit 5: phi_v_rows([[1, 2]], [0.9]) used row 0 (an int64 cast), "a" and 2**70 were
    numpy's ValueError / OverflowError; state_values(states=[]) was a TypeError."""
    f = np.zeros((2, 2, 2, 3))
    f[:, :, 0, 0] = 1.0
    mf = kn.MixtureFeatures(f)
    for rows in ([0.9], ["a"], [2**70]):
        with pytest.raises(TypeError, match="rows must be an integer index array"):
            mf.phi_v_rows([[1.0, 2.0]], rows)
    assert np.array_equal(mf.phi_v_rows([[1.0, 2.0]], [1]), [[1.0, 0.0, 0.0]])
    with pytest.raises(ShapeError, match="beyond int64"):
        mf.phi_v_rows([[1.0, 2.0]], np.array([2**63 + 5], dtype=np.uint64))


def test_kernel_edges_audit_11():
    """Audit 11: batched_matvec took NaN; floored_release took a NaN w0, a subnormal lam and an
    overflowing sum (NaN weights); (a + a^T) / 2 overflowed above ~9e307 (spd_inverse(1e308 I) was
    0); an overflowing inverse came back inf; Lambda overflowed silently and inverse_error said 0;
    ties names raised a bare ValueError; round_to_grid returned the caller's array or inf."""
    from privrl.exceptions import NonFiniteError, PrivacyParameterError

    with pytest.raises(NonFiniteError):
        kn.batched_matvec(np.full((1, 2, 2), np.nan), np.ones((1, 2)))
    with pytest.raises(NonFiniteError):
        kn.floored_release(np.zeros((1, 2, 2)), np.zeros((1, 2)), 1.0, 0.0, [np.nan, 0.0])
    with pytest.raises(PrivacyParameterError):
        kn.floored_release(np.zeros((1, 2, 2)), np.zeros((1, 2)), 1e-310, 0.0, np.zeros(2))
    with pytest.raises(NonFiniteError):
        kn.floored_release(np.eye(2)[None] * 1e308, np.zeros((1, 2)), 1.0, 1e308, np.zeros(2))
    big = np.array([[1.5e308, 1e308], [1e308, 1.5e308]])
    np.testing.assert_allclose(kn.spd_inverse(big), np.linalg.inv(big), rtol=1e-12)
    np.testing.assert_allclose(kn.spd_inverse(np.eye(2) * 1e308), np.eye(2) * 1e-308, rtol=1e-15)
    assert kn.min_eigenvalue(np.eye(2) * 1e308) == 1e308
    np.testing.assert_allclose(kn.optimistic_q([[1e-160]], [0.0], [[1e308]], 1.0), [1e-6], rtol=1e-12)
    for call in (
        lambda: kn.spd_inverse(np.eye(2) * 1e-310),
        lambda: kn.spd_solve(np.eye(2) * 1e-310, np.ones(2)),
    ):
        with pytest.raises(NonFiniteError):
            call()
    sm = kn.RankOneInverse(1, 1.0)
    sm.update([1.3e154])
    with pytest.raises(NonFiniteError, match="overflows"):
        sm.update([1.3e154])
    assert sm.matrix()[0, 0] == 1.0 + 1.3e154**2 and sm.updates == 1  # the refused row left no trace
    with pytest.raises(PrivacyParameterError, match="ties"):
        kn.greedy(np.zeros((1, 2)), ties="first")
    x = np.array([0.1, 0.2])
    assert kn.NoiseStream("gaussian", 1.0, seed=0).round_to_grid(x) is not x
    with pytest.raises(PrivacyParameterError, match="overflows"):
        kn.NoiseStream("discrete_gaussian", 1e-300, seed=0).round_to_grid([1e300])


def test_overflowing_kernel_outputs_and_subnormal_divisors_are_refused():
    # finite inputs whose results overflow a double were returned as inf; a subnormal divisor
    # made every symmetric noise entry inf
    from privrl.common.errors import NonFiniteError, PrivacyParameterError
    from privrl.privacy.mechanisms import laplace_mechanism

    big = np.full((1, 2, 2), 1e200)
    with pytest.raises(NonFiniteError):
        kn.batched_matvec(big, np.full((1, 2), 1e200))
    phi, w, inv = np.full((4, 2), 1e200), np.full(2, 1e200), np.eye(2)
    with pytest.raises(NonFiniteError):
        kn.optimistic_values(phi, w, inv, 0.0, 2)
    with pytest.raises(NonFiniteError):
        kn.optimistic_q(phi, w, inv, 0.0)
    with pytest.raises(NonFiniteError):
        kn.state_values(phi, w, inv, 0.0, 2)
    with pytest.raises(NonFiniteError):
        kn.MixtureFeatures(np.full((2, 2, 2, 2), 1e200)).phi_v(np.full(2, 1e200))
    with pytest.raises(PrivacyParameterError):  # a tail draw of Lap(1e308) is beyond a double
        laplace_mechanism(np.ones(64), 1e308, 1.0, np.random.default_rng(0))
    stream = kn.NoiseStream("gaussian", 1.0, seed=0)
    for call in (
        lambda: stream.symmetric(1, 2, divisor=5e-324),
        lambda: stream.privatize(np.zeros((1, 2, 2)), symmetric=True, divisor=5e-324),
        lambda: kn.NoiseStream("discrete_laplace", 1.0, seed=0).lattice_unit(True, 5e-324),
    ):
        with pytest.raises(PrivacyParameterError, match="divisor"):
            call()
    # ordinary values pass unchanged
    q, v, _ = kn.optimistic_values(np.eye(2)[[0, 1, 1, 0]], np.ones(2), np.eye(2), 0.5, 2)
    assert np.isfinite(q).all() and np.isfinite(v).all()


@pytest.mark.parametrize("kind", ["noise", "rank_one", "tree", "honaker", "factorization", "blt"])
def test_copy_copy_of_a_stateful_kernel_is_independent(kind):
    # a shallow copy shared the Rust state: a leaf pushed to the copy moved the original's prefix
    # sums, and a copied noise stream drew the next part of the original's sequence
    import copy

    from privrl.kernels.continual import make_prefix_mechanism

    def make():
        if kind == "noise":
            return kn.NoiseStream("gaussian", 1.0, seed=0)
        if kind == "rank_one":
            return kn.RankOneInverse(3, 1.0)
        return make_prefix_mechanism(kind, (2, 2), 8, noise="gaussian", scale=1.0, seed=0)

    def step(obj):
        if kind == "noise":
            return obj.vectors(2, 3)
        if kind == "rank_one":
            obj.update(np.array([0.5, 0.0, 0.25]))
            return obj.matrix()
        return obj.push_release(np.eye(2))

    original = make()
    step(original)
    twin = copy.copy(original)
    for _ in range(2):  # each continues from where the original was copied, untouched by the other
        assert np.array_equal(step(twin), step(original))


def test_the_symmetry_check_is_numpys_in_one_rust_pass():
    """check_symmetric reads (max |a_ij|, the first largest |a_ij - a_ji| and where) from one
    Rust pass (numpy's abs / max / a - a^T / argmax cost 13 us at d = 5, most of a tree step):
    the same numbers as the numpy expression, ties to the first (row-major) index, NaN scale
    when an entry is NaN, on contiguous and strided inputs."""
    from privrl import _core

    rng = np.random.default_rng(4)
    cases = [rng.normal(size=(d, d)) for d in (1, 2, 5, 16)]
    cases += [np.round(rng.normal(size=(6, 6)), 1), np.eye(3), np.full((4, 4), 2.0)]
    cases += [np.array([[0.0, np.inf], [1.0, 0.0]]), np.arange(25.0).reshape(5, 5).T]
    cases += [rng.normal(size=(7, 14))[:, ::2], np.array([[1e308, -1e308], [1e308, 1.0]])]
    # larger matrices with many tied gaps (integers), a symmetric one, and planted ties
    cases += [np.round(rng.normal(size=(d, d))) for d in (33, 70, 100)] + [np.ones((70, 70))]
    tied = np.zeros((70, 70))
    tied[65, 3] = tied[40, 50] = tied[5, 64] = 1.0  # gaps of 1 at (3, 65), (40, 50), (5, 64)...
    cases.append(tied)
    for a in cases:
        scale, gap, i, j = _core.symmetry_gap(a)
        assert scale == np.abs(a).max()
        with np.errstate(over="ignore", invalid="ignore"):
            g = np.abs(a - a.T)
        if np.isfinite(scale):
            assert (i, j) == np.unravel_index(int(np.argmax(g)), g.shape) and gap == g[i, j]
    assert np.isnan(_core.symmetry_gap(np.array([[1.0, np.nan], [0.0, 1.0]]))[0])
    with pytest.raises(ValueError, match="not square"):
        _core.symmetry_gap(np.zeros((2, 3)))


def test_greedy_ties_must_be_a_name_not_an_array():
    """greedy / optimistic_values compared ties == "lowest" before checking it was a str: an array
    of names raised numpy's "truth value of an array ... is ambiguous" (a ValueError naming no
    argument), and a 0-d array('lowest') was taken, which the agents' ties= refuses. Both are
    refused naming ties; the names (and a numpy str_) break ties as before."""
    from privrl.exceptions import PrivacyParameterError

    q = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0]])
    phi, w, inv = np.eye(2)[[0, 0, 1, 1]], np.ones(2), np.eye(2)
    for bad in (np.array(["random", "lowest"]), np.array("lowest"), ["lowest"]):
        with pytest.raises(PrivacyParameterError, match="ties must be 'random' or 'lowest'"):
            kn.greedy(q, ties=bad)
        with pytest.raises(PrivacyParameterError, match="ties must be 'random' or 'lowest'"):
            kn.optimistic_values(phi, w, inv, 0.0, 2, ties=bad)
    for name in ("lowest", np.str_("lowest")):
        v, a = kn.greedy(q, ties=name)
        assert v.tolist() == [1.0, 2.0] and a.tolist() == [0, 1]
    assert (
        kn.greedy(q, ties="random", rng=3)[1].tolist()
        == kn.greedy(q, ties=np.str_("random"), rng=3)[1].tolist()
    )


def test_kernel_true_false_options_refuse_what_is_neither():
    """NoiseStream's symmetric= and the tree's keep_last_node= were read by truthiness: "no",
    None, 1 or 0.5 chose the matrix lattice / messages or kept the node noise without a word,
    where the envs' absorbing and the privacy models' allow_large_delta refuse them. Each is a
    TypeError naming the option; True / False (and numpy bools) work as before."""
    st = kn.NoiseStream("discrete_laplace", 1.0, seed=0)
    x = np.eye(2)[None] * 0.3
    calls = {
        "symmetric": (
            lambda v: st.lattice_unit(v, 2.0),
            lambda v: st.round_to_grid(x, v, 2.0),
            lambda v: st.privatize(x, v, 2.0),
        ),
        "keep_last_node": (
            lambda v: kn.TreeAggregator(3, 4, keep_last_node=v),
            lambda v: kn.make_prefix_mechanism("tree", 3, 4, keep_last_node=v),
        ),
    }
    for name, fns in calls.items():
        for fn in fns:
            for bad in ("no", None, 1, 0.5):
                with pytest.raises(TypeError, match=rf"^{name} must be True or False, got {bad!r}"):
                    fn(bad)
    assert st.lattice_unit(np.True_, 2.0) == st.lattice_unit(True, 2.0) == 2.0**-24 / 2
    assert st.lattice_unit(False) == st.lattice_unit(np.False_) == 2.0**-24
    tree = kn.TreeAggregator(3, 4, noise="gaussian", seed=0, keep_last_node=np.True_)
    tree.push(np.zeros(3))
    assert tree.last_node_noise().shape == (3,)  # kept, as with True
