"""Continual release of prefix sums behind one interface: binary tree, Honaker's tree, square-root
factorization and BLT, with exact per-step variance and per-user sensitivity (App. "Tree-based method").
"""

# Every mechanism releases, after t leaves, S_t + N_t (S_t the exact prefix sum) and is the
# post-processing of a noisy encoder release E x + z with i.i.d. Gaussian (or Laplace) node noise
# z; one leaf enters it through column i of E. So a release with per-leaf L2 sensitivity Delta
# and node std sigma is the Gaussian mechanism with noise multiplier
# sigma / (Delta * sensitivity_multiplier), and two mechanisms with equal
# sigma / sensitivity_multiplier have the same (eps, delta) curve. sensitivity_structure() lists
# what an accountant needs; variance_factor(t) gives Var(N_t) / Var(node) exactly.
#
#   kind           variance factor at step t           L2 multiplier                   state
#   tree           popcount(t)                         sqrt(floor(log2 T) + 1)         O(log T)
#   honaker        sum_{bits l of t} 2^l/(2^(l+1)-1)   max_i m(i), exact (below)       O(log T)
#   factorization  sum_{j<t} c_j^2, c_j=C(2j,j)/4^j    sqrt(sum_{j<T} c_j^2)           O(T)
#   blt            sum_{j<t} e_j^2 (decoder A C^-1)    sqrt(sum_{j<T} c_j^2) of its C  O(buffers)
#
# Leaf 1 is the worst leaf for tree, factorization and BLT. Honaker's online estimator releases
# one new value per step, the estimate of the subtree completed then, so it reveals less than
# its nodes: the releases are an invertible map of independent innovations (one per released
# subtree, i.e. level l, odd index j, j 2^l <= T), and m(i)^2 sums leaf i's squared whitened
# coefficients in them (rust/continual/honaker.rs). m^2 = 4.403 / 8.557 / 11.932 at T = 16 /
# 1000 / 10^4 against bit_length(T) = 5 / 10 / 14 for the tree bound; the worst leaf is not leaf
# 1 (5461 at T = 10^4, `worst_leaf`). Its L1 multiplier stays the post-processing bound
# floor(log2 T) + 1 (Laplace innovations are not Laplace).
#
# Estimators and derivations: rust/continual/ (one file per mechanism, the binary tree in
# tree.rs) and docs/privacy.md.
from __future__ import annotations

import copy
import math
import sys
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from privrl import _core
from privrl.common.checks import (
    check_choice,
    check_finite_real,
    check_flag,
    check_int,
    check_symmetric,
    numeric_array,
    seed_bytes,
)
from privrl.common.errors import PrivacyParameterError, ShapeError
from privrl.common.memory import refuse_over_memory

__all__ = [
    "MECHANISMS",
    "NOISES",
    "DISCRETE_MECHANISMS",
    "default_noise",
    "PrefixMechanism",
    "TreeAggregator",
    "MechanismProfile",
    "make_prefix_mechanism",
    "mechanism_profile",
    "blt_parameters",
]

# The names, limits and defaults below are the Rust core's own (privrl._core), not copies.
#: The continual-release mechanisms, "tree" being the paper's.
MECHANISMS: tuple[str, ...] = _core.MECHANISMS
#: Node-noise laws: continuous, secure discrete (the tree, BLT (Gaussian only) and NoiseStream), or none.
NOISES: tuple[str, ...] = _core.NOISES
#: The mechanisms that run the exact discrete samplers (tree: lattice node sums; BLT: its encoder
#: form, discrete Gaussian only). Honaker and the factorization weight node values by non-dyadic reals.
DISCRETE_MECHANISMS: tuple[str, ...] = ("tree", "blt")
#: Largest node (vector length or d * d) any mechanism accepts.
MAX_NODE_LEN: int = _core.MAX_NODE_LEN
#: Default and largest k of the 2^-k grid of the discrete samplers (docs/privacy.md: rounding
#: cost ~ 2^-20 at the default).
DEFAULT_GRID_BITS: int = _core.DEFAULT_GRID_BITS
MAX_GRID_BITS: int = _core.MAX_GRID_BITS
#: Default and largest number of BLT buffers.
DEFAULT_BLT_BUFFERS: int = _core.DEFAULT_BLT_BUFFERS
MAX_BLT_BUFFERS: int = _core.MAX_BLT_BUFFERS
#: Longest variance profile / coefficient column the mechanisms list.
MAX_COEFFICIENTS: int = _core.MAX_COEFFICIENTS
#: Largest capacity of the exact square-root factorization (it keeps O(T) innovations).
MAX_FACTORIZATION_CAPACITY: int = _core.MAX_FACTORIZATION_CAPACITY
SQRT2 = math.sqrt(2.0)
_Self = TypeVar("_Self")


