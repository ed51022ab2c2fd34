//! The fast exact sampler: a law's envelope table (alias-sampled blocks, an exact acceptance
//! test) and the per-thread cache of the tables [`Bits`] draws from.

use std::cell::RefCell;
use std::sync::Arc;

use rand::RngCore;

use super::exact::{exp_bounds_at, mul_iv, FX, ONE};
use super::{floor_sqrt_ratio, Bits};

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
// partial sums of exp(-g(m)) (big integers, no division: exact.rs) bound p from both sides ever
// more tightly while U gets more bits, until one side is certain. No floating point is involved.

/// Threshold bits of the alias columns: column probabilities are multiples of 2^-16.
const COL_BITS: u32 = 16;
/// Bits of U compared first (then `FX - FIRST_BITS` more before the exact comparison).
const FIRST_BITS: u32 = 16;

/// A law's parameters as the caller gave them -> its envelope table (None: outside the tables'
/// range, drawn by the reference algorithm).
pub(super) type Slot = Option<Slot1>;

/// One cached law: its key and its table.
pub(super) type Slot1 = ((u8, u128, u128), Option<Arc<Table>>);

/// One law's envelope (see the section comment).
#[derive(Debug)]
pub struct Table {
    a: u128,
    b: u128,
    c: u128,
    wbits: u32,
    /// J, the body blocks; outcome J is the tail, J + 1 a rejection (the unused weight).
    pub(super) nbody: u64,
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
        let (m, negative) = self.sample_parts(bits);
        if negative {
            -(m as i128)
        } else {
            m as i128
        }
    }

    /// [`Table::sample`] as an f64 (exact: |y| < 2^60 always, and below 2^53 for every draw
    /// that is not astronomically unlikely).
    #[inline(always)]
    pub fn sample_f64<R: RngCore + ?Sized>(&self, bits: &mut Bits<'_, R>) -> f64 {
        let (m, negative) = self.sample_parts(bits);
        // m < 2^60: the signed conversion is exact and cheaper than the unsigned one
        let y = m as i64 as f64;
        if negative {
            -y
        } else {
            y
        }
    }

    /// One draw as magnitude (< 2^60) and sign, never (0, negative).
    #[inline(always)]
    fn sample_parts<R: RngCore + ?Sized>(&self, bits: &mut Bits<'_, R>) -> (u64, bool) {
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
                base + r
            } else if o == self.nbody {
                match self.accept_tail(bits) {
                    Some(m) => m as u64,
                    None => continue,
                }
            } else {
                continue;
            };
            if negative && m == 0 {
                continue;
            }
            return (m, negative);
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
    #[cold]
    #[inline(never)]
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

/// The envelope table of a law (kind 1: discrete Laplace with scale `x`; kind 2: discrete
/// Gaussian with sigma^2 = x / y) from the thread's cache, or built and cached.
pub(super) fn cached_table(kind: u8, x: u128, y: u128) -> Option<Arc<Table>> {
    let key = (kind, x, y);
    TABLES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some((_, t)) = cache.iter().find(|(k, _)| *k == key) {
            return t.clone();
        }
        let t = match kind {
            1 => Table::laplace(x),
            _ => Table::gaussian(x, y),
        }
        .map(Arc::new);
        if cache.len() >= 64 {
            cache.remove(0);
        }
        cache.push((key, t.clone()));
        t
    })
}

impl<R: RngCore + ?Sized> Bits<'_, R> {
    /// The envelope table of a law (see [`cached_table`]), from the two slots first.
    pub(super) fn table(&mut self, kind: u8, x: u128, y: u128) -> Option<Arc<Table>> {
        let key = (kind, x, y);
        for s in self.slots.iter().flatten() {
            if s.0 == key {
                return s.1.clone();
            }
        }
        let tab = cached_table(kind, x, y);
        self.slots[1] = self.slots[0].take();
        self.slots[0] = Some((key, tab.clone()));
        tab
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
