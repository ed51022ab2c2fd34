# Hand-written stub of the compiled Rust module privrl._core (rust/bindings.rs), checked by
# `python -m mypy.stubtest privrl._core` (tests/test_stub.py). Use the validated wrappers in
# privrl.kernels; these are the raw bindings.
from typing import final

import numpy as np
import numpy.typing as npt
from typing_extensions import Self

_F64 = npt.NDArray[np.float64]
_I64 = npt.NDArray[np.int64]

__version__: str
GIT_COMMIT: str
# Names, limits and defaults of the Rust core (the Python wrappers read them from here).
MECHANISMS: tuple[str, ...]
NOISES: tuple[str, ...]
MAX_NODE_LEN: int
DEFAULT_GRID_BITS: int
MAX_GRID_BITS: int
DEFAULT_BLT_BUFFERS: int
MAX_BLT_BUFFERS: int
MAX_COEFFICIENTS: int
MAX_FACTORIZATION_CAPACITY: int
__all__ = [
    "ShermanMorrison",
    "MixtureFeatures",
    "NoiseStream",
    "PrefixMechanism",
    "spd_inverse",
    "spd_solve",
    "min_eigenvalue",
    "optimistic_q",
    "group_max",
    "optimistic_values",
    "state_values",
    "blt_parameters",
    "tree_depth",
    "FiniteModel",
    "VtrRegression",
    "VtrEngine",
    "LsviEngine",
    "policy_values",
    "batched_matvec",
    "floored_release",
    "sigma_bar",
    "_panic_for_test",
    "_restore_noise_stream",
    "_restore_sm",
    "_restore_mixture",
    "_restore_prefix",
    "__version__",
    "GIT_COMMIT",
    "MECHANISMS",
    "NOISES",
    "MAX_NODE_LEN",
    "DEFAULT_GRID_BITS",
    "MAX_GRID_BITS",
    "DEFAULT_BLT_BUFFERS",
    "MAX_BLT_BUFFERS",
    "MAX_COEFFICIENTS",
    "MAX_FACTORIZATION_CAPACITY",
]

