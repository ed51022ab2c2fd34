"""Continual-release mechanisms (tree, Honaker, factorization, BLT) against explicit-matrix numpy
references, their exact variance / sensitivity, the T = 10^4 error ratios, and the secure samplers."""

import math

import numpy as np
import pytest

from privrl import kernels as kn
from privrl.exceptions import CapacityError, NonFiniteError, PrivacyParameterError, ShapeError
from privrl.kernels import continual as C
from privrl.kernels import reference as R

KINDS = ["tree", "honaker", "factorization", "blt"]


SQRT2 = math.sqrt(2)


def innovations(kind, T, shape, seed, sigma, divisor=SQRT2):
    """The node noises a mechanism of `kind` draws, reproduced by a NoiseStream on the same seed."""
    count = len(R.dyadic_nodes_in_draw_order(T)) if kind == "honaker" else T
    st = kn.NoiseStream("gaussian", sigma, seed=seed)
    if isinstance(shape, tuple):
        return st.symmetric(count, shape[0], divisor)
    return st.vectors(count, shape)


def reference_noise(kind, z, T, shape, blt_params=None):
    if kind == "tree":
        ref = R.TreeAggregatorRef(shape, T)
        out = []
        for t in range(T):
            ref.push(np.zeros(ref.shape), node_noise=z[t])
            out.append(ref.noise())
        return np.array(out)
    if kind == "honaker":
        return R.honaker_noise_ref(z, T)
    if kind == "factorization":
        return R.factorization_noise_ref(z)
    return R.blt_noise_ref(z, *blt_params)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [5, (3, 3)])
def test_noise_matches_explicit_reference(kind, shape):
    T, seed, sigma = 13, 7, 1.3
    m = kn.make_prefix_mechanism(kind, shape, T, noise="gaussian", scale=sigma, seed=seed)
    rng = np.random.default_rng(0)
    leaves, got = [], []
    for _ in range(T):
        leaf = rng.standard_normal(m.shape)
        if isinstance(shape, tuple):
            leaf = leaf + leaf.T
        leaves.append(leaf)
        m.push(leaf)
        got.append(m.noise())
        np.testing.assert_allclose(m.release(), np.sum(leaves, axis=0) + got[-1], rtol=1e-13, atol=1e-12)
    z = innovations(kind, T, shape, seed, sigma)
    params = C.blt_parameters(T, 8) if kind == "blt" else None
    want = reference_noise(kind, z, T, shape, params)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(m.exact_sum(), np.sum(leaves, axis=0), rtol=1e-13)
    assert m.nodes_drawn == len(z)