def default_divisor(noise_kind: str) -> float:
    """The divisor of symmetric (Z' + Z'^T)/divisor matrix noise when none is given, the one rule
    of the kernels and the agents' ``sym_divisor`` (UCRL-VTR, UCRL-VTR+): 2 for both Laplace laws
    (App. "Pure DP": release M + Z', symmetrize by post-processing, M + (Z' + Z'^T)/2, the matrix
    laplace_matrix_bound bounds; the discrete sampler takes only an integer divisor), sqrt(2) for
    the Gaussian laws (App. B, Alg. 1) and "none". Off the diagonal an entry has variance
    2 Var(Z'_ij) / divisor^2, on it 4 Var(Z'_ii) / divisor^2: b^2 and 2 b^2 for Lap(b) entries."""
    return 2.0 if noise_kind in ("laplace", "discrete_laplace") else SQRT2


def check_divisor(divisor: Any, noise_kind: str) -> float:
    """The symmetric noise's divisor, the one rule of PrefixMechanism and NoiseStream: a finite
    normal double > 0 (a subnormal one made every entry inf: 1 / divisor^2 is inf); None is the
    kind's default (:func:`default_divisor`)."""
    if divisor is None:
        return default_divisor(noise_kind)
    if divisor is SQRT2:  # the default, valid (its checks took 0.2 us of a 1.9 us tiny draw)
        return SQRT2
    div = check_finite_real(divisor, "divisor")
    if not div >= sys.float_info.min:
        raise PrivacyParameterError(f"divisor must be a positive normal double, got {divisor!r}")
    return div


def parse_shape(shape: Any) -> tuple[tuple[int, ...], bool, int]:
    """(shape tuple, symmetric?, d) of an int n (vectors) or (d, d) (symmetric matrices)."""
    if isinstance(shape, (tuple, list)):
        if len(shape) != 2:
            hint = f"; for a vector pass the int {shape[0]!r}" if len(shape) == 1 else ""
            raise ShapeError(
                "a mechanism's shape is an int n (a vector of n entries) or (d, d) (a symmetric d x d "
                f"matrix), got {tuple(shape)!r}{hint}"
            )
        d = check_int(shape[0], "d", 1, MAX_NODE_LEN)
        if check_int(shape[1], "d", 1, MAX_NODE_LEN) != d:
            raise ShapeError(f"matrix mechanisms need a square shape (d, d), got {tuple(shape)!r}")
        if d * d > MAX_NODE_LEN:
            raise ShapeError(f"a ({d}, {d}) node exceeds the limit of {MAX_NODE_LEN} entries")
        return (d, d), True, d
    n = check_int(shape, "vector length", 1, MAX_NODE_LEN)
    return (n,), False, n


def default_noise(kind: str | None = None) -> str:
    """The law of ``noise=None``: the exact "discrete_gaussian" (the agents' default sampler,
    DEFAULT_SAMPLER = "discrete") wherever it exists, NoiseStream (``kind`` None), the tree and
    BLT; the continuous "gaussian" on Honaker's tree and the factorization, which have no other
    (privrl.privacy.common.resolve_sampler's rule)."""
    return "discrete_gaussian" if kind is None or kind in DISCRETE_MECHANISMS else "gaussian"


