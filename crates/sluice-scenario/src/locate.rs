//! Finding things in TOML text: the key path at a byte span, and the line where a key path was written.
//!
//! Works on a span-preserving parse ([`toml_edit::ImDocument`]). Every node of the document is
//! flattened into `(key path, extent)` pairs, where the extent covers the key and its value (for a
//! table: its header and body). Array elements get their index as a path segment.

use std::ops::Range;

use toml_edit::{ArrayOfTables, ImDocument, Item, Table, Value};

/// A dotted key path, one segment per table key or array index.
pub(crate) type KeyPath = Vec<String>;

/// Writes a key path as users write it: `workload.0.load`.
pub(crate) fn dotted(path: &[String]) -> String {
    path.join(".")
}

/// A node of the document tree.
#[derive(Clone, Copy)]
enum Node<'a> {
    Table(&'a Table),
    Tables(&'a ArrayOfTables),
    Value(&'a Value),
    Empty,
}

impl<'a> Node<'a> {
    fn of_item(item: &'a Item) -> Node<'a> {
        match item {
            Item::Table(t) => Node::Table(t),
            Item::ArrayOfTables(a) => Node::Tables(a),
            Item::Value(v) => Node::Value(v),
            Item::None => Node::Empty,
        }
    }

    fn span(self) -> Option<Range<usize>> {
        match self {
            Node::Table(t) => t.span(),
            Node::Tables(a) => a.span(),
            Node::Value(v) => v.span(),
            Node::Empty => None,
        }
    }

    /// The node's children in document order: (segment, span of the key if any, child).
    fn children(self) -> Vec<(String, Option<Range<usize>>, Node<'a>)> {
        match self {
            Node::Table(t) => t
                .iter()
                .map(|(k, item)| (k.to_string(), t.key(k).and_then(|k| k.span()), Node::of_item(item)))
                .collect(),
            Node::Tables(a) => a.iter().enumerate().map(|(i, t)| (i.to_string(), None, Node::Table(t))).collect(),
            Node::Value(Value::InlineTable(t)) => {
                t.iter().map(|(k, v)| (k.to_string(), t.key(k).and_then(|k| k.span()), Node::Value(v))).collect()
            }
            Node::Value(Value::Array(a)) => {
                a.iter().enumerate().map(|(i, v)| (i.to_string(), None, Node::Value(v))).collect()
            }
            Node::Value(_) | Node::Empty => Vec::new(),
        }
    }

    fn child(self, segment: &str) -> Option<(Option<Range<usize>>, Node<'a>)> {
        self.children().into_iter().find(|(name, _, _)| name == segment).map(|(_, key, node)| (key, node))
    }

    /// Whether this is a table-like node (its errors are about missing or unknown keys).
    fn is_table(self) -> bool {
        matches!(self, Node::Table(_) | Node::Value(Value::InlineTable(_)))
    }
}

/// One flattened node: its path, its own extent (key and value), and the node.
struct Entry<'a> {
    path: KeyPath,
    extent: Option<Range<usize>>,
    node: Node<'a>,
}

fn union(a: Option<Range<usize>>, b: Option<Range<usize>>) -> Option<Range<usize>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.start.min(b.start)..a.end.max(b.end)),
        (a, b) => a.or(b),
    }
}

/// Every node under `node` (not `node` itself) in document order.
fn flatten<'a>(node: Node<'a>, path: &mut KeyPath, out: &mut Vec<Entry<'a>>) {
    for (name, key_span, child) in node.children() {
        path.push(name);
        out.push(Entry { path: path.clone(), extent: union(key_span, child.span()), node: child });
        flatten(child, path, out);
        path.pop();
    }
}

fn entries<'a>(doc: &'a ImDocument<&'a str>) -> Vec<Entry<'a>> {
    let mut out = Vec::new();
    flatten(Node::Table(doc.as_table()), &mut Vec::new(), &mut out);
    out
}

/// The 1-based line holding byte `offset` of `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The key path of the smallest node whose extent holds all of `span` (empty: the document itself,
/// whose span is that of its top-level keys).
pub(crate) fn path_at(doc: &ImDocument<&str>, span: &Range<usize>) -> KeyPath {
    if doc.as_table().span().as_ref() == Some(span) {
        return Vec::new();
    }
    let holds = |e: &&Entry| e.extent.as_ref().is_some_and(|x| x.start <= span.start && span.end <= x.end);
    entries(doc)
        .iter()
        .filter(holds)
        .min_by_key(|e| (e.extent.as_ref().map_or(usize::MAX, |x| x.len()), usize::MAX - e.path.len()))
        .map(|e| e.path.clone())
        .unwrap_or_default()
}

/// How much of a key path a document holds.
pub(crate) struct Found {
    /// How many leading segments of the path exist in the document.
    pub depth: usize,
    /// The line of the deepest existing segment that has a position (`None`: not even the first).
    pub line: Option<usize>,
}

/// Follows `path` through the document as far as it exists.
pub(crate) fn find(doc: &ImDocument<&str>, path: &[String]) -> Found {
    let text = doc.raw();
    let mut node = Node::Table(doc.as_table());
    let mut found = Found { depth: 0, line: None };
    for segment in path {
        let Some((key_span, child)) = node.child(segment) else {
            break;
        };
        if let Some(extent) = union(key_span, child.span()) {
            found.line = Some(line_of(text, extent.start));
        }
        found.depth += 1;
        node = child;
    }
    found
}

