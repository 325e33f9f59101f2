//! The floors only look down: every `crate::` path in `src/` (a `use` or a path in code, test
//! modules included) names a top-level module on a lower floor than the file's own, or its own
//! module, or a neighbour the floors table of `docs/architecture.md` allows. The table is read
//! from the doc itself, so the doc and this test cannot disagree; a new top-level module gets
//! a row there before anything can import it.
//!
//! Inside a module the files of one folder form no cycle either: two files that import each
//! other cannot be read, tested or moved one without the other, so what both need goes into a
//! module below them. And every file the page names exists, so the map does not go stale.

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

/// Where a file of `src/` stands among the crate's modules: `["scenario", "load"]` for
/// `scenario/load.rs`, `["scenario"]` for `scenario/mod.rs`, `[]` for `lib.rs`; `None` for
/// `main.rs`, the root of another crate (the binary).
fn module_path(relative: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    match last.strip_suffix(".rs")? {
        "main" if parts.is_empty() => None,
        "lib" if parts.is_empty() => Some(parts),
        "mod" => Some(parts),
        stem => {
            parts.push(stem.to_string());
            Some(parts)
        }
    }
}

/// Whether `b[at..]` starts the word `word` (no identifier character on either side).
fn word_at(b: &[u8], at: usize, word: &str) -> bool {
    let ident = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    b[at..].starts_with(word.as_bytes())
        && (at == 0 || !ident(&b[at - 1]))
        && !b.get(at + word.len()).is_some_and(ident)
}

fn skip_space(b: &[u8], i: &mut usize) {
    while b.get(*i).is_some_and(u8::is_ascii_whitespace) {
        *i += 1;
    }
}

