//! The exact model of a finite MDP for `privrl.run`: sampling on the same cumulative rows as
//! `FiniteMDP.sample_episode`, exact policy values by backward induction.

use crate::errors::{check_finite, check_len, CoreError, CoreResult};
use crate::kernels::sparse::SparseRows;

use super::Trajectory;

mod on_demand;
pub use on_demand::ValuesOnDemand;

/// `P` (H, S, A, S), `R` (H, S, A), the cumulative rows of `P` and of the initial distribution
/// (last positive entry forced to 1.0, as `privrl.envs.finite._cdf` builds them), row-major.
#[derive(Debug, Clone)]
pub struct FiniteModel {
    pub h: usize,
    pub s: usize,
    pub a: usize,
    p: Transitions,
    r: Vec<f64>,
    cdf: Vec<f64>,
    init_cdf: Vec<f64>,
}

/// The factors of a linear MDP's kernel, `P_h(s' | s, a) = phi(s, a)^T mu_h(s')`: `phi` (S A, d)
/// and `mu` (H, S, d), row-major.
#[derive(Debug, Clone, Copy)]
pub struct Factors<'a> {
    pub phi: &'a [f64],
    pub mu: &'a [f64],
    pub d: usize,
}

impl FiniteModel {
    /// The model of `P`, `R` and the cumulative rows; with the kernel's `factors` (a linear MDP),
    /// exact values take `E[V(s')] = phi^T (mu_h^T V)` where that is the cheaper sum (2 d < S).
    pub fn new(
        (h, s, a): (usize, usize, usize),
        p: &[f64],
        r: &[f64],
        cdf: &[f64],
        init_cdf: &[f64],
        factors: Option<Factors<'_>>,
    ) -> CoreResult<Self> {
        if h == 0 || s == 0 || a == 0 {
            return Err(CoreError::Shape(format!(
                "empty model (H, S, A) = ({h}, {s}, {a})"
            )));
        }
        check_len("transition kernel", p.len(), h * s * a * s)?;
        check_len("cumulative transition rows", cdf.len(), h * s * a * s)?;
        check_len("rewards", r.len(), h * s * a)?;
        check_len("initial cumulative distribution", init_cdf.len(), s)?;
        for (what, x) in [("P", p), ("R", r), ("cdf", cdf), ("initial cdf", init_cdf)] {
            check_finite(what, x)?;
        }
        Ok(FiniteModel {
            h,
            s,
            a,
            p: Transitions::new(p, (h, s, a), factors)?,
            r: r.to_vec(),
            cdf: cdf.to_vec(),
            init_cdf: init_cdf.to_vec(),
        })
    }

    /// `r_h(s, a)` for all (s, a) of step h, row s * A + a.
    pub fn rewards(&self, h: usize) -> &[f64] {
        let n = self.s * self.a;
        &self.r[h * n..(h + 1) * n]
    }

    /// Roll out the policy `pi` (H x S, action indices) with the H + 1 uniforms `u`: `u[0]` draws
    /// s_0, `u[h + 1]` the transition at step h; `np.searchsorted(row, u, side="right")`.
    pub fn rollout(&self, pi: &[usize], u: &[f64], t: &mut Trajectory) {
        let (s_n, a_n) = (self.s, self.a);
        let mut s = draw(&self.init_cdf, u[0]);
        t.states[0] = s;
        for h in 0..self.h {
            let a = pi[h * s_n + s];
            let row = (h * s_n + s) * a_n + a;
            t.actions[h] = a;
            t.rewards[h] = self.r[row];
            s = draw(&self.cdf[row * s_n..(row + 1) * s_n], u[h + 1]);
            t.states[h + 1] = s;
        }
    }

    /// `V^pi_h(s)` for all h, s into `out` ((H + 1) x S, V_H = 0).
    pub fn values_into(&self, pi: &[usize], out: &mut [f64]) {
        values(&self.p, &self.r, (self.h, self.s, self.a), pi, out);
    }
}

