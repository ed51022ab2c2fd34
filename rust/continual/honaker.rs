//! Honaker's variance-reduced tree, online (Honaker 2015): every dyadic node noised, each prefix
//! released as the minimum-variance unbiased combination of the nodes completed by then.
//!
//! # Exact sensitivity multiplier
//!
//! Every dyadic node (level l, index j, leaves `[(j-1) 2^l + 1, j 2^l]`) completed by T carries
//! `y = data + z` with i.i.d. node noise z. The subtree estimates follow Honaker's bottom-up pass
//! `E_l = w_l y_root + (1 - w_l)(E_left + E_right)`, `E_0 = y_leaf`, `w_l` =
//! [`honaker_level_variance`]. The release at t is the sum of the estimates of the complete
//! subtrees of the dyadic decomposition of `[1, t]`, and a level-l subtree ends such a
//! decomposition only if j is odd: the release sequence is in bijection (a fixed invertible
//! linear map) with the estimates of the *released subtrees*, those with j odd and `j 2^l <= T`.
//!
//! Unrolling a released subtree's estimate along its right spine (the root, its right child, its
//! right-right child, ..., the rightmost leaf; spine node k at level `l - k`) leaves the left
//! children's estimates, which are earlier releases, and the innovation
//! `I = sum_{k<=l} a_k y_k`, `a_k = pi_k w_{l-k}` with `pi_0 = 1`, `pi_{k+1} = pi_k (1 - w_{l-k})`
//! (`w_0 = 1`, so `a_l = pi_l`). No earlier release touches a spine node, and the spines of
//! distinct released subtrees are disjoint, so the innovations are independent with noise
//! variance `v_l = sum_k a_k^2` node variances: the mechanism is the Gaussian mechanism on the
//! whitened innovations `I / sqrt(v_l)`. A leaf i of the subtree lies in spine node k iff it is
//! among its last `2^(l-k)` leaves, i.e. `k <= l - bit_length(r)` with `r` = (last leaf) - i, so
//! it shifts `I / sqrt(v_l)` by `c_l(r) = sum_{k <= l - bit_length(r)} a_k / sqrt(v_l)` per unit
//! of data. Hence the per-leaf multiplier `m(i)^2 = sum over released subtrees containing i of
//! c_l(r)^2` (one candidate per level: j = ceil(i / 2^l)), and the mechanism's L2 multiplier is
//! `max_i m(i)`: sqrt(11.932) at T = 10^4 (leaf 5461) against the post-processing bound
//! `sqrt(bit_length(T)) = sqrt(14)` of all dyadic nodes containing a leaf.
//! [`honaker_multiplier_sq`] finds the maximum exactly by a dynamic programme over the bits of
//! i - 1 (O(log^2 T) for any T < 2^63); tests check it against brute force over the leaves, and
//! tests/test_continual.py against the dense projection `Delta^T M^T (M M^T)^+ M Delta`.

use crate::continual::{
    bit_length, capacity_error, check_common, check_leaf_index, fits_or_refuse, MechanismKind,
    PrefixMechanism,
};
use crate::errors::{CoreError, CoreResult};
use crate::noise::{ExactSum, Innovations, NodeNoise, NodeShape};

/// Inverse-variance weight of a level-l node against its children's combined estimate, and the
/// variance (in node variances) of the bottom-up estimate of a level-l subtree:
/// `V_0 = 1, V_l = 1 / (1 + 1 / (2 V_{l-1})) = 2^l / (2^(l+1) - 1)`, `w_l = V_l`.
pub fn honaker_level_variance(level: u32) -> f64 {
    1.0 / (2.0 - 0.5f64.powi(level as i32))
}

/// Variance factor of Honaker's online estimate at step t.
pub fn honaker_variance_factor(t: u64) -> f64 {
    (0..64)
        .filter(|l| (t >> l) & 1 == 1)
        .map(honaker_level_variance)
        // from +0 (an empty f64 sum is -0.0: the variance before any step printed as -0.0)
        .fold(0.0, |acc, v| acc + v)
}

/// Highest level a released subtree can have: `2^l <= T < 2^63`.
const MAX_LEVEL: u32 = 62;

