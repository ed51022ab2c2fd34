//! The noise lattice of the discrete samplers: data rounded to it (the diagonal of discrete
//! Laplace matrices on even units) and the exact running sum of the leaves, kept apart from the
//! noise.

use super::{NodeNoise, NodeShape, LATTICE_LIMIT};
use crate::errors::{check_finite, check_len, CoreError, CoreResult};

/// Discrete Laplace symmetric matrices draw their diagonal as `2 Z'_ii` (even lattice units),
/// so the data's diagonal must sit on even units too: otherwise the parity of a released
/// diagonal entry would reveal the data's. Some(d) for such a shape, None otherwise.
fn even_diagonal(noise: NodeNoise, shape: NodeShape) -> Option<usize> {
    match (noise, shape) {
        (NodeNoise::DiscreteLaplace { .. }, NodeShape::SymMatrix { d, .. }) => Some(d),
        _ => None,
    }
}

fn is_even_entry(even_diagonal: Option<usize>, i: usize) -> bool {
    even_diagonal.is_some_and(|d| i.is_multiple_of(d + 1))
}

/// `x` rounded to an integer, half to even: `x.round_ties_even()` bit for bit (the sign of a
/// zero included), without the libm call that the baseline x86-64 target (no SSE4.1 `roundsd`)
/// makes of it on every lattice entry. Below 2^52, `|x| + 2^52` lands on a double of spacing 1,
/// where the addition itself rounds half to even; at or above 2^52 (and for inf / NaN) x is its
/// own rounding.
#[inline]
pub(crate) fn round_half_even(x: f64) -> f64 {
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let a = x.abs();
    if a < TWO_52 {
        ((a + TWO_52) - TWO_52).copysign(x)
    } else {
        x
    }
}

/// `x / unit` rounded (half to even, as numpy) to an integer, or to an even integer.
fn lattice_round(x: f64, unit: f64, even: bool) -> f64 {
    if even {
        2.0 * round_half_even(x / (2.0 * unit))
    } else {
        round_half_even(x / unit)
    }
}

/// `x` in integer lattice units of `noise` on a `shape` node (the discrete samplers' lattice;
/// the diagonal of discrete Laplace matrices on even units): the rounding a discrete mechanism
/// needs before its integer noise is added. Refuses values beyond 2^52 units. Continuous noise:
/// an error (there is no lattice).
pub fn to_lattice_units(
    noise: NodeNoise,
    shape: NodeShape,
    x: &[f64],
    out: &mut [f64],
) -> CoreResult<f64> {
    let Some(u) = noise.lattice_unit(shape)? else {
        return Err(CoreError::InvalidParameter(
            "continuous noise has no lattice".into(),
        ));
    };
    check_len("lattice buffer", out.len(), x.len())?;
    let even = even_diagonal(noise, shape);
    for (i, (o, v)) in out.iter_mut().zip(x).enumerate() {
        let r = lattice_round(*v, u, is_even_entry(even, i));
        if r.is_nan() || r.abs() > LATTICE_LIMIT {
            return Err(CoreError::InvalidParameter(format!(
                "value {v:?} at flat index {i} leaves the exact range of the noise lattice (grid \
                 {u:e}, up to 2^52 grid steps); use a larger noise scale or fewer grid bits"
            )));
        }
        *o = r;
    }
    Ok(u)
}

/// The exact running sum of the leaves, kept apart from the noise (never released as such).
///
/// With a discrete (secure) sampler the leaves are rounded to the noise lattice first: the
/// discrete mechanisms are only private for data on the lattice (two neighbouring sums off the
/// lattice would have disjoint output supports). Rounding moves each entry by at most half a
/// grid step, so the L2 sensitivity grows by at most `grid * sqrt(entries)` (docs/privacy.md).
/// The sum is then held in lattice units, where f64 adds integers below 2^53 exactly.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub struct ExactSum {
    sum: Vec<f64>,
    unit: Option<f64>,
    scratch: Vec<f64>,
    /// Discrete Laplace matrices: d, whose diagonal lives on twice the lattice unit.
    even_diagonal: Option<usize>,
}

impl ExactSum {
    /// A restored sum's buffer against the `n` entries of its node shape.
    pub(crate) fn fits(&self, n: usize) -> bool {
        self.sum.len() == n && (self.scratch.is_empty() || self.scratch.len() == n)
    }

    pub fn new(n: usize, unit: Option<f64>) -> Self {
        ExactSum {
            sum: vec![0.0; n],
            unit,
            scratch: if unit.is_some() {
                vec![0.0; n]
            } else {
                Vec::new()
            },
            even_diagonal: None,
        }
    }

    /// The exact sum of `shape` leaves under `noise`: on the noise lattice for a discrete
    /// sampler (see [`to_lattice_units`] for the even diagonal of discrete Laplace matrices).
    pub fn for_shape(noise: NodeNoise, shape: NodeShape) -> CoreResult<Self> {
        let mut e = ExactSum::new(shape.len(), noise.lattice_unit(shape)?);
        e.even_diagonal = even_diagonal(noise, shape);
        Ok(e)
    }

