//! The sampling draw's covariance factor, once per release: `psd_factor` is O(d^3) and LSVI-UCB
//! under `exploration = sampling` drew a model per user and step from a covariance (the
//! billboard's Lambda~_h^{-1}) that only changes at a release. [`Factors`] keeps every step's
//! factor for the release it was computed for; a diagonal covariance (tabular one-hot features)
//! keeps its d diagonal entries only.
//!
//! Bit for bit: the factor is `psd_factor`'s, and a draw is the dense product's value. When every
//! off-diagonal entry of `m` is +0 and every `0.5 (m_ii + m_ii)` is positive (not NaN),
//! `psd_factor`'s Cholesky computes exactly +0 off the diagonal (each such entry is `+0 - sum of
//! (+0)(+0)` divided by a positive pivot) and `sqrt(0.5 (m_ii + m_ii))` on it. Row i of the product
//! `L z` is then a sum of +-0 terms and `t = L_ii z_i`: t itself whenever t is neither 0 nor NaN
//! (adding +-0 to a nonzero number leaves it as it is); otherwise the same terms are summed in
//! the same order, the zeros' signs included.

use super::psd_factor;

/// A covariance's factor `L` (`L L^T = m`), as [`psd_factor`] computes it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Factor {
    /// `L` is diagonal: `l` holds its diagonal (d entries), else all of it (d x d, row-major).
    diagonal: bool,
    l: Vec<f64>,
    /// max |m_ij| (NaN or inf when `m` is not finite): bounds the forms `phi^T m phi`.
    pub max_abs: f64,
}

impl Factor {
    /// The factor of the symmetric d x d `m`; `plain`: its off-diagonal entries are known to be
    /// +0 (not scanned).
    pub(crate) fn of(m: &[f64], d: usize, plain: bool) -> Self {
        let (mut off_zero, mut max_abs, mut nan) = (true, 0.0f64, false);
        let mut scan = |ij: usize, v: f64| {
            off_zero &= ij / d == ij % d || v.to_bits() == 0;
            max_abs = max_abs.max(v.abs());
            nan |= v.is_nan();
        };
        if plain {
            (0..d).for_each(|i| scan(i * d + i, m[i * d + i]));
        } else {
            m.iter().enumerate().for_each(|(ij, &v)| scan(ij, v));
        }
        if nan {
            max_abs = f64::NAN;
        }
        let diagonal: Option<Vec<f64>> = (off_zero && !nan)
            .then(|| {
                (0..d)
                    .map(|i| 0.5 * (m[i * d + i] + m[i * d + i]))
                    .map(|s| (!(s.is_nan() || s <= 0.0)).then(|| s.sqrt()))
                    .collect()
            })
            .flatten();
        match diagonal {
            Some(l) => Factor {
                diagonal: true,
                l,
                max_abs,
            },
            None => {
                let mut l = vec![0.0; d * d];
                psd_factor(m, d, &mut l);
                Factor {
                    diagonal: false,
                    l,
                    max_abs,
                }
            }
        }
    }

    /// `out = mean + radius L z`, the dense product's values.
    pub(crate) fn draw(&self, mean: &[f64], radius: f64, z: &[f64], out: &mut [f64]) {
        let d = mean.len();
        if !self.diagonal {
            for ((o, m), row) in out.iter_mut().zip(mean).zip(self.l.chunks_exact(d)) {
                *o = m + radius * row.iter().zip(z).map(|(l, z)| l * z).sum::<f64>();
            }
            return;
        }
        for (i, ((o, m), li)) in out.iter_mut().zip(mean).zip(&self.l).enumerate() {
            let t = li * z[i];
            let dot = if t != 0.0 && !t.is_nan() {
                t
            } else {
                let row = (0..d).map(|j| if j == i { *li } else { 0.0 });
                row.zip(z).map(|(l, z)| l * z).sum::<f64>()
            };
            *o = m + radius * dot;
        }
    }
}

/// Every step's factor for one version of the covariances (the agent's release count).
#[derive(Debug, Default)]
pub(crate) struct Factors {
    version: Option<u64>,
    steps: Vec<Option<Factor>>,
}

