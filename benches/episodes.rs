//! Criterion benches of the episode engine's pieces (issue 12): a rollout and the exact policy
//! values on a RandomLinearMDP-sized model (H = 20, S = 100, A = 10), and blocks of whole
//! UCRL-VTR (JDP, binary trees) and LSVI-UCB (JDP) episodes. Throughput is in episodes; the
//! ratio to the Python path of whole runs comes from `python benches/engine.py`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

use _core::continual::{make_mechanism, MechanismKind};
use _core::engine::lsvi::{self, LsviSums, Records};
use _core::engine::vtr::{self, Billboard, Regression, VtrServer, VtrSpec};
use _core::engine::{EpisodeLog, FiniteModel, Guard, RegretCache, Trajectory};
use _core::mixture::MixtureFeatures;
use _core::noise::{NodeNoise, NodeShape};

const BLOCK: usize = 1000;

/// A random model with dense rows (every transition possible).
fn model(h: usize, s: usize, a: usize, rng: &mut ChaCha8Rng) -> FiniteModel {
    let mut p = vec![0.0; h * s * a * s];
    let mut cdf = vec![0.0; h * s * a * s];
    for (row, c) in p.chunks_exact_mut(s).zip(cdf.chunks_exact_mut(s)) {
        row.iter_mut().for_each(|x| *x = rng.random::<f64>());
        let total: f64 = row.iter().sum();
        let mut acc = 0.0;
        for (x, y) in row.iter_mut().zip(c.iter_mut()) {
            *x /= total;
            acc += *x;
            *y = acc;
        }
        c[s - 1] = 1.0;
    }
    let r: Vec<f64> = (0..h * s * a).map(|_| rng.random::<f64>()).collect();
    let init: Vec<f64> = (1..=s).map(|i| i as f64 / s as f64).collect();
    FiniteModel::new((h, s, a), &p, &r, &cdf, &init).unwrap()
}

fn uniforms(n: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    (0..n).map(|_| rng.random::<f64>()).collect()
}

fn bench_model(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let (h, s, a) = (20, 100, 10);
    let m = model(h, s, a, &mut rng);
    let pi: Vec<usize> = (0..h * s).map(|i| i % a).collect();
    let u = uniforms(BLOCK * (h + 1), &mut rng);
    let mut t = Trajectory::new(h);
    let mut g = c.benchmark_group("engine_model_H20_S100_A10");
    g.throughput(Throughput::Elements(BLOCK as u64));
    g.bench_function("rollout", |b| {
        b.iter(|| {
            for ui in u.chunks_exact(h + 1) {
                m.rollout(black_box(&pi), ui, &mut t);
            }
            t.states[h]
        })
    });
    g.throughput(Throughput::Elements(1));
    let mut v = vec![0.0; (h + 1) * s];
    g.bench_function("policy_values", |b| {
        b.iter(|| {
            m.values_into(black_box(&pi), &mut v);
            v[0]
        })
    });
    g.finish();
}

