"""The one-step worst case of a release plan as a maximisation: the global maximum of the quartic
``g`` below over the box of two users' norms, their cosine and their scalars, the search behind
:func:`privrl.privacy.plans.statistic_worst_case` (its module comment derives ``g``).

Paper: Luyo et al., App. B-D (the sensitivities the privacy proofs bound, here computed exactly).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

__all__ = ["maximise"]


# ------------------------------------------------------------------------------------------
# The maximisation: g = A (a^4 + b^4 - 2 a^2 b^2 c^2) + S (a^2 y^2 + b^2 y'^2 - 2 a b c y y')
# over a, b in [0, 1], c in [c_low, 1] ({-1, 1} in one dimension; c_low = 0 for a nonnegative
# statistic, {1} in one dimension), y, y' in {y_low, y_high}.
# ------------------------------------------------------------------------------------------
def _objective(
    A: float, S: float, a: np.ndarray, b: np.ndarray, c: np.ndarray, y: Any, yp: Any
) -> np.ndarray:
    return A * (a**4 + b**4 - 2.0 * a * a * b * b * c * c) + S * (
        a * a * y * y + b * b * yp * yp - 2.0 * a * b * c * y * yp
    )


@functools.lru_cache(maxsize=1024)
def maximise(
    A: float, S: float, y_low: float, y_high: float, free_angle: bool, c_low: float = -1.0
) -> tuple[float, tuple[float, float, float, float, float]]:
    """Global maximum of the quartic above: a grid over (a, b, c) for each vertex (y, y'), then
    successive local grids around the best candidates (the function is a polynomial of degree 4
    on a box, so the coarse grid already lands in the basin of the maximum)."""
    ys = sorted({float(y_low), float(y_high)})
    vertices = [(y, yp) for y in ys for yp in ys]
    starts = [(y, yp, pt) for y, yp in vertices for pt in _starts(A, S, y, yp, free_angle, c_low)]
    refined = _refine(A, S, starts, 0.01, free_angle, c_low)  # every vertex's 3 candidates at once
    best: tuple[float, tuple[float, float, float, float, float]] = (-math.inf, (0.0, 0.0, 1.0, 0.0, 0.0))
    for v, (y, yp) in enumerate(vertices):
        best_val, best_pt = -math.inf, (0.0, 0.0, 1.0)  # the vertex's best candidate, the first of ties
        for val, pt in refined[3 * v : 3 * v + 3]:
            if val > best_val:
                best_val, best_pt = val, pt
        if best_val > best[0]:
            best = (best_val, (*best_pt, y, yp))
    return best


def _best_angle(
    A: float, S: float, a: np.ndarray, b: np.ndarray, y: Any, yp: Any, free_angle: bool, c_low: float = -1.0
) -> np.ndarray:
    """The cosine c maximising g at each (a, b): g is concave quadratic in c (``-2 A a^2 b^2 c^2
    - 2 S a b y y' c``), so c* = -S y y' / (2 A a b) clipped to [c_low, 1]; in one dimension the
    better of c = -1 and c = 1 (c = 1 for a nonnegative statistic, c_low = 0)."""
    lin = S * a * b * y * yp
    if not free_angle and c_low >= 0.0:
        return np.ones_like(a * b)
    if not free_angle:
        return np.where(lin > 0.0, -1.0, 1.0) * np.ones_like(a)
    quad = A * a * a * b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(quad > 0.0, -lin / (2.0 * quad), np.where(lin > 0.0, -1.0, 1.0))
    return np.minimum(np.maximum(c, c_low), 1.0)  # np.clip's values (its bounds are not +-0), 5x cheaper


def _starts(
    A: float, S: float, y: float, yp: float, free_angle: bool, c_low: float = -1.0
) -> list[tuple[float, float]]:
    """The 3 best points of a grid over a, b in [0, 1] (the angle in closed form), best first: where
    _refine starts (g is a polynomial of degree 4 on a square)."""
    ab = np.linspace(0.0, 1.0, 101)
    a, b = np.meshgrid(ab, ab, indexing="ij")
    c = _best_angle(A, S, a, b, y, yp, free_angle, c_low)
    g = _objective(A, S, a, b, c, y, yp)
    return [(float(ab[idx // 101]), float(ab[idx % 101])) for idx in np.argsort(g, axis=None)[::-1][:3]]


def _refine(
    A: float,
    S: float,
    starts: list[tuple[float, float, tuple[float, float]]],
    h: float,
    free_angle: bool,
    c_low: float = -1.0,
) -> list[tuple[float, tuple[float, float, float]]]:
    """Successive local 9 x 9 grids (step h, h/3, ... down to 1e-12) around each start (y, y', (a, b)),
    then each coordinate snapped to the box's special values when that loses nothing. Every start
    is searched at once: its own rows of (n, 9, 9) arrays, each element computed by the same
    operations as a search alone (one start's search was ~60 numpy calls on 81 numbers at each of
    22 steps, 12 searches per worst case: most of an LSVI-UCB calibration)."""
    n = len(starts)
    y = np.array([s[0] for s in starts])[:, None, None]
    yp = np.array([s[1] for s in starts])[:, None, None]
    a0 = np.array([s[2][0] for s in starts])
    b0 = np.array([s[2][1] for s in starts])
    c0 = np.array(
        [
            float(_best_angle(A, S, np.array(a), np.array(b), u, v, free_angle, c_low))
            for u, v, (a, b) in starts
        ]
    )
    val = np.array(
        [
            float(_objective(A, S, np.array(s[2][0]), np.array(s[2][1]), np.array(c), s[0], s[1]))
            for s, c in zip(starts, c0, strict=True)
        ]
    )
    steps = np.linspace(-1.0, 1.0, 9)
    rows = np.arange(n)
    while h > 1e-12:
        a = np.minimum(np.maximum(a0[:, None] + h * steps, 0.0), 1.0)  # np.clip's: a0 + h s is never -0.0
        b = np.minimum(np.maximum(b0[:, None] + h * steps, 0.0), 1.0)
        aa = np.empty((n, 9, 9))  # aa[k, i, j] = a[k, i], bb[k, i, j] = b[k, j]: start k's meshgrid
        bb = np.empty((n, 9, 9))
        aa[...] = a[:, :, None]
        bb[...] = b[:, None, :]
        cc = _best_angle(A, S, aa, bb, y, yp, free_angle, c_low)
        g = _objective(A, S, aa, bb, cc, y, yp).reshape(n, 81)
        k = g.argmax(axis=1)  # each start's first maximum, as np.argmax of its 9 x 9 grid
        i, j = k // 9, k % 9
        top = g[rows, k]
        better = top >= val
        val = np.where(better, top, val)
        a0 = np.where(better, a[rows, i], a0)
        b0 = np.where(better, b[rows, j], b0)
        c0 = np.where(better, cc[rows, i, j], c0)
        h /= 3.0
    return [
        _snap(A, S, s[0], s[1], float(v), [float(a0[m]), float(b0[m]), float(c0[m])])
        for m, (s, v) in enumerate(zip(starts, val, strict=True))
    ]


def _snap(
    A: float, S: float, y: float, yp: float, val: float, best: list[float]
) -> tuple[float, tuple[float, float, float]]:
    """Each coordinate snapped to the box's special values when that loses nothing (clean neighbours)."""
    for k, special in enumerate(((0.0, 1.0), (0.0, 1.0), (-1.0, 0.0, 1.0))):
        target = min(special, key=lambda t: abs(t - best[k]))
        if abs(target - best[k]) < 1e-3:
            trial = list(best)
            trial[k] = target
            sval = float(_objective(A, S, np.array(trial[0]), np.array(trial[1]), np.array(trial[2]), y, yp))
            if sval >= val * (1 - 1e-12):
                val, best = max(val, sval), trial
    return val, (best[0], best[1], best[2])
