//! Topology files: sluice TOML (`.toml`) and the HPCC ns-3 artifact's `topology.txt` format.
//!
//! Sluice TOML:
//!
//! ```toml
//! name = "two hosts"            # optional label
//! [[node]]
//! name = "h0"
//! kind = "host"                 # or "switch"
//! [[link]]
//! a = "h0"
//! b = "s0"
//! rate = "100Gbps"
//! delay = "1us"                 # optional, default 1us
//! ```
//!
//! Node ids follow the order of `[[node]]` entries; ports follow the order of `[[link]]` entries.
//!
//! HPCC `topology.txt`: a line `node_num switch_num link_num`, a line with the switch node ids, then one
//! line per link `src dst rate delay error_rate` (e.g. `0 320 100Gbps 0.001ms 0`). Node ids are kept
//! (node `i` is named `n<i>`); nodes not listed as switches are hosts, numbered in id order. Blank lines
//! are skipped; a non-zero error rate is rejected because links do not drop packets at random.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use sluice_core::serde_units::{duration, rate};
use sluice_core::{parse_duration, parse_rate, Rate, Time};
use toml::Spanned;

use crate::graph::{Builder, NodeId, NodeKind, Topology, MAX_NODES};
use crate::spec::DEFAULT_DELAY;
use crate::TopoError;

/// Reads and builds the topology file at `path`, choosing the format by extension.
pub(crate) fn load(path: &Path) -> Result<Topology, TopoError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path)
        .map_err(|e| TopoError::in_file(&shown, None, format!("cannot read the topology file: {e}")))?;
    // A device or a pipe (`/dev/zero`) would be read until memory runs out.
    if !meta.is_file() {
        return Err(TopoError::in_file(&shown, None, "the topology file is not a regular file".to_string()));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| TopoError::in_file(&shown, None, format!("cannot read the topology file: {e}")))?;
    let label = format!("file {}", path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    if path.extension().is_some_and(|ext| ext == "toml") {
        parse_toml(&text, &shown, label)
    } else {
        parse_hpcc(&text, &shown, label)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlTopology {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    node: Vec<TomlNode>,
    #[serde(default)]
    link: Vec<TomlLink>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlNode {
    name: Spanned<String>,
    kind: NodeKind,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlLink {
    a: Spanned<String>,
    b: Spanned<String>,
    #[serde(with = "rate")]
    rate: Rate,
    #[serde(default = "default_delay", with = "duration")]
    delay: Time,
}

fn default_delay() -> Time {
    DEFAULT_DELAY
}

/// The 1-based line holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Where a TOML topology came from, for messages with line numbers.
struct Source<'a> {
    text: &'a str,
    file: &'a str,
}

impl Source<'_> {
    fn at(&self, span: Range<usize>, message: String) -> TopoError {
        TopoError::in_file(self.file, Some(line_of(self.text, span.start)), message)
    }
}

/// Parses the sluice TOML format (`file` names the file in messages).
pub(crate) fn parse_toml(text: &str, file: &str, label: String) -> Result<Topology, TopoError> {
    let parsed: TomlTopology = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|span: Range<usize>| line_of(text, span.start));
        TopoError::in_file(file, line, e.message().trim())
    })?;
    if parsed.node.len() as u64 > MAX_NODES {
        return Err(TopoError::in_file(file, None, format!("more than {MAX_NODES} nodes")));
    }
    let source = Source { text, file };
    let mut builder = Builder::default();
    let ids = add_toml_nodes(&mut builder, &parsed.node, &source)?;
    add_toml_links(&mut builder, &parsed.link, &ids, &source)?;
    let label = parsed.name.unwrap_or(label);
    builder.finish(label).map_err(|e| TopoError::in_file(file, None, e.message))
}

/// Adds the nodes in file order; returns the id of each name.
fn add_toml_nodes<'a>(
    builder: &mut Builder,
    nodes: &'a [TomlNode],
    source: &Source,
) -> Result<HashMap<&'a str, NodeId>, TopoError> {
    let mut ids = HashMap::new();
    for node in nodes {
        let name = node.name.get_ref().as_str();
        if name.is_empty() {
            return Err(source.at(node.name.span(), "a node name is empty".to_string()));
        }
        if ids.contains_key(name) {
            return Err(source.at(node.name.span(), format!("duplicate node name {name:?}")));
        }
        ids.insert(name, builder.add_node(node.kind, name.to_string()));
    }
    Ok(ids)
}

/// Adds the links in file order; errors point at the line of the link's `a` key.
fn add_toml_links(
    builder: &mut Builder,
    links: &[TomlLink],
    ids: &HashMap<&str, NodeId>,
    source: &Source,
) -> Result<(), TopoError> {
    let lookup = |end: &Spanned<String>| {
        let name = end.get_ref();
        let id = ids.get(name.as_str()).copied();
        id.ok_or_else(|| source.at(end.span(), format!("link names unknown node {name:?}")))
    };
    for link in links {
        let (a, b) = (lookup(&link.a)?, lookup(&link.b)?);
        builder.add_link(a, b, link.rate, link.delay).map_err(|message| source.at(link.a.span(), message))?;
    }
    Ok(())
}

