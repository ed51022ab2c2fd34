//! The tie draws of a call of `group_max` whose entries all tie: the words of a block of groups
//! read ahead in one copy, each draw one word at a known place (`tied_block`), and rand's single
//! draw from a u32 range written out (`draw_is_zero`).

use rand::RngCore;

/// The words of a block's draws read ahead into a buffer, then the generator's (whose stream
/// continues right after them).
struct ReadAhead<'a, R: RngCore + ?Sized> {
    words: &'a [u32],
    next: usize,
    rng: &'a mut R,
}

impl<R: RngCore + ?Sized> RngCore for ReadAhead<'_, R> {
    #[inline(always)]
    fn next_u32(&mut self) -> u32 {
        let w = match self.words.get(self.next) {
            Some(&w) => w,
            None => self.rng.next_u32(),
        };
        self.next += 1;
        w
    }
    fn next_u64(&mut self) -> u64 {
        rand::rand_core::impls::next_u64_via_u32(self)
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        rand::rand_core::impls::fill_bytes_via_next(self, dst)
    }
}

/// [`scan_groups`] on a block of groups whose entries all equal their group's first (what clipped
/// Q values give: every action at H): each group draws for its 2nd, ..., n-th tie in order, so the
/// block's words are known in advance: they are read in one copy (`Rng::fill`, whole words in
/// stream order, the same words next_u32 gives), each draw one word at a fixed place; when a word
/// falls in its draw's biased zone (which takes one more), draw by draw, reading on from the
/// generator. The same words, actions and maxima; false (nothing drawn) when the block's draws
/// exceed the buffer.
pub(super) fn tied_block<R: RngCore + ?Sized>(
    block: &[f64],
    n_actions: usize,
    rng: &mut R,
    vmax: &mut [f64],
    argmax: &mut [usize],
) -> bool {
    let groups = vmax.len().min(argmax.len());
    let need = groups * (n_actions - 1);
    let mut buf = [0u32; 64];
    if need > buf.len() || block.len() != groups * n_actions {
        return false;
    }
    if groups == 0 {
        return true;
    }
    rand::Rng::fill(rng, &mut buf[..need]);
    let per = n_actions - 1;
    // group g's draw for its (i + 1)-th tie (rank i, range n = i + 1) reads word g (A - 1) + i - 1
    // unless an earlier word fell in its draw's biased zone (low word of w n above 2^32 - n: a few
    // words in 2^32), which the pass notes; rank by rank over the groups, a draw is 0 when the
    // high word of w n is (w <= (2^32 - 1) / n), and the last rank drawn 0 is the group's choice
    let mut best = [0u8; 64];
    let (words, best_g) = (&buf[..need], &mut best[..groups]);
    // the common action counts with the ranks unrolled (the same arithmetic)
    let zone = match per {
        1 => choices::<1>(words, best_g),
        2 => choices::<2>(words, best_g),
        3 => choices::<3>(words, best_g),
        4 => choices::<4>(words, best_g),
        5 => choices::<5>(words, best_g),
        _ => {
            let mut zone = false;
            for (i, n) in (1..=per as u8).zip(2u64..) {
                for (g, b) in best_g.iter_mut().enumerate() {
                    let m = u64::from(words[g * per + usize::from(i) - 1]) * n;
                    zone |= m as u32 > (n as u32).wrapping_neg();
                    // the choice by a mask, not a branch (the draw is unpredictable)
                    let take = 0u8.wrapping_sub(u8::from(m >> 32 == 0));
                    *b = (i & take) | (*b & !take);
                }
            }
            zone
        }
    };
    let groups = block
        .chunks_exact(n_actions)
        .zip(vmax.iter_mut())
        .zip(argmax.iter_mut());
    for (((row, v), arg), &b) in groups.zip(&best) {
        *v = row[usize::from(b)];
        *arg = usize::from(b);
    }
    if zone {
        // again, draw by draw, reading on from the generator after the buffer
        let mut words = ReadAhead {
            words: &buf[..need],
            next: 0,
            rng,
        };
        let groups = block.chunks_exact(n_actions).zip(vmax).zip(argmax);
        for ((row, v), arg) in groups {
            let mut best = 0;
            for (a, ties) in (1..n_actions).zip(2u32..) {
                let take = draw_is_zero(&mut words, ties);
                best = if take { a } else { best };
            }
            *v = row[best];
            *arg = best;
        }
    }
    true
}

/// [`tied_block`]'s choices with `PER` = A - 1 words a group (the ranks unrolled): per group the
/// last rank whose word's draw is 0, by a mask; whether a word fell in its draw's biased zone.
#[inline(always)]
fn choices<const PER: usize>(words: &[u32], best: &mut [u8]) -> bool {
    let mut zone = false;
    for (ws, b) in words.chunks_exact(PER).zip(best.iter_mut()) {
        let mut choice = 0u8;
        for (i, &w) in ws.iter().enumerate() {
            let n = i as u64 + 2;
            let m = u64::from(w) * n;
            zone |= m as u32 > (n as u32).wrapping_neg();
            let take = 0u8.wrapping_sub(u8::from(m >> 32 == 0));
            choice = ((i as u8 + 1) & take) | (choice & !take);
        }
        *b = choice;
    }
    zone
}

/// `rng.random_range(0..n) == 0` for n >= 1, the same words drawn: rand 0.9's single draw from a
/// u32 range (`UniformInt::sample_single_inclusive`, Lemire's widening multiply): the high word of
/// one u32 times n is the result, plus one when the low word falls in the biased zone (above
/// 2^32 - n) and adding the high word of a second u32 times n overflows it (tested against
/// `random_range` on scripted words, the zone's included).
#[inline(always)]
pub(super) fn draw_is_zero<R: RngCore + ?Sized>(rng: &mut R, n: u32) -> bool {
    let m = u64::from(rng.next_u32()) * u64::from(n);
    let (hi, lo) = ((m >> 32) as u32, m as u32);
    if lo > n.wrapping_neg() {
        let hi2 = ((u64::from(rng.next_u32()) * u64::from(n)) >> 32) as u32;
        return hi == 0 && lo.checked_add(hi2).is_some();
    }
    hi == 0
}
