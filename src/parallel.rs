//! Independent jobs over a few worker threads, results in job order whatever finished first,
//! so what is printed and written never depends on `--jobs`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Run `work(0..count)` on up to `jobs` threads and return the results in index order.
pub fn run_all<T: Send>(count: usize, jobs: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<T>>> = (0..count).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, count.max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    let r = work(i);
                    *results[i]
                        .lock()
                        .expect("no job holds the lock when panicking") = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("the workers are done")
                .expect("every job ran")
        })
        .collect()
}

/// The cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_job_order() {
        for jobs in [1, 2, 7] {
            let r = run_all(20, jobs, |i| i * i);
            assert_eq!(r, (0..20).map(|i| i * i).collect::<Vec<_>>());
        }
        assert!(run_all(0, 4, |i| i).is_empty());
    }
}