/// Narrows the path of a deserialization error that was reported against a whole table or array
/// (serde reports errors inside internally tagged enums that way) to the key the message talks about.
///
/// The message's first quoted token (`"100Gpbs"`, `` `kk` ``) names the offending value or key:
/// `unknown field `x`` refines to the key `x`, `missing field `x`` to the only element table lacking
/// `x`, anything else to the first value under `path` whose text equals the token.
pub(crate) fn refine(doc: &ImDocument<&str>, path: &[String], message: &str) -> KeyPath {
    let Some(token) = first_token(message) else {
        return path.to_vec();
    };
    let mut node = Node::Table(doc.as_table());
    for segment in path {
        match node.child(segment) {
            Some((_, child)) => node = child,
            None => return path.to_vec(),
        }
    }
    let mut under = Vec::new();
    flatten(node, &mut path.to_vec(), &mut under);
    let hit = if message.starts_with("unknown field") {
        under.iter().find(|e| e.path.last() == Some(&token))
    } else if message.starts_with("missing field") {
        lacking_key(&under, path.len(), &token)
    } else {
        under.iter().find(|e| scalar_matches(e.node, &token))
    };
    hit.map_or_else(|| path.to_vec(), |e| e.path.clone())
}

/// The only direct child table (of an array of tables) that lacks `key`.
fn lacking_key<'e, 'a>(under: &'e [Entry<'a>], depth: usize, key: &str) -> Option<&'e Entry<'a>> {
    let tables: Vec<&Entry> = under.iter().filter(|e| e.path.len() == depth + 1 && e.node.is_table()).collect();
    let lacking: Vec<&Entry> = tables.into_iter().filter(|e| e.node.child(key).is_none()).collect();
    match lacking.as_slice() {
        [only] => Some(only),
        _ => None,
    }
}

/// Whether a scalar value's text equals `token`.
fn scalar_matches(node: Node, token: &str) -> bool {
    let Node::Value(value) = node else {
        return false;
    };
    match value {
        Value::String(s) => s.value() == token,
        Value::Integer(i) => token.parse::<i64>().ok() == Some(*i.value()),
        Value::Float(f) => token.parse::<f64>().ok() == Some(*f.value()),
        Value::Boolean(b) => token.parse::<bool>().ok() == Some(*b.value()),
        _ => false,
    }
}

/// The first `` `quoted` `` or `"quoted"` token of a message, unescaped.
fn first_token(message: &str) -> Option<String> {
    let start = message.find(['`', '"'])?;
    let quote = message[start..].chars().next()?;
    let mut token = String::new();
    let mut chars = message[start + 1..].chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quote == '"' => token.push(chars.next()?),
            c if c == quote => return Some(token),
            c => token.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"x\"\n[topology]\nkind = \"fat_tree\"\nk = 4\npfc.enabled = true\n\
                        [[workload]]\nload = 0.3\n[[workload]]\nkind = \"poissonx\"\n";

    fn doc() -> ImDocument<&'static str> {
        ImDocument::parse(TEXT).unwrap()
    }

    fn path(p: &str) -> KeyPath {
        p.split('.').map(String::from).collect()
    }

    #[test]
    fn spans_map_to_the_innermost_key() {
        let doc = doc();
        let k = TEXT.find("4\n").unwrap();
        assert_eq!(path_at(&doc, &(k..k + 1)), path("topology.k"));
        let table = TEXT.find("[topology]").unwrap();
        assert_eq!(path_at(&doc, &(table..table + 5)), path("topology"));
        let aot = TEXT.find("[[workload]]").unwrap();
        assert_eq!(path_at(&doc, &(aot..TEXT.len() - 1)), path("workload"));
    }

    #[test]
    fn paths_map_to_lines() {
        let doc = doc();
        let found = find(&doc, &path("topology.k"));
        assert_eq!((found.depth, found.line), (2, Some(4)));
        let found = find(&doc, &path("topology.pfc.enabled"));
        assert_eq!((found.depth, found.line), (3, Some(5)));
        let found = find(&doc, &path("workload.1.kind"));
        assert_eq!((found.depth, found.line), (3, Some(9)));
        let found = find(&doc, &path("topology.nope"));
        assert_eq!((found.depth, found.line), (1, Some(2)));
    }

    #[test]
    fn refine_follows_the_message() {
        let doc = doc();
        let msg = "unknown variant `poissonx`, expected `poisson`";
        assert_eq!(refine(&doc, &path("workload"), msg), path("workload.1.kind"));
        assert_eq!(refine(&doc, &path("workload"), "missing field `kind`"), path("workload.0"));
        assert_eq!(refine(&doc, &path("topology"), "unknown field `pfc`, expected `k`"), path("topology.pfc"));
        assert_eq!(refine(&doc, &path("topology"), "invalid type: integer `4`"), path("topology.k"));
        assert_eq!(refine(&doc, &path("topology"), "no token here"), path("topology"));
    }

    #[test]
    fn tokens_are_unescaped() {
        assert_eq!(first_token(r#"invalid value "a\"b": expected"#), Some("a\"b".to_string()));
        assert_eq!(first_token("unknown field `x`, expected `y`"), Some("x".to_string()));
        assert_eq!(first_token("nothing"), None);
    }
}
