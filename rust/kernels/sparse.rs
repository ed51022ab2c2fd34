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
    /// Every row holds the same columns (a dense table's case; found on first use).
    #[serde(skip)]
    uniform: OnceLock<bool>,
    /// A uniform table's values four rows at a time, interleaved (block b, column t, row
    /// 4b + l at `[(b len + t) 4 + l]`): one load per column for the four rows of
    /// [`Self::dot_rows`] (built on first use; empty when not uniform or over
    /// [`QUADS_MAX_VALUES`]).
    #[serde(skip)]
    quads: OnceLock<Vec<f64>>,
}

/// The largest table (in values) [`SparseRows::dot_rows`] keeps an interleaved copy of (32 MB):
/// beyond it the four rows are read in place.
pub const QUADS_MAX_VALUES: usize = 1 << 22;

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

    /// Every row holds the same columns ([`Self::dot_rows`] then takes its four-row path).
    pub fn is_uniform(&self) -> bool {
        !self.is_empty() && *self.uniform.get_or_init(|| self.same_columns())
    }

    /// `phi_r^T x`.
    #[inline(always)]
    pub fn dot_with(&self, r: usize, x: &[f64]) -> f64 {
        let (cols, vals) = self.row(r);
        cols.iter().zip(vals).map(|(&j, v)| v * x[j]).sum()
    }

    /// `out[r] = f(r, phi_r^T x)` for every row, with [`Self::dot_with`]'s sums bit for bit (each
    /// row's terms in the same order, from the same neutral element). When every row holds the
    /// same columns (a dense table), four rows at a time, each x_j read once for the four: four
    /// independent sums in flight instead of one chain of dependent additions; otherwise one
    /// fused pass, row by row.
    #[inline]
    pub fn dot_rows(&self, x: &[f64], out: &mut [f64], f: impl Fn(usize, f64) -> f64) {
        let n = self.len();
        let mut r = 0;
        if n > 0 && *self.uniform.get_or_init(|| self.same_columns()) {
            let zero: f64 = std::iter::empty::<f64>().sum(); // Iterator::sum's neutral element
            let len = self.start[1];
            let c0 = &self.col[..len];
            let quads = self.quads.get_or_init(|| self.interleave(len));
            if !quads.is_empty() {
                #[cfg(target_arch = "x86_64")]
                {
                    if std::is_x86_feature_detected!("avx2") {
                        // SAFETY: only taken when the CPU reports AVX2. Wider registers only:
                        // without FMA (not enabled) every product and sum rounds as in the
                        // plain build.
                        r = unsafe { dot_quads_avx2(quads, c0, x, out, &f) };
                    }
                }
                if r == 0 {
                    r = dot_quads(quads, c0, x, out, &f);
                }
            }
            while r + 4 <= n {
                let v = &self.val[r * len..(r + 4) * len];
                let (v0, v) = v.split_at(len);
                let (v1, v) = v.split_at(len);
                let (v2, v3) = v.split_at(len);
                let mut acc = [zero; 4];
                for ((((&j, a), b), c), e) in c0.iter().zip(v0).zip(v1).zip(v2).zip(v3) {
                    let xj = x[j];
                    acc[0] += a * xj;
                    acc[1] += b * xj;
                    acc[2] += c * xj;
                    acc[3] += e * xj;
                }
                for (k, a) in acc.into_iter().enumerate() {
                    out[r + k] = f(r + k, a);
                }
                r += 4;
            }
        }
        for (i, o) in out[r..n].iter_mut().enumerate() {
            *o = f(r + i, self.dot_with(r + i, x));
        }
    }

    /// `out[r] = ||L^T phi_r||` for every row, L a row-major d x d matrix: y = L^T phi_r summed
    /// row by row of L (each y_k adds p_i l_ik in the row's column order from +0, as a fold per k
    /// would), then sqrt(sum_k y_k^2) in k order. Bit for bit the same whether the rows go one at
    /// a time or, when every row holds the same columns (a dense table), four at a time with each
    /// row of L read once for the four.
    pub fn norms_through(&self, l: &[f64], d: usize, out: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: only taken when the CPU reports AVX2. Wider registers only: without
                // FMA (not enabled) every product and sum rounds as in the plain build.
                return unsafe { self.norms_through_avx2(l, d, out) };
            }
        }
        self.norms_through_impl(l, d, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn norms_through_avx2(&self, l: &[f64], d: usize, out: &mut [f64]) {
        self.norms_through_impl(l, d, out)
    }

    #[inline(always)]
    fn norms_through_impl(&self, l: &[f64], d: usize, out: &mut [f64]) {
        let n = self.len();
        let norm = |y: &[f64]| y.iter().map(|s| s * s).sum::<f64>().sqrt();
        let mut r = 0;
        if n > 0 && *self.uniform.get_or_init(|| self.same_columns()) {
            let len = self.start[1];
            let c0 = &self.col[..len];
            let mut y = vec![0.0; 4 * d];
            while r + 4 <= n {
                let v = &self.val[r * len..(r + 4) * len];
                let (v0, rest) = v.split_at(len);
                let (v1, rest) = rest.split_at(len);
                let (v2, v3) = rest.split_at(len);
                // y_q[k] = sum_t p_qt l[c_t][k] in t order from +0, a block of k at a time kept
                // in registers (the four rows' sums of a block, each its own chain)
                let vs = [v0, v1, v2, v3];
                in_blocks!(d, [8, 4, 1], four_rows_block(c0, vs, l, d), &mut y);
                for q in 0..4 {
                    out[r + q] = norm(&y[q * d..(q + 1) * d]);
                }
                r += 4;
            }
        }
        let mut y = vec![0.0; d];
        for (rr, o) in out.iter_mut().enumerate().skip(r) {
            let (cols, vals) = self.row(rr);
            // the same sums one row at a time, a block of k in registers
            in_blocks!(d, [8, 4, 1], row_block(cols, vals, l, d), &mut y);
            *o = norm(&y);
        }
    }

    /// The values of the first 4 floor(n / 4) rows of a uniform table with `len` columns,
    /// interleaved four rows at a time (see `quads`); empty when `len` is 0 or the table is over
    /// [`QUADS_MAX_VALUES`].
    fn interleave(&self, len: usize) -> Vec<f64> {
        let blocks = self.len() / 4;
        if len == 0 || self.val.len() > QUADS_MAX_VALUES {
            return vec![];
        }
        let mut q = vec![0.0; blocks * 4 * len];
        for (b, block) in q.chunks_exact_mut(4 * len).enumerate() {
            for (t, four) in block.chunks_exact_mut(4).enumerate() {
                for (l, v) in four.iter_mut().enumerate() {
                    *v = self.val[(4 * b + l) * len + t];
                }
            }
        }
        q
    }

    /// Every row holds the same columns as the first.
    fn same_columns(&self) -> bool {
        let len = self.start[1] - self.start[0];
        let c0 = &self.col[..len];
        self.start.windows(2).all(|w| w[1] - w[0] == len)
            && self.col.chunks_exact(len.max(1)).all(|c| c == c0)
    }
}

