//! Error type of the numeric core. Every fallible kernel returns `CoreResult`; the
//! binding layer maps each variant to one class of `privrl.exceptions`.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum CoreError {
    /// Wrong array length or dimension.
    Shape(String),
    /// NaN or infinity in an input.
    NonFinite(String),
    /// A matrix that must be positive definite is not.
    NotPositiveDefinite(String),
    /// A parameter outside its domain (sigma <= 0, capacity 0, ...).
    InvalidParameter(String),
    /// More releases requested than the mechanism was built for.
    Capacity(String),
    /// User data outside a sensitivity bound under sensitivity="reject".
    Assumption(String),
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreError::Shape(m)
            | CoreError::NonFinite(m)
            | CoreError::NotPositiveDefinite(m)
            | CoreError::InvalidParameter(m)
            | CoreError::Capacity(m)
            | CoreError::Assumption(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CoreError {}

pub type CoreResult<T> = Result<T, CoreError>;

/// Fail with `Shape` unless `got == want`.
pub fn check_len(what: &str, got: usize, want: usize) -> CoreResult<()> {
    if got != want {
        return Err(CoreError::Shape(format!(
            "{what}: expected {want} values, got {got}"
        )));
    }
    Ok(())
}

/// Fail with `NonFinite` if any value is NaN or infinite.
pub fn check_finite(what: &str, xs: &[f64]) -> CoreResult<()> {
    if !any_non_finite(xs) {
        return Ok(());
    }
    if let Some(i) = xs.iter().position(|x| !x.is_finite()) {
        return Err(CoreError::NonFinite(format!(
            "{what}: non-finite value {} at flat index {i}",
            xs[i]
        )));
    }
    Ok(())
}

/// True iff some value is NaN or infinite: a branch-free scan (integer and/add/or only; the
/// exponent field is all ones iff adding one exponent unit carries into bit 63), compiled a
/// second time for AVX2 and picked at run time, since it reads every input the kernels take.
pub fn any_non_finite(xs: &[f64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: only taken when the CPU reports AVX2.
            return unsafe { any_non_finite_avx2(xs) };
        }
    }
    any_non_finite_impl(xs)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn any_non_finite_avx2(xs: &[f64]) -> bool {
    any_non_finite_impl(xs)
}

#[inline(always)]
fn any_non_finite_impl(xs: &[f64]) -> bool {
    const EXP: u64 = 0x7ff0_0000_0000_0000;
    const ONE: u64 = 0x0010_0000_0000_0000;
    // A plain integer OR-reduction: LLVM vectorizes it (OR is associative) without gathers.
    let acc = xs.iter().fold(0u64, |a, x| a | ((x.to_bits() & EXP) + ONE));
    acc >> 63 != 0
}
