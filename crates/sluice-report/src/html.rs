//! The page around the charts: one box per chart or table, a header naming the runs, inline CSS only.

use std::fmt::Write;

use crate::svg::{escape, Line};

/// What a box holds, which decides how the page (and its browser test) treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An SVG chart.
    Chart,
    /// A table.
    Table,
}

/// One box of the report.
#[derive(Debug, Clone)]
pub struct Section {
    /// Chart or table.
    pub kind: Kind,
    /// The box's heading.
    pub title: String,
    /// One explanatory line under the heading (may be empty).
    pub note: String,
    /// The box's content: an `<svg>` and its legend, or a `<table>`.
    pub body: String,
}

/// A part of the page: a box, or a one-line note that says why a chart is left out.
#[derive(Debug, Clone)]
pub enum Part {
    /// A chart or table box.
    Box(Section),
    /// A chart left out, and why.
    Missing(String),
}

/// The legend of a chart: a swatch of each line's colour and dash, and its name.
pub fn legend(lines: &[Line]) -> String {
    let mut html = String::from("<ul class=\"legend\">");
    for line in lines {
        let dash = if line.dashed { " stroke-dasharray=\"6 4\"" } else { "" };
        let _ = write!(
            html,
            "<li><svg width=\"28\" height=\"10\" aria-hidden=\"true\"><line x1=\"0\" y1=\"5\" x2=\"28\" y2=\"5\" \
             stroke=\"{}\" stroke-width=\"3\"{dash}/></svg>{}</li>",
            line.color,
            escape(&line.name)
        );
    }
    html.push_str("</ul>");
    html
}

/// An HTML table: a header row and data rows of already escaped cells; `highlight` marks rows.
/// Columns of numbers are right-aligned, columns with any text left-aligned.
pub fn table(header: &[&str], rows: &[Vec<String>], highlight: &[usize]) -> String {
    let number = |cell: &String| cell.is_empty() || cell == "–" || cell.parse::<f64>().is_ok();
    let text_column = |c: usize| rows.iter().any(|row| row.get(c).is_some_and(|cell| !number(cell)));
    let aligns: Vec<&str> = (0..header.len()).map(|c| if text_column(c) { " class=\"t\"" } else { "" }).collect();
    let mut html = String::from("<div class=\"scroll\"><table><thead><tr>");
    for (cell, align) in header.iter().zip(&aligns) {
        let _ = write!(html, "<th{align}>{}</th>", escape(cell));
    }
    html.push_str("</tr></thead><tbody>");
    for (i, row) in rows.iter().enumerate() {
        html.push_str(if highlight.contains(&i) { "<tr class=\"best\">" } else { "<tr>" });
        for (cell, align) in row.iter().zip(&aligns) {
            let _ = write!(html, "<td{align}>{cell}</td>");
        }
        html.push_str("</tr>");
    }
    html.push_str("</tbody></table></div>");
    html
}

/// Styles: a centred column that narrows with the window; SVGs scale to their box.
const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:0;background:#f5f6f8;color:#1b1f24}\
main{max-width:980px;margin:0 auto;padding:16px}\
header{margin-bottom:12px}h1{font-size:1.5rem;margin:8px 0}\
header ol{margin:4px 0;padding-left:1.4em}header code{font-size:.9em}\
.box{background:#fff;border:1px solid #d8dce2;border-radius:6px;padding:12px 16px;margin:14px 0}\
.box h2{font-size:1.1rem;margin:0 0 4px}.note{color:#555;margin:0 0 8px;font-size:.9rem}\
.missing{color:#555;font-style:italic;margin:8px 0}\
svg.plot{width:100%;height:auto;display:block}\
.legend{list-style:none;padding:0;margin:6px 0 0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:.85rem}\
.legend li{display:flex;align-items:center;gap:6px}\
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:.85rem;width:100%}\
th,td{padding:3px 8px;border-bottom:1px solid #e4e7eb;text-align:right;white-space:nowrap}\
th.t,td.t{text-align:left}thead th{background:#f0f2f5}\
tr.best td{background:#fde2e2;font-weight:bold}";

/// The whole page: `title`, the runs listed in the header, then the parts in order.
pub fn page(title: &str, runs: &[String], parts: &[Part]) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n<header>\n<h1>{}</h1>\n<ol>\n",
        escape(title),
        escape(title)
    );
    for run in runs {
        let _ = writeln!(html, "<li>{run}</li>");
    }
    html.push_str("</ol>\n</header>\n");
    for part in parts {
        match part {
            Part::Box(section) => write_section(&mut html, section),
            Part::Missing(why) => {
                let _ = writeln!(html, "<p class=\"missing\">{}</p>", escape(why));
            }
        }
    }
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

fn write_section(html: &mut String, section: &Section) {
    let class = match section.kind {
        Kind::Chart => "box chart",
        Kind::Table => "box table",
    };
    let _ = write!(html, "<section class=\"{class}\">\n<h2>{}</h2>\n", escape(&section.title));
    if !section.note.is_empty() {
        let _ = writeln!(html, "<p class=\"note\">{}</p>", escape(&section.note));
    }
    let _ = write!(html, "{}\n</section>\n", section.body);
}
