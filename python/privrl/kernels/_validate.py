"""Input validation shared by the kernel wrappers: convert once to C-contiguous float64
and turn wrong shapes / non-finite values into privrl exceptions before Rust sees them."""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np

from privrl.exceptions import NonFiniteError, PrivacyParameterError, ShapeError

#: Largest count / size / capacity the Rust core accepts (a u64 / usize without wrap-around).
MAX_INT = 2**63 - 1

#: numpy dtype kinds that convert to float64 without losing meaning: bool, ints, floats.
_NUMERIC_KINDS = "biuf"


def check_int(x: Any, name: str, low: int = 1, high: int = MAX_INT) -> int:
    """`x` as a Python int in [low, high]; bools, floats and strings are refused
    (PrivacyParameterError, a ValueError), so nothing wraps or overflows in Rust."""
    if isinstance(x, bool) or not isinstance(x, (numbers.Integral, np.integer)):
        raise PrivacyParameterError(f"{name} must be an integer in [{low}, {high}], got {x!r}")
    v = int(x)
    if not (low <= v <= high):
        raise PrivacyParameterError(f"{name} must be an integer in [{low}, {high}], got {v}")
    return v


def check_real(x: Any, name: str, positive: bool = True) -> float:
    """`x` as a finite float (> 0 when `positive`, else >= 0); PrivacyParameterError otherwise
    (also for str / complex / None and ints too large for a double)."""
    if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        raise PrivacyParameterError(f"{name} must be a real number, got {x!r}")
    try:
        v = float(x)
    except (OverflowError, ValueError, TypeError):
        raise PrivacyParameterError(f"{name} must be a finite real number, got {x!r}") from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise PrivacyParameterError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {x!r}")
    return v


def as_f64(x: Any, name: str, ndim: int, shape: tuple | None = None, finite: bool = False) -> np.ndarray:
    """`x` as a C-contiguous float64 array with `ndim` dims (and `shape`, None = any size).

    finite=True also rejects NaN/inf here; the kernels leave it False because the Rust core
    checks every input it reads for finiteness (one pass, no temporary)."""
    a = numeric_array(x, name)
    if a.ndim != ndim:
        raise ShapeError(f"{name} must have {ndim} dimension(s), got shape {a.shape}")
    if shape is not None:
        for i, (got, want) in enumerate(zip(a.shape, shape, strict=False)):
            if want is not None and got != want:
                raise ShapeError(
                    f"{name} must have shape {tuple('*' if s is None else s for s in shape)}, "
                    f"got {a.shape} (axis {i})"
                )
    if finite and a.size and not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        raise NonFiniteError(
            f"{name} contains a non-finite value {a[tuple(bad)]} at index {tuple(int(i) for i in bad)}"
        )
    return a


def numeric_array(x: Any, name: str) -> np.ndarray:
    """`x` as a C-contiguous float64 array. Only bool / int / float inputs are converted:
    complex (numpy would drop the imaginary part with a mere warning), strings (numpy parses
    "1.5"), objects (ints beyond 64 bits, None, ...) raise TypeError instead of being guessed."""
    if isinstance(x, np.ndarray):
        kind = x.dtype.kind
    else:
        try:
            kind = np.asarray(x).dtype.kind
        except (TypeError, ValueError, OverflowError) as e:
            raise ShapeError(f"{name} must be a float array: {e}") from None
    if kind not in _NUMERIC_KINDS:
        raise TypeError(f"{name} must be a real numeric array (bool, int or float), got dtype kind {kind!r}")
    try:
        return np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as e:
        raise ShapeError(f"{name} must be a float array: {e}") from None


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
    raise TypeError(
        f"seed must be None, an int, 32 bytes, a SeedSequence or a Generator, got {type(seed).__name__}"
    )


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
