"""Input validation shared by the kernel wrappers: convert once to C-contiguous float64
and turn wrong shapes / non-finite values into privrl exceptions before Rust sees them."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from privrl.exceptions import NonFiniteError, ShapeError


def as_f64(x: Any, name: str, ndim: int, shape: tuple | None = None, finite: bool = False) -> np.ndarray:
    """`x` as a C-contiguous float64 array with `ndim` dims (and `shape`, None = any size).

    finite=True also rejects NaN/inf here; the kernels leave it False because the Rust core
    checks every input it reads for finiteness (one pass, no temporary)."""
    try:
        a = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ShapeError(f"{name} must be a float array: {e}") from None
    if a.ndim != ndim:
        raise ShapeError(f"{name} must have {ndim} dimension(s), got shape {a.shape}")
    if shape is not None:
        for i, (got, want) in enumerate(zip(a.shape, shape)):
            if want is not None and got != want:
                raise ShapeError(f"{name} must have shape {tuple('*' if s is None else s for s in shape)}, got {a.shape} (axis {i})")
    if finite and a.size and not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        raise NonFiniteError(f"{name} contains a non-finite value {a[tuple(bad)]} at index {tuple(int(i) for i in bad)}")
    return a


def seed_bytes(seed: Any) -> bytes:
    """32 seed bytes for a ChaCha noise stream. None -> OS entropy (the default for
    privacy noise); int / SeedSequence / 32 bytes -> reproducible stream."""
    if seed is None:
        return os.urandom(32)
    if isinstance(seed, (bytes, bytearray)):
        if len(seed) != 32:
            raise ValueError(f"a bytes seed must have 32 bytes, got {len(seed)}")
        return bytes(seed)
    if isinstance(seed, np.random.Generator):
        return seed.bytes(32)
    if isinstance(seed, (int, np.integer)):
        if int(seed) < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        seed = np.random.SeedSequence(int(seed))
    if isinstance(seed, np.random.SeedSequence):
        return seed.generate_state(8, dtype=np.uint32).astype("<u4").tobytes()
    raise TypeError(f"seed must be None, an int, 32 bytes, a SeedSequence or a Generator, got {type(seed).__name__}")


def tie_seed(ties: str, rng: Any) -> int | None:
    """The u64 seed the Rust argmax uses for random tie-breaking (None = lowest index)."""
    if ties == "lowest":
        return None
    if ties != "random":
        raise ValueError(f"ties must be 'random' or 'lowest', got {ties!r}")
    if rng is None:
        return int.from_bytes(os.urandom(8), "little") >> 1
    if isinstance(rng, (int, np.integer)):
        return int(rng) & ((1 << 63) - 1)
    # One raw 64-bit draw from the generator's bit stream: ~10x cheaper than rng.integers.
    return int(rng.bit_generator.random_raw()) >> 1
