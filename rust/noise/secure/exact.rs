//! Exact arithmetic of the samplers' rare slow path: unsigned big integers, certified bounds of
//! exp(-x) from its Taylor partial sums, interval products on multiples of 2^-126, and the exact
//! comparison of a uniform with `(rn / rd) exp(-gn / gd)`.

use std::cmp::Ordering;

use rand::RngCore;

use super::Bits;

/// Fixed-point unit of the acceptance bounds: 2^63.
pub(super) const FX: u32 = 63;
pub(super) const ONE: u128 = 1 << FX;

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
pub(super) fn exp_bounds_at(gn: u128, gd: u128, p: u32) -> (u128, u128) {
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
pub(super) fn mul_iv(x: (u128, u128), y: (u128, u128)) -> (u128, u128) {
    (mul126(x.0, y.0).0, mul126(x.1, y.1).1)
}

#[cfg(test)]
thread_local! {
    /// Exact (big-integer) comparisons made on this thread (tests: how rare the slow path is).
    pub(super) static EXACT_CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl<R: RngCore + ?Sized> Bits<'_, R> {
    /// U < (rn / rd) exp(-gn / gd), exactly, for a uniform U whose first `m` bits are `a`
    /// (U in [a, a + 1) 2^-m): the Taylor partial sums bound exp(-g) from both sides and U gets
    /// 32 more bits after every upper bound, until one side is certain (a.s. finite).
    pub(super) fn exact_less(
        &mut self,
        a: u128,
        m: u32,
        rn: u128,
        rd: u128,
        gn: u128,
        gd: u128,
    ) -> bool {
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

#[cfg(test)]
mod tests {
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
}
