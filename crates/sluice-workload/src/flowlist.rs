//! Explicit flow lists: CSV lines `src,dst,size_bytes,start_ns`, optionally followed by the algorithm the
//! flow runs.

use std::path::Path;

use sluice_core::{Time, MAX_TIME, MAX_TIME_TEXT, PS_PER_NS};

use crate::algorithms::{AlgorithmNames, RowAlgorithm};
use crate::generator::FlowSpec;
use crate::spec::validate::{check_host, existing_file};
use crate::WorkloadError;

/// Reads the flow list at `path` (relative to `base_dir`) of workload entry `entry`, numbering the
/// algorithms its lines name in `names`; errors name the file and line.
pub(crate) fn read(
    path: &str,
    base_dir: &Path,
    n_hosts: u32,
    entry: usize,
    names: &mut AlgorithmNames,
) -> Result<Vec<FlowSpec>, WorkloadError> {
    let file = existing_file(path, base_dir, "flow list")?;
    let name = file.display().to_string();
    let text = std::fs::read_to_string(&file)
        .map_err(|e| WorkloadError::field("path", format!("cannot read flow list {name}: {e}")))?;
    let rows = Rows { n_hosts, entry, file: &name };
    let flows = rows.parse(&text, names).map_err(|e| e.with_file(&name).with_field("path"))?;
    if flows.is_empty() {
        return Err(WorkloadError::field("path", format!("flow list {name} lists no flows")));
    }
    Ok(flows)
}

/// Parses a flow list: one flow per line as `src,dst,size_bytes,start_ns` (start in nanoseconds, decimals
/// allowed), optionally followed by a fifth value, the name of the algorithm the flow runs (empty: its
/// entry's); an optional header line with no numbers in it, blank lines and `#` comments skipped. Host ids
/// must be below `n_hosts`, source and destination must differ and sizes must be at least 1 byte. Flows
/// come back in file order with `group` 0, and the names their lines give, numbered as
/// [`FlowSpec::algorithm`] counts them.
pub fn parse_flow_list(text: &str, n_hosts: u32) -> Result<(Vec<FlowSpec>, Vec<String>), WorkloadError> {
    let mut names = AlgorithmNames::default();
    let flows = Rows { n_hosts, entry: 0, file: "" }.parse(text, &mut names)?;
    Ok((flows, names.names.into_iter().map(|n| n.name).collect()))
}

/// What parsing the lines of one flow list needs to know.
struct Rows<'a> {
    n_hosts: u32,
    /// The workload entry the list belongs to (its flows' group).
    entry: usize,
    /// The list's file, for where an algorithm name first appeared.
    file: &'a str,
}

impl Rows<'_> {
    fn parse(&self, text: &str, names: &mut AlgorithmNames) -> Result<Vec<FlowSpec>, WorkloadError> {
        let mut flows = Vec::new();
        let mut first = true;
        for (index, raw) in text.lines().enumerate() {
            let line = content(raw);
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let header = first && is_header(line);
            first = false;
            if !header {
                let flow = self.flow(&fields, index + 1, names).map_err(|m| WorkloadError::at_line(index + 1, m))?;
                flows.push(flow);
            }
        }
        Ok(flows)
    }

    /// The flow of line `line`, numbering the algorithm it names.
    fn flow(&self, fields: &[&str], line: usize, names: &mut AlgorithmNames) -> Result<FlowSpec, String> {
        let (values, algorithm) = match fields {
            [values @ .., name] if fields.len() == 5 => (values, *name),
            _ => (fields, ""),
        };
        let mut flow = parse_flow(values, self.n_hosts, self.entry as u16)?;
        if !algorithm.is_empty() {
            let at = || RowAlgorithm {
                name: algorithm.to_string(),
                entry: self.entry,
                field: "path".into(),
                file_line: Some((self.file.to_string(), line)),
            };
            flow.algorithm = names.number(algorithm, at)?;
        }
        Ok(flow)
    }
}

/// A line without its `#` comment and surrounding blanks.
fn content(raw: &str) -> &str {
    raw.split('#').next().unwrap_or_default().trim()
}

/// The lines holding something other than blanks and comments, without their comments.
pub(crate) fn content_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(content).filter(|line| !line.is_empty())
}

/// Whether a (first) line is a header: none of its fields is a number.
pub(crate) fn is_header(line: &str) -> bool {
    line.split(',').map(str::trim).all(|f| f.parse::<f64>().is_err())
}

