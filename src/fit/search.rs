//! Each rule's best period, and the ranking of the rules: the verdict and its confidence.

use std::fmt::Write as _;

use super::rules::WindowStart;
use super::{Event, Fit, Rule, show_secs};

/// Round periods a server states, in seconds: the grid the search starts from.
const ROUND_PERIODS: [f64; 21] = [
    1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
    10800.0, 21600.0, 43200.0, 86400.0, 172800.0, 604800.0, 2592000.0,
];

/// Every rule searched, ranked by how well it explains the trace; the best one is the fit
/// unless the runner-up explains it nearly as well.
pub(super) fn choose(
    events: &[Event],
    size: f64,
    policy_window: Option<f64>,
    span: f64,
    out: &mut Fit,
) {
    let candidates = [
        Rule::Bucket { size, period: 1.0 },
        Rule::FixedWindow {
            limit: size,
            window: 1.0,
            start: WindowStart::Clock,
        },
        Rule::FixedWindow {
            limit: size,
            window: 1.0,
            start: WindowStart::FirstRequest,
        },
        Rule::SlidingWindow {
            limit: size,
            window: 1.0,
        },
        Rule::SlidingCounter {
            limit: size,
            window: 1.0,
            phase: 0.0,
        },
    ];
    let refusals = events.iter().filter(|e| e.limited).count();
    // Each rule with refusals free, and (where it makes a difference) charged: the better of
    // the two stands for the rule, the other is kept for the verdict on refusals.
    let mut best: Vec<Searched> = candidates
        .iter()
        .map(|&r| {
            let free = search(r, events, policy_window, span, false);
            let charged = (refusals > 0 && !matches!(r, Rule::FixedWindow { .. }))
                .then(|| search(r, events, policy_window, span, true));
            // Each also tried at the period the other found: the search is greedy over a
            // rugged miss (a period 1 % off misses by ten times more on a long trace), and the
            // verdict on refusals must compare the two ways of counting them, not two searches.
            // `own` or, if it misses less, the other's rule counting refusals as `own` does.
            let better = |own: (Rule, f64), other: Rule, charge: bool| {
                let there = other.miss_charged(events, charge);
                if there < own.1 { (other, there) } else { own }
            };
            let (free, charged) = match charged {
                Some(c) => (better(free, c.0, false), Some(better(c, free.0, true))),
                None => (free, None),
            };
            match charged {
                Some(c) if c.1 < free.1 => Searched {
                    rule: c.0,
                    miss: c.1,
                    charged: true,
                    other_miss: Some(free.1),
                },
                _ => Searched {
                    rule: free.0,
                    miss: free.1,
                    charged: false,
                    other_miss: charged.map(|c| c.1),
                },
            }
        })
        .collect();
    best.sort_by(|a, b| a.miss.total_cmp(&b.miss));
    // Rules of one family are one rule: the two ways a fixed window starts, and a sliding
    // window's log and counter. The better stands for its family; where two explain the trace
    // alike, the plainer does (a period the server states or a round one, then the grid and
    // the log): a grid replayed on windows that start at the first request fits them by a
    // window a gap longer (express-rate-limit's 60 s read as 60.6 s), and the other way round,
    // and a log and a counter part only where the counter's weighting shows.
    let mut kept: Vec<Searched> = Vec::new();
    for b in best {
        match kept.iter_mut().find(|k| family(&k.rule) == family(&b.rule)) {
            None => kept.push(b),
            Some(k) => {
                let alike = (k.miss - b.miss).abs() <= 0.02 + 0.1 * k.miss.min(b.miss);
                let plain = |r: &Rule| (period_rank(r.period(), policy_window), kind_rank(r));
                if alike && plain(&b.rule) < plain(&k.rule) {
                    *k = b;
                }
            }
        }
    }
    let best = kept;
    let (rule, miss) = (best[0].rule, best[0].miss);
    let (other, other_miss) = (best[1].rule, best[1].miss);
    for b in &best {
        out.evidence.push(format!(
            "{} of {} per {}{}: the counts it predicts miss by {:.2} on average",
            b.rule.name(),
            size,
            show_secs(b.rule.period()),
            if b.charged {
                ", refused requests counted"
            } else {
                ""
            },
            b.miss
        ));
    }
    if refusals > 0 {
        let (refused_cost, why) = refusal_verdict(&best[0], refusals, events);
        out.refused_cost = refused_cost;
        out.evidence.push(why);
    }
    let confidence = if other_miss > 0.0 {
        (1.0 - miss / other_miss).clamp(0.0, 1.0)
    } else {
        0.0
    };
    out.confidence = confidence;
    if confidence < 0.2 {
        out.cannot_tell = Some(format!(
            "{} and {} predict the counts about as well ({miss:.2} and {other_miss:.2}); \
             record a trace that spends the whole limit and waits for it to come back (a \
             burst, then a pause of a period), where the rules differ",
            rule.name(),
            other.name()
        ));
        return;
    }
    out.rule = Some(rule);
}