def parse_noise(noise: Any, scale: Any, grid_bits: Any, kind: str | None = None) -> tuple[str, float, int]:
    """Validated (noise, scale, grid_bits), None being :func:`default_noise` of ``kind``; scale is
    0 for "none", which takes no other scale than the default 1 or 0 (a scale it would ignore is
    refused)."""
    if noise is None:
        noise = default_noise(kind)
    if isinstance(noise, str) and noise in ("discrete", "float"):  # JointDP(sampler=...) names
        raise PrivacyParameterError(
            f"noise must be one of {NOISES}, got {noise!r}; {noise!r} is an agents' sampler name: the "
            "kernels take the law, 'discrete_gaussian' / 'discrete_laplace' (sampler='discrete', the "
            "agents' default) or 'gaussian' / 'laplace' (sampler='float'); an agent's is "
            "agent.calibration.node_noise"
        )
    check_choice(noise, NOISES, "noise")
    grid_bits = check_int(grid_bits, "grid_bits", 0, MAX_GRID_BITS)
    if grid_bits != DEFAULT_GRID_BITS and not noise.startswith("discrete_"):  # it was ignored
        raise PrivacyParameterError(
            f"grid_bits applies to the discrete sampler only; noise={noise!r} has no lattice, got "
            f"grid_bits={grid_bits} (leave it at its default {DEFAULT_GRID_BITS}, or pass "
            "noise='discrete_gaussian' / 'discrete_laplace')"
        )
    if noise == "none":
        if check_finite_real(scale, "noise scale", positive=False) not in (0.0, 1.0):
            raise PrivacyParameterError(
                f"noise='none' releases exact sums and ignores scale; got scale={scale!r}"
            )
        return noise, 0.0, grid_bits
    return noise, check_finite_real(scale, "noise scale"), grid_bits


class IndependentCopy:
    """A Python wrapper of Rust state whose ``copy.copy`` is an independent object (its own Rust
    state and noise stream's position), as ``copy.deepcopy``: a shallow copy shared the Rust state
    (a leaf pushed to a mechanism's copy was in the original's prefix sums, a stream and its copy
    drew alternate parts of one sequence, a RankOneInverse's copy updated the original's Lambda)."""

    def __copy__(self: _Self) -> _Self:
        return copy.deepcopy(self)


