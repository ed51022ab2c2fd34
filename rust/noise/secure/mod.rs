//! Exact discrete Laplace and discrete Gaussian samplers (Canonne, Kamath & Steinke 2020,
//! Alg. 1-3) driven by a cryptographically secure stream, using integer arithmetic only.
//!
//! Why: textbook samplers (`b * ln(u)` for Laplace, Ziggurat / Box-Muller for Gaussians) map a
//! 53-bit uniform through floating-point functions. The set of doubles they can output is sparse
//! and irregular, and `x + noise` rounded to a double reveals which `x` was used (Mironov 2012).
//! Here the noise is an exact integer drawn from the discrete law with a rational parameter; a
//! release is `grid * (integer data + integer noise)`, a deterministic function of exact
//! integers, so floating point only post-processes a private value.
//!
//! Every random decision is a comparison of a uniform (generated bit by bit) with a rational
//! threshold; the
//! only transcendental, `exp(-x)` for rational `x`, enters through Bernoulli(exp(-x)) built from
//! Bernoulli(rational) coins (CKS Alg. 1). Arithmetic is on `u128`; a product that would
//! overflow only arises for |Y| beyond 2^40 noise standard deviations and is treated as the
//! (certain up to < 2^-1000) rejection it stands for.
//!
//! Layout: this file holds the bit source ([`Bits`]), the resolved laws ([`Law`]), the reference
//! algorithms (CKS) and the public functions; `table.rs` the fast envelope-table sampler and its
//! per-thread cache; `exact.rs` the big-integer and exp-bound arithmetic of the rare exact
//! comparisons; `tests.rs` the statistical (moments, chi-square) and timing tests.

use std::sync::Arc;

use rand::RngCore;

mod exact;
mod table;
#[cfg(test)]
mod tests;

use table::Slot;
pub use table::Table;

/// Random bits from the stream, drawn 64 at a time: every coin of the samplers below is decided
/// by comparing a lazily generated uniform with the binary expansion of a rational threshold,
/// which takes 2 bits on average instead of a 64- or 128-bit word. One source serves a whole node
/// (unused bits of its last word are discarded).
pub struct Bits<'a, R: RngCore + ?Sized> {
    rng: &'a mut R,
    buf: u64,
    left: u32,
    /// The last (sigma^2 num, den) -> proposal scale t of `discrete_gaussian_cks` (a node draws
    /// every entry with one or two parameters).
    scale: (u128, u128, u128),
    /// The last two laws' envelope tables (see [`Table`]), keyed by the caller's parameters.
    slots: [Slot; 2],
}

/// A discrete law resolved for repeated draws: its envelope table, or the reference algorithm's
/// parameters outside the tables' range.
#[derive(Debug, Clone)]
pub enum Law {
    Table(Arc<Table>),
    /// sigma^2 = num / den, drawn by [`Bits::discrete_gaussian_cks`].
    Gaussian(u128, u128),
    /// Scale t, drawn by [`Bits::discrete_laplace_cks`].
    Laplace(u128),
}

impl<'a, R: RngCore + ?Sized> Bits<'a, R> {
    pub fn new(rng: &'a mut R) -> Self {
        Bits {
            rng,
            buf: 0,
            left: 0,
            scale: (0, 0, 1),
            slots: [None, None],
        }
    }

    fn bit(&mut self) -> bool {
        if self.left == 0 {
            self.buf = self.rng.next_u64();
            self.left = 64;
        }
        let b = self.buf & 1 == 1;
        self.buf >>= 1;
        self.left -= 1;
        b
    }

    /// `n <= 63` uniform bits as an integer (the low bits of the buffer, then of the next word).
    #[inline]
    fn take64(&mut self, n: u32) -> u64 {
        debug_assert!(n < 64);
        if n <= self.left {
            let v = self.buf & ((1u64 << n) - 1);
            self.buf >>= n;
            self.left -= n;
            return v;
        }
        let (low, have) = (self.buf, self.left);
        let w = self.rng.next_u64();
        let need = n - have;
        let v = low | ((w & ((1u64 << need) - 1)) << have);
        self.buf = w >> need;
        self.left = 64 - need;
        v
    }

