"""What the numpy references of the agents (privrl.agents.<algorithm>.reference) share to be fed
the very noise an agent draws: its noise seeds, and the lattice of its discrete samplers. Tests and
benches only; never on a hot path."""

from __future__ import annotations

import numpy as np

from privrl import kernels


def noise_seeds(seed, n):
    """An agent's privacy-noise seeds (privrl.agents.common.base.Agent.noise_seeds) from its seed."""
    return np.random.SeedSequence(seed).spawn(3)[1].spawn(n)


def lattice(noise, sigma, grid_bits, divisor=None):
    """x -> x on the lattice of a discrete sampler (identity for float noise)."""
    if not noise.startswith("discrete"):
        return lambda x: x
    stream = kernels.NoiseStream(noise, sigma, seed=0, grid_bits=grid_bits or kernels.DEFAULT_GRID_BITS)
    if divisor is None:
        return stream.round_to_grid
    return lambda x: stream.round_to_grid(x, symmetric=True, divisor=divisor)
