//! Sparse rows of a dense row-major table, kept in the table's column order so that a sum over
//! a row's nonzeros adds the same terms in the same order as the dense sum (the skipped terms are
//! products with an exact zero: adding them to a sum that is never -0 leaves it unchanged, so the
//! sparse sums equal the dense ones bit for bit when the other factor is finite).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// Rows of a dense (n x d) table as (column, value) lists.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SparseRows {
    start: Vec<usize>,
    col: Vec<usize>,
    val: Vec<f64>,
    /// The transpose's pattern: for every column, the rows holding it (built on first use).
    #[serde(skip)]
    by_column: OnceLock<(Vec<usize>, Vec<usize>)>,
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

    /// The rows are well formed for a table of width d (a restored state, `crate::state`).
    pub fn consistent(&self, d: usize) -> bool {
        self.start.first() == Some(&0)
            && self.start.last() == Some(&self.col.len())
            && self.start.windows(2).all(|w| w[0] <= w[1])
            && self.col.len() == self.val.len()
            && self.col.iter().all(|&j| j < d)
    }

    /// Rows in the table.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    pub fn row(&self, r: usize) -> (&[usize], &[f64]) {
        let (a, b) = (self.start[r], self.start[r + 1]);
        (&self.col[a..b], &self.val[a..b])
    }

    /// The rows with a nonzero in column `j`, ascending.
    pub fn rows_with(&self, j: usize) -> &[usize] {
        let (start, rows) = self.by_column.get_or_init(|| {
            let width = self.col.iter().max().map_or(0, |&c| c + 1);
            let mut count = vec![0usize; width + 1];
            self.col.iter().for_each(|&c| count[c + 1] += 1);
            (0..width).for_each(|c| count[c + 1] += count[c]);
            let mut rows = vec![0; self.col.len()];
            let mut next = count.clone();
            for r in 0..self.len() {
                for &c in self.row(r).0 {
                    rows[next[c]] = r;
                    next[c] += 1;
                }
            }
            (count, rows)
        });
        if j + 1 >= start.len() {
            return &[];
        }
        &rows[start[j]..start[j + 1]]
    }

    /// `phi_r^T x`.
    #[inline(always)]
    pub fn dot_with(&self, r: usize, x: &[f64]) -> f64 {
        let (cols, vals) = self.row(r);
        cols.iter().zip(vals).map(|(&j, v)| v * x[j]).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_with_is_the_transpose() {
        // 4 x 3: rows {0: [1], 1: [], 2: [0, 2], 3: [1, 2]}
        let t = [0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, -3.0, 0.0, 4.0, 5.0];
        let s = SparseRows::of(&t, 3);
        assert_eq!(s.len(), 4);
        assert_eq!(s.rows_with(0), &[2]);
        assert_eq!(s.rows_with(1), &[0, 3]);
        assert_eq!(s.rows_with(2), &[2, 3]);
        assert_eq!(s.rows_with(3), &[] as &[usize]);
        assert_eq!(s.dot_with(3, &[1.0, 1.0, 2.0]), 14.0);
    }
}
