//! privrl numeric core: the performance-critical kernels of privacy-preserving
//! exploration with linear representations (Luyo et al.), free of any Python.
//!
//! * [`noise`]: node-noise laws (Gaussian, Laplace, exact discrete samplers) and shapes, the
//!   exact data sums kept apart from the noise, and stand-alone noise streams.
//! * [`tree`]: tree-based (binary-mechanism) continual release of prefix sums
//!   (App. "Tree-based method").
//! * [`continual`]: one interface over continual-release mechanisms (binary tree, Honaker's
//!   variance-reduced tree, square-root factorization, buffered-linear-Toeplitz) with their exact
//!   per-step variance and per-user sensitivity multipliers.
//! * [`secure`]: exact discrete Laplace / discrete Gaussian samplers (integer arithmetic only).
//! * [`rank_one`]: Sherman–Morrison maintained inverses of `lambda I + sum x x^T` and
//!   Cholesky inverses/solves of noisy design matrices.
//! * [`qeval`]: batched optimistic Q evaluation `clip(r + Phi w + beta ||phi||_{Lambda^-1})`
//!   with per-state max / argmax and seeded tie-breaking.
//! * [`mixture`]: sparse linear-mixture features and `phi_V(s, a)` for all pairs at once.
//! * [`agents`]: each algorithm's whole episode (planning, acting, the user's statistics through
//!   the guard or the LDP randomizer, the server's sums and release) in state the Python agent
//!   owns, and the episode loop of `privrl.run` on an exact model.
//! * [`practical`]: the eigenvalue-floored release of the practical calibration.
//! * [`variance`]: UCRL-VTR+'s per-step variance estimate sigma-bar.
//! * [`state`]: the exact saved state of every stateful kernel (save / load of agents).
//! * [`lsvi`]: optimistic state values at many (indexed) states for least-squares value
//!   iteration (the response vector of Alg. 2).
//!
//! The PyO3 binding module is compiled only with the `python` feature.

pub mod agents;
pub mod continual;
pub mod errors;
pub mod lsvi;
pub mod mixture;
pub mod noise;
pub mod practical;
pub mod qeval;
pub mod rank_one;
pub mod secure;
pub mod state;
pub mod tree;
pub mod variance;

#[cfg(feature = "python")]
mod bindings;

pub use errors::{CoreError, CoreResult};