/// The phases a counter's clock windows are tried at, per window.
const COUNTER_PHASES: u32 = 12;

/// A miss this small per answer (two answers in a hundred off by one) is the trace's own
/// noise (a request dated a few milliseconds off across a reset): a refined period must
/// explain the trace better than a round or stated one by more than it.
const MISS_NOISE: f64 = 0.02;

/// Which rules are one rule told two ways (see `choose`).
fn family(r: &Rule) -> u8 {
    match r {
        Rule::Bucket { .. } => 0,
        Rule::FixedWindow { .. } => 1,
        Rule::SlidingWindow { .. } | Rule::SlidingCounter { .. } => 2,
    }
}

/// Within a family, the plainer way first: the clock's grid, the sliding log.
fn kind_rank(r: &Rule) -> u8 {
    match r {
        Rule::FixedWindow {
            start: WindowStart::FirstRequest,
            ..
        }
        | Rule::SlidingCounter { .. } => 1,
        _ => 0,
    }
}

/// How plainly a server would state `period`: 0 the policy's own window, 1 a round period,
/// 2 any other.
fn period_rank(period: f64, policy_window: Option<f64>) -> u8 {
    let near = |p: f64| (period - p).abs() <= 1e-6 * p;
    if policy_window.is_some_and(near) {
        0
    } else if ROUND_PERIODS.iter().copied().any(near) {
        1
    } else {
        2
    }
}

/// A rule's best period, refusals free or charged.
struct Searched {
    rule: Rule,
    miss: f64,
    /// The best explanation has refused requests cost a token.
    charged: bool,
    /// The miss of the same rule with refusals the other way, where that was tried.
    other_miss: Option<f64>,
}

/// Whether refused requests cost a token, and the evidence: the rule replayed both ways (a
/// fifth better either way decides), and for a bucket the longest `Retry-After` against one
/// token's refill. `None` when the trace cannot tell.
fn refusal_verdict(best: &Searched, refusals: usize, events: &[Event]) -> (Option<bool>, String) {
    let Some(other) = best.other_miss else {
        return (
            None,
            format!(
                "whether refused requests cost a token: cannot tell, {} refuses only when it is \
                 full, and a count past its limit shows nothing until it resets (nor changes \
                 what a client meets)",
                best.rule.name()
            ),
        );
    };
    let (charged, free) = if best.charged {
        (best.miss, other)
    } else {
        (other, best.miss)
    };
    let mut why = format!(
        "over {refusals} 429s, replayed with refused requests costing a token the rule misses \
         by {charged:.2}, with them free by {free:.2}"
    );
    // A free refusal never asks for more than a token or two of refill (whole-second
    // dialects round up to the next second); a charged one asks for one more per 429.
    if let Rule::Bucket { size, period } = best.rule {
        let token = period / size;
        let longest = events
            .iter()
            .filter(|e| e.limited)
            .filter_map(|e| e.retry_after)
            .fold(0.0, f64::max);
        if longest > 2.0 * token + 1.0 {
            let _ = write!(
                why,
                "; the 429s asked to wait up to {longest:.2} s, {:.0} times one token's refill \
                 ({token:.3} s)",
                longest / token
            );
        }
    }
    if charged < free * 0.8 {
        why.push_str(
            ": refused requests are counted (the bucket kept emptying while the 429s came)",
        );
        (Some(true), why)
    } else if free < charged * 0.8 {
        why.push_str(
            ": refusals are free (the bucket refilled through the 429s as if they were not there)",
        );
        (Some(false), why)
    } else {
        why.push_str(": too close to tell whether refused requests cost a token (record longer runs of 429s)");
        (None, why)
    }
}