/// Whitened innovation coefficients of the released subtrees, per level (module docs):
/// `coef[l][b] = c_l(r)` for a leaf with `bit_length(r) = b`, `0 <= b <= l`.
#[derive(Debug, Clone)]
pub(crate) struct InnovationTable {
    coef: Vec<Vec<f64>>,
}

impl InnovationTable {
    /// The table for levels `0..=max_level` (at most `MAX_LEVEL`).
    pub(crate) fn new(max_level: u32) -> Self {
        let coef = (0..=max_level.min(MAX_LEVEL))
            .map(|l| {
                // a_k = pi_k w_{l-k}, k = 0..=l, along the right spine.
                let mut a = Vec::with_capacity(l as usize + 1);
                let mut pi = 1.0;
                for k in 0..=l {
                    let w = honaker_level_variance(l - k);
                    a.push(pi * w);
                    pi *= 1.0 - w;
                }
                let sd = a.iter().map(|x| x * x).sum::<f64>().sqrt();
                // c_l(r) sums a_0..=a_{l-b}: b = 0 (the last leaf) takes the whole spine.
                let mut cum = Vec::with_capacity(a.len());
                let mut acc = 0.0;
                for x in &a {
                    acc += x;
                    cum.push(acc / sd);
                }
                cum.reverse();
                cum
            })
            .collect();
        InnovationTable { coef }
    }

    /// `c_l(r)` for a leaf at distance `r < 2^l` before the last leaf of a level-l subtree.
    pub(crate) fn coefficient(&self, level: u32, r: u64) -> f64 {
        self.coef[level as usize][bit_length(r) as usize]
    }
}

/// Whitened innovation coefficients of leaf `leaf` (1-based) over a T-leaf Honaker tree: one per
/// released subtree containing the leaf, lowest level first. Their squares sum to `m(leaf)^2`.
/// Needs `1 <= leaf <= capacity` and a table up to level `bit_length(capacity) - 1`.
pub(crate) fn honaker_leaf_coefficients(
    table: &InnovationTable,
    leaf: u64,
    capacity: u64,
) -> Vec<f64> {
    let mut out = Vec::new();
    let x = leaf - 1;
    for l in 0..=MAX_LEVEL.min(bit_length(capacity)) {
        // Released iff j = (x >> l) + 1 is odd and j 2^l <= T, i.e. (x >> l) < (T >> l).
        if (x >> l) & 1 == 0 && (x >> l) < (capacity >> l) {
            let r = !x & ((1u64 << l) - 1);
            out.push(table.coefficient(l, r));
        }
    }
    out
}

/// `max_i m(i)^2` over the leaves of a T-leaf Honaker tree and the smallest leaf attaining it,
/// exactly, by a dynamic programme over the bits of `x = i - 1` from the top (module docs).
///
/// The level-l term is present iff bit l of x is 0 and `(x >> l) < (T >> l)`, and its value
/// depends only on the highest zero bit of x below l (`bit_length(r) = that position + 1`, 0 if
/// there is none). Scanning the bits downwards with the state (x's prefix already below T's,
/// pending level whose term waits for the next zero bit), every zero bit settles the pending term
/// and becomes pending itself if its level is released. States: 2 x 64, bits: 63, so O(log^2 T)
/// work with the per-level tables.
pub fn honaker_multiplier_sq(capacity: u64) -> (f64, u64) {
    if capacity == 0 {
        return (0.0, 0);
    }
    let top = bit_length(capacity);
    let table = InnovationTable::new(top - 1);
    // The pending level's term once the next zero bit below it is at position p (None: x has no
    // zero below it, r = 0); pending slot 0 = none, slot L + 1 = level L.
    let settle = |pend: usize, zero_at: Option<u32>| match pend {
        0 => 0.0,
        _ => {
            let c = table.coef[pend - 1][zero_at.map_or(0, |p| p as usize + 1)];
            c * c
        }
    };
    // best[less][pending slot] = (accumulated sum, smallest prefix of x reaching the state):
    // prefixes reaching one state have the same future, so the best one suffices.
    let slots = top as usize + 1;
    let empty = || [vec![None; slots], vec![None; slots]];
    let mut best: [Vec<Option<(f64, u64)>>; 2] = empty();
    best[0][0] = Some((0.0, 0));
    for p in (0..top).rev() {
        let tb = (capacity >> p) & 1;
        let mut next = empty();
        for (less, row) in best.iter().enumerate() {
            for (pend, cell) in row.iter().enumerate() {
                let Some((acc, prefix)) = *cell else {
                    continue;
                };
                // Bit 0 first: on equal sums the smaller x is kept. A prefix equal to T's so far
                // cannot take a bit above T's.
                for bit in 0..=(if less == 1 { 1 } else { tb }) {
                    let now_less = usize::from(less == 1 || bit < tb);
                    let (val, new_pend) = if bit == 1 {
                        (acc, pend)
                    } else {
                        // A zero at p settles the pending level, and level p is released iff
                        // (x >> p) < (T >> p).
                        let new_pend = if now_less == 1 { p as usize + 1 } else { 0 };
                        (acc + settle(pend, Some(p)), new_pend)
                    };
                    let slot = &mut next[now_less][new_pend];
                    if slot.is_none_or(|(v, _)| val > v) {
                        *slot = Some((val, (prefix << 1) | bit));
                    }
                }
            }
        }
        best = next;
    }
    // Only x < T is a leaf; a level still pending ends at its subtree's last leaf (r = 0).
    let mut out = (f64::NEG_INFINITY, 0);
    for (pend, cell) in best[1].iter().enumerate() {
        if let Some((acc, x)) = *cell {
            let val = acc + settle(pend, None);
            if val > out.0 || (val == out.0 && x + 1 < out.1) {
                out = (val, x + 1);
            }
        }
    }
    out
}

