//! Buffered-linear-Toeplitz (BLT) encoder (Dvijotham et al. 2024): noise `A C^{-1} z` generated
//! with `buffers` state vectors, C a quadrature approximation of the square-root factor.
//!
//! With a discrete (secure) sampler the mechanism runs in its encoder form instead: the server
//! encodes the leaves, `e_t = (C x)_t`, rounds every encoded entry to the noise lattice, adds the
//! exact discrete noise, and decodes `y = round(C x) + z` with `A C^{-1}`. The release is then a
//! deterministic function of the integer stream y alone (privacy is that of `round(C x) + z`,
//! a discrete Gaussian mechanism on lattice data), and its noise has the continuous mechanism's
//! variance plus the decoded rounding error (at most half a lattice step per encoded entry).
//! Only y is decoded at every step; the decoded noise `A C^{-1} z` that `noise_into` reports
//! (data-independent, as in the continuous case) is replayed from the innovation stream when it
//! is asked for, the same draws and operations, so the same values bit for bit.

use crate::continual::{
    capacity_error, check_common, check_leaf_index, check_profile_len, fits_or_refuse,
    MechanismKind, PrefixMechanism, MAX_BLT_BUFFERS, MAX_COEFFICIENTS,
};
use crate::errors::{CoreError, CoreResult};
use crate::noise::{round_half_even, ExactSum, Innovations, NodeNoise, NodeShape, LATTICE_LIMIT};
use std::sync::{Mutex, OnceLock};

mod buffers;

use buffers::{decode_step, Buffers};

/// BLT parameters `(theta, omega)` for horizon T and `buffers` buffers.
///
/// `binom(2j, j)/4^j = (1/pi) int_0^inf exp(-u (j + 1/2)) (1 - e^-u)^(-1/2) du`; with
/// `u = e^v` this is a smooth integral over v in R, and the trapezoidal rule on `buffers`
/// nodes v_i spread over `[-ln T - 1.5, 1.5]` gives `c_j ~ sum_i w_i theta_i^j`,
/// `theta_i = exp(-u_i)`, `w_i = h u_i exp(-u_i/2) / (pi sqrt(1 - e^-u_i))`. The BLT encoder
/// then takes `c_0 = 1` and `omega_i = w_i theta_i` (so `c_j = sum_i omega_i theta_i^(j-1)`).
/// Positive weights and theta in (0, 1) make C's generating function `1 + x sum_i omega_i /
/// (1 - theta_i x)` zero-free on the closed unit disk, so the decoder C^{-1} is stable.
pub fn blt_parameters(capacity: u64, buffers: usize) -> (Vec<f64>, Vec<f64>) {
    let m = buffers.max(1);
    let vmin = -(capacity.max(1) as f64).ln() - 1.5;
    let vmax = 1.5;
    let h = if m > 1 {
        (vmax - vmin) / (m - 1) as f64
    } else {
        vmax - vmin
    };
    let mut theta = Vec::with_capacity(m);
    let mut omega = Vec::with_capacity(m);
    for i in 0..m {
        let v = if m > 1 { vmin + h * i as f64 } else { vmin };
        let u = v.exp();
        let th = (-u).exp();
        let w = h * u * (-0.5 * u).exp() / (std::f64::consts::PI * (-(-u).exp_m1()).sqrt());
        theta.push(th);
        omega.push(w * th);
    }
    (theta, omega)
}

/// `sum_{j=0}^{n-1} x^j` for x = exp(log_x) in (0, 1), without cancellation.
fn geometric_sum(log_x: f64, n: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    (n as f64 * log_x).exp_m1() / log_x.exp_m1()
}

/// Small dense row-major matrices for the doubling of the BLT variance recursion.
fn mat_mul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k];
            if aik != 0.0 {
                for j in 0..n {
                    c[i * n + j] += aik * b[k * n + j];
                }
            }
        }
    }
    c
}

fn mat_transpose(a: &[f64], n: usize) -> Vec<f64> {
    let mut t = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            t[j * n + i] = a[i * n + j];
        }
    }
    t
}

