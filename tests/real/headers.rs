//! The rate-limit fields real limiters send, captured into
//! `crates/fair-share/testdata/real-headers/` (which the law's crate reads in its unit tests)
//! and checked against them again on every run (the format: that folder's README.md).
//!
//! A capture sends a few requests to a freshly started limiter and keeps the first 2xx and the
//! first 429 it got, each reduced to its status line and its rate-limit fields, `Retry-After`
//! and `Date`. The check compares field names (as HTTP does, in any case) and the shapes of
//! their values (every run of digits one `9`, an HTTP date as such), not the values themselves,
//! which move with the clock: a library upgrade that renames a field, drops one, or writes a
//! number as a date fails it. With `THROTTLE_SIM_WRITE_REAL_HEADERS=1` the captures are
//! written to the files instead, to be looked at and committed.

use std::path::PathBuf;
use std::time::Duration;

use crate::harness::{self, Answer, Limiter};

/// Where the captures are, from the checkout's root.
const FOLDER: &str = "crates/fair-share/testdata/real-headers";

/// The environment variable that makes the tests write the files rather than check them.
const WRITE: &str = "THROTTLE_SIM_WRITE_REAL_HEADERS";

/// How to get a 429 out of a limiter.
#[derive(Clone, Copy, Debug)]
pub enum Send {
    /// One request after another, `gap` apart, at most `most`: enough for any limiter that
    /// refuses once its allowance is spent.
    OneAtATime { most: usize, gap: Duration },
    /// This many at once: nginx without `nodelay` queues requests up to its burst and refuses
    /// only those beyond it, so requests one at a time are never refused.
    AllAtOnce(usize),
}

/// Requests back to back, up to 10: a limit of 5 is spent by the sixth.
pub const BACK_TO_BACK: Send = Send::OneAtATime {
    most: 10,
    gap: Duration::ZERO,
};

/// One configuration to capture: the file's name (without `.txt`) and its first line, the
/// configuration as the limiter was given it (`limit=5 window=10s …`).
pub struct Capture {
    pub name: &'static str,
    pub config: &'static str,
    pub send: Send,
}

/// One answer as the file holds it: the status line and the kept fields, in the order sent.
#[derive(Clone, Debug, PartialEq)]
struct Block {
    status_line: String,
    fields: Vec<(String, String)>,
}

impl Block {
    fn status(&self) -> Option<u16> {
        self.status_line.split(' ').nth(1)?.parse().ok()
    }

    /// `(name in lower case, shape of its value)` for each field, sorted: what is compared.
    fn shapes(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .fields
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), shape(v)))
            .collect();
        out.sort();
        out
    }
}

/// Whether a field is one the files keep.
fn kept(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.contains("ratelimit") || name.starts_with("retry-after") || name == "date"
}

