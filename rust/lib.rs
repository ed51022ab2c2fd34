//! privrl numeric core: the performance-critical kernels of privacy-preserving
//! exploration with linear representations (Luyo et al.), free of any Python.
//!
//! * [`kernels`]: the numeric kernels the algorithms call by name: Sherman–Morrison and
//!   Cholesky inverses of design matrices (`rank_one`), batched optimistic Q evaluation
//!   (`qeval`), optimistic state values at many states (`values`), linear-mixture features
//!   (`mixture`), the practical calibration's floored release (`practical`) and UCRL-VTR+'s
//!   variance estimate (`variance`).
//! * [`noise`]: node-noise laws (Gaussian, Laplace, exact discrete samplers) and shapes, the
//!   exact data sums kept apart from the noise, and stand-alone noise streams; in
//!   [`noise::secure`] the exact discrete Laplace / discrete Gaussian samplers (integer
//!   arithmetic only).
//! * [`continual`]: continual release of prefix sums behind one interface: the paper's
//!   tree-based (binary-mechanism) release (App. "Tree-based method", `continual/tree.rs`),
//!   Honaker's variance-reduced tree, the square-root factorization and
//!   buffered-linear-Toeplitz, with their exact per-step variance and per-user sensitivity
//!   multipliers.
//! * [`agents`]: each algorithm's whole episode (planning, acting, the user's statistics through
//!   the guard or the LDP randomizer, the server's sums and release) in state the Python agent
//!   owns, and the episode loop of `privrl.run` on an exact model.
//! * [`state`]: the exact saved state of every stateful kernel (save / load of agents).
//! * [`errors`]: the error type every kernel returns and the shared input checks.
//!
//! The PyO3 binding module (`bindings`, the `privrl._core` Python module) is compiled only with
//! the `python` feature.

/// `in_blocks!(d, [8, 4, 1], kernel(args..), out)`: `kernel::<W>(args.., kb, out)` for the
/// entries kb..kb + W of 0..d, as many blocks of the first width as fit, then of the next (the
/// last width 1 finishes), in k order: a block's sums stay in registers (`agents::model`,
/// `kernels::sparse`).
macro_rules! in_blocks {
    ($d:expr, [$($w:literal),+], $kernel:ident $args:tt, $out:expr) => {{
        let mut kb = 0;
        $(
            while $d - kb >= $w {
                in_blocks!(@call $kernel::<$w> $args, kb, $out);
                kb += $w;
            }
        )+
    }};
    (@call $kernel:ident::<$w:literal> ($($arg:expr),*), $kb:ident, $out:expr) => {
        $kernel::<$w>($($arg,)* $kb, $out)
    };
}

pub mod agents;
pub mod continual;
pub mod errors;
pub mod kernels;
pub mod noise;
pub mod state;

#[cfg(feature = "python")]
mod bindings;

pub use errors::{CoreError, CoreResult};
