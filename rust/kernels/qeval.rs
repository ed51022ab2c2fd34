//! Batched optimistic Q evaluation (the inner loop of every algorithm in the paper):
//! for a block Phi (n x d, all actions of many states),
//! `Q = clip_[lower, upper](r + Phi w + beta * sqrt(max(0, phi^T Lambda^{-1} phi)))`
//! in one call, then per state (rows grouped by the number of actions) the max and a
//! greedy action, ties broken uniformly at random from a seed or by lowest index.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::errors::{check_finite, check_len, CoreError, CoreResult};

mod ties;
use ties::tied_block;

/// How `argmax` resolves exact ties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TieBreak {
    /// The lowest action index.
    Lowest,
    /// Uniformly at random among the maximizers, from this seed (reproducible).
    Random(u64),
}

/// Everything but the features: the released estimate, the inverse design matrix, the
/// bonus scale and the clipping range.
#[derive(Debug, Clone, Copy)]
pub struct OptimisticQ<'a> {
    pub d: usize,
    pub w: &'a [f64],
    /// Lambda^{-1}, d x d, symmetric.
    pub inv: &'a [f64],
    pub beta: f64,
    pub lower: f64,
    pub upper: f64,
}

impl<'a> OptimisticQ<'a> {
    pub fn validate(&self) -> CoreResult<()> {
        if self.d == 0 {
            return Err(CoreError::Shape("feature dimension d must be >= 1".into()));
        }
        check_len("w", self.w.len(), self.d)?;
        check_len("inverse design matrix", self.inv.len(), self.d * self.d)?;
        check_finite("w", self.w)?;
        check_finite("inverse design matrix", self.inv)?;
        if !self.beta.is_finite() || self.beta < 0.0 {
            return Err(CoreError::InvalidParameter(format!(
                "beta must be finite and >= 0, got {}",
                self.beta
            )));
        }
        if self.lower.is_nan() || self.upper.is_nan() || self.lower > self.upper {
            return Err(CoreError::InvalidParameter(format!(
                "clipping range [{}, {}] is empty",
                self.lower, self.upper
            )));
        }
        Ok(())
    }

    /// `out[i] = clip(offset[i] + phi_i . w + beta ||phi_i||_{inv})`, `phi` row-major (n, d).
    ///
    /// The quadratic form uses the symmetric upper triangle (d(d+1)/2 multiply-adds per
    /// row) and is clamped at 0 before the square root, so an indefinite `inv` cannot
    /// produce NaN. Rows are processed 32 at a time in SIMD lanes (AVX-512 or AVX2+FMA
    /// when present; every lane runs the same fused multiply-adds in the same order, so
    /// the result does not depend on the instruction set).
    pub fn evaluate(&self, phi: &[f64], offset: Option<&[f64]>, out: &mut [f64]) -> CoreResult<()> {
        let upper = self.prepare()?;
        let d = self.d;
        if !phi.len().is_multiple_of(d) {
            return Err(CoreError::Shape(format!(
                "features: length {} is not a multiple of d = {d}",
                phi.len()
            )));
        }
        let n = phi.len() / d;
        check_len("output", out.len(), n)?;
        check_finite("features", phi)?;
        if let Some(r) = offset {
            check_len("reward offset", r.len(), n)?;
            check_finite("reward offset", r)?;
        }
        self.evaluate_prepared(&upper, phi, offset, out);
        Ok(())
    }

    /// Validate and return the doubled upper triangle of the symmetrized inverse:
    /// phi^T M phi = sum_i phi_i (M_ii phi_i + sum_{j>i} 2 M_ij phi_j), d(d+1)/2 multiply-adds
    /// per row. Callers evaluating many blocks against one inverse prepare it once.
    pub fn prepare(&self) -> CoreResult<Vec<f64>> {
        self.validate()?;
        let d = self.d;
        let mut upper = Vec::with_capacity(d * (d + 1) / 2);
        for i in 0..d {
            for j in i..d {
                let m = 0.5 * self.inv[i * d + j] + 0.5 * self.inv[j * d + i];
                upper.push(if i == j { m } else { 2.0 * m });
            }
        }
        Ok(upper)
    }

