"""Every public privacy default is the agents': the kernels' noise law, the sampler / mechanism
defaults of the public functions, and the sigma a direct calibration gives against an agent's."""

from __future__ import annotations

import numpy as np
import pytest

from privrl import kernels as kn
from privrl.privacy.common import DEFAULT_SAMPLER, node_noise, resolve_sampler


@pytest.mark.parametrize("kind", kn.MECHANISMS)
def test_the_kernels_default_law_is_the_agents_sampler_wherever_the_mechanism_has_it(kind):
    """The kernels defaulted to noise="gaussian" (the continuous law, sampler="float") while the
    agents draw "discrete_gaussian" (DEFAULT_SAMPLER): a default TreeAggregator / BLT /
    NoiseStream drew with the floating-point side channel. Now noise=None is the law a JDP agent
    with this mechanism draws (resolve_sampler's rule): discrete on the tree and BLT, the
    continuous Gaussian on Honaker / the factorization (they have no discrete one)."""
    law = node_noise("gaussian", resolve_sampler("jdp", kind))
    assert kn.make_prefix_mechanism(kind, 2, 4, seed=0).noise_kind == law
    assert kn.PrefixMechanism(kind, (2, 2), 4, seed=0).noise_kind == law
    if kind == "tree":
        assert kn.TreeAggregator(2, 4, seed=0).noise_kind == law == "discrete_gaussian"
    assert law == ("discrete_gaussian" if kind in kn.continual.DISCRETE_MECHANISMS else "gaussian")


def test_a_default_noise_stream_draws_the_agents_exact_law_on_its_lattice():
    """NoiseStream() drew numpy-like float Gaussians; now the exact discrete Gaussian of a default
    agent (DEFAULT_SAMPLER), every draw a multiple of scale * 2^-DEFAULT_GRID_BITS, and privatize
    rounds the data to that lattice first."""
    assert DEFAULT_SAMPLER == "discrete"
    st = kn.NoiseStream(scale=3.0, seed=0)
    assert st.noise_kind == node_noise("gaussian", DEFAULT_SAMPLER)
    unit = st.lattice_unit()
    assert unit == 3.0 * 2.0**-kn.DEFAULT_GRID_BITS
    z = st.vectors(2000, 3)
    assert np.array_equal(z / unit, np.round(z / unit))
    assert abs(z.std() / 3.0 - 1.0) < 0.05
    m = kn.NoiseStream(scale=3.0, seed=0).privatize(np.full((4, 3), 0.1))
    assert np.array_equal(m / unit, np.round(m / unit))
    # the continuous law stays one argument away, and is what it was
    f = kn.NoiseStream("gaussian", 3.0, seed=0).vectors(2000, 3)
    assert not np.array_equal(f / unit, np.round(f / unit))
