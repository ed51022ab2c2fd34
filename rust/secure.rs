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

use std::cell::RefCell;
use std::cmp::Ordering;
use std::rc::Rc;

use rand::RngCore;

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
    Table(Rc<Table>),
    /// sigma^2 = num / den, drawn by [`Bits::discrete_gaussian_cks`].
    Gaussian(u128, u128),
    /// Scale t, drawn by [`Bits::discrete_laplace_cks`].
    Laplace(u128),
}

/// A law's parameters as the caller gave them -> its envelope table (None: outside the tables'
/// range, drawn by the reference algorithm).
type Slot = Option<Slot1>;

/// One cached law: its key and its table.
type Slot1 = ((u8, u128, u128), Option<Rc<Table>>);

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
    #[inline]
    pub fn draw(&mut self, law: &Law) -> f64 {
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

    /// The envelope table of a law (kind 1: discrete Laplace with scale `x`; kind 2: discrete
    /// Gaussian with sigma^2 = x / y), from the two slots, the thread's cache or built.
    fn table(&mut self, kind: u8, x: u128, y: u128) -> Option<Rc<Table>> {
        let key = (kind, x, y);
        for s in self.slots.iter().flatten() {
            if s.0 == key {
                return s.1.clone();
            }
        }
        let tab = TABLES.with(|cache| {
            let mut cache = cache.borrow_mut();
            if let Some((_, t)) = cache.iter().find(|(k, _)| *k == key) {
                return t.clone();
            }
            let t = match kind {
                1 => Table::laplace(x),
                _ => Table::gaussian(x, y),
            }
            .map(Rc::new);
            if cache.len() >= 64 {
                cache.remove(0);
            }
            cache.push((key, t.clone()));
            t
        });
        self.slots[1] = self.slots[0].take();
        self.slots[0] = Some((key, tab.clone()));
        tab
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

// ============================================================================================
// Envelope tables: the fast exact sampler
// ============================================================================================
//
// A law on the integers P(Y = y) ~ f(|y|), f(m) = exp(-g(m)), g(m) = (a m^2 + b m) / c with
// integer a, b, c (discrete Gaussian: a = den, b = 0, c = 2 num; discrete Laplace: a = 0, b = 1,
// c = t), is drawn by rejection from a histogram envelope whose weights are exact integers:
//
// * the magnitude m >= 0 is proposed from blocks [j w, (j + 1) w), w = 2^wbits (about sigma / 32,
//   or t / 16): block j with probability q_j / Q (an alias table with integer thresholds: the
//   probabilities are exactly dyadic), m uniform inside it; beyond the J body blocks a tail of
//   blocks of width W_t whose weights halve (q_T 2^-(i+1) / Q for tail block i);
// * m is accepted with probability A(m) = f(m) Lambda / q_j (body) or
//   f(m) Lambda W_t 2^(i+1) / (w q_T) (tail): proposal times acceptance is f(m) Lambda / (Q w)
//   for every m, so the accepted m has law f, exactly. A(m) <= 1 holds because q_j >= f(j w)
//   Lambda (f decreases) and q_T >= 2 f(J w) Lambda W_t / w with f(J w + i W_t + r) <=
//   f(J w) 2^-i (W_t g'(J w) >= ln 2), both checked on certified integer bounds of f;
// * then a sign, and m = 0 with a negative sign is rejected (0 is one integer, not two).
//
// The acceptance is a comparison of a uniform U, generated 16 bits and then 47 bits at a time,
// with p = A(m) = c_j exp(-delta), delta = g(m) - g(j w), c_j = f(j w) Lambda / q_j <= 1. Every
// bound is an integer in units of 2^-63: c_j's interval is precomputed (certified below), delta's
// comes from an exact product and a rounded reciprocal of c, and exp(-delta) lies between the
// Taylor polynomials of degree 3 and 2. When U's interval [A, A + 1) 2^-k straddles the bracket
// of p (probability about 2^-16 + delta^3 / 6), the comparison goes on exactly: the rational
// partial sums of exp(-g(m)) (big integers, no division) bound p from both sides ever more
// tightly while U gets more bits, until one side is certain. No floating point is involved.

/// Fixed-point unit of the acceptance bounds: 2^63.
const FX: u32 = 63;
const ONE: u128 = 1 << FX;
/// Threshold bits of the alias columns: column probabilities are multiples of 2^-16.
const COL_BITS: u32 = 16;
/// Bits of U compared first (then `FX - FIRST_BITS` more before the exact comparison).
const FIRST_BITS: u32 = 16;

/// Unsigned big integer (little-endian 64-bit limbs, no leading zero limbs), only for the rare
/// exact comparisons and the tables' certified constants.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big(Vec<u64>);

impl Big {
    fn from_u128(x: u128) -> Big {
        let mut b = Big(vec![x as u64, (x >> 64) as u64]);
        b.trim();
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn bits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => 64 * self.0.len() as u64 - top.leading_zeros() as u64,
        }
    }

    fn mul(&self, o: &Big) -> Big {
        if self.0.is_empty() || o.0.is_empty() {
            return Big(Vec::new());
        }
        let mut out = vec![0u64; self.0.len() + o.0.len()];
        for (i, &a) in self.0.iter().enumerate() {
            let mut carry = 0u128;
            for (j, &b) in o.0.iter().enumerate() {
                let t = a as u128 * b as u128 + out[i + j] as u128 + carry;
                out[i + j] = t as u64;
                carry = t >> 64;
            }
            let mut k = i + o.0.len();
            while carry != 0 {
                let t = out[k] as u128 + carry;
                out[k] = t as u64;
                carry = t >> 64;
                k += 1;
            }
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    fn add(&self, o: &Big) -> Big {
        let n = self.0.len().max(o.0.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = 0u128;
        for i in 0..n {
            let t =
                *self.0.get(i).unwrap_or(&0) as u128 + *o.0.get(i).unwrap_or(&0) as u128 + carry;
            out.push(t as u64);
            carry = t >> 64;
        }
        out.push(carry as u64);
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self - o` for `self >= o`.
    fn sub(&self, o: &Big) -> Big {
        debug_assert!(self.cmp_big(o) != Ordering::Less);
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0u64;
        for i in 0..self.0.len() {
            let (d1, b1) = self.0[i].overflowing_sub(*o.0.get(i).unwrap_or(&0));
            let (d2, b2) = d1.overflowing_sub(borrow);
            out.push(d2);
            borrow = (b1 || b2) as u64;
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    fn shl(&self, n: u64) -> Big {
        if self.0.is_empty() {
            return Big(Vec::new());
        }
        let (limbs, bits) = ((n / 64) as usize, (n % 64) as u32);
        let mut out = vec![0u64; limbs];
        let mut carry = 0u64;
        for &x in &self.0 {
            out.push(if bits == 0 { x } else { (x << bits) | carry });
            carry = if bits == 0 { 0 } else { x >> (64 - bits) };
        }
        out.push(carry);
        let mut b = Big(out);
        b.trim();
        b
    }

    fn cmp_big(&self, o: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&o.0.len())
            .then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }
}

/// floor(num / den) for a quotient below 2^127 (binary long division; slow path only).
fn div_floor(num: &Big, den: &Big) -> u128 {
    let (nb, db) = (num.bits(), den.bits());
    if db == 0 || nb < db {
        return 0;
    }
    let shift = nb - db;
    assert!(shift < 127, "quotient out of range");
    let mut rem = num.clone();
    let mut q = 0u128;
    for s in (0..=shift).rev() {
        let d = den.shl(s);
        if rem.cmp_big(&d) != Ordering::Less {
            rem = rem.sub(&d);
            q |= 1u128 << s;
        }
    }
    q
}

/// The Taylor partial sums S_n = (even - odd) / q of exp(-gn/gd) as exact integers (even: the
/// sum of the even terms' numerators over the common denominator q = gd^n n!). Once the terms
/// decrease (n >= floor(g) + 2) the remainder has the sign of its first term and is smaller:
/// S_n >= exp(-g) for even n, S_n <= exp(-g) for odd n.
struct ExpSeries {
    gn: Big,
    gd: Big,
    n: u64,
    start: u64,
    pow: Big,
    even: Big,
    odd: Big,
    q: Big,
}

impl ExpSeries {
    fn new(gn: u128, gd: u128) -> Self {
        ExpSeries {
            gn: Big::from_u128(gn),
            gd: Big::from_u128(gd),
            n: 0,
            start: (gn / gd) as u64 + 2,
            pow: Big::from_u128(1),
            even: Big::from_u128(1),
            odd: Big(Vec::new()),
            q: Big::from_u128(1),
        }
    }

    /// Add the next term; true once S_n is a bound (upper for even n, lower for odd n).
    fn step(&mut self) -> bool {
        self.n += 1;
        let f = self.gd.mul(&Big::from_u128(self.n as u128));
        self.q = self.q.mul(&f);
        self.even = self.even.mul(&f);
        self.odd = self.odd.mul(&f);
        self.pow = self.pow.mul(&self.gn);
        if self.n.is_multiple_of(2) {
            self.even = self.even.add(&self.pow);
        } else {
            self.odd = self.odd.add(&self.pow);
        }
        self.n >= self.start
    }
}

/// Certified bounds (lo, hi) of 2^63 exp(-gn/gd): lo <= 2^63 exp(-g) <= hi, hi - lo <= 2.
#[cfg(test)]
fn exp_bounds(gn: u128, gd: u128) -> (u128, u128) {
    exp_bounds_at(gn, gd, FX)
}

/// Certified bounds (lo, hi) of 2^p exp(-gn/gd) (p <= 126), hi - lo <= 2.
fn exp_bounds_at(gn: u128, gd: u128, p: u32) -> (u128, u128) {
    let one = Big::from_u128(1u128 << p);
    let mut s = ExpSeries::new(gn, gd);
    let (mut lo, mut hi) = (0u128, 1u128 << p);
    loop {
        if !s.step() {
            continue;
        }
        if s.n % 2 == 1 {
            if s.even.cmp_big(&s.odd) == Ordering::Greater {
                lo = lo.max(div_floor(&s.even.sub(&s.odd).mul(&one), &s.q));
            }
        } else {
            let num = s.even.sub(&s.odd).mul(&one);
            if num.bits() < s.q.bits() + 127 {
                hi = hi.min(div_floor(&num, &s.q) + 1);
            }
        }
        if hi <= lo + 2 {
            return (lo, hi);
        }
    }
}

/// Products of numbers in [0, 2] held as multiples of 2^-126: floor and ceil of a b / 2^126.
fn mul126(a: u128, b: u128) -> (u128, u128) {
    let (a1, a0, b1, b0) = (a >> 64, a as u64 as u128, b >> 64, b as u64 as u128);
    let (hh, hl, lh, ll) = (a1 * b1, a1 * b0, a0 * b1, a0 * b0);
    // 256-bit sum: hh 2^128 + (hl + lh) 2^64 + ll
    let mid = hl + lh; // < 2^127 for a, b < 2^127 (a1, b1 < 2^63)
    let (lo, c1) = ll.overflowing_add(mid << 64);
    let hi = hh + (mid >> 64) + c1 as u128;
    let floor = (hi << 2) | (lo >> 126);
    let exact = lo & ((1u128 << 126) - 1) == 0;
    (floor, floor + (!exact) as u128)
}

/// Interval product (lower with lower, upper with upper) in units of 2^-126.
fn mul_iv(x: (u128, u128), y: (u128, u128)) -> (u128, u128) {
    (mul126(x.0, y.0).0, mul126(x.1, y.1).1)
}

/// One law's envelope (see the section comment).
#[derive(Debug)]
pub struct Table {
    a: u128,
    b: u128,
    c: u128,
    wbits: u32,
    /// J, the body blocks; outcome J is the tail, J + 1 a rejection (the unused weight).
    nbody: u64,
    col_bits: u32,
    /// Alias columns: threshold in [0, 2^16] (17 bits) | alias outcome << 17.
    columns: Vec<u32>,
    lambda: u128,
    /// Integer weight of each outcome (body blocks, then the tail).
    q: Vec<u128>,
    c_lo: Vec<u64>,
    c_hi: Vec<u64>,
    /// c_j's bracket in units of 2^-31.
    c31: Vec<(u32, u32)>,
    /// Block j accepts when U's first 16 bits are below the low half, rejects when they are at
    /// least the high half (a bracket of the acceptance probability over the block, in units of
    /// 2^-16, rounded outwards).
    quick: Vec<u32>,
    /// floor(2^(63 + rshift) / c), and whether that is exact.
    rec: u64,
    rec_exact: bool,
    rshift: u32,
    tail_bits: u32,
    /// The proposal's fields fit one 64-bit word.
    one_word: bool,
}

thread_local! {
    /// Envelope tables built on this thread (a run uses a handful of laws).
    static TABLES: RefCell<Vec<Slot1>> = const { RefCell::new(Vec::new()) };
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Table {
    /// The discrete Gaussian with sigma^2 = num / den; None outside the tables' range.
    pub fn gaussian(num: u128, den: u128) -> Option<Table> {
        if num == 0 || den == 0 {
            return None;
        }
        let g = gcd(num, den);
        let (num, den) = (num / g, den / g);
        if den >= 1 << 16 || num >= 1 << 56 {
            return None;
        }
        let sigma = floor_sqrt_ratio(num, den);
        // w = 2^wbits in (sigma / 128, sigma / 64]
        let wbits = if sigma >= 128 {
            127 - sigma.leading_zeros() - 6
        } else {
            0
        };
        Table::build(den, 0, 2 * num, wbits)
    }

    /// The discrete Laplace with scale t; None outside the tables' range.
    pub fn laplace(t: u128) -> Option<Table> {
        if t == 0 || t >= 1 << 48 {
            return None;
        }
        // w = 2^wbits in (t / 64, t / 32]
        let wbits = if t >= 32 {
            127 - t.leading_zeros() - 5
        } else {
            0
        };
        Table::build(0, 1, t, wbits)
    }

    /// g(m) c = a m^2 + b m (None on overflow).
    fn g_num(&self, m: u128) -> Option<u128> {
        let am2 = m.checked_mul(m)?.checked_mul(self.a)?;
        am2.checked_add(self.b.checked_mul(m)?)
    }

    fn build(a: u128, b: u128, c: u128, wbits: u32) -> Option<Table> {
        let w = 1u128 << wbits;
        let g_num = |m: u128| -> Option<u128> {
            m.checked_mul(m)?
                .checked_mul(a)?
                .checked_add(b.checked_mul(m)?)
        };
        // f(j w) by the recurrence f((j+1) w) = f(j w) rho_a^(2j+1) rho_b, rho_a = exp(-a w^2 / c),
        // rho_b = exp(-b w / c), in interval arithmetic on multiples of 2^-126 (a few thousand
        // roundings: the bounds stay within 2^-110); body blocks until a block's weight is
        // below 2^-26 of the mass so far, plus f at the end of the last block
        let unit = |g: u128| -> Option<(u128, u128)> {
            Some(if g == 0 {
                (1 << 126, 1 << 126)
            } else {
                exp_bounds_at(g, c, 126)
            })
        };
        let rho_a = unit(a.checked_mul(w)?.checked_mul(w)?)?;
        let rho_b = unit(b.checked_mul(w)?)?;
        let rho_a2 = mul_iv(rho_a, rho_a);
        let (mut f_lo, mut f_hi) = (Vec::new(), Vec::new());
        let (mut f, mut s) = ((1u128 << 126, 1u128 << 126), rho_a);
        let mut total = 0u128;
        loop {
            f_lo.push(f.0 >> 63);
            f_hi.push((f.1 >> 63) + 1);
            f = mul_iv(mul_iv(f, s), rho_b);
            s = mul_iv(s, rho_a2);
            total += f_hi[f_hi.len() - 1];
            if (f_hi[f_hi.len() - 1] << 26) < total || f_lo.len() >= 1 << 13 {
                break;
            }
        }
        let nbody = f_lo.len() as u128;
        let jw = nbody * w;
        let f_end = (f.0 >> 63, (f.1 >> 63) + 1);
        // tail blocks: W_t g'(J w) >= ln 2 (0.694 > ln 2), g'(J w) = (2 a J w + b) / c
        let slope = a.checked_mul(2 * jw)?.checked_add(b)?;
        let mut tail_bits = 0u32;
        while (slope << tail_bits).checked_mul(1000)? < 694 * c {
            tail_bits += 1;
        }
        let ft_hi = f_end.1;
        g_num(jw)?;
        // the fast comparison's delta: prod = r (a (m + j w) + b) < 2^64 for every proposal
        let prod_max = (w - 1).checked_mul(a.checked_mul(2 * jw)?.checked_add(b)?)?;
        if prod_max >= 1 << 64 || c >= 1 << 64 {
            return None;
        }
        // alias columns: outcomes 0..J body, J tail, J + 1 rejection
        let outcomes = nbody as usize + 2;
        let col_bits = (outcomes as u64).next_power_of_two().trailing_zeros();
        let cols = 1usize << col_bits;
        let units = (cols as u128) << COL_BITS;
        if tail_bits > 62 || tail_bits > wbits + FX {
            return None;
        }
        // q_T >= 2 f(J w) Lambda W_t / w, i.e. ceil(f_hi 2 Lambda / 2^(63 + wbits - tail_bits))
        let tail_shift = FX + wbits - tail_bits;
        let tail_q = |lambda: u128| -> Option<u128> {
            let x = ft_hi.checked_mul(lambda)?.checked_mul(2)?;
            Some(if tail_shift >= 128 {
                1
            } else {
                x.div_ceil(1 << tail_shift)
            })
        };
        let mut lambda = (units - outcomes as u128) * ONE / (total + 1);
        let q = loop {
            let mut q: Vec<u128> = f_hi
                .iter()
                .map(|&h| (h * lambda).div_ceil(ONE).max(1))
                .collect();
            q.push(tail_q(lambda)?.max(1));
            if q.iter().sum::<u128>() <= units {
                break q;
            }
            if lambda < 64 {
                return None;
            }
            lambda -= lambda / 64 + 1;
        };
        let mut weight: Vec<u128> = q.clone();
        weight.push(units - q.iter().sum::<u128>());
        weight.resize(cols, 0);
        let columns = alias_table(&weight);
        let c_lo: Vec<u64> = (0..nbody as usize)
            .map(|j| (f_lo[j] * lambda / q[j]) as u64)
            .collect();
        let c_hi: Vec<u64> = (0..nbody as usize)
            .map(|j| {
                let v = (f_hi[j] * lambda).div_ceil(q[j]);
                debug_assert!(v <= ONE);
                v.min(ONE) as u64
            })
            .collect();
        let c31 = c_lo
            .iter()
            .zip(&c_hi)
            .map(|(&l, &h)| ((l >> 32) as u32, ((h >> 32) + 1) as u32))
            .collect();
        // p over block j lies in [Lambda f((j+1) w) / q_j, c_j]: U < p when U's first 16 bits a
        // satisfy a + 1 <= floor(2^16 lower), U >= p when a >= ceil(2^16 upper)
        let quick = (0..nbody as usize)
            .map(|j| {
                let next = if j + 1 < nbody as usize {
                    f_lo[j + 1]
                } else {
                    f_end.0
                };
                let lo = ((next * lambda / q[j]) >> 47).min(0xffff) as u32;
                // stored minus one: a >= hi is a > hi - 1, and hi <= 2^16
                let hi = (c_hi[j] as u128 >> 47) as u32;
                lo | (hi.min(0xffff) << 16)
            })
            .collect();
        let rshift = 127 - c.leading_zeros();
        let rec = ((1u128 << (FX + rshift)) / c) as u64;
        Some(Table {
            a,
            b,
            c,
            wbits,
            nbody: nbody as u64,
            col_bits,
            columns,
            lambda,
            q,
            c_lo,
            c_hi,
            c31,
            quick,
            rec,
            rec_exact: c.is_power_of_two(),
            rshift,
            tail_bits,
            one_word: col_bits + COL_BITS + wbits + FIRST_BITS < 64,
        })
    }

    /// Probability that one proposal is accepted, from the weights (for tests and reports): the
    /// sum of f over the support times Lambda / (Q w) is what is accepted; here only the share of
    /// the proposals that fall in the body or the tail (the rest is the rejection outcome).
    pub fn used_weight(&self) -> f64 {
        let units = ((self.columns.len() as u128) << COL_BITS) as f64;
        self.q.iter().sum::<u128>() as f64 / units
    }

    /// One draw (see the section comment).
    #[inline]
    pub fn sample<R: RngCore + ?Sized>(&self, bits: &mut Bits<'_, R>) -> i128 {
        loop {
            // one fresh word per proposal when the fields fit (every lattice law): column,
            // threshold, offset in the block, the acceptance's first 16 bits and the sign
            let (col, thr, r, a16, negative) = if self.one_word {
                let w = bits.rng.next_u64();
                let r = (w >> (self.col_bits + COL_BITS)) & ((1u64 << self.wbits) - 1);
                let a16 = (w >> (self.col_bits + COL_BITS + self.wbits)) & 0xffff;
                (
                    w & ((1u64 << self.col_bits) - 1),
                    (w >> self.col_bits) & 0xffff,
                    r,
                    a16,
                    w >> 63 == 1,
                )
            } else {
                let col = bits.take64(self.col_bits);
                let thr = bits.take64(COL_BITS);
                let r = bits.take64(self.wbits);
                (col, thr, r, bits.take64(FIRST_BITS), bits.take64(1) == 1)
            };
            let packed = self.columns[col as usize];
            let o = if thr < (packed & 0x1_ffff) as u64 {
                col
            } else {
                (packed >> 17) as u64
            };
            let m = if o < self.nbody {
                let base = o << self.wbits;
                // the block's bracket of the acceptance probability decides unless U's first 16
                // bits straddle it (about 1/64 + 2^-16 of the proposals)
                let quick = self.quick[o as usize];
                let accept = if a16 < (quick & 0xffff) as u64 {
                    true
                } else if a16 > (quick >> 16) as u64 {
                    false
                } else {
                    self.accept_body(bits, o as usize, base, r, a16)
                };
                if !accept {
                    continue;
                }
                (base + r) as u128
            } else if o == self.nbody {
                match self.accept_tail(bits) {
                    Some(m) => m,
                    None => continue,
                }
            } else {
                continue;
            };
            if negative && m == 0 {
                continue;
            }
            return if negative { -(m as i128) } else { m as i128 };
        }
    }

    /// Bernoulli(c_j exp(-(g(m) - g(j w)))) for m = base + r in body block j, given U's first 16
    /// bits `a16` (the block's bracket did not decide).
    #[cold]
    #[inline(never)]
    fn accept_body<R: RngCore + ?Sized>(
        &self,
        bits: &mut Bits<'_, R>,
        j: usize,
        base: u64,
        r: u64,
        a16: u64,
    ) -> bool {
        // delta c = r (a (m + base) + b) = prod < 2^64 (checked when the table was built);
        // delta 2^63 lies in [d_lo, d_hi]
        let prod = r * (self.a as u64 * (2 * base + r) + self.b as u64);
        let raw = prod as u128 * self.rec as u128;
        let d_lo = raw >> self.rshift;
        let up = if self.rec_exact {
            raw
        } else {
            raw + prod as u128
        };
        let d_hi = (up + (1u128 << self.rshift) - 1) >> self.rshift;
        let (p_lo, p_hi) = if d_hi < ONE {
            // first a bracket of p in units of 2^-31 (u64 products), enough for 16 bits of U:
            // exp(-d) in [1 - d + d^2/2 - d^3/6, 1 - d + d^2/2] for 0 <= d <= 1, both decreasing
            let (l, h) = ((d_lo >> 32) as u64, (d_hi >> 32) as u64 + 1);
            let (l2, h2) = (l * l, h * h);
            let cube = ((((h2 >> 31) + 1) * h) >> 31) / 6 + 1;
            let e_lo = ((1u64 << 31) + (h2 >> 32)).saturating_sub(h + cube);
            let e_hi = (1u64 << 31) - l + (l2 >> 32) + 1;
            let (c_lo, c_hi) = self.c31[j];
            let (q_lo, q_hi) = ((c_lo as u64 * e_lo) >> 31, ((c_hi as u64 * e_hi) >> 31) + 1);
            let rest = 31 - FIRST_BITS;
            if (a16 + 1) << rest <= q_lo {
                return true;
            }
            if a16 << rest >= q_hi {
                return false;
            }
            // the same bracket in units of 2^-63
            let sq_hi = d_hi * d_hi;
            let cube = ((((((sq_hi >> FX) + 1) * d_hi) >> FX) as u64) / 6 + 1) as u128;
            let e_lo = (ONE + (sq_hi >> (FX + 1))).saturating_sub(d_hi + cube);
            let e_hi = ONE - d_lo + ((d_lo * d_lo) >> (FX + 1)) + 1;
            (
                (self.c_lo[j] as u128 * e_lo) >> FX,
                ((self.c_hi[j] as u128 * e_hi) >> FX) + 1,
            )
        } else {
            (0, ONE)
        };
        let rest = FX - FIRST_BITS;
        let a = ((a16 as u128) << rest) | bits.take64(rest) as u128;
        if a < p_lo {
            return true;
        }
        if a >= p_hi {
            return false;
        }
        match self.g_num((base + r) as u128) {
            Some(gn) => bits.exact_less(a, FX, self.lambda, self.q[j], gn, self.c),
            None => false,
        }
    }

    /// A tail proposal m = J w + i W_t + r (P(i) = 2^-(i+1)) and its exact acceptance; None when
    /// rejected. Proposals whose exponent overflows u128 (m beyond 2^60, probability below
    /// exp(-2^58) under any law the tables hold) are rejected.
    fn accept_tail<R: RngCore + ?Sized>(&self, bits: &mut Bits<'_, R>) -> Option<u128> {
        let mut i = 0u32;
        while bits.take64(1) == 0 {
            i += 1;
        }
        let r = bits.take64(self.tail_bits.min(63)) as u128;
        let start = (self.nbody as u128) << self.wbits;
        let m = start
            .checked_add((i as u128).checked_mul(1u128 << self.tail_bits)?)?
            .checked_add(r)?;
        if i >= 64 || m >= 1 << 60 {
            return None;
        }
        let rn = self
            .lambda
            .checked_mul(2u128 << i)?
            .checked_mul(1u128 << self.tail_bits)?;
        let rd = self.q[self.nbody as usize].checked_mul(1u128 << self.wbits)?;
        let gn = self.g_num(m)?;
        bits.exact_less(0, 0, rn, rd, gn, self.c).then_some(m)
    }
}

/// Vose's alias table with integer weights summing to `cols * 2^COL_BITS` (at most 2^15
/// outcomes): column k, packed as `prob | alias << 17`, keeps its own outcome when a
/// COL_BITS-bit uniform is below `prob`, else gives `alias`; every
/// outcome's probability is exactly its weight over the total.
fn alias_table(weight: &[u128]) -> Vec<u32> {
    let full = 1u128 << COL_BITS;
    let mut w = weight.to_vec();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..w.len()).partition(|&k| w[k] < full);
    let mut columns: Vec<u32> = (0..w.len() as u32)
        .map(|k| full as u32 | (k << 17))
        .collect();
    while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
        columns[s] = w[s] as u32 | ((l as u32) << 17);
        w[l] -= full - w[s];
        if w[l] < full {
            large.pop();
            small.push(l);
        }
    }
    columns
}

impl<R: RngCore + ?Sized> Bits<'_, R> {
    /// U < (rn / rd) exp(-gn / gd), exactly, for a uniform U whose first `m` bits are `a`
    /// (U in [a, a + 1) 2^-m): the Taylor partial sums bound exp(-g) from both sides and U gets
    /// 32 more bits after every upper bound, until one side is certain (a.s. finite).
    fn exact_less(&mut self, a: u128, m: u32, rn: u128, rd: u128, gn: u128, gd: u128) -> bool {
        #[cfg(test)]
        EXACT_CALLS.with(|c| c.set(c.get() + 1));
        let mut a = Big::from_u128(a);
        let mut m = m as u64;
        let (rn, rd, one) = (Big::from_u128(rn), Big::from_u128(rd), Big::from_u128(1));
        let mut s = ExpSeries::new(gn, gd);
        loop {
            if !s.step() {
                continue;
            }
            // p lies above (odd n) or below (even n) r (even - odd) / q:
            // compare (U's end) rd q + 2^m rn odd with 2^m rn even
            let rhs = rn.mul(&s.even).shl(m);
            let odd = rn.mul(&s.odd).shl(m);
            let base = rd.mul(&s.q);
            if s.n % 2 == 1 {
                if a.add(&one).mul(&base).add(&odd).cmp_big(&rhs) != Ordering::Greater {
                    return true;
                }
            } else {
                if a.mul(&base).add(&odd).cmp_big(&rhs) != Ordering::Less {
                    return false;
                }
                a = a.shl(32).add(&Big::from_u128(self.take(32)));
                m += 32;
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha12Rng;

    #[test]
    fn uniform_below_is_uniform_on_small_range() {
        let mut rng = ChaCha12Rng::from_seed([1; 32]);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[uniform_below(&mut rng, 6) as usize] += 1;
        }
        for c in counts {
            assert!((c as f64 - 10_000.0).abs() < 5.0 * 91.3, "{counts:?}");
        }
        assert_eq!(uniform_below(&mut rng, 1), 0);
        let big = (1u128 << 100) + 7;
        for _ in 0..100 {
            assert!(uniform_below(&mut rng, big) < big);
        }
    }

    #[test]
    fn bernoulli_exp_frequencies() {
        let mut rng = ChaCha12Rng::from_seed([2; 32]);
        for (num, den) in [(0u128, 1u128), (1, 3), (1, 1), (5, 2), (7, 3)] {
            let n = 200_000;
            let hits = (0..n).filter(|_| bernoulli_exp(&mut rng, num, den)).count() as f64;
            let p = (-(num as f64) / den as f64).exp();
            let sd = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
            assert!((hits / n as f64 - p).abs() < 5.0 * sd, "exp(-{num}/{den})");
        }
    }

    #[test]
    fn floor_sqrt_exact() {
        for q in 0u128..5000 {
            let a = floor_sqrt_ratio(q, 1);
            assert!(a * a <= q && (a + 1) * (a + 1) > q);
        }
        assert_eq!(floor_sqrt_ratio(1 << 40, 1), 1 << 20);
        assert_eq!(floor_sqrt_ratio(9, 4), 1);
        assert_eq!(floor_sqrt_ratio(2 << 40, 2), 1 << 20);
    }

    #[test]
    fn discrete_laplace_moments() {
        let mut rng = ChaCha12Rng::from_seed([3; 32]);
        let t = 5u128;
        let n = 100_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| discrete_laplace(&mut rng, t) as f64)
            .collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| x * x).sum::<f64>() / n as f64;
        let want = discrete_laplace_variance(5.0);
        assert!(mean.abs() < 5.0 * (want / n as f64).sqrt());
        assert!((var / want - 1.0).abs() < 0.03, "var {var} want {want}");
    }

    #[test]
    fn discrete_gaussian_moments() {
        let mut rng = ChaCha12Rng::from_seed([4; 32]);
        for (num, den) in [(1u128 << 20, 1u128), (9, 4), (2, 1)] {
            let n = 100_000;
            let xs: Vec<f64> = (0..n)
                .map(|_| discrete_gaussian(&mut rng, num, den) as f64)
                .collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| x * x).sum::<f64>() / n as f64;
            let want = discrete_gaussian_variance(num as f64 / den as f64);
            assert!(mean.abs() < 5.0 * (want / n as f64).sqrt());
            assert!(
                (var / want - 1.0).abs() < 0.03,
                "sigma^2 {num}/{den}: var {var} want {want}"
            );
        }
    }
}

#[cfg(test)]
mod exact_parts {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha12Rng;

    #[test]
    fn big_arithmetic() {
        let x = Big::from_u128(u128::MAX);
        let y = Big::from_u128((1u128 << 100) + 12345);
        let p = x.mul(&y);
        // (2^128 - 1) y = y 2^128 - y
        assert_eq!(p, y.shl(128).sub(&y));
        assert_eq!(p.add(&y), y.shl(128));
        assert_eq!(div_floor(&p, &x.mul(&x)), 0);
        assert_eq!(
            div_floor(&Big::from_u128(u128::MAX >> 2).mul(&y), &y),
            u128::MAX >> 2
        );
        assert_eq!(div_floor(&Big::from_u128(1000), &Big::from_u128(7)), 142);
        assert_eq!(x.cmp_big(&y), Ordering::Greater);
        assert_eq!(Big::from_u128(0).bits(), 0);
        assert_eq!(y.bits(), 101);
    }

    #[test]
    fn exp_bounds_bracket_known_values() {
        // floor(2^63 / e) and floor(2^63 exp(-7/3)), from 60-digit decimal arithmetic
        let (lo, hi) = exp_bounds(1, 1);
        assert!(lo <= 3393088950634442637 && 3393088950634442637 < hi && hi - lo <= 2);
        let (lo, hi) = exp_bounds(7, 3);
        assert!(lo <= 894408536759333588 && 894408536759333588 < hi && hi - lo <= 2);
        assert_eq!(exp_bounds(0, 5).0, ONE);
    }

    #[test]
    fn exact_comparison_frequency() {
        // Bernoulli((2/3) exp(-5/4)) through the exact comparison alone
        let mut rng = ChaCha12Rng::from_seed([5; 32]);
        let mut bits = Bits::new(&mut rng);
        let n = 40_000;
        let hits = (0..n).filter(|_| bits.exact_less(0, 0, 2, 3, 5, 4)).count() as f64;
        let p = 2.0 / 3.0 * (-1.25f64).exp();
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            (hits / n as f64 - p).abs() < 5.0 * sd,
            "{} vs {p}",
            hits / n as f64
        );
    }

    #[test]
    fn tables_cover_the_lattice_laws() {
        for k in [0u32, 3, 10, 20, 24] {
            let base = 1u128 << (2 * k);
            for (num, den) in [
                (base, 1u128),
                (4 * base, 2),
                (2 * base, 2),
                (4 * base, 4),
                (2 * base, 4),
                (2 * base, 64),
            ] {
                let t = Table::gaussian(num, den).expect("lattice law has a table");
                assert!(t.used_weight() > 0.99, "{num}/{den}: {}", t.used_weight());
                assert!(t.c_hi.iter().all(|&c| c as u128 <= ONE));
            }
            let t = Table::laplace(1 << k).expect("lattice law has a table");
            assert!(t.used_weight() > 0.99);
        }
        assert!(Table::gaussian(1 << 60, 1).is_none());
        assert!(Table::laplace(1 << 50).is_none());
    }
}

#[cfg(test)]
mod pmf {
    //! Goodness of fit of the exact samplers: chi-square of the pmf over at least 10^6 draws at
    //! three scales (a 2^24-scale lattice among them), and the variance. Run with
    //! `cargo test --release -- --ignored --nocapture` (seconds in release).
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha12Rng;

    /// ln Gamma (Lanczos, g = 7, n = 9).
    fn ln_gamma(x: f64) -> f64 {
        const C: [f64; 9] = [
            0.999_999_999_999_809_9,
            676.520_368_121_885_1,
            -1_259.139_216_722_402_8,
            771.323_428_777_653_1,
            -176.615_029_162_140_6,
            12.507_343_278_686_905,
            -0.138_571_095_265_720_12,
            9.984_369_578_019_572e-6,
            1.505_632_735_149_311_6e-7,
        ];
        let x = x - 1.0;
        let mut a = C[0];
        let t = x + 7.5;
        for (i, c) in C.iter().enumerate().skip(1) {
            a += c / (x + i as f64);
        }
        0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
    }

    /// Upper regularized incomplete gamma Q(s, x) (series / continued fraction).
    fn gamma_q(s: f64, x: f64) -> f64 {
        if x < s + 1.0 {
            let (mut sum, mut term, mut k) = (1.0 / s, 1.0 / s, s);
            for _ in 0..10_000 {
                k += 1.0;
                term *= x / k;
                sum += term;
                if term < sum * 1e-16 {
                    break;
                }
            }
            1.0 - (sum.ln() - x + s * x.ln() - ln_gamma(s)).exp()
        } else {
            let (mut b, mut c, mut d) = (x + 1.0 - s, 1e300, 1.0 / (x + 1.0 - s));
            let mut h = d;
            for i in 1..10_000 {
                let an = -(i as f64) * (i as f64 - s);
                b += 2.0;
                d = an * d + b;
                d = 1.0 / if d.abs() < 1e-300 { 1e-300 } else { d };
                c = b + an / c;
                if c.abs() < 1e-300 {
                    c = 1e-300;
                }
                let del = d * c;
                h *= del;
                if (del - 1.0).abs() < 1e-16 {
                    break;
                }
            }
            (-x + s * x.ln() - ln_gamma(s)).exp() * h
        }
    }

    /// Bins of the integers: cut points c_0 < c_1 < ... (bin i = [c_i, c_{i+1}), the first and
    /// last open to infinity) with their probabilities.
    struct Bins {
        cuts: Vec<i128>,
        probs: Vec<f64>,
    }

    impl Bins {
        fn index(&self, y: i128) -> usize {
            self.cuts.partition_point(|&c| c <= y)
        }

        fn chi_square(&self, draws: &[i128]) -> (f64, usize, f64) {
            let mut counts = vec![0u64; self.probs.len()];
            for &y in draws {
                counts[self.index(y)] += 1;
            }
            let n = draws.len() as f64;
            let stat: f64 = counts
                .iter()
                .zip(&self.probs)
                .map(|(&c, &p)| (c as f64 - n * p).powi(2) / (n * p))
                .sum();
            let dof = self.probs.len() - 1;
            (stat, dof, gamma_q(dof as f64 / 2.0, stat / 2.0))
        }
    }

    /// Bins for N_Z(0, s2): `nb` equal-width bins over [-6 sigma, 6 sigma] plus two tails;
    /// probabilities from exact sums (a multiplicative recurrence for exp(-y^2 / 2 s2), relative
    /// error ~ 1e-8).
    fn gaussian_bins(s2: f64, nb: i128) -> Bins {
        let sigma = s2.sqrt();
        let reach = (6.0 * sigma).ceil() as i128;
        let width = ((2 * reach) / nb).max(1);
        let lo = -(width * nb) / 2;
        let cuts: Vec<i128> = (0..=nb).map(|i| lo + i * width).collect();
        // H(k) = sum_{0 <= y < k} exp(-y^2 / 2 s2) at the k the cut points need
        let key = |c: i128| if c > 0 { c } else { 1 - c };
        let wanted: std::collections::HashSet<i128> = cuts.iter().map(|&c| key(c)).collect();
        let far = (40.0 * sigma).ceil() as i128 + 10;
        let kappa = (-1.0 / s2).exp();
        let (mut e, mut ratio, mut cum) = (1.0f64, (-0.5 / s2).exp(), 0.0f64);
        let mut h = std::collections::HashMap::new();
        for y in 0..=far {
            if wanted.contains(&y) {
                h.insert(y, cum);
            }
            cum += e;
            e *= ratio;
            ratio *= kappa;
        }
        let total = 2.0 * cum - 1.0;
        // P(Y < c) = (cum + H(c) - 1) / total for c > 0, (cum - H(1 - c)) / total for c <= 0
        let below = |c: i128| {
            if c > 0 {
                (cum + h[&c] - 1.0) / total
            } else {
                (cum - h[&(1 - c)]) / total
            }
        };
        let mut probs = Vec::new();
        let mut prev = 0.0;
        for &c in &cuts {
            let b = below(c);
            probs.push(b - prev);
            prev = b;
        }
        probs.push(1.0 - prev);
        Bins { cuts, probs }
    }

    /// Bins for the discrete Laplace with scale t (closed-form geometric sums).
    fn laplace_bins(t: f64, nb: i128) -> Bins {
        let q = (-1.0 / t).exp();
        let one_q = -(-1.0 / t).exp_m1();
        let reach = (12.0 * t).ceil() as i128;
        let width = ((2 * reach) / nb).max(1);
        let lo = -(width * nb) / 2;
        let cuts: Vec<i128> = (0..=nb).map(|i| lo + i * width).collect();
        let z = (1.0 + q) / one_q;
        // P(Y >= k) for k >= 1: q^k / (1 - q) / z
        let upper = |k: i128| q.powf(k as f64) / one_q / z;
        let below = |c: i128| {
            if c <= 0 {
                upper(-c + 1)
            } else {
                1.0 - upper(c)
            }
        };
        let mut probs = Vec::new();
        let mut prev = 0.0;
        for &c in &cuts {
            let b = below(c);
            probs.push(b - prev);
            prev = b;
        }
        probs.push(1.0 - prev);
        Bins { cuts, probs }
    }

    fn report(what: &str, draws: &[i128], bins: &Bins, want_var: f64) {
        let (stat, dof, p) = bins.chi_square(draws);
        let n = draws.len() as f64;
        let mean = draws.iter().map(|&y| y as f64).sum::<f64>() / n;
        let var = draws.iter().map(|&y| (y as f64) * (y as f64)).sum::<f64>() / n;
        let m4 = draws.iter().map(|&y| (y as f64).powi(4)).sum::<f64>() / n;
        let z_var = (var - want_var) / ((m4 - var * var) / n).sqrt();
        let z_mean = mean / (want_var / n).sqrt();
        println!(
            "{what}: {n} draws, chi2 {stat:.1} on {dof} dof, p = {p:.3}; variance {var:.6e} vs {want_var:.6e} (z = {z_var:.2}), mean z = {z_mean:.2}"
        );
        assert!(p > 1e-4, "{what}: chi-square p = {p}");
        assert!(
            z_var.abs() < 5.0 && z_mean.abs() < 5.0,
            "{what}: z_var {z_var}, z_mean {z_mean}"
        );
    }

    #[test]
    #[ignore]
    fn discrete_gaussian_pmf_chi_square() {
        let mut rng = ChaCha12Rng::from_seed([11; 32]);
        let n = 2_000_000;
        // sigma^2 = 2 (single integers), 2^20 (sigma 1024), 2^48 (sigma 2^24: the vector lattice
        // at 24 grid bits) and 2^49 (sigma sqrt(2) 2^24: the matrix diagonal at divisor sqrt 2)
        for (num, den, nb) in [
            (2u128, 1u128, 0i128),
            (1 << 20, 1, 200),
            (1 << 48, 1, 200),
            (1 << 50, 2, 200),
        ] {
            let s2 = num as f64 / den as f64;
            let mut bits = Bits::new(&mut rng);
            let draws: Vec<i128> = (0..n).map(|_| bits.discrete_gaussian(num, den)).collect();
            let bins = if nb == 0 {
                // single integers -6..=6, the tails pooled
                let pmf = |y: i128| (-((y * y) as f64) / (2.0 * s2)).exp();
                let z: f64 = (-60..=60).map(pmf).sum();
                let mut probs = vec![(-60..-6).map(pmf).sum::<f64>() / z];
                probs.extend((-6..=6).map(|y| pmf(y) / z));
                probs.push((7..=60).map(pmf).sum::<f64>() / z);
                Bins {
                    cuts: (-6..=7).collect(),
                    probs,
                }
            } else {
                gaussian_bins(s2, nb)
            };
            report(
                &format!("N_Z(0, {num}/{den})"),
                &draws,
                &bins,
                discrete_gaussian_variance(s2),
            );
        }
    }

    #[test]
    #[ignore]
    fn discrete_laplace_pmf_chi_square() {
        let mut rng = ChaCha12Rng::from_seed([12; 32]);
        let n = 2_000_000;
        for (t, nb) in [(1u128, 24i128), (1 << 10, 200), (1 << 24, 200)] {
            let mut bits = Bits::new(&mut rng);
            let draws: Vec<i128> = (0..n).map(|_| bits.discrete_laplace(t)).collect();
            let bins = laplace_bins(t as f64, nb);
            report(
                &format!("Lap_Z({t})"),
                &draws,
                &bins,
                discrete_laplace_variance(t as f64),
            );
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Exact (big-integer) comparisons made on this thread (tests: how rare the slow path is).
    static EXACT_CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod timing {
    //! Per-draw cost and random bits of the table sampler against the reference algorithm (CKS),
    //! in one run: `cargo test --release -- --ignored --nocapture time_`.
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha12Rng;

    /// Counts the 64-bit words drawn.
    struct Counting(ChaCha12Rng, u64);

    impl RngCore for Counting {
        fn next_u32(&mut self) -> u32 {
            self.1 += 1;
            self.0.next_u32()
        }
        fn next_u64(&mut self) -> u64 {
            self.1 += 1;
            self.0.next_u64()
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            self.1 += dst.len().div_ceil(8) as u64;
            self.0.fill_bytes(dst)
        }
    }

    /// Best of 5 rounds of `n` draws (the machine is shared): ns and bits per draw.
    fn time(what: &str, n: usize, draw: &mut dyn FnMut(&mut Bits<'_, Counting>) -> i128) {
        let mut rng = Counting(ChaCha12Rng::from_seed([7; 32]), 0);
        draw(&mut Bits::new(&mut rng)); // the law's table is built outside the timing
        rng.1 = 0;
        let exact0 = EXACT_CALLS.with(|c| c.get());
        let mut best = f64::INFINITY;
        let mut acc = 0i128;
        for _ in 0..5 {
            let t0 = std::time::Instant::now();
            let mut bits = Bits::new(&mut rng);
            for _ in 0..n {
                acc = acc.wrapping_add(draw(&mut bits));
            }
            best = best.min(t0.elapsed().as_nanos() as f64 / n as f64);
        }
        let exact = EXACT_CALLS.with(|c| c.get()) - exact0;
        println!(
            "{what:32} {best:7.1} ns/draw {:7.1} bits/draw  exact comparisons {:.1e}/draw ({acc})",
            64.0 * rng.1 as f64 / (5 * n) as f64,
            exact as f64 / (5 * n) as f64
        );
    }

    #[test]
    #[ignore]
    fn time_samplers() {
        for (num, den) in [(1u128 << 48, 1u128), (1u128 << 50, 2)] {
            let t0 = std::time::Instant::now();
            let t = Table::gaussian(num, den).unwrap();
            println!(
                "table build N_Z(0, {num}/{den}): {:.2} ms, {} blocks",
                t0.elapsed().as_secs_f64() * 1e3,
                t.nbody
            );
        }
        let t0 = std::time::Instant::now();
        let t = Table::laplace(1 << 24).unwrap();
        println!(
            "table build Lap_Z(2^24): {:.2} ms, {} blocks",
            t0.elapsed().as_secs_f64() * 1e3,
            t.nbody
        );
        let n = 1_000_000;
        let mut rng = ChaCha12Rng::from_seed([8; 32]);
        let (mut best, mut s) = (f64::INFINITY, 0.0);
        for _ in 0..5 {
            let t0 = std::time::Instant::now();
            for _ in 0..n {
                let z: f64 =
                    rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
                s += z;
            }
            best = best.min(t0.elapsed().as_nanos() as f64 / n as f64);
        }
        println!(
            "{:32} {best:7.1} ns/draw ({s:.1})",
            "float N(0,1) (Ziggurat)"
        );
        for (num, den) in [
            (1u128 << 48, 1u128),
            (1u128 << 50, 2),
            (1u128 << 40, 1),
            (2, 1),
        ] {
            time(&format!("table  N_Z(0, {num}/{den})"), n, &mut |b| {
                b.discrete_gaussian(num, den)
            });
            time(&format!("CKS    N_Z(0, {num}/{den})"), n / 4, &mut |b| {
                b.discrete_gaussian_cks(num, den)
            });
        }
        let tab = Rc::new(Table::gaussian(1 << 48, 1).unwrap());
        time("table, no lookup, N_Z(0, 2^48)", n, &mut |b| tab.sample(b));
        for t in [1u128 << 24, 1 << 20, 1] {
            time(&format!("table  Lap_Z({t})"), n, &mut |b| {
                b.discrete_laplace(t)
            });
            time(&format!("CKS    Lap_Z({t})"), n / 4, &mut |b| {
                b.discrete_laplace_cks(t)
            });
        }
    }
}
