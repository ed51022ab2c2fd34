use super::*;
use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;

fn parts(s: usize, a: usize, h: usize, k: u64, sigma: f64, bounds: Vec<u64>) -> PsrlParts {
    PsrlParts {
        s,
        a,
        h,
        episodes: k,
        m: 1,
        sigma,
        sampler: Sampler::Float,
        bounds,
        reject: false,
        alpha0: 1.0,
        noise_seed: [1; 32],
        exploration_seed: [2; 32],
    }
}

fn traj(states: &[usize], actions: &[usize], rewards: &[f64]) -> Trajectory {
    Trajectory {
        states: states.to_vec(),
        actions: actions.to_vec(),
        rewards: rewards.to_vec(),
    }
}

#[test]
fn psrl_gamma_draws_have_the_law_mean_and_variance() {
    let mut rng = ChaCha12Rng::from_seed([7; 32]);
    for k in [1.0, 2.5, 40.0] {
        let n = 200_000;
        let g = gamma_draws(&mut rng, &vec![k; n]).unwrap();
        let mean = g.iter().sum::<f64>() / n as f64;
        let var = g.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
        // mean k, variance k; standard errors sqrt(k / n) and ~ k sqrt(2 / n) (kurtosis ~ 6 / k)
        assert!(
            (mean - k).abs() < 5.0 * (k / n as f64).sqrt(),
            "mean {mean} for {k}"
        );
        let se_var = k * ((2.0 + 6.0 / k) / n as f64).sqrt();
        assert!((var - k).abs() < 5.0 * se_var, "var {var} for {k}");
    }
    assert!(gamma_draws(&mut rng, &[f64::NAN]).is_err());
}

#[test]
fn psrl_simplex_projection_keeps_the_total_and_nonnegativity() {
    let mut row = vec![3.0, -1.0, 0.5, 0.2];
    simplex_project(&mut row);
    assert!((row.iter().sum::<f64>() - 2.7).abs() < 1e-12);
    assert!(row.iter().all(|&x| x >= 0.0));
    // on the simplex already: unchanged
    let mut row = vec![1.0, 2.0, 0.0];
    simplex_project(&mut row);
    assert_eq!(row, vec![1.0, 2.0, 0.0]);
    // a released total <= 0: the zero vector
    let mut row = vec![1.0, -2.0];
    simplex_project(&mut row);
    assert_eq!(row, vec![0.0, 0.0]);
}

#[test]
fn psrl_counts_only_the_first_m_visits_and_releases_at_batch_ends() {
    // S 3, A 2, H 4, K 4 in batches [0, 2, 4): one release, after user 2
    let mut ag = PsrlAgent::new(parts(3, 2, 4, 4, 0.0, vec![0, 2, 4])).unwrap();
    let t = traj(&[0, 0, 0, 1, 2], &[1, 1, 1, 0], &[0.5, 1.0, 0.25, 1.0]);
    ag.policy().unwrap();
    ag.observe(&t).unwrap();
    let (dn, dr) = ag.increment();
    // (0, 1) visited 3 times: only the first (0 -> 0, reward 0.5) counted; (1, 0) -> 2 once
    assert_eq!(dn[3], 1.0);
    assert_eq!(dn[2 * 3 + 2], 1.0);
    assert_eq!(dn.iter().sum::<f64>(), 2.0);
    assert_eq!(dr[1], 0.5);
    assert_eq!(dr[2], 1.0);
    ag.observe(&t).unwrap();
    assert_eq!(ag.releases, 1);
    assert_eq!(ag.board_n[3], 2.0);
    assert_eq!(ag.board_r[1], 1.0);
    assert_eq!(ag.increment().0.iter().sum::<f64>(), 0.0);
    ag.observe(&t).unwrap();
    ag.observe(&t).unwrap();
    // no release after the last batch; the budget is spent
    assert_eq!(ag.releases, 1);
    assert!(ag.observe(&t).is_err());
    assert!(ag.policy().is_err());
    // the cap m = 2 counts the second visit too
    let mut p = parts(3, 2, 4, 4, 0.0, vec![0, 2, 4]);
    p.m = 2;
    let mut ag = PsrlAgent::new(p).unwrap();
    ag.observe(&t).unwrap();
    assert_eq!(ag.increment().0.iter().sum::<f64>(), 3.0);
    assert_eq!(ag.increment().1[1], 1.5);
}