/// P's rows for the values' sums: over their nonzeros when at most a quarter of the entries are
/// nonzero (tabular dynamics: the skipped terms are exact zeros, the sums the same bits), dense
/// otherwise (the sequential reads are faster than the indexed ones there).
#[derive(Debug, Clone)]
enum Transitions {
    Dense(Vec<f64>),
    Sparse(SparseRows),
    /// A linear MDP's factors: `phi` (S A, d), `mu` (H, S, d).
    LowRank {
        phi: Vec<f64>,
        mu: Vec<f64>,
        d: usize,
    },
}

impl Transitions {
    /// The factors where they make the sums cheaper (2 d < S: `mu_h^T V` then one d-dot per
    /// state instead of one S-sum), checked against `P`'s shape; `P`'s rows otherwise.
    fn new(
        p: &[f64],
        (h, s, a): (usize, usize, usize),
        factors: Option<Factors<'_>>,
    ) -> CoreResult<Self> {
        match factors {
            Some(f) if 2 * f.d < s => {
                check_len("features phi", f.phi.len(), s * a * f.d)?;
                check_len("factors mu", f.mu.len(), h * s * f.d)?;
                check_finite("phi", f.phi)?;
                check_finite("mu", f.mu)?;
                Ok(Transitions::LowRank {
                    phi: f.phi.to_vec(),
                    mu: f.mu.to_vec(),
                    d: f.d,
                })
            }
            _ => Ok(Transitions::of(p, s)),
        }
    }

    fn of(p: &[f64], s_n: usize) -> Self {
        let nnz = p.iter().filter(|&&q| q != 0.0).count();
        if 4 * nnz <= p.len() {
            Transitions::Sparse(SparseRows::of(p, s_n))
        } else {
            Transitions::Dense(p.to_vec())
        }
    }

    /// `sum_{s'} P(s' | row) next(s')`, left to right.
    #[inline]
    fn expect(&self, row: usize, next: &[f64]) -> f64 {
        let mut acc = 0.0;
        match self {
            Transitions::Dense(p) => {
                let s_n = next.len();
                for (q, w) in p[row * s_n..(row + 1) * s_n].iter().zip(next) {
                    acc += q * w;
                }
            }
            Transitions::Sparse(p) => {
                let (cols, probs) = p.row(row);
                for (q, &j) in probs.iter().zip(cols) {
                    acc += q * next[j];
                }
            }
            Transitions::LowRank { phi, mu, d } => {
                // one row from the factors (values() sums mu_h^T V once per step instead)
                let (s_n, d) = (next.len(), *d);
                let rows = phi.len() / d;
                let (h, sa) = (row / rows, row % rows);
                let mu_h = &mu[h * s_n * d..(h + 1) * s_n * d];
                for (i, f) in phi[sa * d..(sa + 1) * d].iter().enumerate() {
                    let m: f64 = mu_h.chunks_exact(d).zip(next).map(|(u, x)| u[i] * x).sum();
                    acc += f * m;
                }
            }
        }
        acc
    }
}

/// The first index whose cumulative probability exceeds u (numpy's side="right").
#[inline]
fn draw(row: &[f64], u: f64) -> usize {
    row.partition_point(|&c| c <= u)
}