/// The inline modules of `code` (`mod tests { … }`): each one's name and the byte range of
/// its body, outermost first. A `super::` inside one starts from it, not from the file.
fn inline_modules(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    for (at, _) in code.match_indices("mod") {
        if !word_at(b, at, "mod") {
            continue;
        }
        let mut i = at + 3;
        skip_space(b, &mut i);
        let name_at = i;
        while b
            .get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            i += 1;
        }
        let name = &code[name_at..i];
        skip_space(b, &mut i);
        if name.is_empty() || b.get(i) != Some(&b'{') {
            continue; // `mod x;`: a file of its own
        }
        let (open, mut depth) = (i, 0usize);
        let close = (open..b.len())
            .find(|&k| {
                match b[k] {
                    b'{' => depth += 1,
                    b'}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .unwrap_or(b.len());
        found.push((name.to_string(), open, close));
    }
    found
}

/// One path of a `use` tree, its groups expanded: its segments, and the name it binds.
type Bound = (Vec<String>, String);

/// The paths a `use` tree (or a path in code) starting at `at` stands for, its groups
/// expanded: `super::{a::X, b::{self, Y as Z}}` gives `super::a::X`, `super::b::self` and
/// `super::b::Y`, each with the name it binds (`X`, `self`, `Z`).
fn use_tree(code: &str, at: usize) -> Vec<Bound> {
    fn tree(code: &str, i: &mut usize, mut segments: Vec<String>, out: &mut Vec<Bound>) {
        let b = code.as_bytes();
        let ident = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$';
        loop {
            skip_space(b, i);
            match b.get(*i) {
                Some(b'{') => {
                    *i += 1;
                    loop {
                        skip_space(b, i);
                        match b.get(*i) {
                            None => return,
                            Some(b'}') => {
                                *i += 1;
                                return;
                            }
                            Some(b',') => *i += 1,
                            Some(_) => {
                                let before = *i;
                                tree(code, i, segments.clone(), out);
                                if *i == before {
                                    *i += 1;
                                }
                            }
                        }
                    }
                }
                Some(b'*') => {
                    *i += 1;
                    segments.push("*".into());
                    out.push((segments, "*".into()));
                    return;
                }
                _ => {}
            }
            let start = *i;
            while b.get(*i).is_some_and(ident) {
                *i += 1;
            }
            if *i == start {
                // `Type::<T>`, `f::()`: the path ends before what is not a name.
                if let Some(last) = segments.last().cloned() {
                    out.push((segments, last));
                }
                return;
            }
            segments.push(code[start..*i].to_string());
            let after = *i;
            skip_space(b, i);
            if b[*i..].starts_with(b"::") {
                *i += 2;
                continue;
            }
            let mut bound = segments.last().cloned().unwrap_or_default();
            if word_at(b, *i, "as") {
                *i += 2;
                skip_space(b, i);
                let alias = *i;
                while b.get(*i).is_some_and(ident) {
                    *i += 1;
                }
                bound = code[alias..*i].to_string();
            } else {
                *i = after;
            }
            out.push((segments, bound));
            return;
        }
    }
    let mut out = Vec::new();
    tree(code, &mut at.clone(), Vec::new(), &mut out);
    out
}

/// `segments` from the module `here` (a file's module and the inline modules around the
/// path) made absolute from the crate's root, when it starts with `crate`, `super` or `self`;
/// `self` in a group (`a::{self, B}`) and a glob's `*` name no module and are dropped.
fn absolute(here: &[String], segments: &[String]) -> Option<Vec<String>> {
    let (mut base, mut rest) = match segments.first()?.as_str() {
        "crate" | "$crate" => (Vec::new(), &segments[1..]),
        "self" => (here.to_vec(), &segments[1..]),
        "super" => (here.to_vec(), segments),
        _ => return None,
    };
    while let Some(("super", more)) = rest.split_first().map(|(s, m)| (s.as_str(), m)) {
        base.pop()?;
        rest = more;
    }
    base.extend(rest.iter().filter(|s| *s != "self" && *s != "*").cloned());
    Some(base)
}

/// The modules of a crate's source tree: each module's files, and the names of the modules
/// that are files or folders of their own under it (its children).
struct Tree {
    /// Each module's children, by name, as a file (`load.rs`) or a folder (`live/`) of its
    /// folder (`queue.rs` and its folder `queue/` are one module, shown as the file).
    children: BTreeMap<Vec<String>, BTreeMap<String, String>>,
    /// Each file: its module and its text with comments and literals blanked.
    files: Vec<(PathBuf, Vec<String>, String)>,
}

fn read_tree(src: &Path) -> Tree {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    paths.sort();
    let mut tree = Tree {
        children: BTreeMap::new(),
        files: Vec::new(),
    };
    for path in paths {
        let relative = path.strip_prefix(src).unwrap();
        let Some(module) = module_path(relative) else {
            continue;
        };
        // A file in a folder makes the folder a child of the folder above it.
        let folders: Vec<String> = relative
            .parent()
            .map(|p| p.iter().map(|c| c.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        for depth in 0..folders.len() {
            tree.children
                .entry(folders[..depth].to_vec())
                .or_default()
                .entry(folders[depth].clone())
                .or_insert_with(|| format!("{}/", folders[depth]));
        }
        if relative.file_name().is_some_and(|n| n != "mod.rs")
            && let Some((name, parent)) = module.split_last()
        {
            tree.children
                .entry(parent.to_vec())
                .or_default()
                .insert(name.clone(), format!("{name}.rs"));
        }
        let code = code_only(&fs::read_to_string(&path).unwrap());
        tree.files
            .push((Path::new("src").join(relative), module, code));
    }
    tree
}

/// Every path in `code` that starts with `crate::`, `super::` or `self::`: its byte offset and
/// the paths its groups stand for.
fn relative_paths(code: &str) -> Vec<(usize, Vec<Bound>)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    for word in ["crate", "super", "self"] {
        for (at, _) in code.match_indices(word) {
            let dollar = at > 0 && b[at - 1] == b'$';
            if !(word_at(b, at, word) || dollar && word == "crate") {
                continue;
            }
            let mut after = at + word.len();
            skip_space(b, &mut after);
            if !b[after..].starts_with(b"::") {
                continue;
            }
            // Not the middle of a path (`super::super::x`, `a::self`).
            let before = code[..at - usize::from(dollar)].trim_end();
            if before.ends_with("::") {
                continue;
            }
            found.push((
                at - usize::from(dollar),
                use_tree(code, at - usize::from(dollar)),
            ));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found
}

/// The module `here` and the inline modules around `at`, from the crate's root.
fn module_at(file_module: &[String], inline: &[(String, usize, usize)], at: usize) -> Vec<String> {
    let mut here = file_module.to_vec();
    here.extend(
        inline
            .iter()
            .filter(|(_, open, close)| (*open..*close).contains(&at))
            .map(|(name, ..)| name.clone()),
    );
    here
}

/// What each module's own file re-exports from its children (`pub use load::parse_scenario;`
/// in `scenario/mod.rs`), by the name it binds: a sibling's `super::parse_scenario` is an
/// import of `load`.
fn reexports(tree: &Tree) -> BTreeMap<Vec<String>, BTreeMap<String, String>> {
    let mut map: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    for (_, module, code) in &tree.files {
        let Some(children) = tree.children.get(module) else {
            continue;
        };
        let inline = inline_modules(code);
        let b = code.as_bytes();
        for (at, _) in code.match_indices("use") {
            if !word_at(b, at, "use") || inline.iter().any(|(_, o, c)| (*o..*c).contains(&at)) {
                continue;
            }
            for (segments, bound) in use_tree(code, at + 3) {
                let target = match segments.first() {
                    Some(first) if children.contains_key(first) => {
                        module.iter().chain(&segments).cloned().collect()
                    }
                    _ => match absolute(module, &segments) {
                        Some(target) => target,
                        None => continue,
                    },
                };
                let Some(child) = target.get(module.len()) else {
                    continue;
                };
                if target.starts_with(module) && children.contains_key(child) && bound != "*" {
                    map.entry(module.clone())
                        .or_default()
                        .insert(bound, child.clone());
                }
            }
        }
    }
    map
}

/// One import between two children of a module: where it is and what it names.
struct Import {
    from: String,
    to: String,
    at: String,
}

/// Every import between two files (or folders) of one folder: the folder's module, and for
/// each the file's line and the path, made absolute.
fn folder_imports(tree: &Tree) -> BTreeMap<Vec<String>, Vec<Import>> {
    let reexported = reexports(tree);
    let mut imports: BTreeMap<Vec<String>, Vec<Import>> = BTreeMap::new();
    for (shown, module, code) in &tree.files {
        let inline = inline_modules(code);
        for (at, paths) in relative_paths(code) {
            let here = module_at(module, &inline, at);
            let line = code[..at].matches('\n').count() + 1;
            for (segments, _) in paths {
                let Some(target) = absolute(&here, &segments) else {
                    continue;
                };
                let common = module
                    .iter()
                    .zip(&target)
                    .take_while(|(a, b)| a == b)
                    .count();
                let (Some(from), Some(name)) = (module.get(common), target.get(common)) else {
                    continue;
                };
                let folder = module[..common].to_vec();
                let Some(children) = tree.children.get(&folder) else {
                    continue;
                };
                let to = if children.contains_key(name) {
                    Some(name.clone())
                } else {
                    reexported.get(&folder).and_then(|r| r.get(name)).cloned()
                };
                if let Some(to) = to.filter(|to| to != from) {
                    imports.entry(folder).or_default().push(Import {
                        from: from.clone(),
                        to,
                        at: format!(
                            "{}:{line} imports `{}`",
                            shown.display(),
                            segments.join("::")
                        ),
                    });
                }
            }
        }
    }
    imports
}

/// Every cycle among the files of one folder: one line each, naming the folder, the files
/// round the cycle and the import that makes each step.
fn cycles(tree: &Tree) -> Vec<String> {
    let mut problems = Vec::new();
    for (folder, imports) in folder_imports(tree) {
        let children = &tree.children[&folder];
        let mut edges: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
        for i in &imports {
            edges
                .entry(&i.from)
                .or_default()
                .entry(&i.to)
                .or_insert(&i.at);
        }
        let reach = |from: &str| -> BTreeMap<String, Vec<String>> {
            // Shortest paths from `from`, by breadth.
            let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([vec![from.to_string()]]);
            while let Some(path) = queue.pop_front() {
                let last = path.last().unwrap().clone();
                for next in edges.get(last.as_str()).into_iter().flat_map(|e| e.keys()) {
                    if !seen.contains_key(*next) {
                        let mut longer = path.clone();
                        longer.push(next.to_string());
                        seen.insert(next.to_string(), longer.clone());
                        queue.push_back(longer);
                    }
                }
            }
            seen
        };
        let mut reported: BTreeSet<String> = BTreeSet::new();
        for start in edges.keys() {
            if reported.contains(*start) {
                continue;
            }
            let Some(round) = reach(start).remove(*start) else {
                continue;
            };
            reported.extend(round.iter().cloned());
            let steps: Vec<String> = round
                .windows(2)
                .map(|w| edges[w[0].as_str()][w[1].as_str()].to_string())
                .collect();
            let mut shown = PathBuf::from("src");
            shown.extend(&folder);
            problems.push(format!(
                "{}/: {} ({})",
                shown.display(),
                round
                    .iter()
                    .map(|m| children[m].as_str())
                    .collect::<Vec<_>>()
                    .join(" → "),
                steps.join("; ")
            ));
        }
    }
    problems
}

#[test]
fn the_files_of_one_folder_form_no_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let problems = cycles(&read_tree(&root.join("src")));
    assert!(
        problems.is_empty(),
        "{} cycle(s) between the files of one folder; move what both sides need into a \
         module below them:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The checker itself, on a made-up tree: a cycle by `super::`, one by `crate::` through a
/// folder, and one hidden behind a re-export of the folder's `mod.rs` are found; imports
/// that go one way, a test module's `super::*`, and paths in comments and strings are not
/// cycles.
#[test]
fn the_cycle_checker_finds_a_planted_cycle_and_only_cycles() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path();
    let files = [
        ("lib.rs", "pub mod a; pub mod b;"),
        (
            "a/mod.rs",
            "mod x; mod y; mod z; mod w; mod one; mod two;\npub use w::Hidden;\npub struct Here;",
        ),
        ("a/x.rs", "use super::y::Y;\npub struct X;"),
        (
            "a/y.rs",
            "use super::Here;\n\nfn f() -> crate::a::x::X { todo!() }",
        ),
        ("a/z.rs", "use super::{Hidden, one::One};\npub struct Z;"),
        ("a/w.rs", "pub struct Hidden;\nuse crate::a::{self, z::Z};"),
        (
            "a/one.rs",
            "pub struct One;\n// use super::two::T;\nconst S: &str = \"super::two::T\";\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::two::T;\n}",
        ),
        ("a/two.rs", "pub struct T;\nuse super::one::One;"),
        ("b/mod.rs", "mod deep;"),
        ("b/deep/mod.rs", "mod c; mod d;"),
        ("b/deep/c.rs", "use super::d::D;"),
        (
            "b/deep/d.rs",
            "pub struct D;\nmod tests { use super::super::c; }",
        ),
    ];
    for (path, text) in files {
        let path = src.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let tree = read_tree(src);
    let problems = cycles(&tree);
    assert_eq!(
        problems,
        [
            "src/a/: one.rs → two.rs → one.rs (src/a/one.rs:7 imports `super::super::two::T`; \
             src/a/two.rs:2 imports `super::one::One`)",
            "src/a/: w.rs → z.rs → w.rs (src/a/w.rs:2 imports `crate::a::z::Z`; src/a/z.rs:1 \
             imports `super::Hidden`)",
            "src/a/: x.rs → y.rs → x.rs (src/a/x.rs:1 imports `super::y::Y`; src/a/y.rs:3 \
             imports `crate::a::x::X`)",
            "src/b/deep/: c.rs → d.rs → c.rs (src/b/deep/c.rs:1 imports `super::d::D`; \
             src/b/deep/d.rs:2 imports `super::super::c`)",
        ],
        "{problems:#?}"
    );
    // Take the planted cycles away one side each: nothing is left.
    for (path, text) in [
        ("a/y.rs", "use super::Here;"),
        ("a/w.rs", "pub struct Hidden;"),
        ("a/one.rs", "pub struct One;\nmod tests { use super::*; }"),
        ("b/deep/d.rs", "pub struct D;"),
    ] {
        fs::write(src.join(path), text).unwrap();
    }
    assert_eq!(cycles(&read_tree(src)), Vec::<String>::new());
}

/// Every file and folder under `root`'s source folders, relative to it (`src/engine/sim.rs`,
/// `src/engine/`, …): what a path the page names may be the end of.
fn repository_paths(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                // What installs and builds put inside the checkout is no part of the map.
                let name = path.file_name().unwrap().to_string_lossy();
                if !matches!(name.as_ref(), "node_modules" | ".venv" | "__pycache__") {
                    out.push(format!("{relative}/"));
                    walk(root, &path, out);
                }
            } else {
                out.push(relative);
            }
        }
    }
    let mut out = Vec::new();
    for top in [
        "src",
        "tests",
        "crates",
        "examples",
        "ports",
        "docs",
        "scripts",
        "scenarios",
        "benches",
    ] {
        walk(root, &root.join(top), &mut out);
    }
    out
}

/// The paths between backticks in `doc` that name a file or folder of the repository: a
/// Rust file, or anything with a `/` in it that is not a URL's path (`/_dashboard.json`) or a
/// pattern (`results/<run>/`, `scenarios/*.toml`). A name starting `my_` is the page's
/// placeholder for a file the reader is to write (`src/throttle/my_algo.rs`).
fn named_paths(doc: &str) -> Vec<String> {
    // Outside fenced code blocks, whose code and diagrams hold backticks of their own.
    let mut fenced = false;
    let prose: String = doc
        .lines()
        .filter(|line| {
            fenced ^= line.trim_start().starts_with("```");
            !fenced && !line.trim_start().starts_with("```")
        })
        .collect::<Vec<_>>()
        .join("\n");
    backticked(&prose)
        .into_iter()
        .filter(|p| p.ends_with(".rs") || p.contains('/'))
        .filter(|p| !p.starts_with('/') && !p.contains(['<', '*', ' ', '{']))
        .filter(|p| !p.rsplit('/').next().unwrap_or(p).starts_with("my_"))
        .collect()
}

/// Whether `named` is a path of the repository, or the end of one (`queue/heap.rs` is
/// `src/engine/queue/heap.rs`; the page names a file by as much of its path as its context
/// leaves unclear).
fn exists(named: &str, paths: &[String]) -> bool {
    paths
        .iter()
        .any(|p| p == named || p.ends_with(&format!("/{named}")))
}

#[test]
fn every_path_the_architecture_page_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let paths = repository_paths(root);
    let named = named_paths(&doc);
    assert!(named.len() > 50, "{named:?}");
    let missing: Vec<&String> = named.iter().filter(|p| !exists(p, &paths)).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names paths that are not in the repository: {missing:?}"
    );
}

/// The path check itself: a moved file is caught, a file named by the end of its path is
/// found, and outputs, URLs, patterns and placeholders are not taken for paths.
#[test]
fn the_path_check_catches_a_stale_path() {
    let paths: Vec<String> = [
        "src/",
        "src/engine/",
        "src/engine/queue.rs",
        "src/engine/queue/",
    ]
    .map(String::from)
    .into();
    let named = named_paths(
        "`engine/queue.rs`, `queue/`, `src/engine/`, `engine/queue/queue.rs`, `summary.json`, \
         `/_dashboard.json`, `results/<run>/`, `scenarios/*.toml`, `src/throttle/my_algo.rs`",
    );
    assert_eq!(
        named,
        [
            "engine/queue.rs",
            "queue/",
            "src/engine/",
            "engine/queue/queue.rs"
        ]
    );
    let missing: Vec<&String> = named.iter().filter(|p| !exists(p, &paths)).collect();
    assert_eq!(missing, ["engine/queue/queue.rs"]);
}