/// The BLT mechanism: encoder C = BLT(theta, omega), noise `A C^{-1} z` from `buffers` states.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Blt {
    shape: NodeShape,
    capacity: u64,
    t: u64,
    innov: Innovations,
    exact: ExactSum,
    theta: Vec<f64>,
    omega: Vec<f64>,
    /// s_i (packed) with s_{t+1} = theta_i s_t + x_t, x = C^{-1} z (continuous noise; zeros
    /// with a discrete sampler, whose noise decoder is replayed on demand: `replay`).
    state: Buffers,
    /// Running sum of x: the noise of the current release (continuous noise).
    acc: Vec<f64>,
    z: Vec<f64>,
    /// Discrete noise only: the lattice unit, and the encoder's states
    /// `enc[i] = sum_{s<t} theta_i^(t-1-s) x_s` (packed) that give `(C x)_t`.
    unit: Option<f64>,
    enc: Buffers,
    /// Discrete noise only: the decoder of the released stream y = round(C x) + z.
    ystate: Buffers,
    yacc: Vec<f64>,
    /// Scratch (not state): the encoded and the packed leaf.
    #[serde(skip)]
    leaf: Vec<f64>,
    #[serde(skip)]
    packed_leaf: Vec<f64>,
    /// The doubling blocks (P_b, G^b), b = 2^k, of `decoder_variance`: they do not depend on t,
    /// so they are built once (on first use) and each t only combines its set bits.
    #[serde(skip)]
    blocks: OnceLock<Vec<(Vec<f64>, Vec<f64>)>>,
    /// `variance_factor(t)` for t = 1..=T (`impulse_profile`), built at the first call when T
    /// is at most `MAX_CACHED_PROFILE` (None: larger, each call doubles).
    #[serde(skip)]
    profile: OnceLock<Option<Vec<f64>>>,
    /// Discrete noise only: the noise decoder replayed from the stream's start up to the last
    /// `noise_into` (continued from there by the next call; not state).
    #[serde(skip)]
    replay: Mutex<Option<Replay>>,
}

/// The noise decoder of a discrete BLT, stepped on a second innovation source with the same key.
struct Replay {
    innov: Innovations,
    state: Buffers,
    acc: Vec<f64>,
    z: Vec<f64>,
}

impl Blt {
    pub fn new(
        shape: NodeShape,
        noise: NodeNoise,
        capacity: u64,
        seed: [u8; 32],
        buffers: usize,
    ) -> CoreResult<Self> {
        check_common(shape, noise, capacity)?;
        if buffers == 0 || buffers > MAX_BLT_BUFFERS {
            return Err(CoreError::InvalidParameter(format!(
                "blt buffers must be in [1, {MAX_BLT_BUFFERS}], got {buffers}"
            )));
        }
        let (theta, omega) = blt_parameters(capacity, buffers);
        Self::with_parameters(shape, noise, capacity, seed, theta, omega)
    }

    /// A BLT mechanism with explicit parameters (theta_i in (0, 1), omega_i >= 0).
    pub fn with_parameters(
        shape: NodeShape,
        noise: NodeNoise,
        capacity: u64,
        seed: [u8; 32],
        theta: Vec<f64>,
        omega: Vec<f64>,
    ) -> CoreResult<Self> {
        check_common(shape, noise, capacity)?;
        if capacity > MAX_BLT_CAPACITY {
            return Err(CoreError::InvalidParameter(format!(
                "the BLT mechanism supports at most 2^44 = {MAX_BLT_CAPACITY} releases (K), got \
                 {capacity}: beyond, its variance recursion loses double precision (and at ~5e15 \
                 its decay rates round to 1); use mechanism='tree'"
            )));
        }
        let ok = !theta.is_empty()
            && theta.len() == omega.len()
            && theta.len() <= MAX_BLT_BUFFERS
            && theta.iter().all(|t| t.is_finite() && *t > 0.0 && *t < 1.0)
            && omega.iter().all(|w| w.is_finite() && *w >= 0.0);
        if !ok {
            return Err(CoreError::InvalidParameter(
                "BLT parameters need 1..=64 pairs with theta in (0, 1) and omega >= 0".into(),
            ));
        }
        if matches!(noise, NodeNoise::DiscreteLaplace { .. }) {
            return Err(CoreError::InvalidParameter(
                "BLT takes Gaussian noise (continuous or discrete), not the discrete Laplace"
                    .into(),
            ));
        }
        let innov = Innovations::new(shape, noise, seed);
        let p = innov.packing.packed;
        let unit = noise.lattice_unit(shape)?;
        let m = theta.len();
        let enc = if unit.is_some() {
            Buffers::zeros(m, p)
        } else {
            Buffers::default()
        };
        let (ystate, yacc) = if unit.is_some() {
            (Buffers::zeros(m, p), vec![0.0; p])
        } else {
            (Buffers::default(), Vec::new())
        };
        Ok(Blt {
            unit,
            enc,
            ystate,
            yacc,
            leaf: vec![0.0; p],
            packed_leaf: vec![0.0; p],
            shape,
            capacity,
            t: 0,
            exact: ExactSum::for_shape(noise, shape)?,
            innov,
            state: Buffers::zeros(m, p),
            theta,
            omega,
            acc: vec![0.0; p],
            z: vec![0.0; p],
            blocks: OnceLock::new(),
            profile: OnceLock::new(),
            replay: Mutex::new(None),
        })
    }