fn values(
    p: &Transitions,
    r: &[f64],
    (h_n, s_n, a_n): (usize, usize, usize),
    pi: &[usize],
    out: &mut [f64],
) {
    out[h_n * s_n..].iter_mut().for_each(|v| *v = 0.0);
    if let Transitions::LowRank { phi, mu, d } = p {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: only taken when the CPU reports AVX2. Wider registers only: without
                // FMA (not enabled) every product and sum rounds as in the plain build.
                return unsafe { low_rank_values_avx2((phi, mu, *d), r, (h_n, s_n, a_n), pi, out) };
            }
        }
        return low_rank_values((phi, mu, *d), r, (h_n, s_n, a_n), pi, out, false);
    }
    for h in (0..h_n).rev() {
        let (now, next) = out[h * s_n..].split_at_mut(s_n);
        let next = &next[..s_n];
        let row_of = |s: usize| (h * s_n + s) * a_n + pi[h * s_n + s];
        let mut first = 0;
        if let Transitions::Dense(dense) = p {
            // four states at a time: four independent sums in flight, each its row's
            // `Transitions::expect` bit for bit (same terms, same order, from +0)
            while first + 4 <= s_n {
                let rows = [0, 1, 2, 3].map(|k| row_of(first + k));
                let [p0, p1, p2, p3] = rows.map(|row| &dense[row * s_n..(row + 1) * s_n]);
                let mut acc = [0.0f64; 4];
                for ((((x, a), b), c), e) in next.iter().zip(p0).zip(p1).zip(p2).zip(p3) {
                    acc[0] += a * x;
                    acc[1] += b * x;
                    acc[2] += c * x;
                    acc[3] += e * x;
                }
                for k in 0..4 {
                    now[first + k] = r[rows[k]] + acc[k];
                }
                first += 4;
            }
        }
        for (s, v) in now.iter_mut().enumerate().skip(first) {
            let row = row_of(s);
            *v = r[row] + p.expect(row, next);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn low_rank_values_avx2(
    factors: (&[f64], &[f64], usize),
    r: &[f64],
    dims: (usize, usize, usize),
    pi: &[usize],
    out: &mut [f64],
) {
    low_rank_values(factors, r, dims, pi, out, true)
}

/// `m = mu_h^T v` (mu_h row-major S x d): each m_i adds mu_h(s', i) v(s') in s' order from +0,
/// a block of up to 16 entries of m at a time kept in registers (a sum kept in memory waits on a
/// store and a reload at every s').
#[inline(always)]
fn mu_times_v(mu_h: &[f64], v: &[f64], d: usize, m: &mut [f64]) {
    in_blocks!(d, [16, 8, 4, 1], mu_block(mu_h, v, d), m);
}

/// [`mu_times_v`]'s sums for m[kb..kb + W].
#[inline(always)]
fn mu_block<const W: usize>(mu_h: &[f64], v: &[f64], d: usize, kb: usize, m: &mut [f64]) {
    let mut acc = [0.0f64; W];
    for (mu_j, x) in mu_h.chunks_exact(d).zip(v) {
        let u: &[f64; W] = mu_j[kb..kb + W].try_into().unwrap();
        for (a, u) in acc.iter_mut().zip(u) {
            *a += u * x;
        }
    }
    m[kb..kb + W].copy_from_slice(&acc);
}

/// [`values`] of a linear MDP from its factors: `E[V_{h+1}(s') | s, a] = phi(s, a)^T m_h` with
/// `m_h = sum_s' mu_h(s') V_{h+1}(s')`, d S + S d products per step instead of S^2.
fn low_rank_values(
    (phi, mu, d): (&[f64], &[f64], usize),
    r: &[f64],
    (h_n, s_n, a_n): (usize, usize, usize),
    pi: &[usize],
    out: &mut [f64],
    wide: bool,
) {
    let mut m = vec![0.0; d];
    for h in (0..h_n).rev() {
        let (now, next) = out[h * s_n..].split_at_mut(s_n);
        mu_times_v(&mu[h * s_n * d..(h + 1) * s_n * d], &next[..s_n], d, &mut m);
        // eight states at a time: eight independent sums in flight (one alone waits on each
        // addition's latency), each the same terms in the same order from Iterator::sum's
        // neutral element as the one-state fold below, bit for bit
        let zero: f64 = std::iter::empty::<f64>().sum();
        let sa_of = |s: usize| s * a_n + pi[h * s_n + s];
        let mut first = 0;
        #[cfg(target_arch = "x86_64")]
        while wide && first + 16 <= s_n {
            // sixteen states in AVX2 lanes, four per register (only reached from
            // low_rank_values_avx2): the same products and sums per lane as the loop below
            let sa: [usize; 16] = std::array::from_fn(|k| sa_of(first + k));
            let f: [&[f64]; 16] = sa.map(|x| &phi[x * d..(x + 1) * d]);
            // SAFETY: wide is only true under low_rank_values_avx2 (the CPU reports AVX2)
            let acc = unsafe { sixteen_dots_avx2(f, &m, zero) };
            for k in 0..16 {
                now[first + k] = r[h * s_n * a_n + sa[k]] + acc[k];
            }
            first += 16;
        }
        while first + 8 <= s_n {
            let sa: [usize; 8] = std::array::from_fn(|k| sa_of(first + k));
            let f: [&[f64]; 8] = sa.map(|x| &phi[x * d..(x + 1) * d]);
            let mut acc = [zero; 8];
            for (j, mj) in m.iter().enumerate() {
                for (a, fk) in acc.iter_mut().zip(&f) {
                    *a += fk[j] * mj;
                }
            }
            for k in 0..8 {
                now[first + k] = r[h * s_n * a_n + sa[k]] + acc[k];
            }
            first += 8;
        }
        for (s, v) in now.iter_mut().enumerate().skip(first) {
            let sa = sa_of(s);
            let f = &phi[sa * d..(sa + 1) * d];
            *v = r[h * s_n * a_n + sa] + f.iter().zip(&m).map(|(a, b)| a * b).sum::<f64>();
        }
    }
}

/// `sum_j f_k[j] m[j]` for the sixteen rows f_k (each of length m.len()), in j order from
/// `zero`: lane k of register g holds row 4 g + k; two columns of four rows come from two
/// 128-bit loads per pair of rows and one unpack each (no gathers). Plain multiplies and adds
/// (no FMA): each lane rounds as the scalar loop.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sixteen_dots_avx2(f: [&[f64]; 16], m: &[f64], zero: f64) -> [f64; 16] {
    use std::arch::x86_64::*;
    let d = m.len();
    for fk in &f {
        assert!(fk.len() >= d);
    }
    let mut acc = [_mm256_set1_pd(zero); 4];
    let mut j = 0;
    while j + 2 <= d {
        let (m0, m1) = (_mm256_set1_pd(m[j]), _mm256_set1_pd(m[j + 1]));
        for (g, a) in acc.iter_mut().enumerate() {
            let row = |k: usize| f[4 * g + k].as_ptr().add(j);
            // [f0[j], f0[j+1], f2[j], f2[j+1]] and [f1[j], f1[j+1], f3[j], f3[j+1]]
            let t0 = _mm256_insertf128_pd::<1>(
                _mm256_castpd128_pd256(_mm_loadu_pd(row(0))),
                _mm_loadu_pd(row(2)),
            );
            let t1 = _mm256_insertf128_pd::<1>(
                _mm256_castpd128_pd256(_mm_loadu_pd(row(1))),
                _mm_loadu_pd(row(3)),
            );
            let c0 = _mm256_unpacklo_pd(t0, t1); // [f0[j], f1[j], f2[j], f3[j]]
            let c1 = _mm256_unpackhi_pd(t0, t1); // the same at j + 1
            *a = _mm256_add_pd(*a, _mm256_mul_pd(c0, m0));
            *a = _mm256_add_pd(*a, _mm256_mul_pd(c1, m1));
        }
        j += 2;
    }
    if j < d {
        let mj = _mm256_set1_pd(m[j]);
        for (g, a) in acc.iter_mut().enumerate() {
            let c = _mm256_set_pd(
                f[4 * g + 3][j],
                f[4 * g + 2][j],
                f[4 * g + 1][j],
                f[4 * g][j],
            );
            *a = _mm256_add_pd(*a, _mm256_mul_pd(c, mj));
        }
    }
    let mut out = [0.0; 16];
    for (g, a) in acc.iter().enumerate() {
        _mm256_storeu_pd(out[4 * g..].as_mut_ptr(), *a);
    }
    out
}

/// `FiniteMDP.policy_values`: V^pi (H + 1, S) by backward induction on P[h, s, pi_h(s), :],
/// the sums over s' left to right (over P's nonzeros). `pi` holds action indices (checked here).
pub fn policy_values(
    p: &[f64],
    r: &[f64],
    dims: (usize, usize, usize),
    pi: &[i64],
    factors: Option<Factors<'_>>,
) -> CoreResult<Vec<f64>> {
    let (h, s, a) = dims;
    check_len("transition kernel", p.len(), h * s * a * s)?;
    check_len("rewards", r.len(), h * s * a)?;
    check_len("policy", pi.len(), h * s)?;
    let pi: Vec<usize> = pi
        .iter()
        .map(|&x| {
            usize::try_from(x)
                .ok()
                .filter(|&x| x < a)
                .ok_or_else(|| CoreError::Shape(format!("policy action {x} outside 0..{a}")))
        })
        .collect::<CoreResult<_>>()?;
    let mut out = vec![0.0; (h + 1) * s];
    values(&Transitions::new(p, dims, factors)?, r, dims, &pi, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_state_chain() {
        // H = 1, S = 2, A = 1: from either state go to state 1 w.p. 0.25.
        let p = [0.75, 0.25, 0.75, 0.25];
        let cdf = [0.75, 1.0, 0.75, 1.0];
        let m = FiniteModel::new((1, 2, 1), &p, &[0.5, 1.0], &cdf, &[0.5, 1.0], None).unwrap();
        let mut t = Trajectory::new(1);
        m.rollout(&[0, 0], &[0.5, 0.75], &mut t);
        assert_eq!(t.states, vec![1, 1]); // u = 0.5 is not < 0.5: the second state
        assert_eq!(t.rewards, vec![1.0]);
        m.rollout(&[0, 0], &[0.49, 0.1], &mut t);
        assert_eq!(t.states, vec![0, 0]);
        let v = policy_values(&p, &[0.5, 1.0], (1, 2, 1), &[0, 0], None).unwrap();
        assert_eq!(v, vec![0.5, 1.0, 0.0, 0.0]);
        assert!(policy_values(&p, &[0.5, 1.0], (1, 2, 1), &[0, 1], None).is_err());
    }

    #[test]
    fn values_on_demand_are_the_full_values() {
        // sparse rows: deterministic moves and a few two-way splits, a zero-reward row; random
        // policies, starts asked in a random order (repeats: the values kept)
        let (h_n, s_n, a_n) = (5, 12, 3);
        let mut p = vec![0.0; h_n * s_n * a_n * s_n];
        for (row, r) in p.chunks_exact_mut(s_n).enumerate() {
            let (j, k) = ((row * 7 + 3) % s_n, (row * 5 + 1) % s_n);
            if row % 4 == 0 && j != k {
                (r[j], r[k]) = (0.3, 0.7);
            } else {
                r[j] = 1.0;
            }
        }
        let cdf: Vec<f64> = p
            .chunks_exact(s_n)
            .flat_map(|r| r.iter().scan(0.0, |c, &q| Some(*c + q)).collect::<Vec<_>>())
            .collect();
        let rew: Vec<f64> = (0..h_n * s_n * a_n)
            .map(|i| (i % 7) as f64 / 6.0 + 0.1)
            .collect();
        let init: Vec<f64> = (1..=s_n).map(|i| i as f64 / s_n as f64).collect();
        let m = FiniteModel::new((h_n, s_n, a_n), &p, &rew, &cdf, &init, None).unwrap();
        assert!(m.sparse_rows());
        let mut c = ValuesOnDemand::default();
        let mut full = vec![0.0; (h_n + 1) * s_n];
        for seed in 0..20usize {
            let pi: Vec<usize> = (0..h_n * s_n)
                .map(|i| (i * 31 + seed * 17) % 7 % a_n)
                .collect();
            m.values_into(&pi, &mut full);
            c.reset(&m);
            for k in 0..3 * s_n {
                let s0 = (k * 5 + seed) % s_n;
                let v = m.value_on_demand(&pi, s0, &mut c);
                assert_eq!(v.to_bits(), full[s0].to_bits(), "policy {seed}, start {s0}");
            }
        }
    }

    #[test]
    fn low_rank_values_are_the_dense_values() {
        // H = 3, S = 9, A = 2, d = 3: P = phi mu_h^T with rows of phi and columns of mu on simplices
        let (h_n, s_n, a_n, d) = (3, 9, 2, 3);
        let phi: Vec<f64> = (0..s_n * a_n)
            .flat_map(|i| {
                let w = [
                    1.0 + (i % 3) as f64,
                    1.0 + (i % 5) as f64,
                    0.5 + (i % 2) as f64,
                ];
                let t: f64 = w.iter().sum();
                w.map(|x| x / t)
            })
            .collect();
        let mut mu = vec![0.0; h_n * s_n * d];
        for h in 0..h_n {
            for i in 0..d {
                let col: Vec<f64> = (0..s_n)
                    .map(|j| 1.0 + ((h * 7 + i * 3 + j * 5) % 11) as f64)
                    .collect();
                let t: f64 = col.iter().sum();
                for j in 0..s_n {
                    mu[(h * s_n + j) * d + i] = col[j] / t;
                }
            }
        }
        let mut p = vec![0.0; h_n * s_n * a_n * s_n];
        for h in 0..h_n {
            for sa in 0..s_n * a_n {
                for j in 0..s_n {
                    p[(h * s_n * a_n + sa) * s_n + j] = (0..d)
                        .map(|i| phi[sa * d + i] * mu[(h * s_n + j) * d + i])
                        .sum();
                }
            }
        }
        let r: Vec<f64> = (0..h_n * s_n * a_n)
            .map(|i| ((i * 13) % 17) as f64 / 17.0)
            .collect();
        let pi: Vec<i64> = (0..h_n * s_n).map(|i| ((i * 5) % a_n) as i64).collect();
        let factors = Factors {
            phi: &phi,
            mu: &mu,
            d,
        };
        let low = policy_values(&p, &r, (h_n, s_n, a_n), &pi, Some(factors)).unwrap();
        let dense = policy_values(&p, &r, (h_n, s_n, a_n), &pi, None).unwrap();
        for (a, b) in low.iter().zip(&dense) {
            assert!((a - b).abs() <= 1e-14 * (1.0 + b.abs()), "{a} vs {b}");
        }
        assert!(matches!(
            Transitions::new(&p, (h_n, s_n, a_n), Some(factors)).unwrap(),
            Transitions::LowRank { .. }
        ));
        let (low_t, dense_t) = (
            Transitions::new(&p, (h_n, s_n, a_n), Some(factors)).unwrap(),
            Transitions::new(&p, (h_n, s_n, a_n), None).unwrap(),
        );
        let next: Vec<f64> = (0..s_n).map(|j| j as f64 / 3.0).collect();
        for row in [0, 7, h_n * s_n * a_n - 1] {
            let (a, b) = (low_t.expect(row, &next), dense_t.expect(row, &next));
            assert!(
                (a - b).abs() <= 1e-14 * (1.0 + b.abs()),
                "row {row}: {a} vs {b}"
            );
        }
        // 2 d >= S: the rows of P
        let big = (h_n, 6, a_n); // S = 6 = 2 d
        let p6 = vec![1.0 / 6.0; h_n * 6 * a_n * 6];
        let f6 = Factors {
            phi: &phi[..6 * a_n * d],
            mu: &mu[..h_n * 6 * d],
            d,
        };
        assert!(matches!(
            Transitions::new(&p6, big, Some(f6)).unwrap(),
            Transitions::Dense(_)
        ));
    }

    #[test]
    fn low_rank_values_eight_states_at_a_time_are_the_fold_bit_for_bit() {
        // S = 19 (two groups of eight and a tail of three), d = 5, magnitudes that show the
        // order of the additions; the oracle is the one-state fold of every state
        let (h_n, s_n, a_n, d) = (4, 19, 3, 5);
        let val = |i: usize| ((i * 37 % 101) as f64 - 50.5) * 10f64.powi((i % 5) as i32 * 3 - 6);
        let phi: Vec<f64> = (0..s_n * a_n * d).map(val).collect();
        let mu: Vec<f64> = (0..h_n * s_n * d).map(|i| val(i + 7)).collect();
        let r: Vec<f64> = (0..h_n * s_n * a_n).map(|i| val(i + 3)).collect();
        let pi: Vec<usize> = (0..h_n * s_n).map(|i| (i * 5) % a_n).collect();
        let mut out = vec![f64::NAN; (h_n + 1) * s_n];
        out[h_n * s_n..].iter_mut().for_each(|v| *v = 0.0);
        low_rank_values((&phi, &mu, d), &r, (h_n, s_n, a_n), &pi, &mut out, false);
        let mut want = vec![0.0; (h_n + 1) * s_n];
        for h in (0..h_n).rev() {
            let mut m = vec![0.0; d];
            for j in 0..s_n {
                for i in 0..d {
                    m[i] += mu[(h * s_n + j) * d + i] * want[(h + 1) * s_n + j];
                }
            }
            for st in 0..s_n {
                let sa = st * a_n + pi[h * s_n + st];
                let f = &phi[sa * d..(sa + 1) * d];
                want[h * s_n + st] =
                    r[h * s_n * a_n + sa] + f.iter().zip(&m).map(|(a, b)| a * b).sum::<f64>();
            }
        }
        for (i, (a, b)) in out.iter().zip(&want).enumerate() {
            assert_eq!(a.to_bits(), b.to_bits(), "entry {i}: {a} vs {b}");
        }
    }

    /// low_rank_values before m was summed in registers and sixteen states went in AVX2 lanes:
    /// the test oracle.
    fn low_rank_values_before(
        (phi, mu, d): (&[f64], &[f64], usize),
        r: &[f64],
        (h_n, s_n, a_n): (usize, usize, usize),
        pi: &[usize],
        out: &mut [f64],
    ) {
        let mut m = vec![0.0; d];
        for h in (0..h_n).rev() {
            let (now, next) = out[h * s_n..].split_at_mut(s_n);
            m.iter_mut().for_each(|x| *x = 0.0);
            for (mu_j, x) in mu[h * s_n * d..(h + 1) * s_n * d]
                .chunks_exact(d)
                .zip(&next[..s_n])
            {
                m.iter_mut().zip(mu_j).for_each(|(acc, u)| *acc += u * x);
            }
            let zero: f64 = std::iter::empty::<f64>().sum();
            let sa_of = |s: usize| s * a_n + pi[h * s_n + s];
            let mut first = 0;
            while first + 8 <= s_n {
                let sa: [usize; 8] = std::array::from_fn(|k| sa_of(first + k));
                let f: [&[f64]; 8] = sa.map(|x| &phi[x * d..(x + 1) * d]);
                let mut acc = [zero; 8];
                for (j, mj) in m.iter().enumerate() {
                    for (a, fk) in acc.iter_mut().zip(&f) {
                        *a += fk[j] * mj;
                    }
                }
                for k in 0..8 {
                    now[first + k] = r[h * s_n * a_n + sa[k]] + acc[k];
                }
                first += 8;
            }
            for (s, v) in now.iter_mut().enumerate().skip(first) {
                let sa = sa_of(s);
                let f = &phi[sa * d..(sa + 1) * d];
                *v = r[h * s_n * a_n + sa] + f.iter().zip(&m).map(|(a, b)| a * b).sum::<f64>();
            }
        }
    }

    #[test]
    fn low_rank_values_equal_the_previous_kernel_bit_for_bit() {
        // random factors (signs and magnitudes that show the order of the additions, exact
        // zeros), S across the sixteen / eight / one state paths, d odd and even, across the
        // register blocks of m (16, 8, 4, 1); the plain and the AVX2 paths against the oracle
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let val = |rng: &mut rand_chacha::ChaCha8Rng| {
            let u: f64 = rng.random::<f64>() - 0.5;
            let e: i32 = rng.random_range(-8..8);
            if rng.random_range(0..10) == 0 {
                0.0
            } else {
                u * 10f64.powi(e)
            }
        };
        for (s_n, d) in [
            (1, 1),
            (7, 3),
            (16, 16),
            (17, 5),
            (33, 17),
            (35, 2),
            (49, 31),
            (100, 16),
        ] {
            let (h_n, a_n) = (3, 3);
            let phi: Vec<f64> = (0..s_n * a_n * d).map(|_| val(&mut rng)).collect();
            let mu: Vec<f64> = (0..h_n * s_n * d).map(|_| val(&mut rng)).collect();
            let r: Vec<f64> = (0..h_n * s_n * a_n).map(|_| val(&mut rng)).collect();
            let pi: Vec<usize> = (0..h_n * s_n).map(|_| rng.random_range(0..a_n)).collect();
            let dims = (h_n, s_n, a_n);
            let fresh = || {
                let mut o = vec![f64::NAN; (h_n + 1) * s_n];
                o[h_n * s_n..].iter_mut().for_each(|v| *v = 0.0);
                o
            };
            let mut want = fresh();
            low_rank_values_before((&phi, &mu, d), &r, dims, &pi, &mut want);
            let mut plain = fresh();
            low_rank_values((&phi, &mu, d), &r, dims, &pi, &mut plain, false);
            let mut dispatched = fresh();
            let t = Transitions::LowRank {
                phi: phi.clone(),
                mu: mu.clone(),
                d,
            };
            values(&t, &r, dims, &pi, &mut dispatched);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&plain), bits(&want), "plain, S {s_n}, d {d}");
            assert_eq!(bits(&dispatched), bits(&want), "dispatched, S {s_n}, d {d}");
        }
    }

    #[test]
    fn sparse_values_equal_the_dense_sums_bit_for_bit() {
        // H = 3, S = 5, A = 2, rows with exact zeros (and a -0) between irregular probabilities
        let (h_n, s_n, a_n) = (3, 5, 2);
        let mut p = vec![0.0; h_n * s_n * a_n * s_n];
        for (i, row) in p.chunks_exact_mut(s_n).enumerate() {
            let w: Vec<f64> = (0..s_n)
                .map(|j| {
                    if (i + 2 * j) % 3 == 0 {
                        0.0
                    } else {
                        1.0 / (1.0 + ((i * 7 + j * 3) % 11) as f64)
                    }
                })
                .collect();
            let total: f64 = w.iter().sum();
            row.iter_mut()
                .zip(&w)
                .for_each(|(q, x)| *q = if *x == 0.0 { -0.0 } else { x / total });
        }
        let r: Vec<f64> = (0..h_n * s_n * a_n)
            .map(|i| ((i * 13) % 17) as f64 / 17.0)
            .collect();
        let pi: Vec<usize> = (0..h_n * s_n).map(|i| (i * 5) % a_n).collect();
        let mut sparse = vec![0.0; (h_n + 1) * s_n];
        let rows = Transitions::Sparse(SparseRows::of(&p, s_n));
        values(&rows, &r, (h_n, s_n, a_n), &pi, &mut sparse);
        let mut dense_path = vec![0.0; (h_n + 1) * s_n];
        let full = Transitions::Dense(p.clone());
        values(&full, &r, (h_n, s_n, a_n), &pi, &mut dense_path);
        let mut dense = vec![0.0; (h_n + 1) * s_n];
        for h in (0..h_n).rev() {
            for s in 0..s_n {
                let row = (h * s_n + s) * a_n + pi[h * s_n + s];
                let mut acc = 0.0;
                for j in 0..s_n {
                    acc += p[row * s_n + j] * dense[(h + 1) * s_n + j];
                }
                dense[h * s_n + s] = r[row] + acc;
            }
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&sparse), bits(&dense));
        assert_eq!(bits(&dense_path), bits(&dense));
        assert!(matches!(Transitions::of(&p, s_n), Transitions::Dense(_))); // 2/3 nonzero
    }
}