/// y_q[kb..kb + W] = sum_t p_qt l[c_t][kb..kb + W] for the four rows of values `vs` (columns
/// `cols`), in t order from +0, into y (4 x d): [`SparseRows::norms_through`]'s sums, W entries of
/// k at a time in registers.
#[inline(always)]
fn four_rows_block<const W: usize>(
    cols: &[usize],
    vs: [&[f64]; 4],
    l: &[f64],
    d: usize,
    kb: usize,
    y: &mut [f64],
) {
    let mut acc = [[0.0f64; W]; 4];
    let [v0, v1, v2, v3] = vs;
    for ((((&i, &a), &b), &c), &e) in cols.iter().zip(v0).zip(v1).zip(v2).zip(v3) {
        let x: &[f64; W] = l[i * d + kb..i * d + kb + W].try_into().unwrap();
        for (q, p) in [a, b, c, e].into_iter().enumerate() {
            for j in 0..W {
                acc[q][j] += p * x[j];
            }
        }
    }
    for (q, a) in acc.iter().enumerate() {
        y[q * d + kb..q * d + kb + W].copy_from_slice(a);
    }
}

/// [`four_rows_block`] for one row (its columns and values) into y (d).
#[inline(always)]
fn row_block<const W: usize>(
    cols: &[usize],
    vals: &[f64],
    l: &[f64],
    d: usize,
    kb: usize,
    y: &mut [f64],
) {
    let mut acc = [0.0f64; W];
    for (&i, p) in cols.iter().zip(vals) {
        let x: &[f64; W] = l[i * d + kb..i * d + kb + W].try_into().unwrap();
        for j in 0..W {
            acc[j] += p * x[j];
        }
    }
    y[kb..kb + W].copy_from_slice(&acc);
}

