//! The sweep table: one row per run, written as CSV and Parquet with the same columns.
//!
//! Column types follow the content: integers stay integers, a column mixing integers and reals is real,
//! anything else is text. Empty cells are empty in CSV and null in Parquet.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{ConvertedType, Repetition, Type as PhysicalType};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use crate::metrics::Cell;

/// A table of named columns of equal length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column names, in order.
    pub names: Vec<String>,
    /// Rows, each with one cell per name.
    pub rows: Vec<Vec<Cell>>,
}

/// The type a column is stored with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 64-bit integers.
    Int,
    /// 64-bit reals.
    Float,
    /// Booleans.
    Bool,
    /// UTF-8 text.
    Text,
}

impl Table {
    /// Appends a row given as `(name, cell)` pairs: new names become new columns (empty in earlier rows),
    /// names the row lacks are empty in it.
    pub fn push(&mut self, cells: Vec<(String, Cell)>) {
        let mut row = vec![Cell::Null; self.names.len()];
        for (name, cell) in cells {
            match self.names.iter().position(|n| *n == name) {
                Some(i) => row[i] = cell,
                None => {
                    self.names.push(name);
                    self.rows.iter_mut().for_each(|r| r.push(Cell::Null));
                    row.push(cell);
                }
            }
        }
        self.rows.push(row);
    }

    /// The index of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The type column `index` is stored with.
    pub fn kind(&self, index: usize) -> Kind {
        let cells = || self.rows.iter().map(|r| &r[index]).filter(|c| **c != Cell::Null);
        if cells().all(|c| matches!(c, Cell::Int(_))) {
            Kind::Int
        } else if cells().all(|c| matches!(c, Cell::Int(_) | Cell::Float(_))) {
            Kind::Float
        } else if cells().all(|c| matches!(c, Cell::Bool(_))) {
            Kind::Bool
        } else {
            Kind::Text
        }
    }

    /// The table as CSV: a header, then one line per row; reals in their shortest exact form.
    pub fn to_csv(&self) -> Result<Vec<u8>, String> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(&self.names).map_err(|e| e.to_string())?;
        for row in &self.rows {
            writer.write_record(row.iter().map(text)).map_err(|e| e.to_string())?;
        }
        writer.into_inner().map_err(|e| e.to_string())
    }

    /// Writes the table as a Parquet file (one row group, uncompressed).
    pub fn write_parquet(&self, path: &Path) -> Result<(), String> {
        let fields = (0..self.names.len()).map(|i| self.field(i).map(Arc::new)).collect::<Result<Vec<_>, _>>()?;
        let schema = Type::group_type_builder("sweep").with_fields(fields).build().map_err(|e| e.to_string())?;
        let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let props = Arc::new(WriterProperties::builder().set_created_by("sluice".into()).build());
        let mut writer = SerializedFileWriter::new(file, Arc::new(schema), props).map_err(|e| e.to_string())?;
        let mut group = writer.next_row_group().map_err(|e| e.to_string())?;
        let mut index = 0;
        while let Some(mut column) = group.next_column().map_err(|e| e.to_string())? {
            self.write_column(index, column.untyped()).map_err(|e| format!("column {}: {e}", self.names[index]))?;
            column.close().map_err(|e| e.to_string())?;
            index += 1;
        }
        group.close().map_err(|e| e.to_string())?;
        writer.close().map_err(|e| e.to_string())?;
        Ok(())
    }

    fn field(&self, index: usize) -> Result<Type, String> {
        let name = &self.names[index];
        let builder = match self.kind(index) {
            Kind::Int => Type::primitive_type_builder(name, PhysicalType::INT64),
            Kind::Float => Type::primitive_type_builder(name, PhysicalType::DOUBLE),
            Kind::Bool => Type::primitive_type_builder(name, PhysicalType::BOOLEAN),
            Kind::Text => {
                Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY).with_converted_type(ConvertedType::UTF8)
            }
        };
        builder.with_repetition(Repetition::OPTIONAL).build().map_err(|e| e.to_string())
    }

    fn write_column(&self, index: usize, writer: &mut ColumnWriter<'_>) -> parquet::errors::Result<()> {
        let cells: Vec<&Cell> = self.rows.iter().map(|r| &r[index]).collect();
        let levels: Vec<i16> = cells.iter().map(|c| i16::from(**c != Cell::Null)).collect();
        let present = cells.iter().filter(|c| ***c != Cell::Null);
        match writer {
            ColumnWriter::Int64ColumnWriter(w) => {
                let values: Vec<i64> = present.map(|c| if let Cell::Int(i) = c { *i } else { 0 }).collect();
                w.write_batch(&values, Some(&levels), None)?;
            }
            ColumnWriter::DoubleColumnWriter(w) => {
                let values: Vec<f64> = present.map(|c| c.number().unwrap_or(f64::NAN)).collect();
                w.write_batch(&values, Some(&levels), None)?;
            }
            ColumnWriter::BoolColumnWriter(w) => {
                let values: Vec<bool> = present.map(|c| matches!(c, Cell::Bool(true))).collect();
                w.write_batch(&values, Some(&levels), None)?;
            }
            ColumnWriter::ByteArrayColumnWriter(w) => {
                let values: Vec<ByteArray> = present.map(|c| ByteArray::from(text(c).as_str())).collect();
                w.write_batch(&values, Some(&levels), None)?;
            }
            _ => unreachable!("the schema has only the four types above"),
        }
        Ok(())
    }
}