    /// `n <= 128` uniform bits as an integer.
    fn take(&mut self, n: u32) -> u128 {
        let (mut out, mut need) = (0u128, n);
        while need > 0 {
            if self.left == 0 {
                self.buf = self.rng.next_u64();
                self.left = 64;
            }
            let k = need.min(self.left);
            let chunk = if k == 64 {
                self.buf
            } else {
                self.buf & ((1u64 << k) - 1)
            };
            out = (out << k) | chunk as u128;
            self.buf = if k == 64 { 0 } else { self.buf >> k };
            self.left -= k;
            need -= k;
        }
        out
    }

    /// Uniform integer in `[0, m)` (`m >= 1`) by rejection on the smallest enclosing power of
    /// two: exactly uniform, at most two expected rounds.
    pub fn uniform_below(&mut self, m: u128) -> u128 {
        if m <= 1 {
            return 0;
        }
        let nb = 128 - (m - 1).leading_zeros();
        loop {
            let x = self.take(nb);
            if x < m {
                return x;
            }
        }
    }

    /// Bernoulli(num / den) for `den >= 1`: a uniform U in [0, 1) is compared with p = num / den,
    /// its binary expansion generated lazily, 32 digits at a time while `den < 2^96`: with A the
    /// next 32 bits of U, `(A + 1) den <= num 2^32` decides U < p and `A den >= num 2^32` decides
    /// U >= p (integer products, exact); otherwise (probability < 2^-32) the comparison goes on
    /// with the remainder `num 2^32 - A den`. Larger denominators go digit by digit.
    pub fn bernoulli_ratio(&mut self, num: u128, den: u128) -> bool {
        if num >= den {
            return true;
        }
        let mut r = num;
        if den < 1u128 << 96 {
            while r != 0 {
                let a = self.take(32);
                let (lo, target) = (a * den, r << 32);
                if lo + den <= target {
                    return true;
                }
                if lo >= target {
                    return false;
                }
                r = target - lo;
            }
            return false;
        }
        while r != 0 {
            // next digit of r / den: 2r >= den, written without overflowing 2r
            let digit = r >= den - r;
            r = if digit { r - (den - r) } else { r + r };
            if self.bit() != digit {
                return digit;
            }
        }
        false
    }

    /// Bernoulli(exp(-gamma)) for `gamma = num / den` in `[0, 1]` (CKS Alg. 1, first branch):
    /// the parity of the first K with a failed Bernoulli(gamma / K) coin.
    fn bernoulli_exp_unit(&mut self, num: u128, den: u128) -> bool {
        let mut k: u128 = 1;
        // Once den * K overflows, gamma / K < 2^-64: the coin fails (up to that probability).
        while let Some(dk) = den.checked_mul(k) {
            if !self.bernoulli_ratio(num, dk) {
                break;
            }
            k += 1;
        }
        k % 2 == 1
    }

    /// Bernoulli(exp(-num / den)) for any rational `num / den >= 0` (CKS Alg. 1): one
    /// Bernoulli(exp(-1)) per unit of gamma, then the fractional part.
    pub fn bernoulli_exp(&mut self, num: u128, den: u128) -> bool {
        debug_assert!(den > 0);
        let mut num = num;
        while num > den {
            if !self.bernoulli_exp_unit(1, 1) {
                return false;
            }
            num -= den;
        }
        self.bernoulli_exp_unit(num, den)
    }

    /// Discrete Laplace with integer scale `t >= 1`: P(Y = y) proportional to exp(-|y| / t).
    /// Drawn from the law's envelope table ([`Table`]) for `t < 2^48`, otherwise by
    /// [`Bits::discrete_laplace_cks`]; both are exact.
    pub fn discrete_laplace(&mut self, t: u128) -> i128 {
        let t = t.max(1);
        match self.table(1, t, 1) {
            Some(tab) => tab.sample(self),
            None => self.discrete_laplace_cks(t),
        }
    }

    /// Discrete Gaussian N_Z(0, sigma^2) with rational `sigma^2 = num / den > 0`: P(Y = y)
    /// proportional to exp(-y^2 / (2 sigma^2)). Drawn from the law's envelope table ([`Table`])
    /// when sigma^2 < 2^56 with a reduced denominator below 2^16 (every lattice law of
    /// [`crate::noise`]), otherwise by [`Bits::discrete_gaussian_cks`]; both are exact.
    pub fn discrete_gaussian(&mut self, num: u128, den: u128) -> i128 {
        match self.table(2, num, den) {
            Some(tab) => tab.sample(self),
            None => self.discrete_gaussian_cks(num, den),
        }
    }