class PrefixMechanism(IndependentCopy):
    """One continual-release mechanism of kind "tree", "honaker", "factorization" or "blt".

    shape: an int n (vectors) or (d, d) (symmetric matrices, node noise (Z' + Z'^T)/divisor).
    capacity: number of leaves T; pushing leaf T + 1 raises CapacityError.
    noise / scale: node law; "gaussian" N(0, scale^2), "laplace" Lap(scale), "none"; the secure
        samplers "discrete_gaussian" / "discrete_laplace" (grid scale * 2^-grid_bits) on the
        tree and BLT (discrete Gaussian only; see TreeAggregator). The default None is
        "discrete_gaussian" on the tree and BLT (the exact sampler, as a default agent's; leaves
        are rounded to the grid) and "gaussian" on Honaker / the factorization (no discrete one);
        pass "gaussian" for the continuous law of sampler="float" (``agent.calibration.node_noise``
        names an agent's law).
    seed: None = OS entropy (real privacy); int / SeedSequence / 32 bytes = reproducible.
    buffers: BLT only, number of buffers (default DEFAULT_BLT_BUFFERS).

    Every kind offers the same interface, implemented once in Rust (privrl._core.PrefixMechanism).
    """

    _m: Any
    shape: tuple[int, ...]
    noise_kind: str
    scale: float
    grid_bits: int
    divisor: float

    def __init__(
        self,
        kind: str,
        shape: Any,
        capacity: int,
        noise: str | None = None,
        scale: float = 1.0,
        seed: Any = None,
        divisor: float | None = None,
        grid_bits: int = DEFAULT_GRID_BITS,
        buffers: int | None = None,
    ):
        self._build(kind, shape, capacity, noise, scale, seed, divisor, grid_bits, buffers, False)

    def _build(
        self,
        kind: Any,
        shape: Any,
        capacity: Any,
        noise: Any,
        scale: Any,
        seed: Any,
        divisor: Any,
        grid_bits: Any,
        buffers: Any,
        keep_last_node: bool,
    ) -> None:
        """Validate every argument once, then build the Rust mechanism."""
        check_choice(kind, MECHANISMS, "mechanism kind")
        self.shape, self.symmetric, self.d = parse_shape(shape)
        capacity = check_int(capacity, "capacity")
        self.noise_kind, self.scale, self.grid_bits = parse_noise(noise, scale, grid_bits, kind)
        self.divisor = check_divisor(divisor, self.noise_kind)
        if buffers is not None and kind != "blt":
            raise PrivacyParameterError(f"buffers only applies to kind 'blt', not {kind!r}")
        nbuf = 0 if buffers is None else check_int(buffers, "buffers", 1, MAX_BLT_BUFFERS)
        _refuse_over_memory(kind, int(np.prod(self.shape)), capacity, nbuf or DEFAULT_BLT_BUFFERS)
        self._m = _core.PrefixMechanism(
            kind,
            self.symmetric,
            self.d,
            capacity,
            self.noise_kind,
            self.scale,
            seed_bytes(seed),
            self.divisor,
            self.grid_bits,
            nbuf,
            check_flag(keep_last_node, "keep_last_node"),
        )
        # variance_factor(1) = 1 for every kind: step 1's variances are one node's
        worst = max(self._m.step_variance(1)) * self._m.max_variance_factor()
        if not math.isfinite(worst):  # release_variance() was inf, or NaN (0 * inf) before a push
            raise PrivacyParameterError(
                f"the released noise's variance overflows a double (scale {self.scale!r}, divisor "
                f"{self.divisor!r}: a node's per-entry variance {max(self._m.step_variance(1))!r} times "
                f"up to {self._m.max_variance_factor():g}); use a smaller scale or a larger divisor"
            )

    def push(self, leaf: Any) -> None:
        """Add one leaf (the statistic of one episode or one batch); a (d, d) leaf must be
        symmetric (AssumptionError: the noise is symmetric, the release would not be)."""
        self._m.push(self._leaf(leaf).reshape(-1))  # Rust checks finiteness and capacity

    def _leaf(self, leaf: Any) -> np.ndarray:
        a = numeric_array(leaf, "leaf")
        if a.shape != self.shape:  # the shape given: numeric_array makes a 0-d leaf (1,)
            raise ShapeError(f"leaf must have shape {self.shape}, got {np.shape(leaf)}")
        return check_symmetric(a, "leaf")

    def push_zero(self) -> None:
        """Add an all-zero leaf (a step without data)."""
        self._m.push_zero()

    def push_release(self, leaf: Any) -> np.ndarray:
        """`push(leaf)` then `release()` in one call into Rust (the per-step use)."""
        if (
            type(leaf) is np.ndarray
            and leaf.dtype == np.float64
            and leaf.shape == self.shape
            and leaf.flags.c_contiguous
        ):
            # Fast path: nothing to convert; Rust checks finiteness and capacity.
            return self._m.push_release(check_symmetric(leaf, "leaf"))
        return self._m.push_release(self._leaf(leaf))

    def _shaped(self, flat: np.ndarray) -> np.ndarray:
        return flat.reshape(self.shape)

    def release(self) -> np.ndarray:
        """The private prefix sum: exact sum of the leaves so far + the mechanism's noise."""
        return self._shaped(self._m.release())

    def noise(self) -> np.ndarray:
        """Only the noise part of the current release."""
        return self._shaped(self._m.noise())

    def exact_sum(self) -> np.ndarray:
        """The exact prefix sum (server-internal, never released); for discrete noise, the
        sum of the leaves rounded to the noise lattice."""
        return self._shaped(self._m.exact_sum())

    def release_variance(self) -> tuple[float, float]:
        """Per-entry variance of the current release's noise: (off-diagonal, diagonal)."""
        return self._m.release_variance()

    def step_variance(self, t: int) -> tuple[float, float]:
        """Per-entry variance of the noise released at step t (0 <= t <= T)."""
        return self._m.step_variance(check_int(t, "t", 0, self.capacity))

    def variance_factor(self, t: int) -> float:
        """Var(noise at step t) / Var(one node's noise entry), exactly."""
        return self._m.variance_factor(check_int(t, "t", 0, self.capacity))

    def max_variance_factor(self) -> float:
        """max over t <= T of variance_factor(t) (what the noise bounds Upsilon / C need)."""
        return self._m.max_variance_factor()

    def variance_profile(self) -> np.ndarray:
        """variance_factor(t) for t = 1..T (T <= MAX_COEFFICIENTS = 2^24)."""
        return self._m.variance_profile()

    def leaf_coefficients(self, leaf: int = 1) -> np.ndarray:
        """Coefficients with which leaf `leaf` (1-based) enters a noisy encoder release E x + z
        with i.i.d. node noise z, of which the releases are an invertible post-processing
        (column `leaf` of E, zeros dropped): all ones for the binary tree (one per released node
        containing the leaf), c_0..c_{T-leaf} for the factorizations, and for Honaker's tree the
        whitened innovations of the released subtrees containing the leaf (Gaussian noise; see
        the module comment). The worst leaf, whose column has norm `sensitivity_multiplier`, is
        `worst_leaf`: leaf 1 except for Honaker's tree."""
        return self._m.leaf_coefficients(check_int(leaf, "leaf", 1, self.capacity))

    @property
    def worst_leaf(self) -> int:
        """The (smallest) leaf whose coefficient column has the largest L2 norm."""
        return self._m.worst_leaf

    @property
    def sensitivity_multiplier(self) -> float:
        """max_i ||E e_i||_2: the per-user L2 sensitivity of the encoder release is the per-leaf
        sensitivity times this (Gaussian noise). Exact for every kind, Honaker's included."""
        return self._m.l2_multiplier

    @property
    def l1_sensitivity_multiplier(self) -> float:
        """max_i ||E e_i||_1 (Laplace noise, pure DP); for Honaker's tree the post-processing
        bound floor(log2 T) + 1 of all dyadic nodes containing a leaf (no exact one derived)."""
        return self._m.l1_multiplier

    def sensitivity_structure(self) -> dict:
        """What a privacy accountant needs about this mechanism.

        A user's leaf enters ``len(coefficients)`` noise-carrying quantities (tree nodes, encoder
        rows or Honaker innovations), each with i.i.d. noise of the node law, with the listed
        coefficients (leaf ``worst_leaf``, the worst case). For per-leaf L2 sensitivity Delta,
        the whole mechanism is one Gaussian mechanism with sensitivity ``Delta * l2_multiplier``
        at the node std."""
        coeffs = self.leaf_coefficients(self.worst_leaf) if self.capacity <= MAX_COEFFICIENTS else None
        return {
            "kind": self.kind,
            "capacity": self.capacity,
            "noise": self.noise_kind,
            "node_scale": self.scale,
            "worst_leaf": self.worst_leaf,
            "quantities_per_leaf": None if coeffs is None else int(coeffs.size),
            "coefficients": coeffs,
            "l2_multiplier": self.sensitivity_multiplier,
            "l1_multiplier": self.l1_sensitivity_multiplier,
            "max_variance_factor": self.max_variance_factor(),
        }

    @property
    def steps(self) -> int:
        return self._m.steps

    @property
    def capacity(self) -> int:
        return self._m.capacity

    @property
    def nodes_used(self) -> int:
        """Node noises (innovations) combined in the current release."""
        return self._m.nodes_used

    @property
    def live_nodes(self) -> int:
        """Noise vectors held in memory."""
        return self._m.live_nodes

    @property
    def nodes_drawn(self) -> int:
        return self._m.nodes_drawn

    @property
    def kind(self) -> str:
        return self._m.kind

    @property
    def buffers(self) -> int:
        """BLT buffers (0 for the other kinds)."""
        return self._m.buffers

    @property
    def grid(self) -> float | None:
        """Grid spacing scale * 2^-grid_bits of the discrete samplers (None otherwise)."""
        if not self.noise_kind.startswith("discrete"):
            return None
        return self.scale * 2.0**-self.grid_bits

    def __repr__(self) -> str:
        return (
            f"PrefixMechanism({self.kind!r}, shape={self.shape}, capacity={self.capacity}, "
            f"noise={self.noise_kind!r}, scale={self.scale:g}, steps={self.steps})"
        )


