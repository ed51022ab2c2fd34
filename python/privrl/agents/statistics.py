"""Server-side ridge-regression statistics under each privacy model, and the LDP user-side
randomizer: Alg. 1's design matrix / target updates (Sec. 3) with B and g of Cor. 1, Cor. 2 and
App. "Pure DP in the UCRL-VTR Framework"; reused twice by UCRL-VTR+ (App. C, Alg. 3).

For each step h the server holds a stream of user statistics (X_{k,h} X_{k,h}^T, X_{k,h} y_{k,h})
and publishes, after every user,
    design_h = lam I + sum_k X_{k,h} X_{k,h}^T + B_{k,h}      (Lambda~ of the paper)
    target_h = sum_k X_{k,h} y_{k,h} + g_{k,h}                (u~)
    weights_h = design_h^{-1} target_h                        (w~)
Non-private: B = g = 0. JDP (Cor. 1): B = tree prefix + 2 Upsilon I, g = tree prefix (2H trees).
LDP (Cor. 2): each user adds B^1, g^1 before sending, the server only adds 2 Upsilon I.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privrl import kernels
from privrl.agents.base import SensitivityGuard
from privrl.exceptions import NotPositiveDefiniteError
from privrl.kernels._validate import as_f64
from privrl.privacy import practical


@dataclass(frozen=True)
class RawStatistics:
    """A user's raw per-step regression data: X (H, d), y (H,); X X^T and X y enter the sums.
    Accepted by non-private and JDP servers."""

    X: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class PrivatizedStatistics:
    """What an LDP user sends: per step a noisy Gram matrix X X^T + B^1 (H, d, d) and a noisy
    target X y + g^1 (H, d). The only message an LDP server accepts."""

    gram: np.ndarray
    target: np.ndarray


@dataclass(frozen=True)
class Release:
    """The server's billboard after k users: per step h the design matrix Lambda~_{k+1,h}, its
    inverse (post-processing of the design matrix) and w~_{k+1,h}; plus the user count k.
    ``bonus`` (practical calibration): per step the matrix M_h whose norm ``||phi||_{M_h}`` is the
    whole exploration bonus (radius 1); None: the bonus is ``beta ||phi||_{inverse}``. ``gamma``:
    the coefficient of ``||inverse phi||`` in it (the privacy part), for other radii (Alg. 3's E)."""

    design: np.ndarray  # (H, d, d)
    inverse: np.ndarray  # (H, d, d)
    weights: np.ndarray  # (H, d)
    users: int
    bonus: np.ndarray | None = None  # (H, d, d)
    gamma: np.ndarray | None = None  # (H,): the privacy part of the bonus (practical)


@dataclass
class PracticalRelease:
    """The post-processing of the practical calibration (privrl.privacy.practical): from the noisy
    sums released after t users, per step
        A = eigenvalue floor at lam of (G~ + (lam + S_t) I),  S_t = shift_mult * Upsilon_t,
        w~ = A^{-1} (u~ + (A - G~) w0)   (ridge centred at the feasible w0, not at 0),
        bonus matrix M = beta^2 A^{-1} + gamma_t^2 A^{-2},
    Upsilon_t = matrix_bound(t), C_t = vector_bound(t) the noise bounds at the noise actually
    released after t users (privacy.practical.noise_bounds_at), gamma_t = confidence_noise_width(...).
    A deterministic function of the release and public constants: post-processing, no privacy cost."""

    lam: float
    d: int
    C_w: float
    beta: float
    noise_scale: float
    matrix_bound: Callable[[int], float]
    vector_bound: Callable[[int], float]
    w0: np.ndarray
    centre_distance: float  # a bound on ||w - w0|| (privacy.practical.centre_distance)
    shift_mult: float = 1.0

    def __call__(self, gram: np.ndarray, target: np.ndarray, users: int) -> Release:
        ups, C_t = self.matrix_bound(users), self.vector_bound(users)
        shift = self.shift_mult * ups
        # the floor, A^{-1}, A^{-2} and the weights pulled towards w0 (A - G~ = (lam + S) I + E),
        # in one Rust kernel shared with the episode engine
        design, inverse, inverse2, weights, correction = kernels.floored_release(
            gram, target, self.lam, shift, self.w0
        )
        # the pull of lam towards w0 is the ridge bias of the non-private width (its C_w sqrt(lam))
        gamma = practical.confidence_noise_width(
            C_t, ups, self.C_w, shift + correction, self.centre_distance, self.noise_scale
        )
        bonus = self.beta**2 * inverse + (gamma**2)[:, None, None] * inverse2
        return Release(design, inverse, weights, users, bonus, gamma)


def released_inverse(design: np.ndarray, h: int, users: int, shift: str, calibration: str) -> np.ndarray:
    """Inverse of a released (noisy) design matrix of step h (0-based), or a
    NotPositiveDefiniteError saying which release failed and why that is a low-probability event."""
    try:
        return kernels.spd_inverse(design)
    except NotPositiveDefiniteError as e:
        raise NotPositiveDefiniteError(
            f"released design matrix of step h={h + 1} after {users} users is not positive "
            f"definite (min eigenvalue {kernels.min_eigenvalue(design):.4g}); the noise exceeded "
            f"{shift}, an event of probability <= p/3 under {calibration}"
        ) from e


def _checked(a: Any, name: str, shape: tuple) -> np.ndarray:
    """`a` as a finite float array of exactly `shape` (ShapeError / NonFiniteError otherwise)."""
    return as_f64(a, name, len(shape), shape, finite=True)


class LocalRandomizer:
    """User-side Gaussian / Laplace mechanism of LDP (Cor. 2, App. "Pure DP"): adds a symmetric
    B^1_{k,h} and a vector g^1_{k,h} to every step's statistics before anything leaves the user."""

    def __init__(
        self,
        H: int,
        d: int,
        noise: str,
        sigma_matrix: float,
        sigma_vector: float,
        sym_divisor: float,
        guard: SensitivityGuard,
        seeds: Sequence[Any] = (None, None),
        grid_bits: int = kernels.DEFAULT_GRID_BITS,
    ):
        self.H, self.d, self.guard = H, d, guard
        self.sym_divisor = sym_divisor
        self._matrix_noise = kernels.NoiseStream(noise, sigma_matrix, seed=seeds[0], grid_bits=grid_bits)
        self._vector_noise = kernels.NoiseStream(noise, sigma_vector, seed=seeds[1], grid_bits=grid_bits)

    def privatize(self, X: np.ndarray, y: np.ndarray) -> PrivatizedStatistics:
        X = _checked(X, "X", (self.H, self.d))
        y = _checked(y, "y", (self.H,))
        X, y = self.guard.apply(X, y)
        # on the noise lattice for a discrete sampler (the streams' own kernel, shared with the
        # episode engine): rounded data plus exact integer noise
        gram = self._matrix_noise.privatize(np.einsum("hi,hj->hij", X, X), True, self.sym_divisor)
        target = self._vector_noise.privatize(X * y[:, None])
        return PrivatizedStatistics(gram, target)


class RegressionServer:
    """H ridge regressions under one privacy model (mode "exact", "tree" (JDP) or "local" (LDP)).

    mode="exact": Lambda and Lambda^{-1} maintained by Sherman-Morrison (O(d^2) per user).
    mode="tree": 2H continual-release mechanisms of capacity K (Cor. 1): one of symmetric
        matrices and one of vectors per h; the released design adds `shift` I (= 2 Upsilon^J).
        `mechanism` picks the kind (privrl.kernels.continual: "tree", the paper's binary tree,
        "honaker", "factorization" or "blt"); `sigma_*` must already be the mechanism's
        (privrl.privacy.continual.adapt_calibration). A SensitivityGuard is required: it is
        where the sensitivity the noise is calibrated for is enforced.
    mode="local": sums of PrivatizedStatistics plus `shift` I (= 2 Upsilon^L); raw data is refused.
    """

    def __init__(
        self,
        H: int,
        d: int,
        lam: float,
        mode: str,
        capacity: int,
        *,
        noise: str = "none",
        sigma_matrix: float = 0.0,
        sigma_vector: float = 0.0,
        sym_divisor: float = 2**0.5,
        shift: float = 0.0,
        guard: SensitivityGuard | None = None,
        seeds: Sequence[Any] = (),
        mechanism: str = "tree",
        post: PracticalRelease | None = None,
        grid_bits: int = kernels.DEFAULT_GRID_BITS,
    ):
        if mode not in ("exact", "tree", "local"):
            raise ValueError(f"mode must be 'exact', 'tree' or 'local', got {mode!r}")
        if mode == "tree" and not isinstance(guard, SensitivityGuard):
            raise TypeError(
                "a tree (JDP) server needs a SensitivityGuard: raw user statistics may "
                "only enter the mechanisms inside the bounds their noise is calibrated for"
            )
        self.H, self.d, self.lam, self.mode, self.shift = H, d, float(lam), mode, float(shift)
        self.guard = guard
        self.mechanism = mechanism
        self.post = post
        self.users = 0
        self.received_types: set[type] = set()
        eye = np.eye(d)
        if mode == "exact":
            self._sm = [kernels.RankOneInverse(d, lam) for _ in range(H)]
            self._target = np.zeros((H, d))
        elif mode == "tree":
            seeds = list(seeds) or [None] * (2 * H)
            self._gram_trees = [
                kernels.make_prefix_mechanism(
                    mechanism,
                    (d, d),
                    capacity,
                    noise=noise,
                    scale=sigma_matrix,
                    seed=seeds[h],
                    divisor=sym_divisor,
                    grid_bits=grid_bits,
                )
                for h in range(H)
            ]
            self._target_trees = [
                kernels.make_prefix_mechanism(
                    mechanism,
                    d,
                    capacity,
                    noise=noise,
                    scale=sigma_vector,
                    seed=seeds[H + h],
                    grid_bits=grid_bits,
                )
                for h in range(H)
            ]
        else:
            self._gram = np.zeros((H, d, d))
            self._target = np.zeros((H, d))
        self._base = (self.lam + self.shift) * eye

    def receive(self, message: RawStatistics | PrivatizedStatistics) -> None:
        """One user's statistics for all H steps (X X^T and X y enter the sums)."""
        H, d = self.H, self.d
        if self.mode == "local":
            if not isinstance(message, PrivatizedStatistics):
                raise TypeError(
                    "an LDP server accepts only PrivatizedStatistics (randomized on the "
                    "user's side); it never receives raw X, y"
                )
            # Checked whole before anything is added: numpy would broadcast a (d, d) gram over
            # all H steps, and NaN would poison every later release.
            gram = _checked(message.gram, "gram", (H, d, d))
            target = _checked(message.target, "target", (H, d))
            self._gram += gram
            self._target += target
        else:
            if not isinstance(message, RawStatistics):
                raise TypeError(f"a {self.mode} server expects RawStatistics")
            X = _checked(message.X, "X", (H, d))
            y = _checked(message.y, "y", (H,))
            if self.guard is not None:
                X, y = self.guard.apply(X, y)
            if self.mode == "exact":
                for h in range(self.H):
                    self._sm[h].update(X[h])
                self._target += X * y[:, None]
            else:
                for h in range(self.H):
                    self._gram_trees[h].push(np.outer(X[h], X[h]))
                    self._target_trees[h].push(X[h] * y[h])
        self.received_types.add(type(message))
        self.users += 1

    def release(self) -> Release:
        H, d = self.H, self.d
        if self.mode == "exact":
            design = np.stack([sm.matrix() for sm in self._sm])
            if self.post is not None:  # practical, no noise: the same post-processing
                return self.post(design - self.lam * np.eye(d), self._target, self.users)
            inverse = np.stack([sm.inverse() for sm in self._sm])
            weights = kernels.batched_matvec(inverse, self._target)
            return Release(design, inverse, weights, self.users)
        if self.mode == "tree":
            gram = np.stack([t.release() for t in self._gram_trees])
            target = np.stack([t.release() for t in self._target_trees])
        else:
            gram, target = self._gram, self._target
        if self.post is not None:
            return self.post(gram, target, self.users)
        design = gram + self._base
        inverse = np.empty((H, d, d))
        for h in range(H):
            inverse[h] = released_inverse(
                design[h], h, self.users, "the shift 2*Upsilon", "the paper's calibration"
            )
        weights = kernels.batched_matvec(inverse, target)
        return Release(design, inverse, weights, self.users)

    def tree_noise(self) -> tuple[np.ndarray, np.ndarray]:
        """(matrix noise (H, d, d), vector noise (H, d)) of the current JDP release: B_{k,h}
        minus the shift, and g_{k,h}. Server-internal; for tests and privacy reports."""
        if self.mode != "tree":
            raise ValueError("only tree (JDP) servers keep noise apart from data")
        return (
            np.stack([t.noise() for t in self._gram_trees]),
            np.stack([t.noise() for t in self._target_trees]),
        )

    def nodes_used(self) -> int:
        """Tree nodes summed in the current release (JDP), else 0."""
        return self._gram_trees[0].nodes_used if self.mode == "tree" else 0

    def variance_factor(self, t: int) -> float:
        """Var(released noise entry after t users) / Var(one draw): the continual-release
        mechanism's profile (JDP), t sums of user noises (LDP), 0 non-private."""
        if self.mode == "tree":
            return float(self._gram_trees[0].variance_factor(t))
        return float(t) if self.mode == "local" else 0.0