    /// A restored state whose buffers fit its parameters and node (the per-entry loops index
    /// them); an error for anything else (corrupt bytes that still decode).
    pub(crate) fn checked(self) -> CoreResult<Self> {
        let (m, p) = (self.theta.len(), self.innov.packing.packed);
        let discrete = self.unit.is_some();
        let fits = |b: &Buffers, on: bool| match on {
            true => b.m == m && b.p == p && b.v.len() == m * p,
            false => b.v.is_empty(),
        };
        let ok = m >= 1
            && self.innov.fits(self.shape)
            && self.omega.len() == m
            && fits(&self.state, true)
            && fits(&self.enc, discrete)
            && fits(&self.ystate, discrete)
            && self.acc.len() == p
            && self.z.len() == p
            && self.yacc.len() == if discrete { p } else { 0 };
        fits_or_refuse(self, ok, "blt")
    }

    pub fn parameters(&self) -> (&[f64], &[f64]) {
        (&self.theta, &self.omega)
    }

    /// Discrete noise: the encoded leaf `round((C x)_t / unit)` (packed, lattice units) into
    /// `self.leaf`, `x_t` = the packed leaf (None: a zero leaf). Nothing else changes, so a leaf
    /// whose encoding leaves the exact lattice range is refused before any state moves.
    fn encode(&mut self, leaf: Option<&[f64]>, unit: f64) -> CoreResult<()> {
        // e = x + sum_i omega_i s_i, summed in that order, one entry at a time (in a register)
        for k in 0..self.leaf.len() {
            let mut e = leaf.map_or(0.0, |l| l[k]);
            for (sv, w) in self.enc.entry(k).iter().zip(&self.omega) {
                e += w * sv;
            }
            let r = round_half_even(e / unit);
            if r.is_nan() || r.abs() > LATTICE_LIMIT {
                return Err(CoreError::InvalidParameter(format!(
                    "leaf: encoded value {e:?} leaves the exact range of the noise lattice (grid \
                     {unit:e}, up to 2^52 grid steps); use a larger noise scale or fewer grid bits"
                )));
            }
            self.leaf[k] = r;
        }
        Ok(())
    }

    /// The encoder states after `x_t` (discrete noise only).
    fn advance_encoder(&mut self, leaf: Option<&[f64]>) {
        for k in 0..self.enc.p {
            let x = leaf.map_or(0.0, |l| l[k]);
            for (sv, th) in self.enc.entry_mut(k).iter_mut().zip(&self.theta) {
                *sv = th * *sv + x;
            }
        }
    }

