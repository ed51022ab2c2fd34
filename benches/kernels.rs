//! Criterion benches of the three core kernels at d in {5, 16, 64, 200}, n in {100, 10000}
//! (21 of the 24 pairs: `sherman_morrison_batch` skips d200/10000, `tree_push_release`
//! d64/10000 and d200/10000, each ~0.1-1.5 s per iteration).
//! Run with `cargo bench`; the Rust-vs-numpy ratios come from `python benches/compare.py`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

use _core::continual::TreeAggregator;
use _core::kernels::qeval::{group_max, OptimisticQ, TieBreak};
use _core::kernels::rank_one::ShermanMorrison;
use _core::noise::{NodeNoise, NodeShape};

const DIMS: [usize; 4] = [5, 16, 64, 200];
const SIZES: [usize; 2] = [100, 10_000];

fn random(n: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    (0..n).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect()
}

fn spd_inverse(d: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let mut sm = ShermanMorrison::new(d, 1.0, 1024).unwrap();
    for _ in 0..(2 * d) {
        let x: Vec<f64> = random(d, rng)
            .iter()
            .map(|v| v / (d as f64).sqrt())
            .collect();
        sm.update(&x).unwrap();
    }
    sm.inverse().to_vec()
}

fn bench_q(c: &mut Criterion) {
    let mut g = c.benchmark_group("optimistic_q_and_argmax");
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    for &d in &DIMS {
        for &n in &SIZES {
            let phi = random(n * d, &mut rng);
            let w = random(d, &mut rng);
            let inv = spd_inverse(d, &mut rng);
            let q = OptimisticQ {
                d,
                w: &w,
                inv: &inv,
                beta: 1.0,
                lower: 0.0,
                upper: 10.0,
            };
            let mut out = vec![0.0; n];
            let a = 10;
            let mut vmax = vec![0.0; n / a];
            let mut arg = vec![0usize; n / a];
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(format!("d{d}"), n), &n, |b, _| {
                b.iter(|| {
                    q.evaluate(black_box(&phi), None, &mut out).unwrap();
                    group_max(&out, a, TieBreak::Random(7), &mut vmax, &mut arg).unwrap();
                })
            });
        }
    }
    g.finish();
}

fn bench_sherman_morrison(c: &mut Criterion) {
    let mut g = c.benchmark_group("sherman_morrison_batch");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for &d in &DIMS {
        for &n in &SIZES {
            if d == 200 && n == 10_000 {
                continue; // 0.4 G flop per iteration: too slow to sample usefully
            }
            let xs: Vec<f64> = random(n * d, &mut rng)
                .iter()
                .map(|v| v / (d as f64).sqrt())
                .collect();
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(format!("d{d}"), n), &n, |b, _| {
                b.iter(|| {
                    let mut sm = ShermanMorrison::new(d, 1.0, 1024).unwrap();
                    sm.update_batch(black_box(&xs)).unwrap();
                    sm.inverse()[0]
                })
            });
        }
    }
    g.finish();
}

fn bench_tree(c: &mut Criterion) {
    let mut g = c.benchmark_group("tree_push_release");
    for &d in &DIMS {
        for &n in &SIZES {
            // n leaves of d x d symmetric Gaussian matrices, releasing every prefix
            if d >= 64 && n == 10_000 {
                continue;
            }
            let leaf = vec![0.5; d * d];
            let mut out = vec![0.0; d * d];
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(format!("d{d}"), n), &n, |b, _| {
                b.iter(|| {
                    let mut tr = TreeAggregator::new(
                        NodeShape::SymMatrix {
                            d,
                            divisor: std::f64::consts::SQRT_2,
                        },
                        NodeNoise::Gaussian { sigma: 1.0 },
                        n as u64,
                        [3u8; 32],
                    )
                    .unwrap();
                    for _ in 0..n {
                        tr.push(&leaf).unwrap();
                        tr.release_into(&mut out).unwrap();
                    }
                    out[0]
                })
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(2)).warm_up_time(std::time::Duration::from_millis(300));
    targets = bench_q, bench_sherman_morrison, bench_tree
}
criterion_main!(benches);
