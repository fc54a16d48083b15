//! `--set key=value` overrides, applied to the scenario's TOML document before it is deserialized so
//! that overridden values go through exactly the same checks as file content.

use toml_edit::{DocumentMut, Item, Table, Value};

use crate::error::{Location, ScenarioError};
use crate::locate::{dotted, KeyPath};

/// One parsed `--set` argument.
#[derive(Debug, Clone)]
pub(crate) struct SetArg {
    /// The argument as given (`topology.k=4`).
    pub arg: String,
    /// The dotted key, split into segments.
    pub path: KeyPath,
    /// The value: TOML if it parses as a TOML value, otherwise the raw text as a string.
    pub value: Value,
}

impl SetArg {
    /// Where errors about this override point: `--set topology.k=4`.
    pub fn location(&self) -> Location {
        Location::Argument(format!("--set {}", self.arg))
    }

    fn error(&self, message: impl Into<String>) -> ScenarioError {
        ScenarioError::new(self.location(), Some(dotted(&self.path)), message)
    }
}

/// Parses `key=value`. Keys are dotted (`cc.params.g`); numeric segments index arrays (`workload.0.load`).
pub(crate) fn parse(arg: &str) -> Result<SetArg, ScenarioError> {
    let malformed = |message: String| ScenarioError::new(Location::Argument(format!("--set {arg}")), None, message);
    let Some((key, raw)) = arg.split_once('=') else {
        return Err(malformed("expected KEY=VALUE, such as topology.k=4 or cc.params.g=0.01".to_string()));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(malformed("the key before `=` is empty; expected KEY=VALUE, such as topology.k=4".to_string()));
    }
    let path: KeyPath = key.split('.').map(|s| s.trim().to_string()).collect();
    if path.iter().any(String::is_empty) {
        return Err(malformed(format!("the key `{key}` has an empty segment; write segments joined by single dots")));
    }
    Ok(SetArg { arg: arg.to_string(), path, value: parse_value(raw.trim()) })
}

/// A TOML value (`4`, `0.5`, `false`, `[1, 2]`, `"text"`), or else the text itself as a string
/// (`100Gbps`, `dcqcn`).
fn parse_value(raw: &str) -> Value {
    match raw.parse::<Value>() {
        Ok(value) => value.decorated(" ", ""),
        Err(_) => Value::from(raw).decorated(" ", ""),
    }
}

/// Sets the override's key in `doc`, creating missing tables on the way.
pub(crate) fn apply(doc: &mut DocumentMut, set: &SetArg) -> Result<(), ScenarioError> {
    set_in_table(doc.as_table_mut(), set, 0)
}

/// Parses an array index segment, which must lie within `len` elements.
fn index(set: &SetArg, depth: usize, len: usize) -> Result<usize, ScenarioError> {
    let segment = &set.path[depth];
    let parent = dotted(&set.path[..depth]);
    let i: usize = segment
        .parse()
        .map_err(|_| set.error(format!("`{parent}` is an array; `{segment}` is not an index (0, 1, ...)")))?;
    if i >= len {
        return Err(set.error(format!("index {i} is out of range: `{parent}` has {len} entries")));
    }
    Ok(i)
}

fn set_in_table(table: &mut Table, set: &SetArg, depth: usize) -> Result<(), ScenarioError> {
    let key = set.path[depth].as_str();
    if depth + 1 == set.path.len() {
        table.insert(key, Item::Value(set.value.clone()));
        return Ok(());
    }
    if !table.contains_key(key) {
        if set.path[depth + 1].parse::<usize>().is_ok() {
            return Err(index(set, depth + 1, 0).unwrap_err());
        }
        let mut child = Table::new();
        child.set_implicit(true);
        table.insert(key, Item::Table(child));
    }
    let item = table.get_mut(key).expect("inserted above");
    set_in_item(item, set, depth + 1)
}

fn set_in_item(item: &mut Item, set: &SetArg, depth: usize) -> Result<(), ScenarioError> {
    match item {
        Item::Table(table) => set_in_table(table, set, depth),
        Item::ArrayOfTables(tables) => {
            let i = index(set, depth, tables.len())?;
            if depth + 1 == set.path.len() {
                return Err(set.error("cannot replace a whole table; set one of its keys instead"));
            }
            set_in_table(tables.get_mut(i).expect("index checked"), set, depth + 1)
        }
        Item::Value(value) => set_in_value(value, set, depth),
        Item::None => Err(set.error("no such key")),
    }
}