#[test]
fn psrl_guard_clips_and_counts_or_refuses_rewards_and_checks_indices() {
    let mut ag = PsrlAgent::new(parts(2, 2, 2, 3, 1.0, vec![0, 1, 3])).unwrap();
    ag.observe(&traj(&[0, 1, 0], &[0, 1], &[1.5, -0.5]))
        .unwrap();
    assert_eq!(ag.clips, 2);
    let mut p = parts(2, 2, 2, 3, 1.0, vec![0, 1, 3]);
    p.reject = true;
    let mut ag = PsrlAgent::new(p).unwrap();
    assert!(matches!(
        ag.observe(&traj(&[0, 1, 0], &[0, 1], &[1.5, 0.0])),
        Err(CoreError::Assumption(_))
    ));
    assert_eq!(ag.k, 0);
    assert!(ag.observe(&traj(&[0, 2, 0], &[0, 1], &[0.5, 0.0])).is_err());
    assert!(ag.observe(&traj(&[0, 1, 0], &[0, 2], &[0.5, 0.0])).is_err());
    assert!(ag.observe(&traj(&[0, 1], &[0], &[0.5])).is_err());
    assert!(ag
        .observe(&traj(&[0, 1, 0], &[0, 1], &[f64::NAN, 0.0]))
        .is_err());
    assert_eq!(ag.k, 0);
}

#[test]
fn psrl_refuses_bad_parameters() {
    assert!(PsrlAgent::new(parts(2, 2, 2, 3, 1.0, vec![0, 3, 3])).is_err());
    assert!(PsrlAgent::new(parts(2, 2, 2, 3, 1.0, vec![0, 2])).is_err());
    assert!(PsrlAgent::new(parts(2, 2, 2, 3, -1.0, vec![0, 3])).is_err());
    assert!(PsrlAgent::new(parts(0, 2, 2, 3, 1.0, vec![0, 3])).is_err());
    // S A S beyond what a release draws (2^27): refused before any allocation
    let big = PsrlAgent::new(parts(1 << 14, 1, 2, 3, 1.0, vec![0, 3]));
    assert!(matches!(big, Err(CoreError::InvalidParameter(m)) if m.contains("S A S")));
    assert!(PsrlAgent::new(parts(usize::MAX / 2, 3, 2, 3, 1.0, vec![0, 3])).is_err());
}

#[test]
fn psrl_records_draws_in_the_reference_order_and_one_policy_per_user() {
    let (s, a, h) = (3, 2, 4);
    let mut ag = PsrlAgent::new(parts(s, a, h, 4, 2.0, vec![0, 2, 4])).unwrap();
    ag.set_record(true);
    let t = traj(&[0, 0, 0, 1, 2], &[1, 1, 1, 0], &[0.5, 1.0, 0.25, 1.0]);
    let p1 = ag.policy().unwrap().to_vec();
    assert_eq!(p1, ag.policy().unwrap().to_vec()); // the same user: no new draw
    ag.observe(&t).unwrap();
    ag.policy().unwrap();
    ag.observe(&t).unwrap();
    let log = ag.record.clone().unwrap();
    let kinds: Vec<(&str, Vec<usize>)> = log.explore[..5 + h]
        .iter()
        .map(|r| (r.kind.name(), r.shape.clone()))
        .collect();
    let mut want = vec![
        ("normal", vec![s, a, s]),
        ("normal", vec![s, a]),
        ("gamma", vec![s, a, s]),
        ("gamma", vec![s, a]),
        ("gamma", vec![s, a]),
    ];
    want.extend((0..h).map(|_| ("uniform", vec![s, a])));
    assert_eq!(kinds, want);
    assert_eq!(log.explore.len(), 2 * (5 + h));
    assert_eq!(ag.policy_updates, 2);
    // one release: S A S normals then S A
    let shapes: Vec<Vec<usize>> = log.noise.iter().map(|r| r.shape.clone()).collect();
    assert_eq!(shapes, vec![vec![s, a, s], vec![s, a]]);
    // the billboard is increment + sigma z
    let z0 = log.noise[0].values[3];
    assert!((ag.board_n[3] - (2.0 + 2.0 * z0)).abs() < 1e-12);
    // before any release: variance 0, so the counts drawn are 0 and the Dirichlet shapes 1
    assert!(log.explore[2].params.iter().all(|&x| x == 1.0));
}

