//! "Did you mean …?": the name nearest to a misspelt one, by edit distance, for the names
//! that are ours (algorithms, server kinds, scenario fields, metrics, header dialects; clap
//! already does it for commands and flags).

/// The edits (insert, delete, substitute one character, swap two neighbours) between two
/// names, after folding case and taking `-` and `_` as the same (`fair_share` is
/// `fair-share`).
fn distance(a: &str, b: &str) -> usize {
    let fold = |s: &str| -> Vec<char> {
        s.chars()
            .map(|c| {
                if c == '_' {
                    '-'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    };
    let (a, b) = (fold(a), fold(b));
    // d[i][j]: the edits between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j - 1] + cost)
                .min(d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The longest name a suggestion is looked for.
const MAX_NAME: usize = 64;

/// The candidate nearest to `name`, when it is near enough to be what was meant: at most a
/// third of the name's characters (and at least one) edited, or `name` a prefix of it.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // No name of ours is this long: a longer one is not a slip of the keyboard, and the
    // distance's table would grow with it.
    if name.len() > MAX_NAME {
        return None;
    }
    let allowed = (name.chars().count() / 3).max(1);
    let lower = name.to_ascii_lowercase();
    candidates
        .into_iter()
        .filter(|c| !c.is_empty() && c.len() <= 2 * MAX_NAME && *c != name)
        .map(|c| {
            let d = distance(name, c);
            let prefix = lower.len() >= 3 && c.to_ascii_lowercase().starts_with(&lower);
            (if prefix { d.min(allowed) } else { d }, c)
        })
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `; did you mean `x`?` for `name` among `candidates`, or nothing.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    nearest(name, candidates).map_or(String::new(), |c| format!("; did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_name_is_suggested_and_a_far_one_is_not() {
        let algorithms = ["schneems", "fair-share", "aimd", "gcra-client", "fixed"];
        assert_eq!(nearest("fairshare", algorithms), Some("fair-share"));
        assert_eq!(nearest("fair_share", algorithms), Some("fair-share"));
        assert_eq!(nearest("Schneems", algorithms), Some("schneems"));
        assert_eq!(nearest("shneems", algorithms), Some("schneems"));
        assert_eq!(nearest("aimdd", algorithms), Some("aimd"));
        assert_eq!(nearest("fair", algorithms), Some("fair-share"));
        assert_eq!(nearest("gcar", ["gcra", "occ"]), Some("gcra"));
        assert_eq!(nearest("bogus", algorithms), None);
        assert_eq!(nearest("x", algorithms), None);
        assert_eq!(
            nearest("initial-sleep", ["initial_sleep", "sleep"]),
            Some("initial_sleep")
        );
        assert_eq!(
            did_you_mean("thread", ["threads", "processes"]),
            "; did you mean `threads`?"
        );
        assert_eq!(did_you_mean("zzz", ["threads"]), "");
        assert_eq!(nearest(&"t".repeat(100_000), ["threads"]), None);
    }

    #[test]
    fn the_distance_counts_single_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", "abc"), 0);
        assert_eq!(distance("a_b", "A-B"), 0);
        assert_eq!(distance("gcar", "gcra"), 1);
    }
}