/// `out[r] = f(r, phi_r^T x)` for the rows of the interleaved blocks `quads` (columns `cols`):
/// each row's products added in column order from Iterator::sum's neutral element, as
/// [`SparseRows::dot_with`]; four blocks (16 rows) in flight at a time, so that the additions of
/// the four independent chains overlap (one block's chain alone waits on each addition's
/// latency); returns the rows done.
#[inline(always)]
fn dot_quads(
    quads: &[f64],
    cols: &[usize],
    x: &[f64],
    out: &mut [f64],
    f: &impl Fn(usize, f64) -> f64,
) -> usize {
    let done = dot_blocks::<4>(quads, cols, x, out, f, 0);
    done + dot_blocks::<1>(&quads[done * cols.len()..], cols, x, out, f, done)
}

/// [`dot_quads`] over the whole groups of G interleaved blocks (4 G rows) of `quads`, the first
/// row being `first`; returns the rows done.
#[inline(always)]
fn dot_blocks<const G: usize>(
    quads: &[f64],
    cols: &[usize],
    x: &[f64],
    out: &mut [f64],
    f: &impl Fn(usize, f64) -> f64,
    first: usize,
) -> usize {
    let zero: f64 = std::iter::empty::<f64>().sum();
    let width = 4 * cols.len();
    let mut r = first;
    for group in quads.chunks_exact(G * width) {
        let blocks: [&[f64]; G] = std::array::from_fn(|g| &group[g * width..(g + 1) * width]);
        let mut acc = [[zero; 4]; G];
        for (t, &j) in cols.iter().enumerate() {
            let xj = x[j];
            for (a, b) in acc.iter_mut().zip(blocks) {
                for (al, vl) in a.iter_mut().zip(&b[4 * t..4 * t + 4]) {
                    *al += vl * xj;
                }
            }
        }
        for (k, v) in acc.into_iter().flatten().enumerate() {
            out[r + k] = f(r + k, v);
        }
        r += 4 * G;
    }
    r - first
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_quads_avx2(
    quads: &[f64],
    cols: &[usize],
    x: &[f64],
    out: &mut [f64],
    f: &impl Fn(usize, f64) -> f64,
) -> usize {
    dot_quads(quads, cols, x, out, f)
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

    #[test]
    fn dot_rows_are_the_row_dots_bit_for_bit() {
        // 11 rows of width 7: dense blocks of four (equal lengths), mixed ones, a tail of three,
        // values spanning magnitudes so that the order of the additions shows in the bits
        let mut t = vec![0.0; 11 * 7];
        for (i, v) in t.iter_mut().enumerate() {
            let (r, j) = (i / 7, i % 7);
            let dense = !(4..8).contains(&r);
            if dense || (r + j) % 3 != 0 {
                *v = ((i * 37 % 101) as f64 - 50.5) * 10f64.powi((i % 5) as i32 * 3 - 6);
            }
        }
        t[5 * 7..6 * 7].iter_mut().for_each(|v| *v = 0.0); // an empty row
        let x: Vec<f64> = (0..7).map(|j| 1.0 / (j as f64 + 0.3) - 0.9).collect();
        let mixed = SparseRows::of(&t, 7);
        // the same values on every row's columns: the dense path (blocks of four, a tail of three)
        let full: Vec<f64> = t
            .iter()
            .map(|v| if *v == 0.0 { 0.25 } else { *v })
            .collect();
        let dense = SparseRows::of(&full, 7);
        for s in [mixed, dense] {
            let mut out = vec![f64::NAN; 11];
            s.dot_rows(&x, &mut out, |_, v| v);
            for (r, o) in out.iter().enumerate() {
                assert_eq!(o.to_bits(), s.dot_with(r, &x).to_bits(), "row {r}");
            }
        }
        assert!(SparseRows::of(&full, 7).same_columns() && !SparseRows::of(&t, 7).same_columns());
    }

    #[test]
    fn interleaved_dot_rows_are_the_row_dots_bit_for_bit() {
        // dense tables whose rows go sixteen at a time, then blocks of four, then one by one
        // (n = 16 k + 4 j + i), widths 1 to 9, magnitudes that show the order of the additions
        for (n, d) in [(43, 7), (16, 1), (35, 9), (20, 3), (3, 5), (64, 16)] {
            let t: Vec<f64> = (0..n * d)
                .map(|i| ((i * 37 % 101) as f64 - 50.5) * 10f64.powi((i % 5) as i32 * 3 - 6))
                .map(|v| if v == 0.0 { 0.25 } else { v })
                .collect();
            let x: Vec<f64> = (0..d).map(|j| 1.0 / (j as f64 + 0.3) - 0.9).collect();
            let s = SparseRows::of(&t, d);
            assert!(s.same_columns());
            let mut out = vec![f64::NAN; n];
            s.dot_rows(&x, &mut out, |r, v| v + r as f64);
            assert_eq!(s.quads.get().map(Vec::len), Some(n / 4 * 4 * d));
            for (r, o) in out.iter().enumerate() {
                let want = s.dot_with(r, &x) + r as f64;
                assert_eq!(o.to_bits(), want.to_bits(), "n {n}, d {d}, row {r}");
            }
            // the plain build's loop gives the same bits
            let mut plain = vec![f64::NAN; n];
            let done = dot_quads(
                s.quads.get().unwrap(),
                &s.col[..d],
                &x,
                &mut plain,
                &|r, v| v + r as f64,
            );
            assert_eq!(done, n / 4 * 4);
            for r in 0..done {
                assert_eq!(
                    plain[r].to_bits(),
                    out[r].to_bits(),
                    "n {n}, d {d}, row {r}"
                );
            }
        }
    }

    #[test]
    fn norms_through_are_the_per_column_folds_bit_for_bit() {
        // ||L^T phi_r|| as set_width computed it before norms_through: a fold over the row's
        // columns for each k, then the sum of squares in k order; 11 rows (blocks of four and a
        // tail of three on the dense table), mixed rows, magnitudes that show the order; d with
        // and without tails of register blocks (8, then 4, then one entry)
        for d in [1, 3, 4, 7, 8, 12, 15, 16, 17] {
            norms_through_case(d);
        }
    }

    fn norms_through_case(d: usize) {
        let mut t = vec![0.0; 11 * d];
        for (i, v) in t.iter_mut().enumerate() {
            if (i / d) % 4 != 1 || i % 3 != 0 {
                *v = ((i * 37 % 101) as f64 - 50.5) * 10f64.powi((i % 5) as i32 * 3 - 6);
            }
        }
        let full: Vec<f64> = t
            .iter()
            .map(|v| if *v == 0.0 { 0.25 } else { *v })
            .collect();
        let l: Vec<f64> = (0..d * d)
            .map(|i| ((i * 53 % 97) as f64 - 48.0) * 10f64.powi((i % 4) as i32 * 2 - 3))
            .collect();
        for s in [SparseRows::of(&t, d), SparseRows::of(&full, d)] {
            let mut out = vec![f64::NAN; 11];
            s.norms_through(&l, d, &mut out);
            let mut plain = vec![f64::NAN; 11];
            s.norms_through_impl(&l, d, &mut plain);
            assert!(out
                .iter()
                .zip(&plain)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            for (r, o) in out.iter().enumerate() {
                let (cols, vals) = s.row(r);
                let fold = (0..d)
                    .map(|k| {
                        let y = cols
                            .iter()
                            .zip(vals)
                            .fold(0.0, |acc, (&i, p)| acc + p * l[i * d + k]);
                        y * y
                    })
                    .sum::<f64>()
                    .sqrt();
                assert_eq!(o.to_bits(), fold.to_bits(), "row {r}");
            }
        }
    }
}
