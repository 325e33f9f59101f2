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

    pub fn markdown(&self) -> String {
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

#[cfg(test)]
mod tests {
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