    /// The discrete Gaussian N_Z(0, num / den) resolved once for many draws ([`Bits::draw`]).
    pub fn gaussian_law(&mut self, num: u128, den: u128) -> Law {
        match self.table(2, num, den) {
            Some(t) => Law::Table(t),
            None => Law::Gaussian(num, den),
        }
    }

    /// The discrete Laplace with scale `t` resolved once for many draws ([`Bits::draw`]).
    pub fn laplace_law(&mut self, t: u128) -> Law {
        let t = t.max(1);
        match self.table(1, t, 1) {
            Some(tab) => Law::Table(tab),
            None => Law::Laplace(t),
        }
    }

    /// One draw of a resolved law (the same draw as [`Bits::discrete_gaussian`] /
    /// [`Bits::discrete_laplace`] with its parameters), as an f64 (exact: |y| < 2^53 for every
    /// law whose draws are not astronomically unlikely beyond that).
    #[inline(always)]
    pub fn draw(&mut self, law: &Law) -> f64 {
        match law {
            Law::Table(t) => t.sample_f64(self),
            _ => self.draw_reference(law),
        }
    }

    /// [`Bits::draw`] of a law outside the tables' range (CKS).
    #[cold]
    #[inline(never)]
    fn draw_reference(&mut self, law: &Law) -> f64 {
        let y = match law {
            Law::Table(t) => t.sample(self),
            Law::Gaussian(num, den) => self.discrete_gaussian_cks(*num, *den),
            Law::Laplace(t) => self.discrete_laplace_cks(*t),
        };
        match i64::try_from(y) {
            Ok(v) => v as f64,
            Err(_) => y as f64,
        }
    }

    /// Discrete Laplace with integer scale `t >= 1` by Canonne, Kamath & Steinke's Alg. 2
    /// (s = 1): the reference algorithm, used beyond the tables' range.
    pub fn discrete_laplace_cks(&mut self, t: u128) -> i128 {
        let t = t.max(1);
        loop {
            let u = self.uniform_below(t);
            if !self.bernoulli_exp(u, t) {
                continue;
            }
            let mut v: u128 = 0;
            while self.bernoulli_exp(1, 1) {
                v += 1;
            }
            let x = match v.checked_mul(t).and_then(|tv| tv.checked_add(u)) {
                Some(x) if x <= i128::MAX as u128 => x,
                _ => continue,
            };
            let negative = self.bit();
            if negative && x == 0 {
                continue; // keeps P(0) right: 0 would otherwise be counted twice
            }
            return if negative { -(x as i128) } else { x as i128 };
        }
    }

    /// Discrete Gaussian N_Z(0, sigma^2) with rational `sigma^2 = num / den > 0` by Canonne, Kamath
    /// & Steinke's Alg. 3, the reference algorithm used beyond the tables' range (discrete Laplace
    /// proposal with
    /// scale t, accepted with probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)), which is the
    /// target over the proposal up to a constant for every t > 0). CKS take t = floor(sigma) + 1;
    /// here t is the largest power of two <= max(floor(sigma), 1), within a factor 2 of sigma
    /// (a few more proposals at worst): its uniform draws need no rejection, and with the
    /// lattices' power-of-two sigma^2 every coin's denominator is a power of two below 2^64.
    pub fn discrete_gaussian_cks(&mut self, num: u128, den: u128) -> i128 {
        let (num, den) = reduce_twos(num, den);
        if (self.scale.0, self.scale.1) != (num, den) {
            self.scale = (
                num,
                den,
                prev_power_of_two(floor_sqrt_ratio(num, den).max(1)),
            );
        }
        let t = self.scale.2;
        loop {
            let y = self.discrete_laplace_cks(t);
            // gamma = (|y| - num/(den t))^2 / (2 num/den) = (|y| t den - num)^2 / (2 num den t^2)
            let parts = (y.unsigned_abs())
                .checked_mul(t)
                .and_then(|v| v.checked_mul(den))
                .map(|v| v.abs_diff(num))
                .and_then(|diff| diff.checked_mul(diff))
                .zip(
                    num.checked_mul(den)
                        .and_then(|v| v.checked_mul(2))
                        .and_then(|v| v.checked_mul(t))
                        .and_then(|v| v.checked_mul(t)),
                );
            let Some((g_num, g_den)) = parts else {
                continue;
            };
            let (g_num, g_den) = reduce_twos(g_num, g_den);
            if self.bernoulli_exp(g_num, g_den) {
                return y;
            }
        }
    }
}