/// Three users, a save and a load, three more: the loaded agent continues as the original did.
/// The saved bytes.
fn assert_round_trips(p: PsrlParts) -> Vec<u8> {
    let mut ag = PsrlAgent::new(p).unwrap();
    let t = traj(&[0, 0, 0, 1, 2], &[1, 1, 1, 0], &[0.5, 1.0, 0.25, 1.0]);
    for _ in 0..3 {
        ag.policy().unwrap();
        ag.observe(&t).unwrap();
    }
    let bytes = crate::state::encode(&ag).unwrap();
    let mut back: PsrlAgent = crate::state::decode("PSRL", &bytes).unwrap();
    back.check_restored().unwrap();
    for _ in 0..3 {
        assert_eq!(
            ag.policy().unwrap().to_vec(),
            back.policy().unwrap().to_vec()
        );
        ag.observe(&t).unwrap();
        back.observe(&t).unwrap();
    }
    assert_eq!(ag.board_n, back.board_n);
    assert_eq!(ag.board_r, back.board_r);
    bytes
}

#[test]
fn psrl_state_round_trips() {
    assert_round_trips(parts(3, 2, 4, 6, 1.0, vec![0, 2, 4, 6]));
}

#[test]
fn psrl_greedy_policy_plans_on_the_plug_in_model_without_a_draw() {
    // S 2, A 2, H 2, no noise; batches [0, 3, 4): one release after 3 users
    let agent = || PsrlAgent::new(parts(2, 2, 2, 4, 0.0, vec![0, 3, 4])).unwrap();
    let mut ag = agent();
    // nothing released: P uniform, r = (1 + 0) / (1 + 0) = 1 everywhere, every Q tied: action 0
    assert_eq!(ag.greedy_policy(), vec![0; 4]);
    // user 1 plays (0, 0) paying `ra`, then (0, 1) paying 0.8; users 2, 3 play (0, 1) twice paying
    // 0.8 (m = 1: one counted visit per user), all staying at 0. By hand, r = (1 + R) / (1 + n):
    // (0, 1) has n = 3, R = 2.4, r = 3.4 / 4 = 0.85; (0, 0) has n = 1, R = ra, r = (1 + ra) / 2:
    // 0.84 at ra = 0.68, 0.86 at ra = 0.72. The last step (h = 1) at state 0 takes the larger:
    // action 1, then action 0. The uniform prior's (1 + R) / (2 + n) gave 0.68 against 0.56 and
    // 0.573: action 1 both times.
    let feed = |ag: &mut PsrlAgent, ra: f64| {
        ag.observe(&traj(&[0, 0, 0], &[0, 1], &[ra, 0.8])).unwrap();
        for _ in 0..2 {
            ag.observe(&traj(&[0, 0, 0], &[1, 1], &[0.8, 0.8])).unwrap();
        }
    };
    feed(&mut ag, 0.68);
    assert_eq!(ag.greedy_policy()[2], 1);
    let mut above = agent();
    feed(&mut above, 0.72);
    assert_eq!(above.greedy_policy()[2], 0);
    // no stream consumed: the next user's draw is the twin's
    let mut twin = agent();
    feed(&mut twin, 0.68);
    assert_eq!(
        ag.policy().unwrap().to_vec(),
        twin.policy().unwrap().to_vec()
    );
}

#[test]
fn psrl_gamma_of_shape_zero_is_the_point_zero_and_draws_nothing() {
    // numpy's gamma(0.0) is 0.0 and consumes no randomness; rand_distr refuses the shape
    let (mut x, mut y) = (
        ChaCha12Rng::from_seed([5; 32]),
        ChaCha12Rng::from_seed([5; 32]),
    );
    let with_zeros = gamma_draws(&mut x, &[0.0, 2.5, 0.0, 0.7, 0.0]).unwrap();
    let without = gamma_draws(&mut y, &[2.5, 0.7]).unwrap();
    assert_eq!(
        (with_zeros[0], with_zeros[2], with_zeros[4]),
        (0.0, 0.0, 0.0)
    );
    assert_eq!((with_zeros[1], with_zeros[3]), (without[0], without[1]));
    assert_eq!(x.random::<u64>(), y.random::<u64>());
    assert!(gamma_draws(&mut x, &[-1e-300]).is_err());
}

#[test]
fn psrl_an_unvisited_pair_draws_the_mean_reward_one() {
    // r ~ Beta(1 + R, n - R): before any release every pair has n = R = 0, so gb = Gamma(0) = 0
    // and r = ga / ga = 1 exactly (the top of [0, 1]); the recorded shapes are 1 and 0
    let (s, a) = (3, 2);
    let mut ag = PsrlAgent::new(parts(s, a, 4, 4, 2.0, vec![0, 2, 4])).unwrap();
    ag.set_record(true);
    let (_, r) = ag.posterior_model().unwrap();
    assert_eq!(r, vec![1.0; s * a]);
    let log = ag.record.clone().unwrap();
    assert!(log.explore[3].params.iter().all(|&x| x == 1.0));
    assert!(log.explore[4].params.iter().all(|&x| x == 0.0));
    assert!(log.explore[3].values.iter().all(|&x| x > 0.0));
    assert!(log.explore[4].values.iter().all(|&x| x == 0.0));
}

