//! A small reader for the CSV files sluice writes: a header line, then rows of the same width; fields are
//! quoted (RFC 4180) only when they hold a comma or a quote. Every error names the file and line.

use std::path::{Path, PathBuf};

use crate::error::ReportError;

/// A CSV file read into memory: its header and its rows with their line numbers.
#[derive(Debug, Clone)]
pub struct Table {
    path: PathBuf,
    header: Vec<String>,
    rows: Vec<Row>,
}

/// One data row of a [`Table`] and the line of the file it came from (1-based).
#[derive(Debug, Clone)]
pub struct Row {
    /// The line number in the file, for error messages.
    pub line: usize,
    fields: Vec<String>,
}

impl Table {
    /// Reads and parses the file at `path`.
    pub fn read(path: &Path) -> Result<Table, ReportError> {
        let text = std::fs::read_to_string(path).map_err(|e| ReportError::at(path, format!("cannot read: {e}")))?;
        Table::parse(path, &text)
    }

    /// Parses `text` as the contents of the file `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Table, ReportError> {
        let mut lines = text.lines().enumerate().map(|(i, line)| (i + 1, line));
        let Some((_, first)) = lines.next() else {
            return Err(ReportError::at_line(path, 1, "empty file: expected a header line"));
        };
        let header = split_fields(first).map_err(|e| ReportError::at_line(path, 1, e))?;
        let mut rows = Vec::new();
        for (line, text) in lines.filter(|(_, text)| !text.is_empty()) {
            let fields = split_fields(text).map_err(|e| ReportError::at_line(path, line, e))?;
            if fields.len() != header.len() {
                let message = format!("{} fields, but the header has {}", fields.len(), header.len());
                return Err(ReportError::at_line(path, line, message));
            }
            rows.push(Row { line, fields });
        }
        Ok(Table { path: path.to_path_buf(), header, rows })
    }

    /// The column names, in order.
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// The data rows, in file order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The index of column `name`, if the file has it.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The index of column `name`; an error naming the file when it is missing.
    pub fn require(&self, name: &str) -> Result<usize, ReportError> {
        self.column(name).ok_or_else(|| ReportError::at_line(&self.path, 1, format!("missing column `{name}`")))
    }

    /// The text of `row`'s field in column `column`.
    pub fn text<'a>(&self, row: &'a Row, column: usize) -> &'a str {
        &row.fields[column]
    }

    /// `row`'s field in column `column` as a number; `None` when empty, an error when not a number.
    pub fn number(&self, row: &Row, column: usize) -> Result<Option<f64>, ReportError> {
        let text = self.text(row, column);
        if text.is_empty() {
            return Ok(None);
        }
        match text.parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(Some(value)),
            _ => Err(ReportError::at_line(
                &self.path,
                row.line,
                format!("column `{}`: `{text}` is not a number", self.header[column]),
            )),
        }
    }

    /// Like [`Table::number`], but an empty field is an error too.
    pub fn required_number(&self, row: &Row, column: usize) -> Result<f64, ReportError> {
        self.number(row, column)?.ok_or_else(|| {
            ReportError::at_line(&self.path, row.line, format!("column `{}` is empty", self.header[column]))
        })
    }
}

/// Splits one line into fields, undoing RFC 4180 quoting.
fn split_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    fields.push(field);
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_and_empty_values() {
        let table = Table::parse(Path::new("t.csv"), "a,b,c\n\"x,\"\"y\",,3.5\n").unwrap();
        let row = &table.rows()[0];
        assert_eq!(table.text(row, 0), "x,\"y");
        assert_eq!(table.number(row, 1).unwrap(), None);
        assert_eq!(table.number(row, 2).unwrap(), Some(3.5));
    }

    #[test]
    fn errors_name_file_and_line() {
        let table = Table::parse(Path::new("t.csv"), "a,b\n1,2\n1,x\n").unwrap();
        let err = table.number(&table.rows()[1], 1).unwrap_err();
        assert_eq!(err.to_string(), "t.csv:3: column `b`: `x` is not a number");
        let err = Table::parse(Path::new("t.csv"), "a,b\n1,2,3\n").unwrap_err();
        assert_eq!(err.to_string(), "t.csv:2: 3 fields, but the header has 2");
        let err = Table::parse(Path::new("t.csv"), "").unwrap_err();
        assert_eq!(err.to_string(), "t.csv:1: empty file: expected a header line");
        let err = Table::parse(Path::new("t.csv"), "a\n\"open\n").unwrap_err();
        assert_eq!(err.to_string(), "t.csv:2: unterminated quoted field");
        let err = table.require("z").unwrap_err();
        assert_eq!(err.to_string(), "t.csv:1: missing column `z`");
    }
}
