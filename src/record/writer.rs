//! A thin CSV row writer: numbers are formatted with itoa/ryu straight into the csv crate's
//! buffer, which keeps series recording cheap enough to leave on at millions of requests per
//! second.

use std::io::Write;
use std::path::Path;

/// What is wrong in a CSV file a run or a comparison wrote: at a line (1: the header), or
/// with the file as a whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvProblem {
    pub line: Option<u64>,
    pub why: String,
}

impl CsvProblem {
    pub fn at(line: u64, why: impl Into<String>) -> CsvProblem {
        CsvProblem {
            line: Some(line),
            why: why.into(),
        }
    }

    /// A row the csv crate could not read, at the line it names.
    pub fn of(e: &csv::Error) -> CsvProblem {
        CsvProblem {
            line: e.position().map(|p| p.line()),
            why: e.to_string(),
        }
    }
}

impl std::fmt::Display for CsvProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.why),
            None => f.write_str(&self.why),
        }
    }
}

/// A CSV file opened for reading, with its header's column names: the first step of every
/// reader of the files a run or a comparison wrote. Only a regular file is opened.
pub fn open_csv(path: &Path) -> Result<(csv::Reader<std::fs::File>, Vec<String>), CsvProblem> {
    let whole = |why: String| CsvProblem { line: None, why };
    crate::infile::check_regular(path).map_err(|e| whole(format!("cannot read it: {e}")))?;
    let mut rdr = csv::Reader::from_path(path).map_err(|e| whole(e.to_string()))?;
    let header = rdr
        .headers()
        .map_err(|e| CsvProblem::at(1, e.to_string()))?
        .iter()
        .map(str::to_string)
        .collect();
    Ok((rdr, header))
}

pub struct CsvSink<W: Write> {
    inner: csv::Writer<W>,
    int: itoa::Buffer,
    float: ryu::Buffer,
}

impl<W: Write> CsvSink<W> {
    pub fn new(w: W) -> Self {
        CsvSink {
            inner: csv::WriterBuilder::new()
                .buffer_capacity(1 << 16)
                .from_writer(w),
            int: itoa::Buffer::new(),
            float: ryu::Buffer::new(),
        }
    }

    pub fn header(&mut self, names: &[&str]) -> std::io::Result<()> {
        self.inner.write_record(names).map_err(into_io)
    }

    #[inline]
    pub fn text(&mut self, s: &str) -> std::io::Result<()> {
        self.inner.write_field(s).map_err(into_io)
    }

    #[inline]
    pub fn uint(&mut self, v: u64) -> std::io::Result<()> {
        let s = self.int.format(v);
        self.inner.write_field(s).map_err(into_io)
    }

    #[inline]
    pub fn float(&mut self, v: f64) -> std::io::Result<()> {
        let s = float_text(&mut self.float, v);
        self.inner.write_field(s).map_err(into_io)
    }

    #[inline]
    pub fn opt_uint(&mut self, v: Option<u64>) -> std::io::Result<()> {
        match v {
            Some(v) => self.uint(v),
            None => self.text(""),
        }
    }

    #[inline]
    pub fn opt_float(&mut self, v: Option<f64>) -> std::io::Result<()> {
        match v {
            Some(v) => self.float(v),
            None => self.text(""),
        }
    }

    #[inline]
    pub fn end_row(&mut self) -> std::io::Result<()> {
        self.inner.write_record(None::<&[u8]>).map_err(into_io)
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A float as [`CsvSink::float`] writes it (shortest round-trip form; empty when not finite),
/// for a value written on many rows.
#[inline]
pub fn float_text(buf: &mut ryu::Buffer, v: f64) -> &str {
    if v.is_finite() {
        buf.format_finite(v)
    } else {
        ""
    }
}

fn into_io(e: csv::Error) -> std::io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => std::io::Error::other(format!("{other:?}")),
    }
}