class TreeAggregator(PrefixMechanism):
    """Continual release of prefix sums of d-vectors or symmetric d x d matrices through the
    binary tree mechanism (App. "Tree-based method"; Shariff & Sheffet 2018, Sec. 4.2): the
    "tree" kind of PrefixMechanism, plus the tree's own extras (max_nodes, keep_last_node).

    shape: an int n (vectors of length n) or (d, d) (symmetric matrices).
    capacity: number of leaves T (episodes for Alg. 1, batches for Alg. 2); pushing leaf T+1
        raises CapacityError.
    noise: "gaussian" (entries N(0, scale^2)), "laplace" (entries Laplace(scale)), the secure
        samplers "discrete_gaussian" / "discrete_laplace" (exact integer-arithmetic samplers on
        the grid scale * 2^-grid_bits; leaves are rounded to that grid, see docs/privacy.md),
        or "none". The default None is "discrete_gaussian", a default agent's law
        (``agent.calibration.node_noise``); "gaussian" is the continuous law of sampler="float".
    divisor: matrix node noise is (Z' + Z'^T) / divisor; sqrt(2) in App. B (Alg. 1), 2 in Alg. 2
        and for Laplace nodes (App. "Pure DP"). None: 2 for "laplace" and "discrete_laplace",
        sqrt(2) for the Gaussian laws (:func:`default_divisor`).
    seed: None draws the noise stream's key from OS entropy (the default for real privacy);
        an int / SeedSequence / 32 bytes gives a bit-reproducible stream.
    keep_last_node: keep a copy of the most recently drawn node noise (`last_node_noise()`),
        for tests against a reference.

    The exact data sum is kept on the side; `release()` returns exact sum + the noise of the
    popcount(t) <= ceil(log2 T + 1) nodes covering [1, t]. Memory is O(log T) nodes.
    """

    def __init__(
        self,
        shape: int | tuple[int, int],
        capacity: int,
        noise: str | None = None,
        scale: float = 1.0,
        seed: Any = None,
        divisor: float | None = None,
        keep_last_node: bool = False,
        grid_bits: int = DEFAULT_GRID_BITS,
    ):
        self._build("tree", shape, capacity, noise, scale, seed, divisor, grid_bits, None, keep_last_node)

    def last_node_noise(self) -> np.ndarray:
        """The most recently drawn node noise (with keep_last_node=True; empty otherwise)."""
        z = self._m.last_node_noise()
        return z.reshape(self.shape) if z.size else z

    @property
    def max_nodes(self) -> int:
        """ceil(log2 T + 1): the paper's bound K0 / B0 on the nodes a release uses.

        Not their count: release t uses popcount(t) nodes (``nodes_used``), at most
        floor(log2(T + 1)) over the tree's T leaves (T = 4: bound 3, at most 2 used).
        """
        return _core.tree_depth(self.capacity)

    def __repr__(self) -> str:
        return (
            f"TreeAggregator(shape={self.shape}, capacity={self.capacity}, "
            f"noise={self.noise_kind!r}, scale={self.scale:g}, steps={self.steps})"
        )