impl Law {
    /// The discrete Gaussian N_Z(0, num / den) resolved for many draws, without a bit source
    /// (the same law as [`Bits::gaussian_law`]): a mechanism resolves its laws once and keeps
    /// them.
    pub fn gaussian(num: u128, den: u128) -> Law {
        match table::cached_table(2, num, den) {
            Some(t) => Law::Table(t),
            None => Law::Gaussian(num, den),
        }
    }

    /// The discrete Laplace with scale `t` resolved for many draws (as [`Bits::laplace_law`]).
    pub fn laplace(t: u128) -> Law {
        let t = t.max(1);
        match table::cached_table(1, t, 1) {
            Some(tab) => Law::Table(tab),
            None => Law::Laplace(t),
        }
    }
}

/// Uniform integer in `[0, m)` (`m >= 1`), see [`Bits::uniform_below`].
pub fn uniform_below<R: RngCore + ?Sized>(rng: &mut R, m: u128) -> u128 {
    Bits::new(rng).uniform_below(m)
}

/// Bernoulli(num / den) for `0 <= num <= den`, `den >= 1`.
pub fn bernoulli_ratio<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    Bits::new(rng).bernoulli_ratio(num, den)
}

/// Bernoulli(exp(-num / den)), see [`Bits::bernoulli_exp`].
pub fn bernoulli_exp<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    Bits::new(rng).bernoulli_exp(num, den)
}

/// Discrete Laplace with integer scale `t >= 1`, see [`Bits::discrete_laplace`].
pub fn discrete_laplace<R: RngCore + ?Sized>(rng: &mut R, t: u128) -> i128 {
    Bits::new(rng).discrete_laplace(t)
}

/// `num / den` with the common powers of two removed (the lattices' parameters are powers of
/// two, so their coins then fit the 64-bit comparison of [`Bits::bernoulli_ratio`]).
fn reduce_twos(num: u128, den: u128) -> (u128, u128) {
    let z = if num == 0 {
        den.trailing_zeros()
    } else {
        num.trailing_zeros().min(den.trailing_zeros())
    };
    (num >> z, den >> z)
}

/// The largest power of two <= x (x >= 1).
fn prev_power_of_two(x: u128) -> u128 {
    1u128 << (127 - x.leading_zeros())
}

/// floor(sqrt(num / den)), exactly.
pub fn floor_sqrt_ratio(num: u128, den: u128) -> u128 {
    let q = num / den;
    let mut a = (q as f64).sqrt() as u128;
    // Fix the float estimate: a^2 den <= num < (a+1)^2 den.
    while a > 0
        && a.checked_mul(a)
            .and_then(|s| s.checked_mul(den))
            .is_none_or(|s| s > num)
    {
        a -= 1;
    }
    while (a + 1)
        .checked_mul(a + 1)
        .and_then(|s| s.checked_mul(den))
        .is_some_and(|s| s <= num)
    {
        a += 1;
    }
    a
}

/// Discrete Gaussian N_Z(0, sigma^2) with rational `sigma^2 = num / den`, see
/// [`Bits::discrete_gaussian`].
pub fn discrete_gaussian<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> i128 {
    Bits::new(rng).discrete_gaussian(num, den)
}

/// Variance of the discrete Gaussian N_Z(0, s2). For s2 >= 64 it equals s2 to double precision
/// (Poisson summation: the relative gap is about 4 pi^2 s2 exp(-2 pi^2 s2) < 1e-500); below,
/// the exact series.
pub fn discrete_gaussian_variance(s2: f64) -> f64 {
    if s2 >= 64.0 {
        return s2;
    }
    let reach = (40.0 * s2.sqrt()).ceil() as i64 + 10;
    let (mut z, mut m2) = (1.0, 0.0);
    for n in 1..=reach {
        let w = (-((n * n) as f64) / (2.0 * s2)).exp();
        z += 2.0 * w;
        m2 += 2.0 * (n * n) as f64 * w;
    }
    m2 / z
}

/// Variance of the discrete Laplace with scale t: 2 q / (1 - q)^2, q = exp(-1/t).
pub fn discrete_laplace_variance(t: f64) -> f64 {
    let q = (-1.0 / t).exp();
    let one_minus_q = -(-1.0 / t).exp_m1();
    2.0 * q / (one_minus_q * one_minus_q)
}
