"""The default divisor of symmetric matrix noise (Z' + Z'^T)/divisor: 2 for both Laplace laws (App.
"Pure DP": release M + Z', symmetrize by post-processing, M + (Z' + Z'^T)/2, the bound
laplace_matrix_bound assumes), sqrt(2) for the Gaussian laws (App. B), on every public kernel."""

import math

import numpy as np
import pytest

from privrl import kernels as kn
from privrl.kernels.continual import default_divisor

LAPLACE, GAUSSIAN = ("laplace", "discrete_laplace"), ("gaussian", "discrete_gaussian")
WANT = {**dict.fromkeys(LAPLACE, 2.0), **dict.fromkeys(GAUSSIAN, math.sqrt(2.0))}
#: The mechanism kinds each law runs on (the discrete laws: the tree; discrete Gaussian also BLT).
KINDS = {
    "laplace": ("tree", "honaker", "factorization", "blt"),
    "discrete_laplace": ("tree",),
    "gaussian": ("tree", "honaker", "factorization", "blt"),
    "discrete_gaussian": ("tree", "blt"),
}


@pytest.mark.parametrize("noise", [*LAPLACE, *GAUSSIAN])
def test_the_default_divisor_is_2_for_laplace_and_sqrt2_for_gaussian_bit_for_bit(noise):
    """A call without a divisor draws exactly what the call with the law's divisor draws; for the
    continuous Laplace it was sqrt(2), App. B's Gaussian divisor, so the noise was sqrt(2) times
    the (Z' + Z'^T)/2 of the paper's pure-DP construction."""
    want = WANT[noise]
    assert default_divisor(noise) == want
    m = np.eye(3)[None] * 0.25
    a, b = kn.NoiseStream(noise, 0.7, seed=5), kn.NoiseStream(noise, 0.7, seed=5)
    assert a.symmetric(4, 3).tobytes() == b.symmetric(4, 3, divisor=want).tobytes()
    assert a.privatize(m, symmetric=True).tobytes() == b.privatize(m, symmetric=True, divisor=want).tobytes()
    leaf = np.full((3, 3), 0.5)
    for kind in KINDS[noise]:
        got = kn.make_prefix_mechanism(kind, (3, 3), 8, noise=noise, scale=0.7, seed=9)
        ref = kn.make_prefix_mechanism(kind, (3, 3), 8, noise=noise, scale=0.7, seed=9, divisor=want)
        assert got.divisor == want, kind
        for _ in range(3):
            got.push(leaf)
            ref.push(leaf)
        assert got.release().tobytes() == ref.release().tobytes(), kind
    tree = kn.TreeAggregator((3, 3), 8, noise=noise, scale=0.7, seed=9)
    assert tree.divisor == want


@pytest.mark.parametrize("noise", LAPLACE)
def test_the_default_laplace_matrix_noise_has_the_paper_variances(noise):
    """(Z' + Z'^T)/2 with Z' i.i.d. Lap(b) (variance 2 b^2): off-diagonal (Z'_ij + Z'_ji)/2 has
    variance 2 * 2 b^2 / 4 = b^2, the diagonal 2 Z'_ii / 2 = Z'_ii has 4 * 2 b^2 / 4 = 2 b^2 (the
    old default sqrt(2) gave 2 b^2 and 4 b^2). Each empirical variance (mean of squares, the mean
    being 0) is a chi-square-like sum: its relative sd is sqrt(Var(Y^2) / n) / E[Y^2], with
    E[Z^4] = 24 b^4 for Laplace, so Var(Y^2) = 20 b^4 on the diagonal (E Y^2 = 2 b^2) and, for
    Y = (Z_1 + Z_2)/2, E Y^4 = (2 * 24 + 6 * 4) b^4 / 16 = 4.5 b^4, Var(Y^2) = 3.5 b^4 off it.
    The bands are 5 such sds (about 2.7% and 4% at these counts)."""
    b, count, d = 1.3, 20_000, 4
    z = kn.NoiseStream(noise, b, seed=11).symmetric(count, d)
    assert np.array_equal(z, np.swapaxes(z, 1, 2))
    iu = np.triu_indices(d, 1)
    off, diag = z[:, iu[0], iu[1]].ravel(), z[:, np.arange(d), np.arange(d)].ravel()
    for sample, mean2, var2 in ((off, b**2, 3.5 * b**4), (diag, 2 * b**2, 20 * b**4)):
        band = 5 * math.sqrt(var2 / sample.size) / mean2
        assert abs(np.mean(sample**2) / mean2 - 1) < band, (noise, mean2, np.mean(sample**2))
    # the mechanisms' own per-node variance says the same (continuous Laplace runs on every kind)
    # (step_variance(t) = variance_factor(t) * a node entry's variance)
    for kind in KINDS[noise]:
        m = kn.make_prefix_mechanism(kind, (d, d), 4, noise=noise, scale=b, seed=0)
        f = m.variance_factor(1)
        assert m.step_variance(1) == (pytest.approx(f * b**2), pytest.approx(f * 2 * b**2)), kind


def test_the_default_gaussian_matrix_noise_is_unchanged():
    """Gaussian keeps App. B's sqrt(2): (Z' + Z'^T)/sqrt(2) with N(0, s^2) entries has variance
    2 s^2 / 2 = s^2 off the diagonal and 4 s^2 / 2 = 2 s^2 on it; n S / E[Y^2] is chi-square(n)
    (relative sd sqrt(2 / n)), band 5 sds."""
    s, count, d = 0.9, 20_000, 4
    z = kn.NoiseStream("gaussian", s, seed=12).symmetric(count, d)
    iu = np.triu_indices(d, 1)
    off, diag = z[:, iu[0], iu[1]].ravel(), z[:, np.arange(d), np.arange(d)].ravel()
    for sample, mean2 in ((off, s**2), (diag, 2 * s**2)):
        assert abs(np.mean(sample**2) / mean2 - 1) < 5 * math.sqrt(2 / sample.size)