/// Honaker's variance-reduced tree (online: each prefix uses the nodes completed by then).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Honaker {
    shape: NodeShape,
    capacity: u64,
    t: u64,
    innov: Innovations,
    exact: ExactSum,
    /// Levels of the complete subtrees of [1, t] (dyadic decomposition), oldest first.
    levels: Vec<u32>,
    /// Noise of the bottom-up estimate of each of those subtrees (packed).
    est: Vec<Vec<f64>>,
    /// Sum of `est` (packed): the noise of the current release.
    total: Vec<f64>,
    spare: Vec<Vec<f64>>,
    node: Vec<f64>,
    /// `(max_i m(i)^2, smallest maximizing leaf)`, computed once.
    multiplier_sq: (f64, u64),
}

impl Honaker {
    pub fn new(
        shape: NodeShape,
        noise: NodeNoise,
        capacity: u64,
        seed: [u8; 32],
    ) -> CoreResult<Self> {
        check_common(shape, noise, capacity)?;
        if capacity >> (MAX_LEVEL + 1) != 0 {
            // T < 2^63 (MAX_LEVEL): T >= 2^63 indexed past the innovation table (a panic)
            return Err(CoreError::InvalidParameter(format!(
                "honaker capacity must be at most 2^63 - 1, got {capacity}"
            )));
        }
        let innov = Innovations::new(shape, noise, seed);
        let p = innov.packing.packed;
        Ok(Honaker {
            shape,
            capacity,
            t: 0,
            innov,
            exact: ExactSum::for_shape(noise, shape)?,
            levels: Vec::with_capacity(65),
            est: Vec::with_capacity(65),
            total: vec![0.0; p],
            spare: Vec::new(),
            node: vec![0.0; p],
            multiplier_sq: honaker_multiplier_sq(capacity),
        })
    }

    /// A restored mechanism whose buffers fit its parameters (see `TreeAggregator::checked`).
    pub(crate) fn checked(self) -> CoreResult<Self> {
        let p = self.innov.packing.packed;
        let ok = self.innov.fits(self.shape)
            && self.t <= self.capacity
            && self.exact.fits(self.shape.len())
            && self.levels.len() == self.est.len()
            && self.levels.len() <= 65
            && self.total.len() == p
            && self.node.len() == p
            && self.est.iter().chain(&self.spare).all(|v| v.len() == p);
        fits_or_refuse(self, ok, "honaker")
    }