/// A value with what changes from answer to answer taken out: an HTTP date is `<http-date>`,
/// a structured field's byte sequence is `:<bytes>:` (express-rate-limit's `pk=:M2M0…:` is a
/// hash of the key, which changes with the deployment), and every run of digits is one `9`
/// (so `r=49; t=5` and `r=0; t=10` are both `r=9; t=9`).
fn shape(value: &str) -> String {
    if is_http_date(value) {
        return "<http-date>".into();
    }
    let mut out = String::new();
    let mut rest = value;
    while let Some(c) = rest.chars().next() {
        if let Some(len) =
            byte_sequence(rest).filter(|_| matches!(out.chars().last(), None | Some('=' | ' ')))
        {
            out.push_str(":<bytes>:");
            rest = &rest[len..];
            continue;
        }
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('9') || out.is_empty() {
            out.push('9');
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The length of the structured field's byte sequence `text` starts with (`:` base64 `:`,
/// with at least one letter), if it does.
fn byte_sequence(text: &str) -> Option<usize> {
    let inner = text.strip_prefix(':')?;
    let end = inner.find(':')?;
    let body = &inner[..end];
    let base64 = |b: u8| b.is_ascii_alphanumeric() || b"+/=".contains(&b);
    (body.bytes().all(base64) && body.bytes().any(|b| b.is_ascii_alphabetic())).then_some(end + 2)
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`, the one form of date HTTP servers send now.
fn is_http_date(value: &str) -> bool {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = value.split(' ').collect();
    matches!(parts.as_slice(), [day, dd, mon, yyyy, time, "GMT"]
        if day.len() == 4 && day.ends_with(',') && digits(dd, 2) && mon.len() == 3
            && digits(yyyy, 4)
            && time.split(':').collect::<Vec<_>>().iter().all(|p| digits(p, 2))
            && time.len() == 8)
}

fn block(answer: &Answer) -> Block {
    Block {
        status_line: answer.status_line.clone(),
        fields: answer
            .headers
            .iter()
            .filter(|(n, _)| kept(n))
            .cloned()
            .collect(),
    }
}

/// Send requests to `limiter` as `send` says until there is a 2xx and a 429: those two.
fn capture(limiter: &Limiter, send: Send) -> [Block; 2] {
    let port = limiter.port();
    let one = move || harness::get(port, "/", Duration::from_secs(15));
    let answers: Vec<Answer> = match send {
        Send::OneAtATime { most, gap } => {
            let mut got = Vec::new();
            for i in 0..most {
                if i > 0 {
                    std::thread::sleep(gap);
                }
                let a = one().unwrap_or_else(|e| panic!("GET / on port {port}: {e}"));
                let refused = a.status == 429;
                got.push(a);
                if refused {
                    break;
                }
            }
            got
        }
        Send::AllAtOnce(n) => {
            let threads: Vec<_> = (0..n).map(|_| std::thread::spawn(one)).collect();
            threads
                .into_iter()
                .map(|t| t.join().expect("a request's thread").expect("an answer"))
                .collect()
        }
    };
    let first = |ok: fn(u16) -> bool| {
        answers
            .iter()
            .find(|a| ok(a.status))
            .map(block)
            .unwrap_or_else(|| {
                let seen: Vec<u16> = answers.iter().map(|a| a.status).collect();
                panic!("no such answer among {seen:?}: {}", limiter.stderr())
            })
    };
    [first(|s| (200..300).contains(&s)), first(|s| s == 429)]
}

fn path(name: &str) -> PathBuf {
    harness::root().join(FOLDER).join(format!("{name}.txt"))
}

/// The file's text: the configuration and the versions as comments, then one block per
/// answer, blocks separated by an empty line.
fn render(c: &Capture, versions: &str, blocks: &[Block]) -> String {
    let mut out = format!("# {}\n# captured from {versions}\n", c.config);
    for b in blocks {
        out.push('\n');
        out.push_str(&b.status_line);
        out.push('\n');
        for (name, value) in &b.fields {
            out.push_str(&format!("{name}: {value}\n"));
        }
    }
    out
}

/// The blocks of a file's text: comment lines skipped, blocks split at empty lines.
fn parse(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().filter(|l| !l.starts_with('#')).peekable();
    while lines.peek().is_some() {
        let mut chunk = lines.by_ref().skip_while(|l| l.is_empty());
        let Some(status_line) = chunk.next() else {
            break;
        };
        let fields = chunk
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.to_string(), v.trim().to_string()))
            .collect();
        blocks.push(Block {
            status_line: status_line.to_string(),
            fields,
        });
    }
    blocks
}

/// How `got` differs from `stored`, in words: nothing when they have the same status and the
/// same field names with values of the same shapes.
fn differences(stored: &Block, got: &Block) -> Vec<String> {
    let mut out = Vec::new();
    if stored.status() != got.status() {
        out.push(format!(
            "status {:?}, stored {:?}",
            got.status_line, stored.status_line
        ));
    }
    let (was, now) = (stored.shapes(), got.shapes());
    for (name, s) in &was {
        if !now.contains(&(name.clone(), s.clone())) {
            match now.iter().find(|(n, _)| n == name) {
                Some((_, t)) => out.push(format!("{name}: shaped {t:?}, stored {s:?}")),
                None => out.push(format!("{name}: no longer sent")),
            }
        }
    }
    for (name, s) in &now {
        if !was.iter().any(|(n, _)| n == name) {
            out.push(format!("{name}: new, shaped {s:?}"));
        }
    }
    out
}

/// Capture each configuration from a limiter `start` gives it, and hold it to its file (or,
/// with `THROTTLE_SIM_WRITE_REAL_HEADERS` set, write the file).
pub fn check_all(captures: &[Capture], start: impl Fn(&Capture) -> Limiter) {
    let began = std::time::Instant::now();
    let writing = std::env::var_os(WRITE).is_some();
    let mut wrong = Vec::new();
    for c in captures {
        let limiter = start(c);
        let blocks = capture(&limiter, c.send);
        let file = path(c.name);
        if writing {
            std::fs::write(&file, render(c, limiter.versions(), &blocks))
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            println!("wrote {}", file.display());
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            wrong.push(format!(
                "{}: missing; {WRITE}=1 cargo test --test real headers writes it",
                file.display()
            ));
            continue;
        };
        let stored = parse(&text);
        if stored.len() != blocks.len() {
            wrong.push(format!(
                "{}: {} blocks, not 2",
                file.display(),
                stored.len()
            ));
            continue;
        }
        for (was, now) in stored.iter().zip(&blocks) {
            for d in differences(was, now) {
                wrong.push(format!("{} ({}): {d}", c.name, now.status_line));
            }
        }
    }
    let names: Vec<&str> = captures.iter().map(|c| c.name).collect();
    println!(
        "captured {} in {:.1} s of real time",
        names.join(", "),
        began.elapsed().as_secs_f64()
    );
    assert!(
        wrong.is_empty(),
        "the rate-limit fields differ from {FOLDER}/ (if a new version of the limiter meant it, \
         {WRITE}=1 writes the files again):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn shapes_keep_names_and_punctuation_and_drop_numbers_and_dates() {
    assert_eq!(
        shape("\"50-in-5sec\"; r=49; t=5"),
        "\"9-in-9sec\"; r=9; t=9"
    );
    assert_eq!(shape("1796415702"), "9");
    assert_eq!(
        shape("\"5-in-10sec\"; q=5; w=10; pk=:M2M0NjllOWQ2YzU4:"),
        "\"9-in-9sec\"; q=9; w=9; pk=:<bytes>:"
    );
    assert_eq!(shape(":YWJj:"), ":<bytes>:");
    assert_eq!(shape("1.5"), "9.9");
    assert_eq!(shape("Fri, 04 Dec 2026 20:21:31 GMT"), "<http-date>");
    assert_eq!(
        shape("Fri, 4 Dec 2026 20:21:31 GMT"),
        "Fri, 9 Dec 9 9:9:9 GMT"
    );
    assert!(kept("X-RateLimit-Reset") && kept("retry-after-ms") && kept("Date"));
    assert!(!kept("Content-Type") && !kept("Connection"));
}

#[test]
fn a_rendered_file_parses_back_to_its_blocks() {
    let blocks = vec![
        Block {
            status_line: "HTTP/1.1 200 OK".into(),
            fields: vec![("RateLimit".into(), "\"5-in-10sec\"; r=4; t=10".into())],
        },
        Block {
            status_line: "HTTP/1.1 429 Too Many Requests".into(),
            fields: vec![("Retry-After".into(), "10".into())],
        },
    ];
    let c = Capture {
        name: "x",
        config: "limit=5 window=10s",
        send: BACK_TO_BACK,
    };
    let text = render(&c, "x 1.0", &blocks);
    assert!(text.starts_with("# limit=5 window=10s\n# captured from x 1.0\n\nHTTP/1.1 200 OK\n"));
    assert_eq!(parse(&text), blocks);
    let mut renamed = blocks[1].clone();
    renamed.fields[0].0 = "retry-after".into();
    assert!(differences(&blocks[1], &renamed).is_empty());
    renamed.fields[0].1 = "Fri, 04 Dec 2026 20:21:31 GMT".into();
    assert_eq!(differences(&blocks[1], &renamed).len(), 1);
}