/// The non-blank lines of `text` with their 1-based numbers.
fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, line)| (i + 1, line.trim())).filter(|(_, line)| !line.is_empty())
}

/// Parses whitespace-separated unsigned integers, naming `what` in the error.
fn parse_ids(line: &str, what: &str) -> Result<Vec<u64>, String> {
    line.split_whitespace()
        .map(|token| token.parse::<u64>().map_err(|_| format!("{what}: {token:?} is not a non-negative integer")))
        .collect()
}

/// Parses the HPCC artifact's `topology.txt` format (`file` names the file in messages).
pub(crate) fn parse_hpcc(text: &str, file: &str, label: String) -> Result<Topology, TopoError> {
    let at = |line: usize, message: String| TopoError::in_file(file, Some(line), message);
    let mut lines = numbered_lines(text);
    let (first, header) = lines.next().ok_or_else(|| TopoError::in_file(file, None, "the file is empty"))?;
    let (nodes, switches, links) = parse_header(header).map_err(|m| at(first, m))?;
    // Without switches the switch-id line is blank, and blank lines are skipped: the next line is a link.
    let kinds = match switches {
        0 => vec![NodeKind::Host; nodes as usize],
        _ => match lines.next() {
            Some((line, list)) => node_kinds(list, nodes, switches).map_err(|m| at(line, m))?,
            None => return Err(at(first, "the line of switch ids is missing".to_string())),
        },
    };
    // The counts are checked before any node is built: a three-line file must not claim millions of nodes.
    let link_lines: Vec<(usize, &str)> = lines.collect();
    if link_lines.len() as u64 != links {
        return Err(at(first, format!("link_num is {links} but the file has {} link lines", link_lines.len())));
    }
    if nodes > links + 1 {
        return Err(at(
            first,
            format!(
                "node_num {nodes} cannot be joined by {links} links: a connected network needs at least node_num - 1"
            ),
        ));
    }
    let mut builder = Builder::default();
    for (id, kind) in kinds.into_iter().enumerate() {
        builder.add_node(kind, format!("n{id}"));
    }
    for (line, entry) in link_lines {
        let (a, b, rate, delay) = parse_hpcc_link(entry, nodes).map_err(|m| at(line, m))?;
        builder.add_link(a, b, rate, delay).map_err(|m| at(line, m))?;
    }
    builder.finish(label).map_err(|e| TopoError::in_file(file, None, e.message))
}

/// Parses `node_num switch_num link_num`.
fn parse_header(header: &str) -> Result<(u64, u64, u64), String> {
    let counts = parse_ids(header, "header")?;
    let [nodes, switches, links] = counts[..] else {
        return Err("the first line must be `node_num switch_num link_num`".to_string());
    };
    if nodes > MAX_NODES {
        return Err(format!("node_num {nodes} is more than the limit of {MAX_NODES}"));
    }
    if switches > nodes {
        return Err(format!("switch_num {switches} is more than node_num {nodes}"));
    }
    Ok((nodes, switches, links))
}

/// The kind of every node, given the line listing the switch ids.
fn node_kinds(list: &str, nodes: u64, switches: u64) -> Result<Vec<NodeKind>, String> {
    let listed = parse_ids(list, "switch ids")?;
    if listed.len() as u64 != switches {
        return Err(format!("switch_num is {switches} but {} switch ids are listed", listed.len()));
    }
    let mut kinds = vec![NodeKind::Host; nodes as usize];
    for id in listed {
        let kind = kinds.get_mut(id as usize).ok_or_else(|| format!("switch id {id} is not below node_num {nodes}"))?;
        if *kind == NodeKind::Switch {
            return Err(format!("switch id {id} is listed twice"));
        }
        *kind = NodeKind::Switch;
    }
    Ok(kinds)
}

/// Parses one link line `src dst rate delay [error_rate]`.
fn parse_hpcc_link(entry: &str, nodes: u64) -> Result<(NodeId, NodeId, Rate, Time), String> {
    let tokens: Vec<&str> = entry.split_whitespace().collect();
    if !(4..=5).contains(&tokens.len()) {
        return Err(format!("expected `src dst rate delay error_rate`, got {entry:?}"));
    }
    let node = |token: &str| match token.parse::<u64>() {
        Ok(id) if id < nodes => Ok(id as NodeId),
        _ => Err(format!("{token:?} is not a node id below node_num {nodes}")),
    };
    let (a, b) = (node(tokens[0])?, node(tokens[1])?);
    let rate = parse_rate(tokens[2]).map_err(|e| e.to_string())?;
    let delay = parse_duration(tokens[3]).map_err(|e| e.to_string())?;
    if let Some(error_rate) = tokens.get(4) {
        match error_rate.parse::<f64>() {
            Ok(0.0) => {}
            Ok(_) => return Err(format!("error rate {error_rate} is not supported (random loss is not modelled)")),
            Err(_) => return Err(format!("error rate {error_rate:?} is not a number")),
        }
    }
    Ok((a, b, rate, delay))
}