    /// One step: the innovation (continuous: z_t; discrete: round((C x)_t) + z_t, lattice
    /// units) through the decoder A C^{-1}.
    fn advance(&mut self, leaf: Option<&[f64]>) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(capacity_error(self.capacity));
        }
        if let Some(u) = self.unit {
            // the packed leaf lives in a buffer taken out of self for the encoder's borrows
            let p = self.innov.packing.packed;
            let mut packed = std::mem::take(&mut self.packed_leaf);
            packed.resize(p, 0.0);
            self.leaf.resize(p, 0.0);
            if let Some(l) = leaf {
                self.innov.packing.pack(l, &mut packed);
            }
            let x = leaf.map(|_| packed.as_slice());
            let done = self.encode(x, u).and_then(|()| match leaf {
                Some(l) => self.exact.add("leaf", l),
                None => Ok(()),
            });
            if done.is_ok() {
                self.advance_encoder(x);
            }
            self.packed_leaf = packed;
            done?;
        } else if let Some(l) = leaf {
            self.exact.add("leaf", l)?;
        }
        self.t += 1;
        self.innov.draw(&mut self.z);
        if self.unit.is_some() {
            // the release decodes y = round(C x) + z alone; the noise's decoder is replayed
            // when asked for (`noise_into`)
            for (v, z) in self.leaf.iter_mut().zip(&self.z) {
                *v += *z;
            }
            decode_step(
                &self.theta,
                &self.omega,
                &mut self.ystate,
                &mut self.yacc,
                &mut self.leaf,
            );
        } else {
            decode_step(
                &self.theta,
                &self.omega,
                &mut self.state,
                &mut self.acc,
                &mut self.z,
            );
        }
        Ok(())
    }

    /// Encoder coefficient c_j (c_0 = 1).
    fn coefficient(&self, j: u64) -> f64 {
        if j == 0 {
            return 1.0;
        }
        self.theta
            .iter()
            .zip(&self.omega)
            .map(|(th, w)| w * th.powf((j - 1) as f64))
            .sum()
    }

    /// Exact `sum_{j<t} e_j^2` with e = the decoder A C^{-1}'s coefficients, by doubling.
    ///
    /// The decoder's impulse response: x_0 = 1, s_1 = 1 (all buffers), e_0 = 1; for j >= 1,
    /// x_j = -omega . s_j, s_{j+1} = theta s_j + x_j, e_j = e_{j-1} + x_j. With the state
    /// y_j = (s_j, e_{j-1}) this is y_{j+1} = G y_j, e_j = g . y_j, so
    /// `sum_{j=1}^{t-1} e_j^2 = g^T (sum_{k<t-1} G^k y_1 y_1^T G^kT) g`, a Lyapunov sum doubled
    /// in O(m^3 log t).
    fn decoder_variance(&self, t: u64) -> f64 {
        if t == 0 {
            return 0.0;
        }
        let m = self.theta.len();
        let n = m + 1;
        let mut gvec: Vec<f64> = self.omega.iter().map(|w| -w).collect();
        gvec.push(1.0);
        // Accumulate P over `count = t - 1` terms: binary decomposition of count.
        let count = t - 1;
        let mut p_total = vec![0.0; n * n];
        let mut g_total = identity(n);
        let blocks = self.blocks.get_or_init(|| self.doubling_blocks());
        let mut rem = count;
        let mut level = 0;
        while rem > 0 {
            if rem & 1 == 1 {
                // P_total <- P_total + G_total P_block G_total^T ; G_total <- G_total G_block
                let (p_block, g_block) = &blocks[level];
                let gt = mat_transpose(&g_total, n);
                let term = mat_mul(&mat_mul(&g_total, p_block, n), &gt, n);
                for (a, b) in p_total.iter_mut().zip(&term) {
                    *a += b;
                }
                g_total = mat_mul(&g_total, g_block, n);
            }
            rem >>= 1;
            level += 1;
        }
        let mut quad = 0.0;
        for i in 0..n {
            for j in 0..n {
                quad += gvec[i] * p_total[i * n + j] * gvec[j];
            }
        }
        1.0 + quad
    }

    /// (P_b, G^b) for b = 2^k, k = 0..64: P_1 = y_1 y_1^T, G^1 = G;
    /// P_{2b} = P_b + G^b P_b G^bT, G^{2b} = G^b G^b.
    fn doubling_blocks(&self) -> Vec<(Vec<f64>, Vec<f64>)> {
        let m = self.theta.len();
        let n = m + 1;
        let mut g_mat = vec![0.0; n * n];
        for i in 0..m {
            for k in 0..m {
                g_mat[i * n + k] = if i == k { self.theta[i] } else { 0.0 } - self.omega[k];
            }
            g_mat[m * n + i] = -self.omega[i];
        }
        g_mat[m * n + m] = 1.0;
        let y1 = vec![1.0; n];
        let mut p_block: Vec<f64> = (0..n * n).map(|idx| y1[idx / n] * y1[idx % n]).collect();
        let mut g_block = g_mat;
        let mut out = Vec::with_capacity(64);
        for _ in 0..64 {
            out.push((p_block.clone(), g_block.clone()));
            let gt = mat_transpose(&g_block, n);
            let term = mat_mul(&mat_mul(&g_block, &p_block, n), &gt, n);
            for (a, b) in p_block.iter_mut().zip(&term) {
                *a += b;
            }
            g_block = mat_mul(&g_block, &g_block, n);
        }
        out
    }
}