/// A cell as CSV text: empty for null, the shortest exact form for reals.
pub fn text(cell: &Cell) -> String {
    match cell {
        Cell::Null => String::new(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) => f.to_string(),
        Cell::Bool(b) => b.to_string(),
        Cell::Text(t) => t.clone(),
    }
}

/// Writes `bytes` to `path` through a temporary sibling renamed into place, so that readers see the old
/// file or the new one, never a part.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let temp = temporary_sibling(path);
    let written = File::create(&temp).and_then(|mut f| f.write_all(bytes)).and_then(|()| std::fs::rename(&temp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// Writes a Parquet file atomically, as [`write_atomically`] does.
pub fn write_parquet_atomically(table: &Table, path: &Path) -> Result<(), String> {
    let temp = temporary_sibling(path);
    let written = table.write_parquet(&temp).and_then(|()| std::fs::rename(&temp, path).map_err(|e| e.to_string()));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot write {}: {e}", path.display())
    })
}

fn temporary_sibling(path: &Path) -> std::path::PathBuf {
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    fn sample() -> Table {
        let mut t = Table::default();
        t.push(vec![
            ("a".into(), Cell::Int(1)),
            ("b".into(), Cell::Float(0.5)),
            ("c".into(), Cell::Text("x,y".into())),
        ]);
        t.push(vec![("a".into(), Cell::Int(2)), ("d".into(), Cell::Bool(true))]);
        t
    }

    #[test]
    fn rows_may_bring_new_columns() {
        let t = sample();
        assert_eq!(t.names, ["a", "b", "c", "d"]);
        assert_eq!(t.rows[0][3], Cell::Null);
        assert_eq!(t.rows[1][1], Cell::Null);
        assert_eq!((t.kind(0), t.kind(1), t.kind(2), t.kind(3)), (Kind::Int, Kind::Float, Kind::Text, Kind::Bool));
        let csv = String::from_utf8(t.to_csv().unwrap()).unwrap();
        assert_eq!(csv, "a,b,c,d\n1,0.5,\"x,y\",\n2,,,true\n");
    }

    #[test]
    fn parquet_holds_the_same_cells() {
        let dir = std::env::temp_dir().join(format!("sluice-sweep-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.parquet");
        write_parquet_atomically(&sample(), &path).unwrap();
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let rows: Vec<String> = reader.get_row_iter(None).unwrap().map(|r| r.unwrap().to_string()).collect();
        assert_eq!(rows, ["{a: 1, b: 0.5, c: \"x,y\", d: null}", "{a: 2, b: null, c: null, d: true}"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