impl Factors {
    /// Step h's factor of `m` at `version`, computed if this version has none yet.
    pub(crate) fn get(
        &mut self,
        version: u64,
        h: usize,
        m: &[f64],
        d: usize,
        plain: bool,
    ) -> &Factor {
        if self.version != Some(version) {
            self.steps.clear();
            self.version = Some(version);
        }
        if self.steps.len() <= h {
            self.steps.resize(h + 1, None);
        }
        self.steps[h].get_or_insert_with(|| Factor::of(m, d, plain))
    }

    /// Step h's factor, if one is kept.
    pub(crate) fn kept(&self, h: usize) -> Option<&Factor> {
        self.steps.get(h).and_then(Option::as_ref)
    }

    /// Forget every factor (the covariances are about to change).
    pub(crate) fn clear(&mut self) {
        self.version = None;
        self.steps.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::Stream;

    /// The cached factor's draws against `psd_factor`'s dense product, bit for bit.
    fn dense_draw(m: &[f64], mean: &[f64], radius: f64, z: &[f64]) -> Vec<f64> {
        let d = mean.len();
        let mut l = vec![0.0; d * d];
        psd_factor(m, d, &mut l);
        mean.iter()
            .zip(l.chunks_exact(d))
            .map(|(m, row)| m + radius * row.iter().zip(z).map(|(l, z)| l * z).sum::<f64>())
            .collect()
    }

    fn same(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    #[test]
    fn factor_draws_are_the_dense_products() {
        let mut s = Stream::new([7; 32]);
        let d = 9;
        let mut z = vec![0.0; d];
        let mut mean = vec![0.0; d];
        let diag = |v: &[f64]| {
            let mut m = vec![0.0; d * d];
            (0..d).for_each(|i| m[i * d + i] = v[i]);
            m
        };
        let mut cases: Vec<(Vec<f64>, bool)> = vec![];
        let mut v = vec![0.0; d];
        s.normals(&mut v);
        let pos: Vec<f64> = v.iter().map(|x| x * x + 1e-3).collect();
        cases.push((diag(&pos), true));
        // tiny, huge and overflowing (0.5 (m + m) = inf) diagonals, a zero and a negative one
        let odd = [1e-300, 4.9e-324, 1e300, f64::MAX, 1.0, 2.0, 3.0, 0.5, 0.25];
        cases.push((diag(&odd), true));
        let mut zero = pos.clone();
        zero[3] = 0.0;
        cases.push((diag(&zero), false));
        zero[3] = -1.0;
        cases.push((diag(&zero), false));
        // -0 off the diagonal is not +0: the dense factor
        let mut neg = diag(&pos);
        neg[1] = -0.0;
        cases.push((neg, false));
        let mut full = diag(&pos);
        full[1] = 0.1;
        full[d] = 0.1;
        cases.push((full, false));
        for (m, diagonal) in cases {
            for plain in [false, true].into_iter().filter(|p| !p || diagonal) {
                let f = Factor::of(&m, d, plain);
                assert_eq!(f.diagonal, diagonal);
                for radius in [1.0, 0.3, 0.0] {
                    s.normals(&mut z);
                    s.normals(&mut mean);
                    z[2] = 0.0; // a zero draw: the zeros summed as the dense product sums them
                    z[4] = -0.0;
                    mean[5] = -0.0;
                    let mut out = vec![0.0; d];
                    f.draw(&mean, radius, &z, &mut out);
                    assert!(same(&out, &dense_draw(&m, &mean, radius, &z)));
                }
            }
        }
    }

    #[test]
    fn factors_are_kept_per_version() {
        let d = 2;
        let (a, b) = (vec![4.0, 0.0, 0.0, 9.0], vec![1.0, 0.0, 0.0, 1.0]);
        let mut f = Factors::default();
        assert_eq!(f.get(0, 1, &a, d, false).l, vec![2.0, 3.0]);
        // the same version: the kept factor (whatever is passed)
        assert_eq!(f.get(0, 1, &b, d, false).l, vec![2.0, 3.0]);
        assert_eq!(f.get(1, 1, &b, d, false).l, vec![1.0, 1.0]);
        f.clear();
        assert_eq!(f.get(1, 1, &a, d, false).l, vec![2.0, 3.0]);
        assert!(f.get(1, 0, &[f64::NAN; 4], d, false).max_abs.is_nan());
    }
}
