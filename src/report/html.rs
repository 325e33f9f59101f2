//! `report.html`: one self-contained page — inline CSS and inline SVG, no script, no network —
//! so it opens the same from a laptop, a CI artifact or an email attachment.

use super::Table;

/// Text safe inside HTML elements and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "\
body{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;margin:0;background:#f6f6f4;color:#222}\
main{max-width:1200px;margin:0 auto;padding:24px 28px 48px;background:#fff}\
h1{font-size:1.7em;margin:.2em 0 .1em}h2{font-size:1.25em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd;padding-bottom:.2em}\
p.meta{color:#555;margin-top:0}\
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.92em}\
div.scroll{overflow-x:auto;max-width:100%}\
th,td{padding:4px 8px;border-bottom:1px solid #e4e4e4;text-align:right;white-space:nowrap}\
th:first-child,td:first-child{text-align:left}th{background:#f0f0ee}\
td.best{font-weight:bold;color:#14632a}\
span.pm{display:block;font-size:.8em;color:#555;font-weight:normal}\
figure{margin:1em 0 2em}figure svg{max-width:100%;height:auto;border:1px solid #e4e4e4}\
figcaption{color:#444;font-size:.93em;margin-top:.4em;max-width:60em}\
.pass{color:#14632a}.missed{color:#a31515;font-weight:bold}\
ul.plain{list-style:none;padding-left:.5em}\
footer{margin-top:3em;color:#777;font-size:.85em}code{background:#f0f0ee;padding:0 3px}";

/// A page built top to bottom.
pub struct Page {
    body: String,
    title: String,
}

impl Page {
    pub fn new(title: &str) -> Self {
        Page {
            body: format!("<h1>{}</h1>\n", escape(title)),
            title: title.to_string(),
        }
    }

    pub fn heading(&mut self, text: &str) {
        self.body.push_str(&format!("<h2>{}</h2>\n", escape(text)));
    }

    pub fn paragraph(&mut self, text: &str) {
        self.body.push_str(&format!("<p>{}</p>\n", escape(text)));
    }

    pub fn meta(&mut self, text: &str) {
        self.body
            .push_str(&format!("<p class=\"meta\">{}</p>\n", escape(text)));
    }

    /// Already-safe HTML (tables and lists this module made).
    pub fn raw(&mut self, html: &str) {
        self.body.push_str(html);
    }

    /// An inline SVG chart with its caption (none when `caption` is empty).
    pub fn figure(&mut self, svg: &str, caption: &str) {
        self.body.push_str("<figure>\n");
        self.body.push_str(svg.trim());
        if !caption.is_empty() {
            self.body
                .push_str(&format!("\n<figcaption>{}</figcaption>", escape(caption)));
        }
        self.body.push_str("\n</figure>\n");
    }

    pub fn finish(mut self, footer: &str) -> String {
        self.body
            .push_str(&format!("<footer>{}</footer>\n", escape(footer)));
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{}</main>\n\
             </body>\n</html>\n",
            escape(&self.title),
            self.body
        )
    }
}

/// An HTML table; `best(row, column)` marks a cell as the best of its column. It sits in a box
/// of its own that scrolls sideways when the table is wider than the page's column, so the
/// page itself never does.
pub fn table(t: &Table, best: impl Fn(usize, usize) -> bool) -> String {
    let mut out = String::from("<div class=\"scroll\">\n<table>\n<thead><tr>");
    for h in t.header() {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (r, row) in t.rows().iter().enumerate() {
        out.push_str("<tr>");
        for (c, cell) in row.iter().enumerate() {
            let class = if best(r, c) { " class=\"best\"" } else { "" };
            out.push_str(&format!("<td{class}>{}</td>", cell_html(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
    out
}

/// A cell's text as HTML: a mean with its interval ("0.999 +0.001 -0.001", "1.94% ± 0.37")
/// puts the interval on a smaller line under the mean, so a column is as wide as the wider of
/// the two, not both side by side (a comparison's key columns then fit 1,280 px).
fn cell_html(cell: &str) -> String {
    match cell.find(" ± ").or_else(|| cell.find(" +")) {
        Some(i) => format!(
            "{}<span class=\"pm\">{}</span>",
            escape(&cell[..i]),
            escape(&cell[i + 1..])
        ),
        None => escape(cell),
    }
}

/// A list of already-safe items that carry their own numbers ("1. fair-share …"): no bullets.
pub fn plain_list(items: &[String]) -> String {
    list(items).replacen("<ul>", "<ul class=\"plain\">", 1)
}

/// A bulleted list of already-safe items.
pub fn list(items: &[String]) -> String {
    let mut out = String::from("<ul>\n");
    for i in items {
        out.push_str(&format!("<li>{i}</li>\n"));
    }
    out.push_str("</ul>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_builds_a_whole_page() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let mut p = Page::new("x <y>");
        p.figure("<svg></svg>", "read <this>");
        let html = p.finish("made here");
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>x &lt;y&gt;</title>"));
        assert!(html.contains("<svg></svg>"));
        assert!(html.contains("read &lt;this&gt;"));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }
}