@final
class PrefixMechanism:
    def __new__(
        cls,
        kind: str,
        symmetric: bool,
        size: int,
        capacity: int,
        noise: str,
        scale: float,
        seed: bytes,
        divisor: float = ...,
        grid_bits: int = ...,
        buffers: int = ...,
        keep_last_node: bool = ...,
    ) -> Self: ...
    def push(self, leaf: _F64) -> None: ...
    def push_zero(self) -> None: ...
    def push_release(self, leaf: _F64) -> _F64: ...
    def release(self) -> _F64: ...
    def noise(self) -> _F64: ...
    def exact_sum(self) -> _F64: ...
    def release_variance(self) -> tuple[float, float]: ...
    def step_variance(self, t: int) -> tuple[float, float]: ...
    def variance_factor(self, t: int) -> float: ...
    def max_variance_factor(self) -> float: ...
    def variance_profile(self) -> _F64: ...
    def leaf_coefficients(self, leaf: int) -> _F64: ...
    def last_node_noise(self) -> _F64: ...
    @property
    def steps(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def nodes_used(self) -> int: ...
    @property
    def live_nodes(self) -> int: ...
    @property
    def nodes_drawn(self) -> int: ...
    @property
    def l1_multiplier(self) -> float: ...
    @property
    def l2_multiplier(self) -> float: ...
    @property
    def worst_leaf(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def buffers(self) -> int: ...

@final
class NoiseStream:
    def __new__(cls, noise: str, scale: float, seed: bytes, grid_bits: int = ...) -> Self: ...
    def vectors(self, count: int, n: int) -> _F64: ...
    def symmetric(self, count: int, d: int, divisor: float) -> _F64: ...
    def privatize(self, data: _F64, divisor: float | None = ...) -> _F64: ...
    @property
    def draws(self) -> int: ...

@final
class ShermanMorrison:
    def __new__(cls, d: int, lam: float, refactor_every: int = ...) -> Self: ...
    def update(self, x: _F64) -> None: ...
    def update_batch(self, xs: _F64) -> None: ...
    def refactorize(self) -> None: ...
    def matrix(self) -> _F64: ...
    def inverse(self) -> _F64: ...
    def solve(self, u: _F64) -> _F64: ...
    def inverse_error(self) -> float: ...
    @property
    def updates(self) -> int: ...
    @property
    def lam(self) -> float: ...

@final
class MixtureFeatures:
    def __new__(cls, dense: _F64) -> Self: ...
    def phi_v(self, v: _F64) -> _F64: ...
    def phi_v_rows(self, v: _F64, rows: _I64) -> _F64: ...
    @property
    def nnz(self) -> int: ...

def spd_inverse(a: _F64) -> _F64: ...
def spd_solve(a: _F64, b: _F64) -> _F64: ...
def min_eigenvalue(a: _F64) -> float: ...
def optimistic_q(
    phi: _F64, w: _F64, inv: _F64, beta: float, lower: float, upper: float, offset: _F64 | None = ...
) -> _F64: ...
def group_max(q: _F64, tie_seed: int | None = ...) -> tuple[_F64, _I64]: ...
def optimistic_values(
    phi: _F64,
    w: _F64,
    inv: _F64,
    beta: float,
    n_actions: int,
    lower: float,
    upper: float,
    offset: _F64 | None = ...,
    tie_seed: int | None = ...,
) -> tuple[_F64, _F64, _I64]: ...
def state_values(
    table: _F64,
    w: _F64,
    inv: _F64,
    beta: float,
    n_actions: int,
    lower: float,
    upper: float,
    states: _I64 | None = ...,
) -> _F64: ...
def blt_parameters(capacity: int, buffers: int) -> tuple[list[float], list[float]]: ...
def tree_depth(n: int) -> int: ...
def _panic_for_test() -> None: ...
def _restore_noise_stream(state: bytes) -> NoiseStream: ...
def _restore_sm(state: bytes) -> ShermanMorrison: ...
def _restore_mixture(state: bytes) -> MixtureFeatures: ...
def _restore_prefix(kind: str, state: bytes) -> PrefixMechanism: ...

# ---------------------------------------------------------------- the episode engine
_Fault = tuple[int, str, float] | None
_Block = tuple[_F64, _F64, _I64, int, _Fault]

@final
class FiniteModel:
    def __new__(cls, p: _F64, r: _F64, cdf: _F64, init_cdf: _F64) -> Self: ...

def policy_values(p: _F64, r: _F64, pi: _I64) -> _F64: ...
def batched_matvec(m: _F64, v: _F64) -> _F64: ...
def sigma_bar(
    x: _F64,
    x2: _F64,
    hat_weights: _F64,
    hat_inverse: _F64,
    hat_gamma: _F64 | None,
    tilde_weights: _F64,
    tilde_form: _F64,
    tilde_radius: float,
    beta_check: float,
) -> _F64: ...
def floored_release(
    gram: _F64, target: _F64, lam: float, shift: float, w0: _F64
) -> tuple[_F64, _F64, _F64, _F64, _F64]: ...

@final
class VtrRegression:
    def __new__(
        cls,
        mode: str,
        board: tuple[_F64, _F64, _F64],
        sums: tuple[_F64, _F64],
        spec: tuple[int, float, float, float],
        guard: tuple[float, float, float, bool] | None,
        sms: list[ShermanMorrison] = ...,
        grams: list[PrefixMechanism] = ...,
        targets: list[PrefixMechanism] = ...,
        streams: list[NoiseStream] = ...,
        practical: tuple | None = ...,
        users: int = ...,
    ) -> Self: ...
    def billboard(self) -> tuple[_F64, _F64, _F64]: ...
    def practical(self) -> tuple[_F64, _F64]: ...
    def sums(self) -> tuple[_F64, _F64]: ...

_VtrBlock = tuple[_F64, _F64, _I64, list[int], _Fault]

@final
class VtrEngine:
    def __new__(
        cls,
        model: FiniteModel,
        features: MixtureFeatures,
        regressions: list[VtrRegression],
        v_star: _F64,
        plus: tuple[float, float] | None = ...,
    ) -> Self: ...
    def run(
        self,
        uniforms: _F64,
        ties: npt.NDArray[np.uint64] | None = ...,
        bounds: list[tuple[_F64, _F64] | None] = ...,
    ) -> _VtrBlock: ...
    def last_sigma_bar(self) -> _F64: ...
    @property
    def policy_changes(self) -> int: ...

@final
class LsviEngine:
    def __new__(
        cls, model: FiniteModel, table: _F64, guard: tuple[float, float, float, bool], v_star: _F64
    ) -> Self: ...
    def run(
        self,
        pi: _I64,
        uniforms: _F64,
        reward_sum: _F64,
        next_sum: _F64,
        records: tuple[_I64, _I64, _F64],
        n: int,
        batch_gram: _F64 | None = ...,
        sms: list[ShermanMorrison] = ...,
    ) -> _Block: ...
    @property
    def policy_changes(self) -> int: ...