def _refuse_over_memory(kind: str, n: int, capacity: int, buffers: int) -> None:
    """ResourceError for a mechanism whose state cannot fit in memory (the Rust allocation would
    abort the process): n entries a node, times the nodes it keeps (BLT: 3 per buffer and 3
    accumulators; the trees: two per level; the factorization: every innovation)."""
    levels = math.log2(max(capacity, 1)) + 2.0
    nodes = {"blt": 3.0 * buffers + 3.0, "factorization": capacity + 2.0}.get(kind, 2.0 * levels)
    refuse_over_memory(
        f"a {kind} mechanism",
        float(n) * nodes,
        f"{nodes:.0f} nodes of {n:,} entries",
        "Use a smaller leaf (shape) or fewer buffers.",
    )


def make_prefix_mechanism(
    kind: str,
    shape: Any,
    capacity: int,
    noise: str | None = None,
    scale: float = 1.0,
    seed: Any = None,
    divisor: float | None = None,
    **options: Any,
) -> PrefixMechanism:
    """The continual-release mechanism `kind`.

    kind="tree" returns a TreeAggregator (the paper's binary mechanism, which also takes
    grid_bits for the discrete samplers and keep_last_node); the other kinds a PrefixMechanism
    (options: buffers for "blt", grid_bits). ``noise=None``: "discrete_gaussian" on the tree and
    BLT, "gaussian" on the others (:func:`default_noise`)."""
    check_choice(kind, MECHANISMS, "mechanism kind")
    # named here: an option of another kind was "TreeAggregator.__init__() got an unexpected
    # keyword argument 'buffers'" (even buffers=None, which PrefixMechanism takes on every kind)
    for key in options:
        if key not in ("grid_bits", "buffers", "keep_last_node"):
            raise TypeError(
                f"make_prefix_mechanism() has no option {key!r}: its options are grid_bits, buffers "
                "(kind 'blt') and keep_last_node (kind 'tree')"
            )
    if kind == "tree":
        if options.pop("buffers", None) is not None:
            raise PrivacyParameterError("buffers only applies to kind 'blt', not 'tree'")
        return TreeAggregator(
            shape, capacity, noise=noise, scale=scale, seed=seed, divisor=divisor, **options
        )
    if "keep_last_node" in options and check_flag(options.pop("keep_last_node"), "keep_last_node"):
        raise PrivacyParameterError(f"keep_last_node only applies to kind 'tree', not {kind!r}")
    return PrefixMechanism(
        kind, shape, capacity, noise=noise, scale=scale, seed=seed, divisor=divisor, **options
    )


