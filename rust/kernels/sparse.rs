//! Sparse rows of a dense row-major table, kept in the table's column order so that a sum over
//! a row's nonzeros adds the same terms in the same order as the dense sum (the skipped terms are
//! products with an exact zero: adding them to a sum that is never -0 leaves it unchanged, so the
//! sparse sums equal the dense ones bit for bit when the other factor is finite).

use serde::{Deserialize, Serialize};

/// Rows of a dense (n x d) table as (column, value) lists.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SparseRows {
    start: Vec<usize>,
    col: Vec<usize>,
    val: Vec<f64>,
}

impl SparseRows {
    pub fn of(table: &[f64], d: usize) -> Self {
        let mut s = SparseRows::default();
        for row in table.chunks_exact(d.max(1)) {
            s.start.push(s.col.len());
            for (j, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    s.col.push(j);
                    s.val.push(v);
                }
            }
        }
        s.start.push(s.col.len());
        s
    }

    /// Rows in the table.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn row(&self, r: usize) -> (&[usize], &[f64]) {
        let (a, b) = (self.start[r], self.start[r + 1]);
        (&self.col[a..b], &self.val[a..b])
    }

    /// `phi_r^T x`.
    #[inline]
    pub fn dot_with(&self, r: usize, x: &[f64]) -> f64 {
        let (cols, vals) = self.row(r);
        cols.iter().zip(vals).map(|(&j, v)| v * x[j]).sum()
    }
}