/// One flow from the fields of a line, or what is wrong with them.
fn parse_flow(fields: &[&str], n_hosts: u32, group: u16) -> Result<FlowSpec, String> {
    let [src, dst, size, start_ns] = fields else {
        return Err(format!(
            "expected 4 comma-separated values `src,dst,size_bytes,start_ns` (and an optional algorithm), found {}",
            fields.len()
        ));
    };
    let src = host(src, "src", n_hosts)?;
    let dst = host(dst, "dst", n_hosts)?;
    if src == dst {
        return Err(format!("source and destination are both host {src}"));
    }
    let size = size.parse::<u64>().map_err(|_| format!("size_bytes `{size}` is not a whole number of bytes"))?;
    if size == 0 {
        return Err("size_bytes must be at least 1".to_string());
    }
    Ok(FlowSpec::sized(src, dst, size, start_ps(start_ns)?, group))
}

fn host(token: &str, what: &str, n_hosts: u32) -> Result<u32, String> {
    let id = token.parse::<u32>().map_err(|_| format!("{what} `{token}` is not a host id"))?;
    check_host(id, n_hosts, what).map_err(|e| format!("{what}: {}", e.message))?;
    Ok(id)
}

/// A start in nanoseconds (whole or decimal) as picoseconds.
fn start_ps(token: &str) -> Result<Time, String> {
    let invalid = || format!("start_ns `{token}` is not a number of nanoseconds");
    let ps = match token.parse::<u64>() {
        Ok(ns) => ns.checked_mul(PS_PER_NS).ok_or_else(invalid)?,
        Err(_) => match token.parse::<f64>() {
            Ok(ns) if ns >= 0.0 && ns * (PS_PER_NS as f64) < u64::MAX as f64 => (ns * PS_PER_NS as f64).round() as Time,
            _ => return Err(invalid()),
        },
    };
    if ps > MAX_TIME {
        return Err(format!("start_ns `{token}` is beyond the largest time a scenario may give, {MAX_TIME_TEXT}"));
    }
    Ok(ps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_optional_header_comments_and_decimals() {
        let text = "src,dst,size_bytes,start_ns\n# a comment\n\n1,2,1000,5\n 3 , 0 , 7 , 2.5 # trailing\n";
        let (flows, names) = parse_flow_list(text, 4).unwrap();
        assert_eq!(flows, vec![FlowSpec::sized(1, 2, 1000, 5_000, 0), FlowSpec::sized(3, 0, 7, 2_500, 0)]);
        assert!(names.is_empty());
        assert_eq!(parse_flow_list("0,1,10,0\n", 2).unwrap().0.len(), 1, "no header");
    }

    #[test]
    fn a_fifth_value_names_the_flows_algorithm() {
        let text = "src,dst,size_bytes,start_ns,algorithm\n0,1,10,0,cubic\n1,2,10,0,\n2,3,10,0,dctcp\n3,0,10,0,cubic\n";
        let (flows, names) = parse_flow_list(text, 4).unwrap();
        assert_eq!(flows.iter().map(|f| f.algorithm).collect::<Vec<u16>>(), [1, 0, 2, 1]);
        assert_eq!(names, ["cubic", "dctcp"]);
        let mut table = AlgorithmNames::default();
        let rows = Rows { n_hosts: 4, entry: 3, file: "list.csv" };
        rows.parse(text, &mut table).unwrap();
        let first = &table.names[1];
        assert_eq!(
            (first.entry, first.field.as_str(), first.file_line.clone()),
            (3, "path", Some(("list.csv".into(), 4)))
        );
        let e = first.error("unknown algorithm");
        assert_eq!((e.entry, e.line, e.file.as_deref()), (Some(3), Some(4), Some("list.csv")));
    }

    /// Asserts that `text` fails at `line` with a message containing `needle`.
    fn assert_error(text: &str, line: usize, needle: &str) {
        let err = parse_flow_list(text, 4).unwrap_err();
        assert_eq!(err.line, Some(line), "{err}");
        assert!(err.message.contains(needle), "{err} should mention {needle:?}");
    }

    #[test]
    fn bad_lines_give_specific_errors() {
        assert_error(
            "src,dst,size_bytes,start_ns\n0,4,10,0\n",
            2,
            "dst: host 4 does not exist: the topology has hosts 0 to 3",
        );
        assert_error("0,1,10,0\n\n2,2,10,0\n", 3, "source and destination are both host 2");
        assert_error("0,1,10\n", 1, "found 3");
        assert_error("0,1,10,0\nsrc,dst,size,start\n", 2, "src `src` is not a host id");
        assert_error("0,1,1.5,0\n", 1, "size_bytes `1.5` is not a whole number");
        assert_error("0,1,0,0\n", 1, "at least 1");
        assert_error("0,1,10,-3\n", 1, "start_ns `-3`");
    }
}
