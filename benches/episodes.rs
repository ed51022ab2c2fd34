//! Criterion benches of the agents' episodes: a rollout and the exact policy values on a
//! RandomLinearMDP-sized model (H = 20, S = 100, A = 10), and blocks of whole UCRL-VTR (JDP,
//! binary trees) and LSVI-UCB (JDP) episodes through the one episode loop. Throughput is in
//! episodes; `python benches/engine.py` times whole runs of the docs/benchmarks.md workloads.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

use _core::agents::lsvi::{LsviAgent, LsviParts, Planning, Private, Shift};
use _core::agents::vtr::{
    Billboard, Intake, Regression, RegressionSpec, Server, VtrAgent, VtrParts,
};
use _core::agents::{
    run_block, EpisodeLog, Exploration, FiniteModel, Guard, Mechanism, RegretCache, Ties,
    Trajectory,
};
use _core::continual::{make_mechanism, MechanismKind};
use _core::kernels::mixture::MixtureFeatures;
use _core::noise::{NodeNoise, NodeShape, NoiseStream};

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
    FiniteModel::new((h, s, a), &p, &r, &cdf, &init, None).unwrap()
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
    let mut g = c.benchmark_group("agents_model_H20_S100_A10");
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

fn tree(shape: NodeShape, capacity: u64, seed: u8) -> Mechanism {
    let noise = NodeNoise::Gaussian { sigma: 1.0 };
    Mechanism(make_mechanism(MechanismKind::Tree, shape, noise, capacity, [seed; 32]).unwrap())
}

fn guard(x: f64, y: f64) -> Guard {
    Guard {
        x_bound: x,
        y_low: 0.0,
        y_high: y,
        reject: false,
    }
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
    let u = uniforms(BLOCK * (h + 1), &mut rng);
    let v_star = vec![h as f64; s];
    let sym = NodeShape::SymMatrix {
        d,
        divisor: std::f64::consts::SQRT_2,
    };
    let mut g = c.benchmark_group("agents_ucrl_vtr_jdp_S6_H20_d3");
    g.throughput(Throughput::Elements(BLOCK as u64));
    g.bench_function("episodes", |b| {
        b.iter(|| {
            let capacity = 100 * BLOCK as u64;
            let reg = Regression {
                spec: RegressionSpec {
                    radius: 1.0,
                    base: 50.0,
                    practical: None,
                    shift_name: String::new(),
                },
                intake: Intake {
                    guard: Some(guard(h as f64, h as f64)),
                    randomizer: None,
                    clips: 0,
                },
                server: Server::Jdp {
                    grams: (0..h).map(|i| tree(sym, capacity, i as u8)).collect(),
                    targets: (0..h)
                        .map(|i| tree(NodeShape::Vector(d), capacity, 99 - i as u8))
                        .collect(),
                },
                board: Billboard {
                    design: vec![],
                    inverse: vec![],
                    weights: vec![],
                    explore: vec![],
                    gamma: vec![],
                    users: 0,
                    factor: vec![],
                    bias: vec![],
                },
            };
            let mut agent = VtrAgent::new(VtrParts {
                features: MixtureFeatures::from_dense(&dense, s * a, s, d).unwrap(),
                rewards: vec![0.5; h * s * a],
                h,
                a,
                regs: vec![reg],
                plus: None,
                ties: Ties(None),
                exploration: Exploration::Optimism,
                episodes: capacity,
            })
            .unwrap();
            let mut cache = RegretCache::new(&m);
            let mut log = EpisodeLog::default();
            run_block(&mut agent, &m, &mut cache, &v_star, &u, &mut log).unwrap();
            log.gaps[0]
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
    let u = uniforms(BLOCK * (h + 1), &mut rng);
    let v_star = vec![h as f64; s];
    let sym = NodeShape::SymMatrix { d, divisor: 2.0 };
    let mut g = c.benchmark_group("agents_lsvi_jdp_S100_A10_d16_H20");
    g.throughput(Throughput::Elements(BLOCK as u64));
    g.bench_function("episodes_one_batch", |b| {
        b.iter(|| {
            let private = Private {
                trees: (0..h).map(|i| tree(sym, 4, i as u8)).collect(),
                eta: NoiseStream::new(NodeNoise::Gaussian { sigma: 1.0 }, [7; 32]).unwrap(),
                shift: Shift::Constant(50.0),
            };
            let mut agent = LsviAgent::new(LsviParts {
                h,
                a,
                table: table.clone(),
                d,
                guard: guard(1.0, 1.0),
                beta: 1.0,
                lam: 1.0,
                batch_len: 4 * BLOCK as u64,
                private: Some(private),
                planning: Planning::Aggregated,
                record_capacity: 0,
                ties: Ties(None),
                exploration: Exploration::Optimism,
                episodes: 16 * BLOCK as u64,
                adaptive: None,
            })
            .unwrap();
            let mut cache = RegretCache::new(&m);
            let mut log = EpisodeLog::default();
            run_block(&mut agent, &m, &mut cache, &v_star, &u, &mut log).unwrap();
            log.gaps[0]
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