/// Longest variance profile a BLT mechanism caches for `variance_factor` (8 MiB); beyond, each
/// call doubles (`decoder_variance`).
const MAX_CACHED_PROFILE: u64 = 1 << 20;

/// The largest capacity BLT is built for: the doubled variance recursion
/// (`decoder_variance`) grows smoothly with the capacity up to 2^44 (steps of 0.25-0.31 per
/// doubling) and erratically beyond (0.32, 0.28, 0.41, 0.24, 0.66 from 2^45 to 2^51, negative
/// at 2^61): its sums of O(K) terms lose double precision.
pub const MAX_BLT_CAPACITY: u64 = 1 << 44;

/// `sum_{j<t} e_j^2` for t = 1..=n, e the decoder A C^{-1}'s impulse response, directly (O(n m)):
/// the running sum `variance_profile` reports and `variance_factor` reads.
fn impulse_profile(theta: &[f64], omega: &[f64], n: u64) -> Vec<f64> {
    let mut s = vec![0.0; theta.len()];
    let (mut e, mut var) = (0.0, 0.0);
    let mut out = Vec::with_capacity(n as usize);
    for t in 0..n {
        let z = if t == 0 { 1.0 } else { 0.0 };
        let x = z - omega.iter().zip(&s).map(|(w, v)| w * v).sum::<f64>();
        for (v, th) in s.iter_mut().zip(theta) {
            *v = th * *v + x;
        }
        e += x;
        var += e * e;
        out.push(var);
    }
    out
}

fn identity(n: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0;
    }
    m
}

