//! The grammar of the rate-limit fields, as servers write it: a list of members separated by
//! commas, each a head and `;`-separated `key=value` parameters. It reads every form the IETF
//! drafts went through and what libraries send of each:
//!
//! - draft-6/7 policies, a number and its window: `RateLimit-Policy: 100;w=60, 1000;w=3600`
//!   (and the same after the count in `RateLimit-Limit: 100, 100;w=60`, as Envoy sends it);
//! - draft-7's one dictionary: `RateLimit: limit=100, remaining=42, reset=30`;
//! - draft-8 and later structured fields, a named item per policy:
//!   `RateLimit: "minute";r=42;t=30, "hour";r=900;t=1800` and
//!   `RateLimit-Policy: "minute";q=100;w=60;pk=:Zm9v:`.
//!
//! Strings are read with their quotes removed; a comma or semicolon inside quotes does not
//! split. Nothing here knows what a parameter means: `answer.rs` does.

/// One member of a list: its head (a name, a number or nothing) and its parameters.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Member {
    /// A quoted or bare name (`"minute"`, `default`).
    pub name: Option<String>,
    /// A numeric head (draft-6/7's quota, `100;w=60`).
    pub number: Option<f64>,
    /// `key=value` pairs, keys in lower case, values unquoted.
    pub params: Vec<(String, String)>,
}

impl Member {
    /// The first parameter named any of `keys`.
    pub fn param(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|k| {
            self.params
                .iter()
                .find(|(name, _)| name == k)
                .map(|(_, v)| v.as_str())
        })
    }
}

/// The members of a field. A field whose members are themselves `key=value` (draft-7's
/// dictionary, or a bare `r=42;t=7`) is one member holding every pair.
pub(crate) fn members(field: &str) -> Vec<Member> {
    let parts = split_outside_quotes(field, ',');
    let dictionary = parts.iter().any(|p| {
        let head = split_outside_quotes(p, ';')
            .into_iter()
            .next()
            .unwrap_or("");
        head.contains('=')
    });
    if dictionary {
        let mut one = Member::default();
        for part in &parts {
            for piece in split_outside_quotes(part, ';') {
                if let Some(pair) = pair(piece) {
                    one.params.push(pair);
                }
            }
        }
        return vec![one];
    }
    parts
        .iter()
        .filter(|p| !p.trim().is_empty())
        .map(|part| {
            let mut pieces = split_outside_quotes(part, ';').into_iter();
            let head = pieces.next().unwrap_or("").trim();
            let mut m = Member::default();
            if head.starts_with('"') {
                m.name = Some(unquote(head).to_string());
            } else if let Some(n) = number(head) {
                m.number = Some(n);
            } else if !head.is_empty() {
                m.name = Some(head.to_string());
            }
            m.params = pieces.filter_map(pair).collect();
            m
        })
        .collect()
}

/// A `key=value` piece, the key in lower case and the value unquoted.
fn pair(piece: &str) -> Option<(String, String)> {
    let (k, v) = piece.split_once('=')?;
    let k = k.trim().to_ascii_lowercase();
    (!k.is_empty()).then(|| (k, unquote(v.trim()).to_string()))
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(v)
}

/// `text` cut at every `sep` that is not inside double quotes.
fn split_outside_quotes(text: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                out.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// A non-negative number (`42`, `42.0`, `0.5`, `1e3`; `inf` or `1e400` is one past any
/// bound, which the caller caps); anything else, `NaN` included, says nothing.
pub(crate) fn number(v: &str) -> Option<f64> {
    v.trim().parse::<f64>().ok().filter(|f| *f >= 0.0)
}

/// A count: a whole number, or a non-negative decimal cut to its whole part (some APIs send
/// `42.0`, Reddit sends `598.0`); anything else says nothing.
pub(crate) fn count(v: &str) -> Option<u64> {
    let v = v.trim();
    v.parse::<u64>()
        .ok()
        .or_else(|| number(v).map(|f| f as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn each_draft_form_reads_as_its_members() {
        let draft6 = members("100;w=60, 1000;w=3600;burst=50");
        assert_eq!(draft6.len(), 2);
        assert_eq!(draft6[0].number, Some(100.0));
        assert_eq!(draft6[1].param(&["w"]), Some("3600"));
        let draft7 = members("limit=5, remaining=4, reset=10");
        assert_eq!(draft7.len(), 1);
        assert_eq!(
            draft7[0].params,
            vec![p("limit", "5"), p("remaining", "4"), p("reset", "10")]
        );
        let draft8 = members("\"5-in-10sec\"; q=5; w=10; pk=:MTJj;YTE3:, \"day\";q=1000;w=86400");
        assert_eq!(draft8.len(), 2);
        assert_eq!(draft8[0].name.as_deref(), Some("5-in-10sec"));
        assert_eq!(draft8[0].param(&["q"]), Some("5"));
        assert_eq!(draft8[1].name.as_deref(), Some("day"));
        let quoted = members("\"a,b;c\";r=1");
        assert_eq!(quoted.len(), 1);
        assert_eq!(quoted[0].name.as_deref(), Some("a,b;c"));
        assert_eq!(quoted[0].param(&["r"]), Some("1"));
    }

    #[test]
    fn numbers_are_finite_and_not_negative() {
        assert_eq!(count("42"), Some(42));
        assert_eq!(count("598.0"), Some(598));
        assert_eq!(count("-3"), None);
        assert_eq!(count("NaN"), None);
        assert_eq!(count("inf"), Some(u64::MAX));
        assert_eq!(number("1e3"), Some(1000.0));
        assert_eq!(number("1e400"), Some(f64::INFINITY));
        assert_eq!(count("18446744073709551615"), Some(u64::MAX));
    }
}
