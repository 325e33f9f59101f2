//! Processes sharing one simulated bucket end at equal shares.

use super::*;

/// Processes sharing one fluid bucket of `limit` tokens refilled at `rate`, answers 20 ms
/// after each send. Returns the 429s and each process's 2xx per thread over the last
/// quarter of the run, as fractions of the fair share.
fn share_one_bucket(
    procs: &mut [Law],
    rate: f64,
    limit: f64,
    initial: f64,
    end: Nanos,
) -> (u32, Vec<f64>) {
    let mut rng = test_rng();
    let mut due: Vec<(Nanos, usize, usize)> = Vec::new();
    for (p, proc) in procs.iter_mut().enumerate() {
        for i in 0..proc.threads.len() {
            due.push((proc.delay_ns(0, i, &mut rng), p, i));
        }
    }
    let (mut level, mut updated, mut refused) = (initial, 0 as Nanos, 0);
    let late = end - end / 4;
    let mut answered_late = vec![0u32; procs.len()];
    loop {
        let k = (0..due.len()).min_by_key(|&k| due[k].0).unwrap();
        let (now, p, i) = due[k];
        if now >= end {
            break;
        }
        match acquire(&mut procs[p], now, i) {
            Acquire::Wait(w) => due[k].0 = now + w,
            Acquire::Send => {
                level = (level + rate * secs(now - updated)).min(limit);
                updated = now;
                let status = if level >= 1.0 {
                    level -= 1.0;
                    Status::Ok
                } else {
                    refused += 1;
                    Status::Limited
                };
                if now >= late && status == Status::Ok {
                    answered_late[p] += 1;
                }
                let answered = now + 20_000_000;
                // The answer states the bucket, as `RateLimit-Limit` does.
                let a = Answer {
                    limit: Some(limit as u64),
                    latency: Duration::from_millis(20),
                    ..answer(status, level as u64)
                };
                procs[p].respond_ns(answered, i, &a, &mut rng);
                due[k].0 = answered + procs[p].delay_ns(answered, i, &mut rng);
            }
        }
    }
    let n: usize = procs.iter().map(|p| p.threads.len()).sum();
    let fair = rate / n as f64 * secs(end - late);
    let shares = procs
        .iter()
        .zip(&answered_late)
        .map(|(p, &c)| f64::from(c) / p.threads.len() as f64 / fair)
        .collect();
    (refused, shares)
}

/// Processes that start at very different paces, sharing Heroku's 4500/h bucket that
/// starts with 500 tokens, end with equal shares near R/N, without a 429.
#[test]
fn processes_starting_far_apart_end_at_equal_shares() {
    let mut procs: Vec<Law> = [(5usize, 0.5), (5, 20.0), (1, 3.0), (3, 60.0)]
        .iter()
        .map(|&(th, s)| {
            Law::new(
                th,
                Params {
                    initial_sleep: Some(Duration::from_secs_f64(s)),
                    ..Params::default()
                },
            )
        })
        .collect();
    let (refused, shares) = share_one_bucket(&mut procs, R, 4500.0, 500.0, 5 * 3600 * S);
    assert_eq!(refused, 0);
    for (p, share) in shares.iter().enumerate() {
        assert!((0.9..1.1).contains(share), "process {p}: {share:.3}");
    }
}

/// The same law with the same defaults on a bucket a thousand times smaller and refilled
/// four times faster: 2 processes × 4 threads on 5 tokens at 5 per second.
#[test]
fn a_five_token_bucket_at_five_per_second_is_shared_with_the_same_defaults() {
    let mut procs: Vec<Law> = (0..2).map(|_| shaped(4, 5.0, 1)).collect();
    let (refused, shares) = share_one_bucket(&mut procs, 5.0, 5.0, 5.0, 1800 * S);
    let sent_about = 5.0 * 1800.0;
    assert!(f64::from(refused) < 0.005 * sent_about, "{refused} refused");
    for (p, share) in shares.iter().enumerate() {
        assert!((0.9..1.1).contains(share), "process {p}: {share:.3}");
    }
}