impl PrefixMechanism for Blt {
    innovation_basics!();
    fn kind(&self) -> MechanismKind {
        MechanismKind::Blt {
            buffers: self.theta.len(),
        }
    }
    fn push(&mut self, leaf: &[f64]) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(capacity_error(self.capacity));
        }
        crate::errors::check_len("leaf", leaf.len(), self.shape.len())?;
        crate::errors::check_finite("leaf", leaf)?;
        self.advance(Some(leaf))
    }
    fn push_zero(&mut self) -> CoreResult<()> {
        self.advance(None)
    }
    fn noise_into(&self, out: &mut [f64]) -> CoreResult<()> {
        // the decoded noise A C^{-1} z (lattice units for a discrete sampler): what the release
        // adds to the exact sum, up to the decoded rounding of the encoder form
        crate::errors::check_len("release buffer", out.len(), self.shape.len())?;
        if self.unit.is_none() {
            self.innov.packing.unpack(&self.acc, out);
        } else {
            // replayed: the same key, the same draws, the same decoder steps as the mechanism's
            // own stream, from where the last call stopped (O(t) once over the whole run)
            let mut guard = self.replay.lock().unwrap_or_else(|e| e.into_inner());
            let r = guard.get_or_insert_with(|| Replay {
                innov: Innovations::new(self.shape, self.innov.noise, self.innov.rng.get_seed()),
                state: Buffers::zeros(self.theta.len(), self.innov.packing.packed),
                acc: vec![0.0; self.innov.packing.packed],
                z: vec![0.0; self.innov.packing.packed],
            });
            while r.innov.drawn < self.innov.drawn {
                r.innov.draw(&mut r.z);
                decode_step(&self.theta, &self.omega, &mut r.state, &mut r.acc, &mut r.z);
            }
            self.innov.packing.unpack(&r.acc, out);
        }
        self.exact.noise_in_place(out);
        Ok(())
    }
    fn release_into(&self, out: &mut [f64]) -> CoreResult<()> {
        crate::errors::check_len("release buffer", out.len(), self.shape.len())?;
        match self.unit {
            None => {
                self.innov.packing.unpack(&self.acc, out);
                self.exact.release_in_place(out);
            }
            // the release `unit * A C^{-1} y`: the decoded integer stream alone
            Some(u) => self.innov.packing.unpack_scaled(&self.yacc, u, out),
        }
        Ok(())
    }
    fn nodes_used(&self) -> u64 {
        self.t
    }
    fn live_nodes(&self) -> usize {
        self.theta.len() + 1
    }
    fn push_cost(&self) -> u64 {
        // Every buffer is read and updated once.
        (2 * self.theta.len() as u64 + 1) * self.innov.packing.packed as u64
    }
    fn variance_factor(&self, t: u64) -> f64 {
        let t = t.min(self.capacity);
        if t == 0 {
            return 0.0;
        }
        // the agents ask at every release: one O(T m) pass, once, instead of the O(m^3 log t)
        // doubling per call (equal to it within rounding; tested)
        let cached = self.profile.get_or_init(|| {
            (self.capacity <= MAX_CACHED_PROFILE)
                .then(|| impulse_profile(&self.theta, &self.omega, self.capacity))
        });
        match cached {
            Some(p) => p[(t - 1) as usize],
            None => self.decoder_variance(t),
        }
    }
    fn max_variance_factor(&self) -> f64 {
        // A running sum of squares: largest at t = T.
        self.decoder_variance(self.capacity)
    }
    fn variance_profile(&self) -> CoreResult<Vec<f64>> {
        check_profile_len(self.capacity)?;
        Ok(match self.profile.get() {
            Some(Some(p)) => p.clone(),
            _ => impulse_profile(&self.theta, &self.omega, self.capacity),
        })
    }
    fn leaf_coefficients(&self, leaf: u64) -> CoreResult<Vec<f64>> {
        check_leaf_index(leaf, self.capacity)?;
        let n = self.capacity - leaf + 1;
        if n > MAX_COEFFICIENTS {
            return Err(CoreError::Capacity(format!(
                "leaf {leaf} enters {n} encoder rows; at most {MAX_COEFFICIENTS} are listed"
            )));
        }
        Ok((0..n).map(|j| self.coefficient(j)).collect())
    }
    fn l2_multiplier(&self) -> f64 {
        // 1 + sum_{j=1}^{T-1} (sum_i omega_i theta_i^(j-1))^2, in closed form.
        let n = self.capacity - 1;
        let mut s = 1.0;
        for (ti, wi) in self.theta.iter().zip(&self.omega) {
            for (tk, wk) in self.theta.iter().zip(&self.omega) {
                s += wi * wk * geometric_sum(ti.ln() + tk.ln(), n);
            }
        }
        s.sqrt()
    }
    fn l1_multiplier(&self) -> f64 {
        let n = self.capacity - 1;
        1.0 + self
            .theta
            .iter()
            .zip(&self.omega)
            .map(|(t, w)| w * geometric_sum(t.ln(), n))
            .sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::continual::restore_mechanism;

    /// BLT: closed-form multipliers and doubled variance against direct summation.
    #[test]
    fn blt_profile_matches_direct_sums() {
        for cap in [1u64, 2, 3, 17, 1000, 5000] {
            let m = Blt::new(NodeShape::Vector(1), NodeNoise::Zero, cap, [0; 32], 8).unwrap();
            let coeffs = m.leaf_coefficients(1).unwrap();
            let l2: f64 = coeffs.iter().map(|c| c * c).sum::<f64>().sqrt();
            let l1: f64 = coeffs.iter().sum();
            assert!((m.l2_multiplier() / l2 - 1.0).abs() < 1e-10, "cap {cap}");
            assert!((m.l1_multiplier() / l1 - 1.0).abs() < 1e-10, "cap {cap}");
            // Direct impulse response of A C^{-1}.
            let (th, om) = m.parameters();
            let mut s = vec![0.0; th.len()];
            let (mut e, mut var) = (0.0, 0.0);
            for t in 1..=cap {
                let z = if t == 1 { 1.0 } else { 0.0 };
                let x = z - om.iter().zip(&s).map(|(w, v)| w * v).sum::<f64>();
                for (v, t) in s.iter_mut().zip(th) {
                    *v = t * *v + x;
                }
                e += x;
                var += e * e;
                if t % 97 == 1 || t == cap {
                    let got = m.variance_factor(t);
                    assert!(
                        (got / var - 1.0).abs() < 1e-9,
                        "cap {cap} t {t}: {got} vs {var}"
                    );
                }
            }
            assert!((m.max_variance_factor() / var - 1.0).abs() < 1e-9);
            // the cached profile that variance_factor reads is the direct running sum, and the
            // doubling (max_variance_factor, capacities beyond the cache) agrees with it
            let prof = m.variance_profile().unwrap();
            for t in (1..=cap).step_by(89).chain([cap]) {
                let (got, direct) = (m.variance_factor(t), m.decoder_variance(t));
                assert_eq!(got, prof[t as usize - 1]);
                assert!((direct / got - 1.0).abs() < 1e-12, "cap {cap} t {t}");
            }
            assert_eq!(m.variance_factor(0), 0.0);
        }
    }

    /// Discrete BLT: the noise decoder replayed on demand is the one the mechanism used to step
    /// with every leaf (here: a continuous-form decoder of the same integer draws), whatever the
    /// data and however often it is asked for; saved states keep their buffer-major layout.
    #[test]
    fn discrete_blt_replayed_noise_and_saved_layout() {
        let dg = NodeNoise::DiscreteGaussian {
            sigma: 2.0,
            grid_bits: 10,
        };
        let shape = NodeShape::SymMatrix {
            d: 3,
            divisor: std::f64::consts::SQRT_2,
        };
        let (cap, seed) = (300u64, [4u8; 32]);
        let mut with_data = Blt::new(shape, dg, cap, seed, 8).unwrap();
        let mut zeros = Blt::new(shape, dg, cap, seed, 8).unwrap();
        // the decoder of the same draws, stepped by hand
        let mut innov = Innovations::new(shape, dg, seed);
        let (m, p) = (with_data.theta.len(), 6);
        let (mut st, mut acc, mut z) = (Buffers::zeros(m, p), vec![0.0; p], vec![0.0; p]);
        let unit = dg.lattice_unit(shape).unwrap().unwrap();
        let (mut a, mut b) = ([0.0; 9], [0.0; 9]);
        for t in 1..=cap {
            let x = t as f64 * 0.01;
            with_data
                .push(&[x, 0.5, -x, 0.5, 1.0, 0.0, -x, 0.0, 2.0])
                .unwrap();
            zeros.push_zero().unwrap();
            innov.draw(&mut z);
            decode_step(
                &with_data.theta,
                &with_data.omega,
                &mut st,
                &mut acc,
                &mut z,
            );
            if t % 37 == 0 || t == cap {
                with_data.noise_into(&mut a).unwrap();
                let mut want = [0.0; 9];
                innov.packing.unpack(&acc, &mut want);
                want.iter_mut().for_each(|v| *v *= unit);
                assert_eq!(a, want, "t {t}");
            }
        }
        zeros.noise_into(&mut b).unwrap(); // asked once, at the end
        assert_eq!(a, b);
        // saved as m buffer vectors of p packed entries (the layout before entry-major storage)
        let nested: Vec<Vec<f64>> = (0..m)
            .map(|i| (0..p).map(|k| with_data.enc.v[k * m + i]).collect())
            .collect();
        assert_eq!(
            bincode::serialize(&with_data.enc).unwrap(),
            bincode::serialize(&nested).unwrap()
        );
        let back = restore_mechanism("blt", &with_data.to_state().unwrap()).unwrap();
        let (mut r1, mut r2) = ([0.0; 9], [0.0; 9]);
        back.release_into(&mut r1).unwrap();
        with_data.release_into(&mut r2).unwrap();
        assert_eq!(r1, r2);
        back.noise_into(&mut r1).unwrap();
        assert_eq!(r1, a);
    }

    /// Discrete BLT: the release decodes round(C x) + z; its noise has the continuous
    /// mechanism's variance (sigma^2 times the decoder's profile) up to the rounding, the
    /// release is the decoded lattice stream, and a refused leaf leaves the state unchanged.
    #[test]
    fn capacity_beyond_the_precise_recursion_is_refused() {
        let g = NodeNoise::Gaussian { sigma: 1.0 };
        let at = Blt::new(NodeShape::Vector(1), g, MAX_BLT_CAPACITY, [0; 32], 6).unwrap();
        // grows with the capacity, and stays positive, at the largest one
        let half = Blt::new(NodeShape::Vector(1), g, MAX_BLT_CAPACITY / 2, [0; 32], 6).unwrap();
        assert!(at.max_variance_factor() > half.max_variance_factor());
        match Blt::new(NodeShape::Vector(1), g, MAX_BLT_CAPACITY + 1, [0; 32], 6) {
            Err(CoreError::InvalidParameter(m)) => assert!(m.contains("mechanism='tree'"), "{m}"),
            _ => panic!("capacity 2^44 + 1 accepted"),
        }
    }

    #[test]
    fn discrete_blt_noise_variance_and_lattice_stream() {
        let (sigma, cap, t_check) = (1.5, 64u64, 40u64);
        let dg = NodeNoise::DiscreteGaussian {
            sigma,
            grid_bits: 12,
        };
        let n = 4000;
        let mut sq = 0.0;
        let mut mean = 0.0;
        for r in 0..n {
            let mut sd = [0u8; 32];
            sd[..4].copy_from_slice(&(r as u32).to_le_bytes());
            let mut m = Blt::new(NodeShape::Vector(1), dg, cap, sd, 6).unwrap();
            for t in 0..t_check {
                m.push(&[0.3 + 0.01 * t as f64]).unwrap();
            }
            let mut e = [0.0];
            m.noise_into(&mut e).unwrap();
            sq += e[0] * e[0];
            mean += e[0];
        }
        let m = Blt::new(NodeShape::Vector(1), dg, cap, [0; 32], 6).unwrap();
        let want = sigma * sigma * m.variance_factor(t_check);
        let got = sq / n as f64;
        // the sample variance of n draws has relative s.d. sqrt(2/n) = 2.2%
        assert!((got / want - 1.0).abs() < 0.1, "{got} vs {want}");
        assert!((mean / n as f64).abs() < 4.0 * (want / n as f64).sqrt());

        // the encoder/decoder pair is exact up to the rounding: with the noise removed (z = 0
        // is the difference of two equal-seed runs), data decoded from round(C x) stays within
        // half a lattice step per encoded entry, decoded.
        let unit = sigma * 0.5f64.powi(12);
        let mut a = Blt::new(NodeShape::Vector(2), dg, cap, [9; 32], 6).unwrap();
        let mut b = Blt::new(NodeShape::Vector(2), dg, cap, [9; 32], 6).unwrap();
        for t in 0..30 {
            a.push(&[0.5, -0.25 * t as f64]).unwrap();
            b.push_zero().unwrap();
        }
        let (mut ra, mut rb) = ([0.0; 2], [0.0; 2]);
        a.release_into(&mut ra).unwrap();
        b.release_into(&mut rb).unwrap();
        let exact = a.exact_sum();
        let bound = 0.5 * unit * (a.l1_multiplier() + 30.0);
        for k in 0..2 {
            assert!(((ra[k] - rb[k]) - exact[k]).abs() <= bound, "{k}");
        }

        // refused leaf: nothing moves
        let before = a.to_state().unwrap();
        assert!(a.push(&[1e300, 0.0]).is_err());
        assert_eq!(a.to_state().unwrap(), before);
    }
}
