//! A small table rendered two ways: aligned plain text for terminals, Markdown for files.

pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn header(&self) -> &[String] {
        &self.header
    }

    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
    }

    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        w
    }

    /// Left-aligned first column, right-aligned numbers.
    fn line(cells: &[String], widths: &[usize], sep: &str) -> String {
        cells
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (c, &w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join(sep)
    }

    pub fn plain(&self) -> String {
        let w = self.widths();
        let mut out = Self::line(&self.header, &w, "  ");
        out.push('\n');
        for r in &self.rows {
            out.push_str(&Self::line(r, &w, "  "));
            out.push('\n');
        }
        out
    }

    /// The table in Markdown. Each cell is escaped: a `|` would split it, a newline end
    /// the table, and `<`, `>` and `&` could make HTML of a name (`<script>`).
    pub fn markdown(&self) -> String {
        let escaped = Table {
            header: self.header.iter().map(|c| markdown_cell(c)).collect(),
            rows: self
                .rows
                .iter()
                .map(|r| r.iter().map(|c| markdown_cell(c)).collect())
                .collect(),
        };
        escaped.markdown_escaped()
    }

    fn markdown_escaped(&self) -> String {
        let w = self.widths();
        let mut out = format!("| {} |\n", Self::line(&self.header, &w, " | "));
        let rule: Vec<String> = w
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let dashes = "-".repeat(n.max(3) - 1);
                if i == 0 {
                    format!("{dashes}-")
                } else {
                    format!("{dashes}:")
                }
            })
            .collect();
        out.push_str(&format!(
            "|{}|\n",
            rule.iter()
                .map(|r| format!(" {r} "))
                .collect::<Vec<_>>()
                .join("|")
        ));
        for r in &self.rows {
            out.push_str(&format!("| {} |\n", Self::line(r, &w, " | ")));
        }
        out
    }
}

/// A Markdown table cell's text: `|` escaped, `<`, `>` and `&` as HTML entities, and
/// controls (a newline) written as escapes (`\n`), so the cell stays one cell of one row.
pub fn markdown_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn markdown_cells_cannot_break_the_table_or_make_html() {
        let mut t = Table::new(&["group", "requests"]);
        t.row(vec!["a|b\nc<script>&".into(), "1".into()]);
        let md = t.markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 3, "{md}");
        assert!(
            lines[2].starts_with("| a\\|b\\nc&lt;script&gt;&amp; |"),
            "{md}"
        );
        assert!(!md.contains("<script>"));
        // Plain text is for terminals and stays as written.
        assert!(t.plain().contains("a|b"));
    }

    use super::*;

    #[test]
    fn renders_aligned_text_and_markdown() {
        let mut t = Table::new(&["name", "n"]);
        t.row(vec!["alpha".into(), "5".into()]);
        t.row(vec!["b".into(), "123".into()]);
        assert_eq!(t.plain(), "name     n\nalpha    5\nb      123\n");
        let md = t.markdown();
        assert!(md.starts_with("| name  |   n |\n| ----- | --: |\n"), "{md}");
        assert!(md.contains("| b     | 123 |"), "{md}");
    }
}
