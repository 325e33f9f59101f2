//! Where in a scenario a value lives (`clients[1].threads`), and which line of the file that is.

use std::fmt;

use toml::de::{DeTable, DeValue};

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// A path into the scenario's tree of tables and arrays.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    pub fn root() -> Self {
        FieldPath(Vec::new())
    }

    pub fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Key(k.to_string()));
        p
    }

    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Index(i));
        p
    }

    /// Append the path serde_path_to_error found inside a value deserialized at `self`.
    pub fn join_serde(&self, inner: &serde_path_to_error::Path) -> Self {
        use serde_path_to_error::Segment as S;
        let mut p = self.clone();
        for seg in inner.iter() {
            match seg {
                S::Map { key } | S::Enum { variant: key } => p.0.push(Segment::Key(key.clone())),
                S::Seq { index } => p.0.push(Segment::Index(*index)),
                S::Unknown => {}
            }
        }
        p
    }

    pub fn starts_with(&self, other: &FieldPath) -> bool {
        self.0.starts_with(&other.0)
    }

    /// The 1-based line of the deepest part of this path that the source text defines.
    pub fn line_in(&self, source: &str, doc: &DeTable<'_>) -> Option<usize> {
        let mut offset = None;
        let mut table = Some(doc);
        let mut array: Option<&[toml::Spanned<DeValue<'_>>]> = None;
        for seg in &self.0 {
            let value = match (seg, table, array) {
                (Segment::Key(k), Some(t), _) => t
                    .iter()
                    .find(|(key, _)| key.get_ref().as_ref() == k.as_str())
                    .map(|(key, v)| (key.span().start, v)),
                (Segment::Index(i), _, Some(a)) => a.get(*i).map(|v| (v.span().start, v)),
                _ => None,
            };
            let Some((start, v)) = value else { break };
            offset = Some(start);
            table = None;
            array = None;
            match v.get_ref() {
                DeValue::Table(t) => table = Some(t),
                DeValue::Array(a) => array = Some(&a[..]),
                _ => {}
            }
        }
        offset.map(|o| line_of(source, o))
    }
}

/// 1-based line number of a byte offset.
pub fn line_of(source: &str, offset: usize) -> usize {
    source.as_bytes()[..offset.min(source.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Segment::Key(k) if i == 0 => write!(f, "{k}")?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_line_of_nested_fields() {
        let src = "name = \"x\"\n[run]\nduration = \"1h\"\n\n[[clients]]\nname = \"a\"\n\n[[clients]]\nname = \"b\"\nthreads = 0\n";
        let doc = DeTable::parse(src).unwrap();
        let p = FieldPath::root().key("clients").index(1).key("threads");
        assert_eq!(p.to_string(), "clients[1].threads");
        assert_eq!(p.line_in(src, doc.get_ref()), Some(10));
        let p = FieldPath::root().key("run").key("duration");
        assert_eq!(p.line_in(src, doc.get_ref()), Some(3));
        // A field the file does not define falls back to its table.
        let p = FieldPath::root().key("clients").index(0).key("threads");
        assert!(p.line_in(src, doc.get_ref()).unwrap() >= 5);
    }
}