fn set_in_value(value: &mut Value, set: &SetArg, depth: usize) -> Result<(), ScenarioError> {
    let last = depth + 1 == set.path.len();
    match value {
        Value::Array(array) => {
            let i = index(set, depth, array.len())?;
            if last {
                array.replace(i, set.value.clone());
                return Ok(());
            }
            set_in_value(array.get_mut(i).expect("index checked"), set, depth + 1)
        }
        Value::InlineTable(table) => {
            let key = set.path[depth].as_str();
            if last {
                table.insert(key, set.value.clone());
                return Ok(());
            }
            if !table.contains_key(key) {
                table.insert(key, Value::InlineTable(Default::default()));
            }
            set_in_value(table.get_mut(key).expect("inserted above"), set, depth + 1)
        }
        other => {
            let parent = dotted(&set.path[..depth]);
            Err(set.error(format!("`{parent}` is a {}, not a table or array", other.type_name())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(text: &str, args: &[&str]) -> Result<String, ScenarioError> {
        let mut doc: DocumentMut = text.parse().unwrap();
        for arg in args {
            apply(&mut doc, &parse(arg)?)?;
        }
        Ok(doc.to_string())
    }

    fn value_of(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn values_parse_as_toml_or_fall_back_to_strings() {
        assert_eq!(parse("a=4").unwrap().value.as_integer(), Some(4));
        assert_eq!(parse("a=0.5").unwrap().value.as_float(), Some(0.5));
        assert_eq!(parse("a=false").unwrap().value.as_bool(), Some(false));
        assert_eq!(parse("a=100Gbps").unwrap().value.as_str(), Some("100Gbps"));
        assert_eq!(parse("a=\"quoted\"").unwrap().value.as_str(), Some("quoted"));
        assert_eq!(parse("a = [1, 2]").unwrap().value.as_array().map(|a| a.len()), Some(2));
        assert_eq!(parse("a.b.0=x").unwrap().path, vec!["a", "b", "0"]);
    }

    #[test]
    fn malformed_arguments_are_named() {
        let err = parse("topology.k").unwrap_err();
        assert!(err.to_string().starts_with("--set topology.k: expected KEY=VALUE"), "{err}");
        let err = parse("=4").unwrap_err();
        assert!(err.to_string().starts_with("--set =4: the key before `=` is empty"), "{err}");
        let err = parse("a..b=4").unwrap_err();
        assert!(err.to_string().contains("empty segment"), "{err}");
    }

    #[test]
    fn keys_tables_and_indices_are_set() {
        let text = "[topology]\nk = 8\n[[workload]]\nload = 0.3\nsenders = [1, 2]\n";
        let out = applied(text, &["topology.k=4", "workload.0.load=0.5", "workload.0.senders.1=7", "cc.params.g=0.01"])
            .unwrap();
        let v = value_of(&out);
        assert_eq!(v["topology"]["k"].as_integer(), Some(4));
        assert_eq!(v["workload"][0]["load"].as_float(), Some(0.5));
        assert_eq!(v["workload"][0]["senders"][1].as_integer(), Some(7));
        assert_eq!(v["cc"]["params"]["g"].as_float(), Some(0.01));
    }

    #[test]
    fn bad_paths_are_errors() {
        let text = "name = \"x\"\n[[workload]]\nload = 0.3\n";
        let err = applied(text, &["workload.1.load=0.5"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--set workload.1.load=0.5: workload.1.load: index 1 is out of range: `workload` has 1 entries"
        );
        let err = applied(text, &["name.first=a"]).unwrap_err();
        assert!(err.to_string().contains("`name` is a string, not a table"), "{err}");
        let err = applied(text, &["flows.0.size=1"]).unwrap_err();
        assert!(err.to_string().contains("index 0 is out of range: `flows` has 0 entries"), "{err}");
        let err = applied(text, &["workload.x.load=1"]).unwrap_err();
        assert!(err.to_string().contains("`x` is not an index"), "{err}");
    }
}