fn bench_vtr(c: &mut Criterion) {
    // RiverSwimMixture's size: S = 6, A = 2, d = 3, H = 20; two next states per (s, a).
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (h, s, a, d) = (20, 6, 2, 3);
    let m = model(h, s, a, &mut rng);
    let mut dense = vec![0.0; s * a * s * d];
    for r in 0..s * a {
        for next in [r / a, (r / a + 1) % s] {
            for k in 0..d {
                dense[(r * s + next) * d + k] = rng.random::<f64>() / d as f64;
            }
        }
    }
    let features = MixtureFeatures::from_dense(&dense, s * a, s, d).unwrap();
    let spec = VtrSpec {
        d,
        radius: 1.0,
        base: 50.0,
        divisor: std::f64::consts::SQRT_2,
        guard: Some(Guard {
            x_bound: h as f64,
            y_low: 0.0,
            y_high: h as f64,
            reject: false,
        }),
        practical: None,
    };
    let u = uniforms(BLOCK * (h + 1), &mut rng);
    let v_star = vec![h as f64; s];
    let mut g = c.benchmark_group("engine_ucrl_vtr_jdp_S6_H20_d3");
    g.throughput(Throughput::Elements(BLOCK as u64));
    g.bench_function("episodes", |b| {
        b.iter(|| {
            let capacity = 100 * BLOCK as u64;
            let noise = NodeNoise::Gaussian { sigma: 1.0 };
            let sym = NodeShape::SymMatrix {
                d,
                divisor: std::f64::consts::SQRT_2,
            };
            let mut grams: Vec<_> = (0..h)
                .map(|i| {
                    make_mechanism(MechanismKind::Tree, sym, noise, capacity, [i as u8; 32])
                        .unwrap()
                })
                .collect();
            let mut targets: Vec<_> = (0..h)
                .map(|i| {
                    make_mechanism(
                        MechanismKind::Tree,
                        NodeShape::Vector(d),
                        noise,
                        capacity,
                        [99 - i as u8; 32],
                    )
                    .unwrap()
                })
                .collect();
            let server = VtrServer::Tree {
                grams: grams.iter_mut().collect(),
                targets: targets.iter_mut().collect(),
            };
            let mut board = Billboard {
                design: vec![0.0; h * d * d],
                inverse: (0..h * d * d)
                    .map(|i| if i % (d + 1) == 0 { 0.02 } else { 0.0 })
                    .collect(),
                weights: vec![0.0; h * d],
                bonus: vec![],
                gamma: vec![],
                users: 0,
            };
            let mut cache = RegretCache::new(&m);
            let mut log = (vec![0.0; BLOCK], vec![0.0; BLOCK], vec![0i64; BLOCK]);
            let mut regs = [Regression {
                spec: &spec,
                server,
                board: &mut board,
            }];
            vtr::run(
                &m,
                &features,
                &mut regs,
                None,
                &mut cache,
                &v_star,
                &u,
                None,
                EpisodeLog::of(&mut log),
            )
            .unwrap()
        })
    });
    g.finish();
}

fn bench_lsvi(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let (h, s, a, d) = (20, 100, 10, 16);
    let m = model(h, s, a, &mut rng);
    let table: Vec<f64> = (0..s * a * d)
        .map(|_| rng.random::<f64>() / d as f64)
        .collect();
    let pi: Vec<usize> = (0..h * s).map(|i| i % a).collect();
    let u = uniforms(BLOCK * (h + 1), &mut rng);
    let v_star = vec![h as f64; s];
    let guard = Guard {
        x_bound: 1.0,
        y_low: 0.0,
        y_high: 1.0,
        reject: false,
    };
    let mut g = c.benchmark_group("engine_lsvi_jdp_S100_A10_d16_H20");
    g.throughput(Throughput::Elements(BLOCK as u64));
    let (mut bg, mut rs, mut ns) = (vec![0.0; h * d * d], vec![0.0; h * d], vec![0.0; h * s * d]);
    let mut cache = RegretCache::new(&m);
    g.bench_function("episodes", |b| {
        b.iter(|| {
            let mut log = (vec![0.0; BLOCK], vec![0.0; BLOCK], vec![0i64; BLOCK]);
            let mut sums = LsviSums {
                batch_gram: Some(&mut bg),
                exact: vec![],
                reward_sum: &mut rs,
                next_sum: &mut ns,
                records: Records {
                    states: &mut [],
                    actions: &mut [],
                    rewards: &mut [],
                    capacity: 0,
                },
                n: 0,
            };
            lsvi::run(
                &m,
                &table,
                d,
                &guard,
                &pi,
                &mut sums,
                &mut cache,
                &v_star,
                &u,
                EpisodeLog::of(&mut log),
            )
            .unwrap()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(2)).warm_up_time(std::time::Duration::from_millis(300));
    targets = bench_model, bench_vtr, bench_lsvi
}
criterion_main!(benches);