@dataclass(frozen=True)
class MechanismProfile:
    """The data-independent facts of a mechanism over T leaves (no noise drawn).

    l2_multiplier / l1_multiplier: per-user sensitivity factors (see the module comment);
    max_variance_factor: max_t Var(noise_t) / Var(node); quantities_per_leaf: noise-carrying
    quantities leaf 1 enters; paper_tree_nodes: K0 = ceil(log2 T) + 1 of App. "Tree-based
    method" (what the paper's sigma is calibrated for); worst_leaf: a leaf attaining
    l2_multiplier (1 except for Honaker's tree)."""

    kind: str
    capacity: int
    l2_multiplier: float
    l1_multiplier: float
    max_variance_factor: float
    quantities_per_leaf: int
    paper_tree_nodes: int
    worst_leaf: int = 1


def mechanism_profile(kind: str, capacity: int, buffers: int | None = None) -> MechanismProfile:
    """MechanismProfile of `kind` over `capacity` leaves (factorization: T <=
    MAX_FACTORIZATION_CAPACITY = 2^22). No noise is drawn; Honaker's exact multiplier costs
    O(log^2 T) whatever T."""
    capacity = check_int(capacity, "capacity")
    m = make_prefix_mechanism(
        kind, 1, capacity, noise="none", seed=b"\0" * 32, **({} if buffers is None else {"buffers": buffers})
    )
    # the tree and Honaker's: one node / released subtree per level; else leaf 1 enters every encoder row
    n_leaf = capacity.bit_length() if kind in ("tree", "honaker") else capacity
    return MechanismProfile(
        kind,
        capacity,
        m.sensitivity_multiplier,
        m.l1_sensitivity_multiplier,
        m.max_variance_factor(),
        n_leaf,
        _core.tree_depth(capacity),
        m.worst_leaf,
    )


def blt_parameters(capacity: int, buffers: int = DEFAULT_BLT_BUFFERS) -> tuple[np.ndarray, np.ndarray]:
    """(theta, omega) of the BLT encoder C (c_0 = 1, c_j = sum_i omega_i theta_i^(j-1)) used for
    horizon `capacity` with `buffers` buffers (quadrature of the arcsine-moment integral of
    binom(2j, j)/4^j; see rust/continual/blt.rs)."""
    capacity = check_int(capacity, "capacity")
    buffers = check_int(buffers, "buffers", 1, MAX_BLT_BUFFERS)
    theta, omega = _core.blt_parameters(capacity, buffers)
    return np.asarray(theta), np.asarray(omega)