def test_sqrt_factor_squares_to_prefix_sums():
    L = R.sqrt_factor_ref(64)
    np.testing.assert_allclose(L @ L, np.tril(np.ones((64, 64))), atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_variance_profile_and_multipliers_against_matrices(kind):
    T = 37
    m = kn.make_prefix_mechanism(kind, 1, T, noise="none", seed=0)
    prof = m.variance_profile()
    t = np.arange(1, T + 1)
    if kind == "tree":
        want = np.array([bin(x).count("1") for x in t], float)
        l2 = math.sqrt(T.bit_length())
    elif kind == "honaker":
        # Variance of the least-squares prefix estimate: 1^T (X^T X)^{-1} 1 (unit node variance).
        nodes = R.dyadic_nodes_in_draw_order(T)
        want = []
        for s in t:
            X = np.array([[1.0 if a <= i + 1 <= b else 0.0 for i in range(s)] for a, b in nodes if b <= s])
            want.append(np.ones(s) @ np.linalg.solve(X.T @ X, np.ones(s)))
        want = np.array(want)
        # The exact projection of the release map (not the post-processing bound sqrt(6)).
        l2 = math.sqrt(R.honaker_leaf_multipliers_ref(T).max())
        assert l2 < math.sqrt(T.bit_length())
        assert m.l1_sensitivity_multiplier == T.bit_length()  # post-processing bound
    else:
        E = R.sqrt_factor_ref(T) if kind == "factorization" else R.blt_encoder_ref(T, *C.blt_parameters(T, 8))
        decoder = np.tril(np.ones((T, T))) @ np.linalg.inv(E)
        want = (decoder**2).sum(axis=1)
        l2 = np.sqrt((E**2).sum(axis=0)).max()
        np.testing.assert_allclose(m.l1_sensitivity_multiplier, np.abs(E).sum(axis=0).max(), rtol=1e-10)
        np.testing.assert_allclose(m.leaf_coefficients(5), E[4:, 4], rtol=1e-10)
    np.testing.assert_allclose(prof, want, rtol=1e-9)
    np.testing.assert_allclose([m.variance_factor(s) for s in t], want, rtol=1e-9)
    assert m.variance_factor(0) == 0.0
    assert m.max_variance_factor() == pytest.approx(want.max(), rel=1e-12)
    assert m.sensitivity_multiplier == pytest.approx(l2, rel=1e-10)
    assert np.linalg.norm(m.leaf_coefficients(m.worst_leaf)) == pytest.approx(l2, rel=1e-10)
    norms = [np.linalg.norm(m.leaf_coefficients(i)) for i in range(1, T + 1)]
    assert max(norms) == pytest.approx(l2, rel=1e-10)
    # Leaf 1 is the worst leaf, except for Honaker's tree.
    assert m.worst_leaf == (int(np.argmax(norms)) + 1 if kind == "honaker" else 1)
    if kind != "honaker":
        assert max(norms) == pytest.approx(norms[0])


def test_honaker_online_recursion_is_the_least_squares_estimate():
    for T, shape in [(1, 2), (13, 2), (37, 1), (64, 3)]:
        z = np.random.default_rng(T).standard_normal((len(R.dyadic_nodes_in_draw_order(T)), shape))
        np.testing.assert_allclose(R.honaker_online_ref(z, T), R.honaker_noise_ref(z, T), atol=1e-12)


@pytest.mark.parametrize("T", range(1, 65))
def test_honaker_multiplier_is_the_exact_projection(T):
    """Honaker's L2 multiplier is the exact sensitivity of its release sequence: per leaf,
    ||leaf_coefficients(i)||^2 = Delta_i^T M^T (M M^T)^+ M Delta_i for the dense release map M,
    and the multiplier is the largest of these, at worst_leaf."""
    m = kn.make_prefix_mechanism("honaker", 1, T, noise="none", seed=0)
    dense = R.honaker_leaf_multipliers_ref(T)
    per_leaf = np.array([np.sum(m.leaf_coefficients(i) ** 2) for i in range(1, T + 1)])
    np.testing.assert_allclose(per_leaf, dense, rtol=1e-9)
    assert m.sensitivity_multiplier**2 == pytest.approx(dense.max(), rel=1e-10)
    assert dense[m.worst_leaf - 1] == pytest.approx(dense.max(), rel=1e-10)
    assert m.sensitivity_multiplier**2 <= T.bit_length() + 1e-12  # the post-processing bound
    if T > 1:
        assert m.sensitivity_multiplier**2 < T.bit_length()


def test_honaker_multiplier_at_large_T():
    """The DP's values at large T (the prototype's figures) and for every capacity a u63 holds."""
    got = {T: kn.mechanism_profile("honaker", T) for T in (16, 1000, 10_000)}
    assert got[16].l2_multiplier ** 2 == pytest.approx(4.4034, abs=1e-4)
    assert got[1000].l2_multiplier ** 2 == pytest.approx(8.5571, abs=1e-4)
    assert got[10_000].l2_multiplier ** 2 == pytest.approx(11.9321, abs=1e-4)
    assert got[10_000].worst_leaf == 5461
    for T in (10**6, 2**40 + 12345, 2**63 - 1):
        p = kn.mechanism_profile("honaker", T)
        assert 1 <= p.worst_leaf <= T
        assert p.l2_multiplier**2 < T.bit_length() == p.l1_multiplier
        m = kn.make_prefix_mechanism("honaker", 1, T, noise="none", seed=0)
        assert np.sum(m.leaf_coefficients(p.worst_leaf) ** 2) == pytest.approx(p.l2_multiplier**2, rel=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_release_variance_matrix_entries(kind):
    """Per-entry variance (off-diagonal, diagonal) of symmetric matrix releases, empirically."""
    d, T, reps, sigma = 3, 6, 1500, 2.0
    off, diag = [], []
    for r in range(reps):
        m = kn.make_prefix_mechanism(kind, (d, d), T, scale=sigma, seed=r)
        for _ in range(T):
            m.push_zero()
        z = m.noise()
        off.append(z[np.triu_indices(d, 1)])
        diag.append(np.diag(z))
    want_off, want_diag = m.release_variance()
    f = m.variance_factor(T)
    assert want_off == pytest.approx(f * sigma**2) and want_diag == pytest.approx(2 * f * sigma**2)
    assert np.var(off) == pytest.approx(want_off, rel=0.06)
    assert np.var(diag) == pytest.approx(want_diag, rel=0.07)


def normalized_std(kind, T):
    """Per-step std of the released noise at equal privacy: sigma = sensitivity multiplier
    (so sigma / multiplier = 1 for every kind)."""
    m = kn.make_prefix_mechanism(kind, 1, T, noise="none", seed=0)
    return np.sqrt(m.variance_profile()) * m.sensitivity_multiplier


def test_error_ratios_at_T_10000():
    """At equal privacy and T = 10^4: factorization / BLT about 2.5x (mean over t) and 3.4x
    (max over t) below the binary tree; Honaker between."""
    T = 10_000
    std = {k: normalized_std(k, T) for k in KINDS}
    mean = {k: v.mean() for k, v in std.items()}
    peak = {k: v.max() for k, v in std.items()}
    ratio_mean = mean["tree"] / mean["factorization"]
    ratio_max = peak["tree"] / peak["factorization"]
    print(
        f"\nT = 10^4, equal privacy: mean std  tree {mean['tree']:.4f}  honaker {mean['honaker']:.4f}"
        f"  factorization {mean['factorization']:.4f}  blt {mean['blt']:.4f}"
    )
    print(
        f"tree/factorization: mean {ratio_mean:.4f}, max {ratio_max:.4f}; tree/honaker: mean "
        f"{mean['tree'] / mean['honaker']:.4f}; honaker/factorization: mean "
        f"{mean['honaker'] / mean['factorization']:.4f}; blt/factorization: mean "
        f"{mean['blt'] / mean['factorization']:.4f}, max {peak['blt'] / peak['factorization']:.4f}"
    )
    assert 2.4 < ratio_mean < 2.5
    assert 3.3 < ratio_max < 3.45
    assert mean["tree"] > mean["honaker"] > mean["factorization"]
    assert peak["tree"] > peak["honaker"] > peak["factorization"]
    assert abs(mean["blt"] / mean["factorization"] - 1) < 0.02
    assert abs(peak["blt"] / peak["factorization"] - 1) < 0.02


def test_error_ratio_empirical_at_T_10000():
    """The same ratio measured on released prefix sums (128 independent coordinates)."""
    T, n = 10_000, 128
    emp = {}
    for kind in ["tree", "honaker", "factorization", "blt"]:
        prof = kn.mechanism_profile(kind, T)
        m = kn.make_prefix_mechanism(kind, n, T, scale=prof.l2_multiplier, seed=3)
        sq = np.empty(T)
        for t in range(T):
            m.push_zero()
            sq[t] = np.mean(m.release() ** 2)
        emp[kind] = np.sqrt(sq).mean()
    exact = {k: normalized_std(k, T).mean() for k in emp}
    for k in emp:
        assert emp[k] == pytest.approx(exact[k], rel=0.04), k
    assert emp["tree"] / emp["factorization"] == pytest.approx(
        exact["tree"] / exact["factorization"], rel=0.04
    )


def test_mechanism_profile():
    p = kn.mechanism_profile("tree", 10_000)
    assert (p.l2_multiplier, p.quantities_per_leaf, p.paper_tree_nodes) == (math.sqrt(14), 14, 15)
    assert p.max_variance_factor == 13 and p.worst_leaf == 1
    h = kn.mechanism_profile("honaker", 10_000)
    assert (h.quantities_per_leaf, h.l1_multiplier, h.worst_leaf) == (14, 14, 5461)
    assert h.l2_multiplier < p.l2_multiplier
    f = kn.mechanism_profile("factorization", 10_000)
    assert f.l2_multiplier**2 == pytest.approx(f.max_variance_factor)
    assert f.quantities_per_leaf == 10_000
    b = kn.mechanism_profile("blt", 10_000, buffers=4)
    assert b.l2_multiplier == pytest.approx(f.l2_multiplier, rel=0.05)
    # The tree profile is O(1) even for astronomically many leaves.
    big = kn.mechanism_profile("tree", 10**18)
    assert big.quantities_per_leaf == (10**18).bit_length()
    assert kn.mechanism_profile("blt", 10**12).max_variance_factor > 0


def test_structure_for_the_accountant():
    m = kn.make_prefix_mechanism("factorization", 4, 100, scale=2.0, seed=0)
    s = m.sensitivity_structure()
    assert s["kind"] == "factorization" and s["quantities_per_leaf"] == 100
    assert np.linalg.norm(s["coefficients"]) == pytest.approx(s["l2_multiplier"])
    t = kn.make_prefix_mechanism("tree", 4, 100, scale=2.0, seed=0).sensitivity_structure()
    assert t["quantities_per_leaf"] == 7 and np.all(t["coefficients"] == 1.0)
    h = kn.make_prefix_mechanism("honaker", 4, 100, scale=2.0, seed=0).sensitivity_structure()
    assert np.linalg.norm(h["coefficients"]) == pytest.approx(h["l2_multiplier"])
    assert h["worst_leaf"] == kn.mechanism_profile("honaker", 100).worst_leaf != 1


def test_tree_kind_is_the_tree_aggregator():
    a = kn.make_prefix_mechanism("tree", (2, 2), 20, scale=1.0, seed=5)
    b = kn.TreeAggregator((2, 2), 20, scale=1.0, seed=5)
    assert isinstance(a, kn.TreeAggregator) and a.kind == "tree"
    for _ in range(11):
        a.push(np.eye(2))
        b.push(np.eye(2))
    np.testing.assert_array_equal(a.release(), b.release())
    assert a.nodes_used == 3


def test_one_binding_class_and_limits_from_the_rust_core():
    from privrl import _core

    assert C.MECHANISMS == _core.MECHANISMS == ("tree", "honaker", "factorization", "blt")
    assert C.NOISES == _core.NOISES and "discrete_gaussian" in C.NOISES
    # one lattice default everywhere (agents, calibrations, kernels): 2^-24
    assert (C.MAX_NODE_LEN, C.DEFAULT_GRID_BITS, C.MAX_GRID_BITS) == (2**27, 24, 24)
    assert (C.DEFAULT_BLT_BUFFERS, C.MAX_BLT_BUFFERS, C.MAX_COEFFICIENTS) == (8, 64, 2**24)
    assert C.MAX_FACTORIZATION_CAPACITY == _core.MAX_FACTORIZATION_CAPACITY == 2**22
    C.PrefixMechanism("blt", 2, 3, buffers=C.MAX_BLT_BUFFERS)
    with pytest.raises(PrivacyParameterError):
        C.PrefixMechanism("blt", 2, 3, buffers=C.MAX_BLT_BUFFERS + 1)
    with pytest.raises(PrivacyParameterError):
        kn.TreeAggregator(C.MAX_NODE_LEN + 1, 4)
    assert kn.TreeAggregator(3, 1000).max_nodes == 11 == kn.mechanism_profile("tree", 1000).paper_tree_nodes
    # TreeAggregator is the "tree" kind of the one binding class; only it keeps the last node.
    a = C.PrefixMechanism("tree", (2, 2), 9, seed=4)
    b = kn.TreeAggregator((2, 2), 9, seed=4, keep_last_node=True)
    assert isinstance(b, C.PrefixMechanism) and type(a._m) is type(b._m) is _core.PrefixMechanism
    for _ in range(9):
        np.testing.assert_array_equal(a.push_release(np.eye(2)), b.push_release(np.eye(2)))
        assert b.last_node_noise().shape == (2, 2)
    assert a._m.last_node_noise().size == 0
    with pytest.raises(ValueError):
        _core.PrefixMechanism("honaker", False, 2, 4, "gaussian", 1.0, bytes(32), keep_last_node=True)


def test_capacity_and_input_errors():
    for kind in KINDS:
        m = kn.make_prefix_mechanism(kind, 2, 3, seed=0)
        for _ in range(3):
            m.push([1.0, 2.0])
        with pytest.raises(CapacityError):
            m.push([1.0, 2.0])
        with pytest.raises(CapacityError):
            m.push_zero()
        m2 = kn.make_prefix_mechanism(kind, 2, 3, seed=0)
        with pytest.raises(NonFiniteError):
            m2.push([1.0, np.inf])
        with pytest.raises(ShapeError):
            m2.push([1.0, 2.0, 3.0])
        assert m2.steps == 0
    with pytest.raises(ValueError):
        kn.make_prefix_mechanism("cauchy", 2, 3)
    with pytest.raises(ValueError):
        C.PrefixMechanism("honaker", 2, 3, buffers=4)
    with pytest.raises(PrivacyParameterError):
        C.PrefixMechanism("blt", 2, 3, buffers=65)
    with pytest.raises(PrivacyParameterError):
        C.PrefixMechanism("honaker", 2, 3, noise="discrete_gaussian")
    with pytest.raises(CapacityError):
        C.PrefixMechanism("factorization", 2, 2**23)
    # The BLT has O(1) state whatever the horizon, up to 2^44 (its variance recursion's precision)
    big = C.PrefixMechanism("blt", (4, 4), 2**44, seed=0)
    big.push(np.eye(4))
    assert big.live_nodes == 9
    with pytest.raises(PrivacyParameterError, match="mechanism='tree'"):
        C.PrefixMechanism("blt", (4, 4), 2**44 + 1, seed=0)


# ---------------------------------------------------------------- secure samplers


def lattice_draws(noise, grid_bits, n, seed=0):
    st = kn.NoiseStream(noise, 1.0, seed=seed, grid_bits=grid_bits)
    x = st.vectors(1, n)[0] / st.lattice_unit()
    assert np.all(x == np.round(x))
    return x.astype(np.int64)


def chi_square_against_pmf(x, logpmf, support):
    """Pearson chi-square of the counts of x on `support` (+ one pooled tail bin)."""
    from scipy import stats

    w = np.exp(logpmf(support))
    p = np.append(w, 0.0) / w.sum()
    # The pooled tail's probability from the normalizing constant over a wide range.
    wide = np.arange(-400, 401)
    total = np.exp(logpmf(wide)).sum()
    p = np.append(w / total, 1.0 - w.sum() / total)
    counts = np.array([(x == s).sum() for s in support] + [(~np.isin(x, support)).sum()])
    keep = p * len(x) >= 5
    expected = p * len(x)
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp).pvalue


def test_discrete_gaussian_exact_pmf():
    # grid_bits = 1: N_Z(0, 4) in lattice units, P(n) ~ exp(-n^2 / 8).
    x = lattice_draws("discrete_gaussian", 1, 200_000)
    support = np.arange(-9, 10)
    pval = chi_square_against_pmf(x, lambda n: -(n.astype(float) ** 2) / 8.0, support)
    assert pval > 1e-4, pval


def test_discrete_laplace_exact_pmf():
    # grid_bits = 1: discrete Laplace with scale 2, P(n) ~ exp(-|n| / 2).
    x = lattice_draws("discrete_laplace", 1, 200_000, seed=1)
    support = np.arange(-14, 15)
    pval = chi_square_against_pmf(x, lambda n: -np.abs(n.astype(float)) / 2.0, support)
    assert pval > 1e-4, pval


@pytest.mark.parametrize("noise", ["discrete_gaussian", "discrete_laplace"])
def test_discrete_samplers_variance_and_symmetry(noise):
    scale, k, n = 3.0, 12, 200_000
    st = kn.NoiseStream(noise, scale, seed=4, grid_bits=k)
    x = st.vectors(1, n)[0]
    var = scale**2 if noise == "discrete_gaussian" else 2 * scale**2
    assert np.var(x) == pytest.approx(var, rel=0.02)
    assert abs(x.mean()) < 5 * math.sqrt(var / n)
    # Symmetry: P(X > 0) = P(X < 0), and the third standardized moment vanishes.
    pos, neg = (x > 0).sum(), (x < 0).sum()
    assert abs(pos - neg) < 5 * math.sqrt(pos + neg)
    assert abs(np.mean(x**3)) / var**1.5 < 5 * math.sqrt(15 / n)


def test_discrete_symmetric_matrices():
    st = kn.NoiseStream("discrete_gaussian", 2.0, seed=0, grid_bits=6)
    m = st.symmetric(4000, 3)
    assert np.array_equal(m, m.transpose(0, 2, 1))
    # Same per-entry variances as (Z' + Z'^T)/sqrt(2): sigma^2 off-diagonal, 2 sigma^2 diagonal.
    assert np.var(m[:, 0, 1]) == pytest.approx(4.0, rel=0.07)
    assert np.var(m[:, 1, 1]) == pytest.approx(8.0, rel=0.07)
    lap = kn.NoiseStream("discrete_laplace", 1.0, seed=0, grid_bits=4)
    unit = lap.lattice_unit(symmetric=True, divisor=2.0)
    ml = lap.symmetric(10, 3, divisor=2.0) / unit
    assert np.array_equal(ml, np.round(ml)) and unit == 2**-4 / 2
    with pytest.raises(PrivacyParameterError):
        lap.symmetric(1, 3, divisor=math.sqrt(2))  # (Z'+Z'^T)/sqrt 2 is off any lattice


def test_discrete_tree_release_on_lattice_with_rounded_data():
    tr = kn.TreeAggregator(3, 50, noise="discrete_gaussian", scale=2.0, seed=1, grid_bits=10)
    assert tr.grid == 2.0 / 1024
    leaf = np.array([0.3, -1.7, 1e-5])
    for _ in range(21):
        tr.push(leaf)
    np.testing.assert_array_equal(tr.exact_sum(), 21 * np.round(leaf / tr.grid) * tr.grid)
    k = tr.release() / tr.grid
    np.testing.assert_array_equal(k, np.round(k))
    off, _diag = tr.release_variance()
    assert off == pytest.approx(3 * 4.0)  # popcount(21) nodes of variance sigma^2
    with pytest.raises(PrivacyParameterError):
        tr.push(np.array([1e300, 0.0, 0.0]))
    assert tr.steps == 21


def test_discrete_rounding_moves_sensitivity_by_at_most_a_grid_step():
    """Neighbouring leaves rounded to the grid differ by <= ||x - x'|| + grid * sqrt(n)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 20))
        a = kn.TreeAggregator(n, 2, noise="discrete_laplace", scale=1.0, seed=0, grid_bits=3)
        b = kn.TreeAggregator(n, 2, noise="discrete_laplace", scale=1.0, seed=0, grid_bits=3)
        x, y = rng.uniform(-3, 3, n), rng.uniform(-3, 3, n)
        a.push(x)
        b.push(y)
        diff = np.linalg.norm(a.release() - b.release())  # same seed: the noise cancels
        assert diff <= np.linalg.norm(x - y) + a.grid * math.sqrt(n) + 1e-12


@pytest.mark.parametrize("kind", ["tree", "honaker", "factorization", "blt"])
def test_a_release_beyond_the_float_range_is_refused(kind):
    """Two finite leaves of 1e308 sum past the float range: refused with NonFiniteError instead of
    releasing inf, at the push since audit 5 (the release refused it after the push had committed
    the leaf; the discrete samplers refuse such leaves at the push, outside their exact lattice).
    The continuous law (the kernels' default until they took the discrete one where it exists)."""
    m = kn.make_prefix_mechanism(kind, 3, 4, noise="gaussian", scale=1.0, seed=0)
    m.push(np.full(3, 1e308))
    assert np.isfinite(m.release()).all()
    with pytest.raises(NonFiniteError, match="exceed the float range"):
        m.push(np.full(3, 1e308))
    assert m.steps == 1 and np.isfinite(m.release()).all()


@pytest.mark.parametrize("kind", ["tree", "honaker", "factorization", "blt"])
def test_a_matrix_mechanism_refuses_a_non_symmetric_leaf(kind):
    """Audit 5: a (d, d) mechanism takes symmetric matrices and adds symmetric noise, but a leaf
    [[1, 5], [0, 1]] was accepted and its release was not symmetric (nor was privatize's)."""
    from privrl import kernels as kn
    from privrl.exceptions import AssumptionError

    m = C.PrefixMechanism(kind, (2, 2), 4, seed=0)
    bad = np.array([[1.0, 5.0], [0.0, 1.0]])
    for call in (lambda: m.push(bad), lambda: m.push_release(bad), lambda: m.push_release(bad.tolist())):
        with pytest.raises(AssumptionError, match=r"leaf must be symmetric"):
            call()
    assert m.steps == 0  # refused before Rust: nothing consumed
    out = m.push_release(np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert np.array_equal(out, out.T)
    with pytest.raises(AssumptionError, match=r"x\[0\] must be symmetric"):
        kn.NoiseStream("gaussian", 1.0, seed=0).privatize(bad[None], symmetric=True)


@pytest.mark.parametrize("kind", ["tree", "honaker", "factorization", "blt"])
def test_a_leaf_whose_sum_overflows_is_refused_before_any_change(kind):
    """Audit 5: push(1e308) twice committed the second leaf (a slot spent, the exact sum inf)
    before the release refused it, and every later release failed. It is refused up front now,
    and the mechanism goes on."""
    from privrl.exceptions import NonFiniteError

    m = C.PrefixMechanism(kind, 2, 4, seed=0, noise="none")
    m.push(np.full(2, 1e308))
    with pytest.raises(NonFiniteError, match="would exceed the float range"):
        m.push_release(np.full(2, 1e308))
    assert m.steps == 1 and np.array_equal(m.exact_sum(), np.full(2, 1e308))
    assert np.array_equal(m.push_release(np.full(2, -1e308)), np.zeros(2))


def test_small_edges_of_the_kernel_api():
    """Honaker's variance before any push printed -0.0 (an empty f64 sum); round_to_grid passed
    NaN through; noise="none" silently ignored a scale."""
    for kind in ("tree", "honaker", "factorization", "blt"):
        off, diag = kn.make_prefix_mechanism(
            kind, 2, 4, noise="gaussian", scale=1.0, seed=0
        ).release_variance()
        assert (math.copysign(1.0, off), math.copysign(1.0, diag)) == (1.0, 1.0), kind
    st = kn.NoiseStream("discrete_gaussian", 1.0, seed=0)
    for bad in (np.array([0.5, np.nan]), [[np.inf]]):
        with pytest.raises(NonFiniteError):
            st.round_to_grid(bad)
    with pytest.raises(ValueError, match="ignores scale"):
        kn.make_prefix_mechanism("tree", 1, 4, noise="none", scale=5.0, seed=0)
    for scale in (0.0, 1.0):
        assert kn.make_prefix_mechanism("tree", 1, 4, noise="none", scale=scale, seed=0).scale == 0.0


def test_a_mechanism_whose_state_cannot_fit_in_memory_is_refused_up_front():
    # a BLT of 2^27-entry leaves with 64 buffers would allocate ~200 GiB: refused before the Rust
    # allocation (which aborted the process)
    from privrl.common.errors import ResourceError
    from privrl.common.memory import physical_memory
    from privrl.kernels import make_prefix_mechanism

    if physical_memory() is None:
        pytest.skip("this machine does not report its memory: the refusal has nothing to compare")
    with pytest.raises(ResourceError, match="blt mechanism"):
        make_prefix_mechanism("blt", 2**27, 4, buffers=64, seed=0)
    make_prefix_mechanism("blt", (40, 40), 1000, seed=0)  # an ordinary one is built


@pytest.mark.parametrize("kind", ["tree", "honaker", "factorization", "blt"])
def test_a_mechanism_whose_noise_variance_overflows_is_refused(kind):
    """TreeAggregator((2, 2), 8, divisor=1e-200) was built and reported release_variance() = (nan,
    nan) before a push (0 x inf) and (inf, inf) after; scale=1e160 the same (sigma^2 past the
    doubles); divisor=1e-320 (subnormal) failed at the first push saying "the leaves' sum exceeds the
    float range". Now refused at construction; the largest scales whose variance is finite still
    report it exactly (variance_factor(t) x scale^2, 2 scale^2 / c^2 off the diagonal)."""
    for args in ({"divisor": 1e-200}, {"divisor": 1e-320}, {"scale": 1e160}):
        with pytest.raises(PrivacyParameterError, match=r"divisor|variance overflows"):
            kn.make_prefix_mechanism(kind, (2, 2), 8, **args)
    with pytest.raises(PrivacyParameterError, match="variance overflows"):
        kn.make_prefix_mechanism(kind, 3, 8, noise="laplace", scale=1e154)
    with pytest.raises(PrivacyParameterError, match="positive normal double"):
        kn.make_prefix_mechanism(kind, (2, 2), 8, noise="none", divisor=1e-320)
    m = kn.make_prefix_mechanism(kind, (2, 2), 8, scale=1e150, seed=0)
    assert m.release_variance() == (0.0, 0.0)
    m.push(np.eye(2))
    off, diag = m.release_variance()
    assert off == pytest.approx(m.variance_factor(1) * 2 * 1e300 / 2) and diag == pytest.approx(2 * off)


@pytest.mark.parametrize("kind", kn.MECHANISMS)
def test_a_leaf_of_the_wrong_shape_is_named_by_the_shape_given(kind):
    """A scalar or 0-d leaf for a vector mechanism of n = 3 was refused as "leaf must have shape
    (3,), got (1,)": the shape numeric_array made of it, not one the user passed. The message
    names the shape given, () here, on push and push_release; a scalar leaf where n = 1 is taken
    as before."""
    m = kn.make_prefix_mechanism(kind, 3, 4, noise="gaussian", seed=0)
    for leaf in (np.array(1.0), 2.0):
        for push in (m.push, m.push_release):
            with pytest.raises(ShapeError, match=r"^leaf must have shape \(3,\), got \(\)$"):
                push(leaf)
    with pytest.raises(ShapeError, match=r"got \(3, 1\)$"):
        m.push(np.ones((3, 1)))
    one = kn.make_prefix_mechanism(kind, 1, 4, noise="gaussian", seed=0)
    one.push(np.array(2.0))
    one.push(3.0)
    assert one.exact_sum().tolist() == [5.0] and m.steps == 0


@pytest.mark.parametrize("kind", kn.MECHANISMS)
def test_make_prefix_mechanism_names_an_option_of_another_kind(kind):
    """make_prefix_mechanism handed its options to TreeAggregator or PrefixMechanism as they came:
    buffers= on the tree (even buffers=None, which PrefixMechanism takes on every kind) was
    "TreeAggregator.__init__() got an unexpected keyword argument 'buffers'", keep_last_node= on
    the others "PrefixMechanism.__init__() got an unexpected keyword argument", a typo the same:
    classes the caller never named. The options are named as make_prefix_mechanism's; None /
    False (the defaults) are taken on every kind, and the mechanisms built are unchanged."""
    make = lambda **o: kn.make_prefix_mechanism(kind, 3, 4, noise="gaussian", seed=0, **o)  # noqa: E731
    with pytest.raises(
        TypeError, match=r"^make_prefix_mechanism\(\) has no option 'bufers': its options are"
    ):
        make(bufers=4)
    if kind != "blt":
        with pytest.raises(
            PrivacyParameterError, match=rf"^buffers only applies to kind 'blt', not '{kind}'"
        ):
            make(buffers=4)
    if kind != "tree":
        with pytest.raises(
            PrivacyParameterError, match=rf"^keep_last_node only applies to kind 'tree', not '{kind}'"
        ):
            make(keep_last_node=True)
    plain, defaults = make(), make(buffers=None, keep_last_node=False)
    assert type(plain) is type(defaults)
    for m in (plain, defaults):
        m.push(np.ones(3))
    np.testing.assert_array_equal(plain.release(), defaults.release())


def test_grid_bits_with_a_law_without_a_lattice_is_refused():
    """grid_bits set the lattice of the discrete samplers only; given with "gaussian" / "laplace" /
    "none" (or a plan of sampler "float") it was silently ignored. A value other than the default
    is now refused; the default (which internal callers pass with every law) is accepted."""
    from privrl.privacy.plans import ReleasePlan

    for noise in ("gaussian", "laplace", "none"):
        with pytest.raises(PrivacyParameterError, match="grid_bits applies to the discrete sampler only"):
            kn.NoiseStream(noise, 1.0, seed=0, grid_bits=10)
        assert kn.NoiseStream(noise, 1.0, seed=0, grid_bits=kn.DEFAULT_GRID_BITS).grid_bits == 24
    with pytest.raises(PrivacyParameterError, match="noise='gaussian' has no lattice"):
        kn.make_prefix_mechanism("tree", 2, 8, noise="gaussian", scale=1.0, seed=0, grid_bits=3)
    with pytest.raises(PrivacyParameterError, match="grid_bits applies"):
        kn.PrefixMechanism("honaker", 2, 8, noise="gaussian", scale=1.0, seed=0, grid_bits=3)
    assert kn.NoiseStream("discrete_gaussian", 1.0, seed=0, grid_bits=10).grid_bits == 10
    with pytest.raises(PrivacyParameterError, match="sampler='float' has no lattice"):
        ReleasePlan("psrl", "t", "none", None, 2, 4, "tree", (), sampler="float", grid_bits=10)