/// The best period for `rule`, refusals `charged` or free: the round grid (and the policy's
/// window), then 1 % steps around the best.
fn search(
    rule: Rule,
    events: &[Event],
    policy_window: Option<f64>,
    span: f64,
    charged: bool,
) -> (Rule, f64) {
    let longest = span.max(1.0) * 4.0;
    // The periods a server states plainly: the round ones and the policy's window.
    let mut plain: Vec<f64> = ROUND_PERIODS
        .iter()
        .copied()
        .filter(|&p| p <= longest)
        .collect();
    plain.extend(policy_window);
    // Between them, steps of a ninth of a decade (a 4 s window lies 40 % from both 2 s and
    // 5 s, where the refinement's ±40 % may not reach it), and the longest reset the answers
    // stated, a window's own length when it was stated just after a request.
    let mut grid = plain.clone();
    grid.extend(
        (0..)
            .map(|k| 10f64.powf(f64::from(k) / 9.0))
            .take_while(|&p| p <= longest),
    );
    grid.extend(
        events
            .iter()
            .filter_map(|e| e.reset)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))))
            .filter(|r| *r >= 0.5 && *r <= longest),
    );
    // A bucket kept empty admits at its refill rate: the period that rate implies, counted
    // from the first 429 (before it the bucket was spending what it held), which may be far
    // longer than the trace (a slow bucket seen at work for a few seconds).
    let mut implied = None;
    if let Rule::Bucket { size, .. } = rule
        && let Some(first) = events.iter().position(|e| e.limited)
    {
        let after = &events[first..];
        let admitted = after.iter().filter(|e| e.admitted).count() as f64;
        let took = after.last().map_or(0.0, |e| e.at) - after[0].at;
        if admitted > 0.0 && took > 0.0 {
            implied = Some(size * took / admitted);
            grid.push(size * took / admitted);
        }
    }
    // The rule at period `p` and its miss; a counter's clock windows tried at phases a
    // twelfth of a window apart, then finer around the best (the trace's clock is not the
    // server's).
    let fitted = |p: f64| -> (Rule, f64) {
        let at = |r: Rule| (r, r.miss_charged(events, charged));
        match rule.with_period(p) {
            Rule::SlidingCounter { limit, window, .. } => {
                let counter = |phase: f64| {
                    at(Rule::SlidingCounter {
                        limit,
                        window,
                        phase: phase.rem_euclid(window),
                    })
                };
                let better = |a: (Rule, f64), b: (Rule, f64)| if b.1 < a.1 { b } else { a };
                let step = window / f64::from(COUNTER_PHASES);
                let coarse = (0..COUNTER_PHASES)
                    .map(|k| counter(step * f64::from(k)))
                    .reduce(better)
                    .expect("phases to try");
                let Rule::SlidingCounter { phase, .. } = coarse.0 else {
                    return coarse;
                };
                // Then a tenth of a step at a time around the best.
                (-5..=5)
                    .map(|k| counter(phase + step * f64::from(k) / 10.0))
                    .fold(coarse, better)
            }
            r => at(r),
        }
    };
    let score = |p: f64| fitted(p).1;
    let best_of = |periods: &[f64]| {
        periods
            .iter()
            .map(|&p| (p, score(p)))
            .fold(
                (periods[0], f64::INFINITY),
                |b, c| if c.1 < b.1 { c } else { b },
            )
    };
    let (grid_p, grid_m) = best_of(&plain);
    let (best_p, best_m) = best_of(&grid);
    // Then finer: 1 % steps over ±40 %, 0.05 % steps over ±1 % (a rate off by 0.5 % drifts
    // by a token every 200 over a long trace). A round period, or the one the policy states,
    // stays unless another explains the trace clearly better (a tenth, and more than
    // `MISS_NOISE`): real timing's noise alone moves the best period by a few percent.
    // `reach` steps of `step` (a fraction) each side of `center`: the better of them and `best`.
    let scan = |center: f64, step: f64, reach: i32, mut best: (f64, f64)| {
        for k in -reach..=reach {
            let p = center * (1.0 + f64::from(k) * step);
            let m = score(p);
            if m + 1e-9 < best.1 {
                best = (p, m);
            }
        }
        best
    };
    let mut best = scan(best_p, 0.01, 40, (best_p, best_m));
    best = scan(best.0, 0.0005, 20, best);
    // The implied period is a few percent off at best, and on a long trace the miss has a
    // basin a few tenths of a percent wide (a bucket of 60 per 6 minutes over 24 minutes:
    // 0.06 at 6 minutes, 0.30 at 0.2 % off): 0.05 % steps over ±5 % of it.
    if let Some(center) = implied {
        best = scan(center, 0.0005, 100, best);
    }
    let (best_p, best_m) = best;
    if best_m > grid_m * 0.9 - MISS_NOISE {
        return fitted(grid_p);
    }
    fitted(best_p)
}
