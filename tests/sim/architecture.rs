//! The floors only look down: every `crate::` path in `src/` (a `use` or a path in code, test
//! modules included) names a top-level module on a lower floor than the file's own, or its own
//! module, or a neighbour the floors table of `docs/architecture.md` allows. The table is read
//! from the doc itself, so the doc and this test cannot disagree; a new top-level module gets
//! a row there before anything can import it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Where each top-level module stands, and the same-floor imports the table allows.
struct Floors {
    floor_of: BTreeMap<String, u32>,
    /// `(importer, imported)`, both on one floor.
    allowed: BTreeSet<(String, String)>,
}

/// The names between backticks in `cell`, in order.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The floors table of `docs/architecture.md`: the first Markdown table whose header starts
/// `| floor | modules |`; each row a floor number, its modules, and the allowed same-floor
/// imports written `` `a` → `b` ``.
fn read_floors(doc: &str) -> Floors {
    let mut rows = doc
        .lines()
        .skip_while(|l| !l.replace(' ', "").starts_with("|floor|modules|"))
        .skip(2)
        .take_while(|l| l.trim_start().starts_with('|'))
        .peekable();
    assert!(
        rows.peek().is_some(),
        "docs/architecture.md has no floors table (a header `| floor | modules | …`)"
    );
    let mut floors = Floors {
        floor_of: BTreeMap::new(),
        allowed: BTreeSet::new(),
    };
    for row in rows {
        let cells: Vec<&str> = row.trim().trim_matches('|').split('|').collect();
        let floor: u32 = cells[0]
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("floors table: `{}` is not a floor number", cells[0]));
        for module in backticked(cells[1]) {
            let before = floors.floor_of.insert(module.clone(), floor);
            assert!(before.is_none(), "floors table: `{module}` is listed twice");
        }
        for pair in cells.get(2).map_or("", |c| c).split(',') {
            if let [from, to] = backticked(pair).as_slice() {
                floors.allowed.insert((from.clone(), to.clone()));
            }
        }
    }
    floors
}

/// `text` with comments, string and character literals blanked out (newlines kept, so line
/// numbers still hold): a `crate::` inside them is not an import.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if b[i] == b'r'
            && (i == 0 || !ident(b[i - 1]))
            && matches!(b.get(i + 1), Some(b'#' | b'"'))
        {
            // A raw string: r"…", r#"…"#, …
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = i + 2 + hashes;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| body + p + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('a', '\n', '\u{1F600}'), not a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 2 + p + 1)
            } else {
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: only whole literals are replaced")
}

/// Every `crate::` path in `code` (or `$crate::`, in macros): its line and the top-level
/// modules it names (several for `crate::{a::X, b}`).
fn crate_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let first_segment =
        |s: &str| -> String { s.trim_start().chars().take_while(|&c| ident(c)).collect() };
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].chars().next_back().is_some_and(ident) {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = code[at + "crate::".len()..].trim_start();
        let modules = if let Some(group) = rest.strip_prefix('{') {
            // The top-level items of `{…}`, split at commas outside nested braces.
            let (mut depth, mut items, mut start) = (0, Vec::new(), 0);
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        items.push(&group[start..k]);
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(&group[start..k]);
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            items
                .into_iter()
                .map(first_segment)
                .filter(|m| !m.is_empty())
                .collect()
        } else {
            vec![first_segment(rest)]
        };
        found.push((line, modules));
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to: `src/engine/live/mod.rs` → `engine`,
/// `src/run.rs` → `run`; `None` for `lib.rs`, the crate root, which only declares them, and
/// for `main.rs`, the binary, which stands on all of them (through `throttle_sim::`).
fn top_module(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// What a source tree breaks: one line per import that looks up, or sideways without leave,
/// and per module the table does not place.
fn violations(src: &Path, floors: &Floors) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut modules = BTreeSet::new();
    for file in &files {
        let relative = file.strip_prefix(src).unwrap();
        let shown = Path::new("src").join(relative);
        let Some(own) = top_module(relative) else {
            continue;
        };
        modules.insert(own.clone());
        let Some(&own_floor) = floors.floor_of.get(&own) else {
            problems.push(format!(
                "{}: module `{own}` has no floor in docs/architecture.md's table",
                shown.display()
            ));
            continue;
        };
        let code = code_only(&fs::read_to_string(file).unwrap());
        for (line, imported) in crate_paths(&code) {
            for target in imported {
                if target == own || target == "self" {
                    continue;
                }
                let Some(&floor) = floors.floor_of.get(&target) else {
                    problems.push(format!(
                        "{}:{line}: imports `crate::{target}`, which has no floor in the table",
                        shown.display()
                    ));
                    continue;
                };
                let allowed = floor < own_floor
                    || (floor == own_floor
                        && floors.allowed.contains(&(own.clone(), target.clone())));
                if !allowed {
                    let how = if floor == own_floor {
                        "its own"
                    } else {
                        "a higher"
                    };
                    problems.push(format!(
                        "{}:{line}: `{own}` (floor {own_floor}) imports `crate::{target}` (floor \
                         {floor}), on {how} floor",
                        shown.display()
                    ));
                }
            }
        }
    }
    for module in floors.floor_of.keys() {
        if !modules.contains(module) {
            problems.push(format!(
                "docs/architecture.md's floors table names `{module}`, which is not a module of src/"
            ));
        }
    }
    problems
}

#[test]
fn the_floors_only_look_down() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let floors = read_floors(&doc);
    let problems = violations(&root.join("src"), &floors);
    assert!(
        problems.is_empty(),
        "{} import(s) against the floors of docs/architecture.md:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The checker itself: a made-up tree with one import of each kind.
#[test]
fn the_checker_catches_an_upward_import_and_ignores_comments_and_strings() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path();
    fs::create_dir_all(src.join("low")).unwrap();
    fs::write(
        src.join("lib.rs"),
        "pub mod low; pub mod high; pub mod side;",
    )
    .unwrap();
    fs::write(
        src.join("low/mod.rs"),
        "// use crate::high::X; in a comment\n\
         const S: &str = \"crate::high::Y\";\n\
         const R: &str = r#\"crate::high::Z\"#;\n\
         fn f<'a>(c: char) -> bool { c == '\"' }\n\
         use crate::{side::A,\n    high::{B, C}};\n",
    )
    .unwrap();
    fs::write(
        src.join("high.rs"),
        "use crate::low::Thing;\nfn g() { crate::side::h() }\n",
    )
    .unwrap();
    fs::write(src.join("side.rs"), "use crate::low::Thing;\n").unwrap();
    let floors = read_floors(
        "| floor | modules | also |\n| --- | --- | --- |\n| 2 | `high` | |\n\
         | 1 | `low`, `side` | `low` → `side` |\n",
    );
    let problems = violations(src, &floors);
    assert_eq!(
        problems,
        [
            "src/low/mod.rs:5: `low` (floor 1) imports `crate::high` (floor 2), on a higher floor",
            "src/side.rs:1: `side` (floor 1) imports `crate::low` (floor 1), on its own floor",
        ],
        "{problems:#?}"
    );
}