    /// Lattice unit in data units (None for continuous noise).
    pub fn unit(&self) -> Option<f64> {
        self.unit
    }

    /// Add a leaf; the sum is unchanged when the leaf is refused.
    pub fn add(&mut self, what: &str, leaf: &[f64]) -> CoreResult<()> {
        check_len(what, leaf.len(), self.sum.len())?;
        check_finite(what, leaf)?;
        match self.unit {
            None => {
                for (s, x) in self.sum.iter_mut().zip(leaf) {
                    *s += *x;
                }
            }
            Some(u) => {
                for (i, (r, x)) in self.scratch.iter_mut().zip(leaf).enumerate() {
                    *r = lattice_round(*x, u, is_even_entry(self.even_diagonal, i));
                    if !(r.abs() <= LATTICE_LIMIT && (self.sum[i] + *r).abs() <= LATTICE_LIMIT) {
                        return Err(CoreError::InvalidParameter(format!(
                            "{what}: value {x:?} at flat index {i} leaves the exact range of the \
                             noise lattice (grid {u:e}, sums up to 2^52 grid steps); use a larger \
                             noise scale or fewer grid bits"
                        )));
                    }
                }
                for (s, r) in self.sum.iter_mut().zip(&self.scratch) {
                    *s += *r;
                }
            }
        }
        Ok(())
    }

    /// The sum in data units (for a lattice: the sum of the rounded leaves).
    pub fn value(&self) -> Vec<f64> {
        match self.unit {
            None => self.sum.clone(),
            Some(u) => self.sum.iter().map(|s| s * u).collect(),
        }
    }

    /// `out = sum + noise` in data units, `noise` in the same units as the sum (None = zero).
    /// On a lattice the integer total is formed first and scaled once, so the released double
    /// is a deterministic function of the exact integer release.
    pub fn release_into(&self, noise: Option<&[f64]>, out: &mut [f64]) -> CoreResult<()> {
        check_len("release buffer", out.len(), self.sum.len())?;
        let u = self.unit.unwrap_or(1.0);
        match (noise, self.unit) {
            (Some(z), None) => {
                for ((o, s), z) in out.iter_mut().zip(&self.sum).zip(z) {
                    *o = *s + *z;
                }
            }
            (Some(z), Some(_)) => {
                for ((o, s), z) in out.iter_mut().zip(&self.sum).zip(z) {
                    *o = (*s + *z) * u;
                }
            }
            (None, None) => out.copy_from_slice(&self.sum),
            (None, Some(_)) => {
                for (o, s) in out.iter_mut().zip(&self.sum) {
                    *o = *s * u;
                }
            }
        }
        Ok(())
    }

    /// [`ExactSum::release_into`] with the noise already in `out` (same length, checked by the
    /// caller): `out = sum + out`, the same operations without a separate noise buffer.
    pub fn release_in_place(&self, out: &mut [f64]) {
        match self.unit {
            None => {
                for (o, s) in out.iter_mut().zip(&self.sum) {
                    *o += *s; // s + noise: IEEE addition commutes exactly
                }
            }
            Some(u) => {
                for (o, s) in out.iter_mut().zip(&self.sum) {
                    *o = (*s + *o) * u;
                }
            }
        }
    }

    /// [`ExactSum::noise_into`] with the noise already in `out`: to data units in place.
    pub fn noise_in_place(&self, out: &mut [f64]) {
        if let Some(u) = self.unit {
            out.iter_mut().for_each(|z| *z *= u);
        }
    }

    /// `noise` (in sum units) to data units.
    pub fn noise_into(&self, noise: Option<&[f64]>, out: &mut [f64]) -> CoreResult<()> {
        check_len("release buffer", out.len(), self.sum.len())?;
        let u = self.unit.unwrap_or(1.0);
        match noise {
            Some(z) if self.unit.is_some() => {
                for (o, z) in out.iter_mut().zip(z) {
                    *o = *z * u;
                }
            }
            Some(z) => out.copy_from_slice(z),
            None => out.iter_mut().for_each(|x| *x = 0.0),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn round_half_even_is_round_ties_even_bit_for_bit() {
        const TWO_52: f64 = 4_503_599_627_370_496.0;
        let mut cases = vec![
            0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            1.0 - f64::EPSILON / 4.0,
            TWO_52 - 0.5,
            TWO_52 - 1.5,
            TWO_52,
            TWO_52 + 1.0,
            2.0 * TWO_52 + 2.0,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            f64::INFINITY,
        ];
        let mut rng = rand_chacha::ChaCha12Rng::from_seed([5; 32]);
        for _ in 0..200_000 {
            let scale = 2f64.powi(rng.random_range(-8..60));
            cases.push(rng.random::<f64>() * scale);
            // exact halves
            cases.push(rng.random_range(0..1u64 << 50) as f64 + 0.5);
        }
        for x in cases.iter().flat_map(|&x| [x, -x]) {
            assert_eq!(
                round_half_even(x).to_bits(),
                x.round_ties_even().to_bits(),
                "{x:e}"
            );
        }
        assert!(round_half_even(f64::NAN).is_nan());
    }
}
