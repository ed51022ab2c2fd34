//! The Q of a sampled model (no bonus) over tabular one-hot rows in O(S A): the dense kernel
//! `OptimisticQ { beta: 0, .. }.evaluate` spent O(S A d^2) on forms that a zero radius discards.

use std::cell::Cell;

use super::{Exploration, LsviAgent, Work};
use crate::errors::CoreResult;
use crate::kernels::qeval::OptimisticQ;
use crate::kernels::sparse::SparseRows;

impl LsviAgent {
    /// Q_h of the user's model into `w.q`: the billboard's under optimism; under sampling a
    /// draw around it, from the factor of Lambda~_h^{-1} kept for the release (`crate::agents::
    /// factor`; cleared in `receive` before a release changes the billboard).
    pub(super) fn step_q(
        &self,
        h: usize,
        exploration: &mut Exploration,
        w: &mut Work,
    ) -> CoreResult<()> {
        let d = self.d;
        let inv = self.board_inverse(h);
        let mean = &self.board.weights[h * d..(h + 1) * d];
        let plain = self.board.lazy && self.server.exact[h].is_plain_diagonal();
        let at = (self.server.releases, h, plain);
        let beta = exploration.weights_kept(mean, inv, self.beta, &mut w.draw, &mut w.w, at);
        let bound = w.draw.factors.kept(h).map_or(f64::NAN, |f| f.max_abs);
        let (scale, upper) = (w.one_hot, self.h as f64);
        let (sp, t) = (&self.sparse, &self.table);
        if beta != 0.0 || !sampled_q(sp, t, scale, &w.w, inv, bound, upper, &mut w.q)? {
            self.q_rows(h, &w.w, beta, self.board_widths(), inv, &mut w.q)?;
        }
        Ok(())
    }
}

/// The largest |phi_r| of a finite table whose rows hold at most one nonzero each (None
/// otherwise): the shortcut below applies to it.
pub(super) fn one_hot_scale(table: &[f64], sparse: &SparseRows) -> Option<f64> {
    let one_hot = (0..sparse.len()).all(|r| sparse.row(r).0.len() <= 1);
    (one_hot && table.iter().all(|v| v.is_finite()))
        .then(|| table.iter().fold(0.0f64, |m, v| m.max(v.abs())))
}

/// `out[r] = min(w^T phi_r, upper).max(0)`, the values of `OptimisticQ { w, inv, beta: 0, lower:
/// 0, upper }.evaluate(table, None, out)`, bit for bit, when they are known to be: one-hot rows
/// (`scale` from [`one_hot_scale`]), `w` finite and `max |inv_ij| = inv_max` small enough that
/// every form stays finite (`|phi^T inv phi| <= 2 inv_max scale^2`). The kernel's linear part
/// adds `w_j phi_j` to +0 column by column (FMA or not): +0 up to the row's nonzero, then that
/// product exactly when it is not 0, which later +-0 terms leave as it is; its bonus `0 *
/// sqrt(max(form, 0))` is +-0 and leaves it too. A row whose product is 0 (a zero row, an
/// underflow) goes through the kernel itself. Returns false (`out` unspecified) where the
/// shortcut does not apply: the caller runs the kernel (and its errors).
#[allow(clippy::too_many_arguments)]
pub(super) fn sampled_q(
    sparse: &SparseRows,
    table: &[f64],
    scale: Option<f64>,
    w: &[f64],
    inv: &[f64],
    inv_max: f64,
    upper: f64,
    out: &mut [f64],
) -> CoreResult<bool> {
    let Some(p) = scale else {
        return Ok(false);
    };
    let p = p.max(1.0);
    let small = inv_max <= 1e300 / (p * p); // false for NaN
    if !small || w.iter().any(|v| !v.is_finite()) || upper.is_nan() {
        return Ok(false);
    }
    let zero = Cell::new(false);
    sparse.dot_rows(w, out, |_, m| {
        zero.set(zero.get() || m == 0.0);
        m.min(upper).max(0.0)
    });
    if zero.get() {
        let d = w.len();
        let q = OptimisticQ {
            d,
            w,
            inv,
            beta: 0.0,
            lower: 0.0,
            upper,
        };
        for r in (0..out.len()).filter(|&r| sparse.dot_with(r, w) == 0.0) {
            q.evaluate(&table[r * d..(r + 1) * d], None, &mut out[r..r + 1])?;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::Stream;

    #[test]
    fn sampled_q_is_the_kernel_bit_for_bit() {
        let mut s = Stream::new([3; 32]);
        let (n, d) = (70, 12);
        let mut table = vec![0.0; n * d];
        for r in (0..n).filter(|r| r % 9 != 4) {
            table[r * d + s.below(d)] = [1.0, 0.5, -0.25, 1e-170][r % 4]; // zero rows, underflow
        }
        table[d + 1] = -0.0;
        let sparse = SparseRows::of(&table, d);
        let scale = one_hot_scale(&table, &sparse);
        assert_eq!(scale, Some(1.0));
        let mut inv = vec![0.0; d * d];
        s.normals(&mut inv);
        let (mut w, mut fast, mut dense) = (vec![0.0; d], vec![0.0; n], vec![0.0; n]);
        for k in 0..20 {
            s.normals(&mut w);
            w.iter_mut().for_each(|v| *v *= 3.0);
            w[k % d] = [1e-170, -1e-170, 0.0, -0.0][k % 4];
            let inv_max = inv.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(sampled_q(&sparse, &table, scale, &w, &inv, inv_max, 2.0, &mut fast).unwrap());
            let q = OptimisticQ {
                d,
                w: &w,
                inv: &inv,
                beta: 0.0,
                lower: 0.0,
                upper: 2.0,
            };
            q.evaluate(&table, None, &mut dense).unwrap();
            assert!(fast
                .iter()
                .zip(&dense)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
        // not one-hot, not finite, an inverse too large or w not finite: the kernel's turn
        let mut two = table.clone();
        two[0] = 1.0;
        two[1] = 1.0;
        assert_eq!(one_hot_scale(&two, &SparseRows::of(&two, d)), None);
        assert!(!sampled_q(&sparse, &table, None, &w, &inv, 1.0, 2.0, &mut fast).unwrap());
        assert!(!sampled_q(&sparse, &table, scale, &w, &inv, 1e301, 2.0, &mut fast).unwrap());
        w[0] = f64::NAN;
        assert!(!sampled_q(&sparse, &table, scale, &w, &inv, 1.0, 2.0, &mut fast).unwrap());
    }
}