#[test]
fn psrl_restore_refuses_an_inconsistent_state() {
    let ag = PsrlAgent::new(parts(3, 2, 4, 6, 1.0, vec![0, 2, 4, 6])).unwrap();
    let bytes = crate::state::encode(&ag).unwrap();
    let ok: PsrlAgent = crate::state::decode("PSRL", &bytes).unwrap();
    assert!(ok.check_restored().is_ok());
    // an agent that served all its K users restores (its batch index is then B)
    let mut done = PsrlAgent::new(parts(3, 2, 4, 2, 1.0, vec![0, 1, 2])).unwrap();
    let t = traj(&[0, 0, 0, 1, 2], &[1, 1, 1, 0], &[0.5, 1.0, 0.25, 1.0]);
    done.observe(&t).unwrap();
    done.observe(&t).unwrap();
    let back: PsrlAgent =
        crate::state::decode("PSRL", &crate::state::encode(&done).unwrap()).unwrap();
    back.check_restored().unwrap();
    let edits: [fn(&mut PsrlAgent); 5] = [
        |a| a.sigma = f64::NAN,
        |a| a.sigma = -1.0,
        |a| a.alpha0 = 0.0,
        |a| a.m = 0,
        |a| a.board_r.push(0.0),
    ];
    for edit in edits {
        let mut bad: PsrlAgent = crate::state::decode("PSRL", &bytes).unwrap();
        edit(&mut bad);
        let bytes = crate::state::encode(&bad).unwrap();
        let back: PsrlAgent = crate::state::decode("PSRL", &bytes).unwrap();
        assert!(back.check_restored().is_err());
    }
}

#[test]
fn psrl_restore_refuses_dimensions_whose_products_overflow_and_a_broken_schedule() {
    // S 4, A 2, H 4, K 6 in batches [0, 2, 4, 6]; two users served, the third's policy drawn
    let mut ag = PsrlAgent::new(parts(4, 2, 4, 6, 1.0, vec![0, 2, 4, 6])).unwrap();
    let t = traj(&[0, 0, 1, 2, 3], &[1, 1, 1, 0], &[0.5, 1.0, 0.25, 1.0]);
    for _ in 0..2 {
        ag.policy().unwrap();
        ag.observe(&t).unwrap();
    }
    ag.policy().unwrap();
    let bytes = crate::state::encode(&ag).unwrap();
    let ok: PsrlAgent = crate::state::decode("PSRL", &bytes).unwrap();
    ok.check_restored().unwrap();
    let edits: [fn(&mut PsrlAgent); 14] = [
        |a| a.h = 4 + (1 << 62), // H S wraps to 16 = len(pi): policy() indexed past it
        |a| a.s = 1 << 32,       // S A S wraps to 0
        |a| a.a = (1 << 63) + 2, // S A wraps to 8 = len(R~), S A S to 32 = len(N~)
        |a| a.batch = 3,         // batch B before the last user: observe read bounds[B + 1]
        |a| a.batch = 0,         // k = 2 is in batch 1
        |a| a.k = 5,             // k = 5 is in batch 2
        |a| a.releases = 7,      // after batch 1, one release
        |a| a.pi[0] = 2,         // an action out of range, returned as the user's policy
        |a| a.bounds = vec![0, 2, 4, 7], // bounds ending past K
        |a| a.board_n[0] = f64::NAN, // greedy_policy() planned on NaN, silently
        |a| a.board_r[1] = f64::INFINITY,
        |a| a.inc_n[0] = -1.0,      // a count below 0
        |a| a.inc_r[0] = 1e300,     // a batch's reward sum beyond its users' K min(m, H)
        |a| a.inc_n[3] = 7.0 * 1e9, // a count beyond K min(m, H) = 6
    ];
    for (i, edit) in edits.iter().enumerate() {
        let mut bad: PsrlAgent = crate::state::decode("PSRL", &bytes).unwrap();
        edit(&mut bad);
        let bytes = crate::state::encode(&bad).unwrap();
        let back: PsrlAgent = crate::state::decode("PSRL", &bytes).unwrap();
        let err = back
            .check_restored()
            .expect_err(&format!("edit {i} restored"));
        let msg = err.to_string();
        assert!(
            msg.contains("not a consistent saved PSRL state"),
            "edit {i}: {msg}"
        );
    }
}