    /// `evaluate` without the checks: `upper` from [`Self::prepare`], `phi` finite with a
    /// multiple of d values, `out` (and `offset`) one value per row.
    pub fn evaluate_prepared(
        &self,
        upper: &[f64],
        phi: &[f64],
        offset: Option<&[f64]>,
        out: &mut [f64],
    ) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("fma") {
                // SAFETY: only taken when the CPU reports AVX-512F and FMA.
                unsafe { eval_avx512(self, upper, phi, offset, out) };
                return;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                // SAFETY: only taken when the CPU reports AVX2 and FMA.
                unsafe { eval_fma(self, upper, phi, offset, out) };
                return;
            }
        }
        eval_impl::<false, CHUNK>(self, upper, phi, offset, out);
    }
}

/// Rows handled per SIMD sweep: 32 lanes = 8 independent AVX2 accumulators, enough to
/// hide the FMA latency.
const CHUNK: usize = 32;

#[inline(always)]
fn madd<const FMA: bool>(a: f64, b: f64, c: f64) -> f64 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn eval_avx512(
    q: &OptimisticQ<'_>,
    upper: &[f64],
    phi: &[f64],
    offset: Option<&[f64]>,
    out: &mut [f64],
) {
    // Small d: 64 lanes (8 independent zmm chains) hide the FMA latency. From d ~ 8 on, the two
    // paired accumulators plus quad/lin of 64 lanes would spill the 32 zmm registers: 32 lanes
    // (measured faster at d = 16, slower at d = 5).
    if q.d <= 8 {
        eval_impl::<true, 64>(q, upper, phi, offset, out)
    } else {
        eval_impl::<true, CHUNK>(q, upper, phi, offset, out)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn eval_fma(
    q: &OptimisticQ<'_>,
    upper: &[f64],
    phi: &[f64],
    offset: Option<&[f64]>,
    out: &mut [f64],
) {
    eval_impl::<true, CHUNK>(q, upper, phi, offset, out)
}

/// The rows of a chunk are transposed into `pt[j][lane]` so that every multiply-add runs
/// across 32 rows at once: no horizontal reductions, no dependency chain longer than d.
#[inline(always)]
fn eval_impl<const FMA: bool, const CHUNK: usize>(
    q: &OptimisticQ<'_>,
    upper: &[f64],
    phi: &[f64],
    offset: Option<&[f64]>,
    out: &mut [f64],
) {
    let d = q.d;
    let n = phi.len() / d;
    let mut pt = vec![[0.0f64; CHUNK]; d];
    let mut start = 0;
    while start < n {
        let m = CHUNK.min(n - start);
        let block = &phi[start * d..(start + m) * d];
        #[cfg(target_arch = "x86_64")]
        {
            if FMA {
                // SAFETY: FMA = true is only instantiated from the AVX2/AVX-512 entry points,
                // which run only when the CPU reports AVX2.
                unsafe { transpose_avx2::<CHUNK>(block, d, m, &mut pt) };
            } else {
                transpose_scalar::<CHUNK>(block, d, &mut pt);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        transpose_scalar::<CHUNK>(block, d, &mut pt);
        if m < CHUNK {
            for row in pt.iter_mut() {
                row[m..].iter_mut().for_each(|v| *v = 0.0);
            }
        }
        let mut lin = [0.0f64; CHUNK];
        let mut quad = [0.0f64; CHUNK];
        // Rows i and i+1 of the triangle share every load of pt[j] (j > i): two accumulators per
        // loaded vector halves the loads, which bound the loop otherwise.
        let mut k = 0;
        let mut i = 0;
        while i < d {
            let len_a = d - i;
            let row_a = &upper[k..k + len_a];
            let pi = &pt[i];
            if i + 1 < d {
                let row_b = &upper[k + len_a..k + len_a + len_a - 1];
                let pi1 = &pt[i + 1];
                let mut acc_a = [0.0f64; CHUNK];
                let mut acc_b = [0.0f64; CHUNK];
                for l in 0..CHUNK {
                    acc_a[l] = row_a[0] * pi[l];
                }
                for ((ma, mb), pj) in row_a[1..].iter().zip(row_b).zip(&pt[i + 1..]) {
                    for l in 0..CHUNK {
                        acc_a[l] = madd::<FMA>(*ma, pj[l], acc_a[l]);
                        acc_b[l] = madd::<FMA>(*mb, pj[l], acc_b[l]);
                    }
                }
                let (wa, wb) = (q.w[i], q.w[i + 1]);
                for l in 0..CHUNK {
                    quad[l] = madd::<FMA>(pi[l], acc_a[l], quad[l]);
                    quad[l] = madd::<FMA>(pi1[l], acc_b[l], quad[l]);
                    lin[l] = madd::<FMA>(wa, pi[l], lin[l]);
                    lin[l] = madd::<FMA>(wb, pi1[l], lin[l]);
                }
                k += len_a + len_a - 1;
                i += 2;
            } else {
                for l in 0..CHUNK {
                    quad[l] = madd::<FMA>(pi[l], row_a[0] * pi[l], quad[l]);
                    lin[l] = madd::<FMA>(q.w[i], pi[l], lin[l]);
                }
                k += len_a;
                i += 1;
            }
        }
        // Whole-chunk arithmetic first (vectorizes, vsqrtpd), then the m live lanes are stored.
        let mut v = [0.0f64; CHUNK];
        for l in 0..CHUNK {
            v[l] = lin[l] + q.beta * quad[l].max(0.0).sqrt();
        }
        let dst = &mut out[start..start + m];
        match offset {
            Some(o) => {
                for ((d, vl), b) in dst.iter_mut().zip(&v).zip(&o[start..start + m]) {
                    *d = (b + vl).min(q.upper).max(q.lower);
                }
            }
            None => {
                for (d, vl) in dst.iter_mut().zip(&v) {
                    *d = vl.min(q.upper).max(q.lower);
                }
            }
        }
        start += m;
    }
}

/// pt[j][lane] = block[lane, j] for the m rows of a row-major (m, d) block.
#[inline(always)]
fn transpose_scalar<const CHUNK: usize>(block: &[f64], d: usize, pt: &mut [[f64; CHUNK]]) {
    for (lane, p) in block.chunks_exact(d).enumerate() {
        let lane = lane % CHUNK; // lets the compiler drop the bounds check
        for (dst, &v) in pt.iter_mut().zip(p) {
            dst[lane] = v;
        }
    }
}

/// The same transposition by 4 x 4 tiles in AVX2 registers (4 loads, 8 shuffles, 4 stores per
/// 16 values instead of 16 scalar stores); row and column tails go through the scalar path.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn transpose_avx2<const CHUNK: usize>(
    block: &[f64],
    d: usize,
    m: usize,
    pt: &mut [[f64; CHUNK]],
) {
    use std::arch::x86_64::*;
    let rows4 = m / 4 * 4;
    let cols4 = d / 4 * 4;
    let base = block.as_ptr();
    for r in (0..rows4).step_by(4) {
        for c in (0..cols4).step_by(4) {
            // SAFETY: r + 3 < m and c + 3 < d, so every load is inside the (m, d) block.
            let a = _mm256_loadu_pd(base.add(r * d + c));
            let b = _mm256_loadu_pd(base.add((r + 1) * d + c));
            let e = _mm256_loadu_pd(base.add((r + 2) * d + c));
            let f = _mm256_loadu_pd(base.add((r + 3) * d + c));
            let t0 = _mm256_unpacklo_pd(a, b); // a0 b0 a2 b2
            let t1 = _mm256_unpackhi_pd(a, b); // a1 b1 a3 b3
            let t2 = _mm256_unpacklo_pd(e, f); // e0 f0 e2 f2
            let t3 = _mm256_unpackhi_pd(e, f); // e1 f1 e3 f3
            _mm256_storeu_pd(
                pt[c].as_mut_ptr().add(r),
                _mm256_permute2f128_pd(t0, t2, 0x20),
            );
            _mm256_storeu_pd(
                pt[c + 1].as_mut_ptr().add(r),
                _mm256_permute2f128_pd(t1, t3, 0x20),
            );
            _mm256_storeu_pd(
                pt[c + 2].as_mut_ptr().add(r),
                _mm256_permute2f128_pd(t0, t2, 0x31),
            );
            _mm256_storeu_pd(
                pt[c + 3].as_mut_ptr().add(r),
                _mm256_permute2f128_pd(t1, t3, 0x31),
            );
        }
        for c in cols4..d {
            for k in 0..4 {
                pt[c][r + k] = block[(r + k) * d + c];
            }
        }
    }
    for r in rows4..m {
        for c in 0..d {
            pt[c][r] = block[r * d + c];
        }
    }
}

/// Per group of `n_actions` consecutive entries: the max and the argmax.
pub fn group_max(
    q: &[f64],
    n_actions: usize,
    tie: TieBreak,
    vmax: &mut [f64],
    argmax: &mut [usize],
) -> CoreResult<()> {
    if n_actions == 0 {
        return Err(CoreError::Shape("number of actions must be >= 1".into()));
    }
    if !q.len().is_multiple_of(n_actions) {
        return Err(CoreError::Shape(format!(
            "{} Q values do not split into groups of {n_actions} actions",
            q.len()
        )));
    }
    let n = q.len() / n_actions;
    check_len("max buffer", vmax.len(), n)?;
    check_len("argmax buffer", argmax.len(), n)?;
    // every entry equal (and so none NaN): clipped Q values, every action of every state tied
    let first = q.first().copied().unwrap_or(0.0);
    let same = q
        .chunks(16) // branch-free within a chunk (it vectorizes), out at the first unequal one
        .all(|c| c.iter().fold(true, |acc, &x| acc & (x == first)));
    // a branch-free scan first (it vectorizes), the position only for the message
    if !same && q.iter().fold(false, |acc, x| acc | x.is_nan()) {
        let i = q.iter().position(|x| x.is_nan()).unwrap_or(0);
        return Err(CoreError::NonFinite(format!(
            "Q value is NaN at flat index {i}"
        )));
    }
    let a_n = n_actions;
    if let (true, TieBreak::Random(seed)) = (same && (2..=65).contains(&a_n) && !q.is_empty(), tie)
    {
        // every entry ties its group (clipped Q values): the groups' words in blocks of at most
        // 64, each block's read in one copy (`tied_block`)
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        let m = 64 / (a_n - 1);
        for (i, block) in q.chunks(m * a_n).enumerate() {
            let (v, arg) = (&mut vmax[i * m..], &mut argmax[i * m..]);
            let k = block.len() / a_n;
            let drawn = tied_block(block, a_n, &mut r, &mut v[..k], &mut arg[..k]);
            debug_assert!(drawn);
        }
        return Ok(());
    }
    let mut rng = match tie {
        TieBreak::Random(seed) => Some(ChaCha8Rng::seed_from_u64(seed)),
        TieBreak::Lowest => None,
    };
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    {
        if n_actions >= 2 && std::is_x86_feature_detected!("avx2") {
            // SAFETY: only taken when the CPU reports AVX2.
            done = unsafe { group_max_avx2(q, n_actions, rng.as_mut(), vmax, argmax) };
        }
    }
    scan_groups(
        &q[done * a_n..],
        a_n,
        rng.as_mut(),
        &mut vmax[done..],
        &mut argmax[done..],
    );
    Ok(())
}

/// [`group_max`]'s scan of the groups of `q` in order (the tie draws of `rng`, if any, in
/// order): the running best's value is kept in a register (`top`, equal to row[best] under ==:
/// a tie may swap +0 and -0, so the max written is row[best] itself).
fn scan_groups<R: RngCore + ?Sized>(
    q: &[f64],
    n_actions: usize,
    rng: Option<&mut R>,
    vmax: &mut [f64],
    argmax: &mut [usize],
) {
    let groups = q
        .chunks_exact(n_actions)
        .zip(vmax.iter_mut().zip(argmax.iter_mut()));
    match rng {
        None => {
            for (row, (v, arg)) in groups {
                let (mut best, mut top) = (0, row[0]);
                for (a, &x) in row.iter().enumerate().skip(1) {
                    let gt = x > top; // selects, not a branch: x > top is unpredictable
                    best = if gt { a } else { best };
                    top = if gt { x } else { top };
                }
                *v = row[best];
                *arg = best;
            }
        }
        Some(rng) => {
            for (row, (v, arg)) in groups {
                let (mut best, mut top) = (0, row[0]);
                let mut ties = 1u32;
                for (a, &x) in row.iter().enumerate().skip(1) {
                    if x == top {
                        // Reservoir sampling: the k-th tie replaces the choice w.p. 1/k,
                        // so every maximizer ends up chosen w.p. 1/(number of ties). (A
                        // call whose entries all tie goes through `tied_block` instead.)
                        ties += 1;
                        if rand::Rng::random_range(rng, 0..ties) == 0 {
                            (best, top) = (a, x);
                        }
                    } else {
                        // a new maximum or not, without a branch (x > top is unpredictable on
                        // continuous Q values; a tie, x == top, is the rare case above)
                        let gt = x > top;
                        best = if gt { a } else { best };
                        top = if gt { x } else { top };
                        ties = if gt { 1 } else { ties };
                    }
                }
                *v = row[best];
                *arg = best;
            }
        }
    }
}

/// [`scan_groups`] on eight groups at a time in AVX2 lanes (two registers of four groups, the
/// scan's compare-and-select per lane: each group's running best is its scalar scan's); a block
/// where some entry equals its group's running best (a tie: the reservoir's draws) is scanned
/// again by [`scan_groups`], which draws in group order as before (groups without ties draw
/// nothing). No NaN in `q` (checked by the caller). Returns the groups done (a multiple of 8).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn group_max_avx2(
    q: &[f64],
    n_actions: usize,
    mut rng: Option<&mut ChaCha8Rng>,
    vmax: &mut [f64],
    argmax: &mut [usize],
) -> usize {
    use std::arch::x86_64::*;
    let a_n = n_actions;
    let blocks = q.len() / (8 * a_n);
    assert!(vmax.len() >= 8 * blocks && argmax.len() >= 8 * blocks);
    for b in 0..blocks {
        let block = &q[b * 8 * a_n..(b + 1) * 8 * a_n];
        let lanes = |a: usize, k: usize| {
            _mm256_set_pd(
                block[(k + 3) * a_n + a],
                block[(k + 2) * a_n + a],
                block[(k + 1) * a_n + a],
                block[k * a_n + a],
            )
        };
        let (mut top0, mut top1) = (lanes(0, 0), lanes(0, 4));
        let (mut best0, mut best1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        let mut tie = _mm256_setzero_pd();
        for a in 1..a_n {
            let (x0, x1) = (lanes(a, 0), lanes(a, 4));
            let idx = _mm256_set1_pd(a as f64);
            let (gt0, gt1) = (
                _mm256_cmp_pd::<_CMP_GT_OQ>(x0, top0),
                _mm256_cmp_pd::<_CMP_GT_OQ>(x1, top1),
            );
            let eq0 = _mm256_cmp_pd::<_CMP_EQ_OQ>(x0, top0);
            let eq1 = _mm256_cmp_pd::<_CMP_EQ_OQ>(x1, top1);
            tie = _mm256_or_pd(tie, _mm256_or_pd(eq0, eq1));
            top0 = _mm256_blendv_pd(top0, x0, gt0);
            top1 = _mm256_blendv_pd(top1, x1, gt1);
            best0 = _mm256_blendv_pd(best0, idx, gt0);
            best1 = _mm256_blendv_pd(best1, idx, gt1);
        }
        let (v, arg) = (&mut vmax[8 * b..8 * b + 8], &mut argmax[8 * b..8 * b + 8]);
        if rng.is_some() && _mm256_movemask_pd(tie) != 0 {
            scan_groups(block, a_n, rng.as_deref_mut(), v, arg);
            continue;
        }
        let mut idx = [0.0f64; 8];
        _mm256_storeu_pd(idx.as_mut_ptr(), best0);
        _mm256_storeu_pd(idx[4..].as_mut_ptr(), best1);
        for (k, &i) in idx.iter().enumerate() {
            let best = i as usize; // an action index, exact in f64
            arg[k] = best;
            v[k] = block[k * a_n + best];
        }
    }
    8 * blocks
}

#[cfg(test)]
mod tests {
    use super::ties::draw_is_zero;
    use super::*;
    use rand::Rng;

    #[test]
    fn q_matches_direct_formula() {
        let d = 3;
        let phi = [1.0, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.0, 1.0, 0.2, -0.3, 0.4];
        let inv = [2.0, 0.1, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0, 0.5];
        let w = [1.0, -1.0, 2.0];
        let q = OptimisticQ {
            d,
            w: &w,
            inv: &inv,
            beta: 0.7,
            lower: f64::NEG_INFINITY,
            upper: 10.0,
        };
        let mut out = [0.0; 4];
        let r = [0.1, 0.2, 0.3, 0.4];
        q.evaluate(&phi, Some(&r), &mut out).unwrap();
        for i in 0..4 {
            let p = &phi[i * d..(i + 1) * d];
            let mut quad = 0.0;
            for a in 0..d {
                for b in 0..d {
                    quad += p[a] * inv[a * d + b] * p[b];
                }
            }
            let lin: f64 = (0..d).map(|k| p[k] * w[k]).sum();
            let want = (r[i] + lin + 0.7 * quad.sqrt()).min(10.0);
            assert!((out[i] - want).abs() < 1e-14);
        }
    }

    #[test]
    fn indefinite_inverse_uses_full_form_clamped() {
        let inv = [1.0, 0.0, 0.0, -4.0];
        let q = OptimisticQ {
            d: 2,
            w: &[0.0, 0.0],
            inv: &inv,
            beta: 1.0,
            lower: f64::NEG_INFINITY,
            upper: f64::INFINITY,
        };
        let mut out = [0.0; 2];
        q.evaluate(&[2.0, 0.0, 0.0, 1.0], None, &mut out).unwrap();
        assert_eq!(out, [2.0, 0.0]);
    }

    #[test]
    fn ties_uniform_and_lowest() {
        let q = [1.0, 3.0, 3.0, 2.0, 2.0, 2.0];
        let mut v = [0.0; 2];
        let mut a = [0usize; 2];
        group_max(&q, 3, TieBreak::Lowest, &mut v, &mut a).unwrap();
        assert_eq!((v, a), ([3.0, 2.0], [1, 0]));
        let mut counts = [0u32; 3];
        for s in 0..3000 {
            group_max(&q, 3, TieBreak::Random(s), &mut v, &mut a).unwrap();
            counts[a[1]] += 1;
            assert!(a[0] == 1 || a[0] == 2);
        }
        for c in counts {
            assert!((c as f64 - 1000.0).abs() < 120.0, "{counts:?}");
        }
    }

    /// The scan before its selects (a branch on x > top), kept as the oracle of group_max: one
    /// stream for the whole call under Random, as group_max draws.
    fn branchy(q: &[f64], n: usize, tie: TieBreak, vmax: &mut [f64], argmax: &mut [usize]) {
        let mut rng = match tie {
            TieBreak::Random(seed) => Some(ChaCha8Rng::seed_from_u64(seed)),
            TieBreak::Lowest => None,
        };
        for (g, row) in q.chunks_exact(n).enumerate() {
            let (mut best, mut top) = (0, row[0]);
            let mut ties = 1u32;
            for (a, &x) in row.iter().enumerate().skip(1) {
                if x > top {
                    (best, top) = (a, x);
                    ties = 1;
                } else if x == top {
                    if let Some(r) = rng.as_mut() {
                        ties += 1;
                        if r.random_range(0..ties) == 0 {
                            (best, top) = (a, x);
                        }
                    }
                }
            }
            vmax[g] = row[best];
            argmax[g] = best;
        }
    }

    /// group_max against the branchy oracle (ties seeded by `case`): equal to the bit.
    fn assert_like_branchy(q: &[f64], n: usize, case: u64, what: &str) {
        let groups = q.len() / n;
        let (mut v, mut a) = (vec![0.0; groups], vec![0; groups]);
        let (mut v1, mut a1) = (vec![0.0; groups], vec![0; groups]);
        group_max(q, n, TieBreak::Random(case), &mut v, &mut a).unwrap();
        branchy(q, n, TieBreak::Random(case), &mut v1, &mut a1);
        let bits = |x: &[f64]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!((bits(&v), &a), (bits(&v1), &a1), "{what}case {case}");
    }

    #[test]
    fn eight_groups_in_lanes_equal_the_scalar_scan_bit_for_bit() {
        // enough groups for the AVX2 blocks of eight and a tail (1 to 43 groups), 2 to 13
        // actions; continuous Q values, a few levels (ties with the running max and the final
        // one, +0 against -0, clipped bounds) or continuous values with a rare tie, so that some
        // blocks fall back and others not; the dispatched group_max against the scalar scan
        // (group_max's previous body, one stream for the whole call) and the branchy oracle
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let levels = [0.0, -0.0, 1.0, 2.5, 2.5, 8.0];
        for case in 0..600u64 {
            let n = 2 + (case % 12) as usize;
            let groups = 1 + (case % 43) as usize;
            let q: Vec<f64> = (0..n * groups)
                .map(|_| match case % 3 {
                    0 => rng.random::<f64>() * 8.0,
                    1 => levels[rng.random_range(0..levels.len())],
                    _ if rng.random_range(0..40) == 0 => 8.0,
                    _ => rng.random::<f64>() * 8.0,
                })
                .collect();
            for tie in [TieBreak::Lowest, TieBreak::Random(case)] {
                let (mut v, mut a) = (vec![0.0; groups], vec![0; groups]);
                let (mut v0, mut a0) = (vec![0.0; groups], vec![0; groups]);
                let (mut v1, mut a1) = (vec![0.0; groups], vec![0; groups]);
                group_max(&q, n, tie, &mut v, &mut a).unwrap();
                let mut r = match tie {
                    TieBreak::Random(seed) => Some(ChaCha8Rng::seed_from_u64(seed)),
                    TieBreak::Lowest => None,
                };
                scan_groups(&q, n, r.as_mut(), &mut v0, &mut a0);
                branchy(&q, n, tie, &mut v1, &mut a1);
                let bits = |x: &[f64]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!((bits(&v), &a), (bits(&v0), &a0), "case {case}: {q:?}");
                assert_eq!((bits(&v), &a), (bits(&v1), &a1), "case {case}: {q:?}");
            }
        }
    }

    /// A generator of scripted words (then a counter), and how many it gave.
    struct Script(Vec<u32>, usize);

    impl RngCore for Script {
        fn next_u32(&mut self) -> u32 {
            self.1 += 1;
            self.0.get(self.1 - 1).copied().unwrap_or(self.1 as u32)
        }
        fn next_u64(&mut self) -> u64 {
            rand::rand_core::impls::next_u64_via_u32(self)
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            rand::rand_core::impls::fill_bytes_via_next(self, dst)
        }
    }

    #[test]
    fn tie_draw_is_random_range_bit_for_bit() {
        // words at the edges of every n's zero result and of its biased zone (lo > 2^32 - n:
        // a second word, whose high word may carry into the result), and random ones
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for n in 1..40u32 {
            let mut words = vec![0, 1, u32::MAX, u32::MAX - 1];
            let edge = ((1u64 << 32).div_ceil(u64::from(n))) as u32; // the first x with hi = 1
            words.extend([edge.wrapping_sub(1), edge, edge.wrapping_add(1)]);
            for k in 0..u64::from(n) {
                // x with x n = k 2^32 + (2^32 - j), j < n: the biased zone
                for j in 1..u64::from(n) {
                    let t = (k << 32) + (1u64 << 32) - j;
                    if t.is_multiple_of(u64::from(n)) && t / u64::from(n) <= u64::from(u32::MAX) {
                        words.push((t / u64::from(n)) as u32);
                    }
                }
            }
            words.extend((0..200).map(|_| rng.next_u32()));
            for &w in &words {
                for second in [0, 1, u32::MAX, u32::MAX / 3, rng.next_u32()] {
                    let (mut a, mut b) = (Script(vec![w, second], 0), Script(vec![w, second], 0));
                    let want = a.random_range(0..n) == 0;
                    assert_eq!(draw_is_zero(&mut b, n), want, "n {n}, words {w} {second}");
                    assert_eq!(a.1, b.1, "n {n}, words {w} {second}: words drawn");
                }
            }
        }
    }

    #[test]
    fn tied_blocks_draw_the_words_of_the_scan() {
        // blocks of 8 groups whose entries all tie (+0 against -0 too), 2 to 9 actions, beside
        // mixed ones: group_max against the branchy oracle; and the read-ahead against the scan
        // on scripted words in the biased zone of every n (an extra word each), words counted
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        for case in 0..300u64 {
            let n = 2 + (case % 8) as usize;
            let groups = 8 * (1 + (case % 5) as usize) + (case % 3) as usize;
            let q: Vec<f64> = (0..groups)
                .flat_map(|g| {
                    let level = [8.0, 0.0, 2.5][g % 3];
                    let mixed = case % 4 == 3 && g % 7 == 0;
                    (0..n).map(move |a| match (mixed, a % 2) {
                        (true, 1) => level - 1.0,
                        (_, 1) if level == 0.0 => -0.0,
                        _ => level,
                    })
                })
                .collect();
            assert_like_branchy(&q, n, case, "");
        }
        // every entry of the call equal (the whole call through tied_block, in blocks of at most
        // 64 words), +0 against -0, 1 to 70 groups, 2 to 12 actions (66 and 70: the scan)
        for case in 0..200u64 {
            let n = [2, 3, 4, 5, 7, 12, 66, 70][(case % 8) as usize];
            let groups = 1 + (case * 7 % 70) as usize;
            let q: Vec<f64> = (0..n * groups)
                .map(|i| match case % 3 {
                    0 => 8.0,
                    1 => [0.0, -0.0][(i * 7 + (case as usize)) % 5 % 2],
                    _ => 2.5,
                })
                .collect();
            assert_like_branchy(&q, n, case, "all equal, ");
        }
        for n in 2..9usize {
            let q = vec![8.0; 8 * n];
            for zone in 0..8 * (n - 1) {
                // the draw at word `zone` (ties t) falls in t's biased zone when t is no power of 2
                let t = (2 + zone % (n - 1)) as u64;
                let mut words: Vec<u32> = (0..80).map(|_| rng.next_u32()).collect();
                words[zone] = (((1u64 << 32) - 1) / t) as u32;
                let (mut a, mut b) = (Script(words.clone(), 0), Script(words, 0));
                let (mut v0, mut a0) = (vec![0.0; 8], vec![0; 8]);
                let (mut v1, mut a1) = (vec![0.0; 8], vec![0; 8]);
                assert!(tied_block(&q, n, &mut a, &mut v0, &mut a0));
                scan_groups(&q, n, Some(&mut b), &mut v1, &mut a1);
                assert_eq!((&a0, a.1), (&a1, b.1), "n {n}, zone word {zone}");
            }
        }
    }

    #[test]
    fn selects_equal_the_branchy_scan_bit_for_bit() {
        // Q values drawn from a few levels (ties with the running max and with the final one,
        // +0 against -0, clipped bounds) and continuous ones, 1 to 11 actions, both tie rules
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let levels = [0.0, -0.0, 1.0, 2.5, 2.5, 8.0];
        for case in 0..400u64 {
            let n = 1 + (case % 11) as usize;
            let groups = 1 + (case % 7) as usize;
            let q: Vec<f64> = (0..n * groups)
                .map(|_| {
                    if case % 3 == 0 {
                        rng.random::<f64>() * 8.0
                    } else {
                        levels[rng.random_range(0..levels.len())]
                    }
                })
                .collect();
            for tie in [TieBreak::Lowest, TieBreak::Random(case)] {
                let (mut v, mut a) = (vec![0.0; groups], vec![0; groups]);
                let (mut v0, mut a0) = (vec![0.0; groups], vec![0; groups]);
                group_max(&q, n, tie, &mut v, &mut a).unwrap();
                branchy(&q, n, tie, &mut v0, &mut a0);
                let bits = |x: &[f64]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!((bits(&v), &a), (bits(&v0), &a0), "case {case}: {q:?}");
            }
        }
    }
}