    /// Stream order of the draws: at step t the leaf node first, then each node completed by
    /// the leaf, bottom-up (the numpy reference follows it).
    fn advance(&mut self) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(capacity_error(self.capacity));
        }
        self.t += 1;
        let p = self.innov.packing.packed;
        let mut cur = self.spare.pop().unwrap_or_else(|| vec![0.0; p]);
        self.innov.draw(&mut cur);
        let mut level = 0u32;
        while self.levels.last() == Some(&level) {
            self.levels.pop();
            let left = self.est.pop().unwrap_or_else(|| vec![0.0; p]);
            level += 1;
            self.innov.draw(&mut self.node);
            let w = honaker_level_variance(level);
            for ((c, l), z) in cur.iter_mut().zip(&left).zip(&self.node) {
                *c = w * *z + (1.0 - w) * (*l + *c);
            }
            self.spare.push(left);
        }
        self.levels.push(level);
        self.est.push(cur);
        self.total.iter_mut().for_each(|x| *x = 0.0);
        for e in &self.est {
            for (s, v) in self.total.iter_mut().zip(e) {
                *s += *v;
            }
        }
        Ok(())
    }
}

impl PrefixMechanism for Honaker {
    exact_plus_noise!(total);
    fn kind(&self) -> MechanismKind {
        MechanismKind::Honaker
    }
    fn nodes_used(&self) -> u64 {
        // Every node of the complete subtrees of [1, t]: sum over set bits l of (2^(l+1) - 1).
        2 * self.t - self.t.count_ones() as u64
    }
    fn live_nodes(&self) -> usize {
        self.est.len()
    }
    fn variance_factor(&self, t: u64) -> f64 {
        honaker_variance_factor(t.min(self.capacity))
    }
    fn max_variance_factor(&self) -> f64 {
        // V_l > 0 and decreasing in l, so over t <= T the maximum is at T or at T with one set
        // bit b cleared and every lower bit set.
        let cap = self.capacity;
        let mut best = honaker_variance_factor(cap);
        for b in 0..64 {
            if (cap >> b) & 1 == 1 {
                let cand = (cap & !((1u64 << b) | ((1u64 << b) - 1))) | ((1u64 << b) - 1);
                best = best.max(honaker_variance_factor(cand));
            }
        }
        best
    }
    /// The whitened innovations' coefficients (module docs): the releases are an invertible
    /// post-processing of `E x + z` with these columns and i.i.d. N(0, node variance) noise z.
    /// For Gaussian noise only: Laplace innovations are not Laplace (see `l1_multiplier`).
    fn leaf_coefficients(&self, leaf: u64) -> CoreResult<Vec<f64>> {
        check_leaf_index(leaf, self.capacity)?;
        let table = InnovationTable::new(bit_length(self.capacity) - 1);
        Ok(honaker_leaf_coefficients(&table, leaf, self.capacity))
    }
    /// The exact multiplier `max_i m(i)` of the online estimator (module docs): below the
    /// post-processing bound `sqrt(bit_length(T))`.
    fn l2_multiplier(&self) -> f64 {
        self.multiplier_sq.0.sqrt()
    }
    fn worst_leaf(&self) -> u64 {
        self.multiplier_sq.1
    }
    /// The post-processing bound: the releases are a function of all dyadic nodes completed by
    /// T, and a leaf lies in at most `bit_length(T)` of them (leaf 1), each with coefficient 1.
    /// No exact L1 multiplier is derived (the innovations of Laplace nodes are not Laplace).
    fn l1_multiplier(&self) -> f64 {
        bit_length(self.capacity) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honaker_max_variance_by_brute_force() {
        for cap in [1u64, 2, 5, 6, 13, 100, 1000, 4095, 4096, 10_000] {
            let m = Honaker::new(NodeShape::Vector(1), NodeNoise::Zero, cap, [0; 32]).unwrap();
            let brute = (1..=cap).map(honaker_variance_factor).fold(0.0, f64::max);
            assert!((m.max_variance_factor() - brute).abs() < 1e-12, "cap {cap}");
        }
        assert_eq!(honaker_level_variance(0), 1.0);
        assert!((honaker_level_variance(1) - 2.0 / 3.0).abs() < 1e-15);
        assert!((honaker_level_variance(2) - 4.0 / 7.0).abs() < 1e-15);
    }

    /// `max_i m(i)^2` and its smallest maximizer by brute force over the leaves.
    fn brute_multiplier_sq(capacity: u64) -> (f64, u64) {
        let table = InnovationTable::new(bit_length(capacity) - 1);
        let mut best = (f64::NEG_INFINITY, 0);
        for leaf in 1..=capacity {
            let m2: f64 = honaker_leaf_coefficients(&table, leaf, capacity)
                .iter()
                .map(|c| c * c)
                .sum();
            if m2 > best.0 {
                best = (m2, leaf);
            }
        }
        best
    }

    fn leaf_multiplier_sq(leaf: u64, capacity: u64) -> f64 {
        let table = InnovationTable::new(bit_length(capacity) - 1);
        honaker_leaf_coefficients(&table, leaf, capacity)
            .iter()
            .map(|c| c * c)
            .sum()
    }

    fn check_dp(cap: u64) {
        let (dp, leaf) = honaker_multiplier_sq(cap);
        let (brute, brute_leaf) = brute_multiplier_sq(cap);
        assert!(
            (dp - brute).abs() <= 1e-12 * brute,
            "T {cap}: dp {dp} brute {brute}"
        );
        assert!(leaf >= 1 && leaf <= cap, "T {cap}: leaf {leaf}");
        // The DP's leaf attains the maximum; ties within rounding may pick another leaf.
        let at = leaf_multiplier_sq(leaf, cap);
        assert!(
            (at - brute).abs() <= 1e-12 * brute,
            "T {cap}: leaf {leaf} gives {at}"
        );
        if (leaf_multiplier_sq(brute_leaf, cap) - dp).abs() > 1e-12 * dp {
            panic!("T {cap}: brute leaf {brute_leaf} is not a maximizer");
        }
    }

    #[test]
    fn multiplier_dp_equals_brute_force() {
        for cap in 1..=3000u64 {
            check_dp(cap);
        }
        for k in 12..=18u32 {
            for cap in [
                (1u64 << k) - 1,
                1 << k,
                (1 << k) + 1,
                (1 << k) - 2,
                3 << (k - 2),
            ] {
                check_dp(cap);
            }
        }
        // Pseudo-random capacities up to 2^18 (a fixed LCG: the test is deterministic).
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..40 {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            check_dp(1 + (s >> 46));
        }
    }

    #[test]
    fn multiplier_values_and_bounds() {
        // sqrt(4.403), sqrt(8.557), sqrt(11.932) at T = 16, 1000, 10^4 (leaf 5461).
        let (m16, _) = honaker_multiplier_sq(16);
        let (m1000, _) = honaker_multiplier_sq(1000);
        let (m10k, leaf) = honaker_multiplier_sq(10_000);
        assert!((m16 - 4.403).abs() < 5e-4, "{m16}");
        assert!((m1000 - 8.557).abs() < 5e-4, "{m1000}");
        assert!(
            (m10k - 11.932).abs() < 5e-4 && leaf == 5461,
            "{m10k} {leaf}"
        );
        assert_eq!(honaker_multiplier_sq(1), (1.0, 1));
        // m(i) grows with T (more released subtrees), and stays below the post-processing bound
        // bit_length(T) (equal only at T = 1), for every capacity up to 2^63 - 1.
        let mut caps: Vec<u64> = (0..63)
            .flat_map(|k| [1u64 << k, (1u64 << k) + 12345])
            .collect();
        caps.extend([(1u64 << 40) + 12345, u64::MAX >> 1, (u64::MAX >> 1) - 1]);
        caps.sort_unstable();
        caps.dedup();
        let mut prev = 0.0;
        for cap in caps {
            let (m2, leaf) = honaker_multiplier_sq(cap);
            assert!(m2.is_finite() && leaf >= 1 && leaf <= cap, "T {cap}");
            assert!(m2 >= prev - 1e-12, "T {cap}: {m2} < {prev}");
            assert!(m2 <= bit_length(cap) as f64 + 1e-12, "T {cap}: {m2}");
            let at = leaf_multiplier_sq(leaf, cap);
            assert!((at - m2).abs() <= 1e-12 * m2, "T {cap}: {at} vs {m2}");
            prev = m2;
        }
        let m = Honaker::new(NodeShape::Vector(1), NodeNoise::Zero, 10_000, [0; 32]).unwrap();
        assert_eq!(m.l2_multiplier(), m10k.sqrt());
        assert_eq!(m.worst_leaf(), 5461);
        let col = m.leaf_coefficients(5461).unwrap();
        let norm2: f64 = col.iter().map(|c| c * c).sum();
        assert!((norm2 - m10k).abs() < 1e-12 * m10k);
        assert_eq!(m.l1_multiplier(), 14.0);
    }
}