#[test]
fn psrl_new_refuses_a_horizon_whose_policy_overflows() {
    // H S beyond usize: refused before any allocation (S A S itself is small)
    let h = (1usize << 62) + 4;
    let err = PsrlAgent::new(parts(4, 2, h, 6, 1.0, vec![0, 2, 4, 6]));
    assert!(err.is_err());
}

fn discrete(s: usize, a: usize, h: usize, k: u64, sigma: f64, bounds: Vec<u64>) -> PsrlParts {
    PsrlParts {
        sampler: Sampler::Discrete { grid_bits: 24 },
        ..parts(s, a, h, k, sigma, bounds)
    }
}

#[test]
fn psrl_discrete_release_is_the_noise_streams_privatize() {
    // S 3, A 2, H 4, K 4 in batches [0, 2, 4): one release, after user 2, of n = 18 + 6 entries
    let (s, a, sigma) = (3, 2, 1.7);
    let mut ag = PsrlAgent::new(discrete(s, a, 4, 4, sigma, vec![0, 2, 4])).unwrap();
    assert_eq!(ag.sampler(), Some(Sampler::Discrete { grid_bits: 24 }));
    ag.set_record(true);
    let t = traj(&[0, 0, 0, 1, 2], &[1, 1, 1, 0], &[0.3, 1.0, 0.25, 0.7]);
    for _ in 0..2 {
        ag.policy().unwrap();
        ag.observe(&t).unwrap();
    }
    let mut x: Vec<f64> = ag.inc_n.iter().chain(&ag.inc_r).copied().collect();
    assert!(x.iter().all(|v| *v == 0.0)); // released and cleared
                                          // the same stream, by hand: the increment (2 counts of (0, 1) -> 0 and (1, 0) -> 2, reward
                                          // sums 0.6 and 1.4) through NoiseStream::privatize as one vector node
    x[3] = 2.0;
    x[2 * s + 2] = 2.0;
    x[s * a * s + 1] = 0.6;
    x[s * a * s + 2] = 1.4;
    let law = NodeNoise::DiscreteGaussian {
        sigma,
        grid_bits: 24,
    };
    let mut stream = NoiseStream::new(law, [1; 32]).unwrap();
    let mut scratch = vec![0.0; x.len()];
    let shape = NodeShape::Vector(x.len());
    stream.privatize(shape, &mut x, &mut scratch).unwrap();
    let board: Vec<f64> = ag.board_n.iter().chain(&ag.board_r).copied().collect();
    assert_eq!(board, x);
    // the record: one draw of n integers, released = (round(x / u) + z) u
    let log = ag.record.clone().unwrap();
    assert_eq!(log.noise.len(), 1);
    let rec = &log.noise[0];
    assert_eq!(
        (rec.kind.name(), rec.shape.clone()),
        ("discrete_gaussian", vec![24])
    );
    let u = sigma * 2f64.powi(-24);
    for ((z, r), b) in rec.values.iter().zip(&scratch).zip(&board) {
        assert_eq!(z.fract(), 0.0);
        assert_eq!((r + z) * u, *b);
    }
    assert!(rec.values.iter().any(|z| z.abs() > 1e6)); // noise of ~ 2^24 units
    assert_eq!(ag.variance(), sigma * sigma);
}

#[test]
fn psrl_discrete_sampler_refuses_what_it_cannot_draw_and_round_trips() {
    // no noise scale, too many grid bits, a lattice too fine for K users' counts
    assert!(PsrlAgent::new(discrete(2, 2, 2, 3, 0.0, vec![0, 3])).is_err());
    let mut p = discrete(2, 2, 2, 3, 1.0, vec![0, 3]);
    p.sampler = Sampler::Discrete { grid_bits: 25 };
    assert!(PsrlAgent::new(p).is_err());
    let fine = PsrlAgent::new(discrete(2, 2, 2, 1 << 40, 1e-6, vec![0, 1 << 40]));
    assert!(matches!(fine, Err(CoreError::InvalidParameter(m)) if m.contains("too fine")));
    // save / load continues identically
    let bytes = assert_round_trips(discrete(3, 2, 4, 6, 1.0, vec![0, 2, 4, 6]));
    // a saved sigma that is not the noise law's is refused
    let mut bad: PsrlAgent = crate::state::decode("PSRL", &bytes).unwrap();
    bad.sigma = 2.0;
    let bytes = crate::state::encode(&bad).unwrap();
    let back: PsrlAgent = crate::state::decode("PSRL", &bytes).unwrap();
    assert!(back.check_restored().is_err());
}
