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
//! Every random decision is a comparison of a uniform integer with a rational threshold; the
//! only transcendental, `exp(-x)` for rational `x`, enters through Bernoulli(exp(-x)) built from
//! Bernoulli(rational) coins (CKS Alg. 1). Arithmetic is on `u128`; a product that would
//! overflow only arises for |Y| beyond 2^40 noise standard deviations and is treated as the
//! (certain up to < 2^-1000) rejection it stands for.

use rand::RngCore;

/// Uniform integer in `[0, m)` (`m >= 1`) by rejection on the smallest enclosing power of two:
/// exactly uniform, at most two expected rounds.
pub fn uniform_below<R: RngCore + ?Sized>(rng: &mut R, m: u128) -> u128 {
    if m <= 1 {
        return 0;
    }
    let bits = 128 - (m - 1).leading_zeros();
    let mask = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    loop {
        let raw = if bits <= 64 {
            rng.next_u64() as u128
        } else {
            ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128
        };
        let x = raw & mask;
        if x < m {
            return x;
        }
    }
}

/// Bernoulli(num / den) for `0 <= num <= den`, `den >= 1`.
pub fn bernoulli_ratio<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    uniform_below(rng, den) < num
}

/// Bernoulli(exp(-gamma)) for `gamma = num / den` in `[0, 1]` (CKS Alg. 1, first branch): the
/// parity of the first K with a failed Bernoulli(gamma / K) coin.
fn bernoulli_exp_unit<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    let mut k: u128 = 1;
    // Once den * K overflows, gamma / K < 2^-64: the coin fails (up to that probability).
    while let Some(dk) = den.checked_mul(k) {
        if !bernoulli_ratio(rng, num, dk) {
            break;
        }
        k += 1;
    }
    k % 2 == 1
}

/// Bernoulli(exp(-num / den)) for any rational `num / den >= 0` (CKS Alg. 1): one
/// Bernoulli(exp(-1)) per unit of gamma, then the fractional part.
pub fn bernoulli_exp<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    debug_assert!(den > 0);
    let mut num = num;
    while num > den {
        if !bernoulli_exp_unit(rng, 1, 1) {
            return false;
        }
        num -= den;
    }
    bernoulli_exp_unit(rng, num, den)
}

/// Discrete Laplace with integer scale `t >= 1`: P(Y = y) proportional to exp(-|y| / t)
/// (CKS Alg. 2 with s = 1).
pub fn discrete_laplace<R: RngCore + ?Sized>(rng: &mut R, t: u128) -> i128 {
    let t = t.max(1);
    loop {
        let u = uniform_below(rng, t);
        if !bernoulli_exp(rng, u, t) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp(rng, 1, 1) {
            v += 1;
        }
        let x = match v.checked_mul(t).and_then(|tv| tv.checked_add(u)) {
            Some(x) if x <= i128::MAX as u128 => x,
            _ => continue,
        };
        let negative = rng.next_u32() & 1 == 1;
        if negative && x == 0 {
            continue; // keeps P(0) right: 0 would otherwise be counted twice
        }
        return if negative { -(x as i128) } else { x as i128 };
    }
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

/// Discrete Gaussian N_Z(0, sigma^2) with rational `sigma^2 = num / den > 0`: P(Y = y)
/// proportional to exp(-y^2 / (2 sigma^2)) (CKS Alg. 3: discrete Laplace proposal with
/// t = floor(sigma) + 1, accepted with probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))).
pub fn discrete_gaussian<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> i128 {
    let t = floor_sqrt_ratio(num, den) + 1;
    loop {
        let y = discrete_laplace(rng, t);
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
        if bernoulli_exp(rng, g_num, g_den) {
            return y;
        }
    }
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
