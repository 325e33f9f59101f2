//! What a person reads: the summary as a table, on the terminal and in `summary.md`; the
//! charts (SVG and PNG) and the self-contained `report.html`.

pub mod canvas;
pub mod charts;
mod error;
mod files;
pub mod html;
mod run_report;
pub mod series;
mod summary;
mod table;

pub use error::ReportError;
pub use files::read_text;
pub use run_report::{
    RunFolder, VARIANT_NOTE, VariantNote, WrittenChart, caption, write_chart, write_run_report,
};
pub use summary::{
    metrics_table, processes_table, summary_markdown, terminal_summary, write_summary,
};
pub use table::Table;
