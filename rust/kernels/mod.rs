//! The numeric kernels every algorithm calls by name: design matrices and their inverses,
//! batched optimistic Q evaluation, state values, mixture features and the two release kernels.
//!
//! * [`rank_one`]: Sherman–Morrison maintained inverses of `lambda I + sum x x^T` and
//!   Cholesky inverses/solves of noisy design matrices.
//! * [`qeval`]: batched optimistic Q evaluation `clip(r + Phi w + beta ||phi||_{Lambda^-1})`
//!   with per-state max / argmax and seeded tie-breaking.
//! * [`values`]: optimistic state values at many (indexed) states for least-squares value
//!   iteration (the response vector of Alg. 2).
//! * [`mixture`]: sparse linear-mixture features and `phi_V(s, a)` for all pairs at once.
//! * [`eigen`]: eigendecompositions of the small symmetric matrices the releases take spectral
//!   functions of (a closed-form 3x3 solver, nalgebra's otherwise).
//! * [`practical`]: the eigenvalue-floored release of the practical calibration.
//! * [`spd_blocks`]: the triangular inverse of `rank_one::spd_inverse_into`, four columns at a
//!   time.
//! * [`sparse`]: a table's rows as (column, value) lists, summed like the dense rows.
//! * [`variance`]: UCRL-VTR+'s per-step variance estimate sigma-bar.
//! * [`dense`]: the small dot / quadratic-form / matrix-vector helpers the kernels share.

pub mod dense;
pub mod eigen;
pub mod mixture;
pub mod practical;
pub mod qeval;
pub mod rank_one;
pub mod sparse;
pub mod spd_blocks;
pub mod values;
pub mod variance;
