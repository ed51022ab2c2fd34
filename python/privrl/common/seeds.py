"""Seeds at the public edge: the reproducibility seeds numpy takes (``check_seed``), the int a seed
stands for (``int_seed``), the seed a seeded environment is drawn from and named by
(``model_seed``), and the seeds of the Rust noise and tie-breaking streams (``seed_bytes``,
``tie_seed``). Re-exported by ``privrl.common.checks``, the one vocabulary of checks."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from privrl.common.errors import PrivacyParameterError, SeedError
from privrl.common.kinds import is_choice, is_integer
from privrl.common.memory import refuse_over_memory

__all__ = [
    "check_seed",
    "int_seed",
    "model_seed",
    "noise_seeds",
    "seed_bytes",
    "spawn_noise_seeds",
    "tie_seed",
]


def check_seed(seed: Any, name: str = "seed", generator: bool = True) -> Any:
    """A reproducibility seed as numpy takes it (None, an int >= 0, a sequence of them, a
    SeedSequence; a Generator or BitGenerator where ``generator``), returned unchanged; anything
    else (a negative or bool int, a float, a string) is refused here with the argument's name,
    not deep in numpy."""
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return seed
    if generator and isinstance(seed, (np.random.Generator, np.random.BitGenerator)):
        return seed
    bad = isinstance(seed, bool) or (
        isinstance(seed, (list, tuple)) and any(isinstance(v, bool) for v in seed)
    )
    if not bad:
        try:
            np.random.SeedSequence(seed)
            return seed
        except (TypeError, ValueError):
            pass
    raise SeedError(
        f"{name} must be None, an integer >= 0 (or a sequence of them) or a numpy SeedSequence"
        f"{' or Generator' if generator else ''}, got {seed!r}"
    )


def _u32_words(value: Any) -> list[int]:
    """The 32-bit words numpy reads an int (least significant first; 0 is one word) or a
    sequence of ints (each element's words in turn) as, for SeedSequence entropy."""
    if isinstance(value, (int, np.integer)):
        n, words = int(value), []
        while True:
            words.append(n & 0xFFFFFFFF)
            n >>= 32
            if not n:
                return words
    return [w for v in value for w in _u32_words(v)]


def int_seed(seed: Any) -> int | None:
    """The int ``n >= 0`` whose ``np.random.SeedSequence(n)`` is in the state `seed` describes
    (an int: itself; a SeedSequence, or a sequence of ints, that numpy seeds exactly as it seeds
    some int: that int, e.g. ``SeedSequence(3)`` and ``[3]`` -> 3, as ``default_rng`` reads them);
    None when no int is (None, a Generator, a spawned child such as ``SeedSequence(3).spawn(1)[0]``).
    Where a seed must be handed on as an int (gymnasium's ``reset``, an environment's name),
    equal seeds then give equal ints."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        return int(seed) if seed >= 0 else None
    if isinstance(seed, (list, tuple)):
        try:
            seed = np.random.SeedSequence(seed)
        except (TypeError, ValueError):
            return None
    if not isinstance(seed, np.random.SeedSequence) or seed.entropy is None:
        return None
    words = _u32_words(seed.entropy)
    if seed.spawn_key:  # numpy pads the entropy to the pool size, then appends the spawn key
        words = words + [0] * (seed.pool_size - len(words)) + _u32_words(seed.spawn_key)
    n = sum(w << (32 * i) for i, w in enumerate(words))
    same = seed.pool_size == np.random.SeedSequence(n).pool_size and np.array_equal(
        np.random.SeedSequence(n).pool, seed.pool
    )
    return n if same else None


def model_seed(seed: Any, name: str = "seed") -> Any:
    """The seed a seeded environment draws its model from, records (``env.seed``) and is named by:
    an int as given; None: an int drawn from OS entropy (numpy's 128 bits, what ``default_rng()``
    draws), so that each model drawn has its own name and is rebuilt from it; a SeedSequence or a
    sequence of ints that numpy reads as an int: that int (the same model, the same name, as the
    int gives); a Generator or BitGenerator: an int of 128 bits drawn from it (its repr holds a
    memory address, which named the model; the int names it and rebuilds it, and the generator
    advances, as it does when it draws a model itself); anything else (a spawned child, whose repr
    is its entropy and spawn key) as given."""
    seed = check_seed(seed, name)
    if seed is None:
        entropy = np.random.SeedSequence().entropy  # an int when drawn (not given)
        assert isinstance(entropy, int)
        return entropy
    if isinstance(seed, np.random.BitGenerator):
        seed = np.random.Generator(seed)  # shares its state: the draw advances it
    if isinstance(seed, np.random.Generator):
        return int.from_bytes(seed.bytes(16), "little")
    if isinstance(seed, (int, np.integer)):
        return seed
    same = int_seed(seed)
    return seed if same is None else same


def seed_bytes(seed: Any) -> bytes:
    """32 seed bytes for a ChaCha noise stream. None -> OS entropy (the default for
    privacy noise); int / SeedSequence / 32 bytes -> reproducible stream."""
    if seed is None:
        return os.urandom(32)
    if isinstance(seed, (bytes, bytearray)):
        if len(seed) != 32:
            raise SeedError(f"a bytes seed must have 32 bytes, got {len(seed)}")
        return bytes(seed)
    if isinstance(seed, np.random.Generator):
        return seed.bytes(32)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        if int(seed) < 0:
            raise SeedError(f"seed must be >= 0, got {seed}")
        seed = np.random.SeedSequence(int(seed))
    if isinstance(seed, np.random.SeedSequence):
        return seed.generate_state(8, dtype=np.uint32).astype("<u4").tobytes()
    raise SeedError(
        f"seed must be None, an int, 32 bytes, a SeedSequence or a Generator, got {type(seed).__name__}"
    )


def noise_seeds(streams: Sequence[np.random.SeedSequence] | None, n: Any) -> list[bytes]:
    """``n`` independent 32-byte seeds for privacy-noise streams, spawned from an agent's noise child
    ``streams[1]`` (OS entropy for None): ``Agent.noise_seeds``. ``n`` is an integer >= 0 whose seeds
    fit in memory (about 440 bytes each while spawned): True gave one seed and -1 none, 2^31 ran for
    hours (100 us a seed) and 2^63 raised numpy's OverflowError."""
    if not is_integer(n) or int(n) < 0:
        raise PrivacyParameterError(f"n (a number of seeds) must be an integer >= 0, got {n!r}")
    n = int(n)
    # min: 56.0 * 10**400 raised OverflowError (any n from 2^64 on is beyond memory all the same)
    refuse_over_memory("noise_seeds", 56.0 * min(n, 2**64), f"{n} spawned seeds", "Ask for fewer seeds.")
    return spawn_noise_seeds(streams, n)


def spawn_noise_seeds(streams: Sequence[np.random.SeedSequence] | None, n: int) -> list[bytes]:
    """noise_seeds without its checks, for the agents' constructors: the few seeds their plan needs
    (2 H per statistic at most), a count privrl computes inside the public edge (the memory check,
    meant for a caller's n, counted these seeds against an agent built at its memory bound)."""
    if streams is None:
        return [os.urandom(32) for _ in range(n)]
    return [seed_bytes(s) for s in streams[1].spawn(n)]


def tie_seed(ties: Any, rng: Any) -> int | None:
    """The u64 seed the Rust argmax uses for random tie-breaking (None = lowest index)."""
    # a str first: an array compared elementwise ("truth value of an array ... is ambiguous"), and
    # a 0-d array('lowest') was taken where the agents' ties= refuses it
    if not is_choice(ties, ("random", "lowest")):
        raise PrivacyParameterError(f"ties must be 'random' or 'lowest', got {ties!r}")
    # the seed is 63 bits: a larger int was masked to one (rng=2**63 broke ties as rng=0), refused
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and 0 <= int(rng) < 1 << 63:
        return None if ties == "lowest" else int(rng)
    if rng is None or isinstance(rng, np.random.Generator):
        if ties == "lowest":  # the rng is checked all the same (a '1', -1 or True was ignored)
            return None
        if rng is None:
            return int.from_bytes(os.urandom(8), "little") >> 1
        # One raw 64-bit draw from the generator's bit stream: ~10x cheaper than rng.integers.
        return int(rng.bit_generator.random_raw()) >> 1
    raise SeedError(f"rng must be None, an integer in [0, 2^63) or a numpy Generator, got {rng!r}")
