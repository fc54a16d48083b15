//! The simulator crate is built in layers (see the crate doc and docs/sim-architecture.md): a module may
//! use modules of its own layer or of layers below, never of a layer above. This test reads every source
//! file, finds the `crate::` paths in its code (comments left out), and fails on an upward one, so an
//! import cycle between the layers cannot come back.

use std::path::{Path, PathBuf};

/// The layers, lowest first: the top-level modules (a folder or a file under `src/`) of each.
const LAYERS: &[&[&str]] =
    &[&["config", "stats"], &["engine"], &["net"], &["transport"], &["host"], &["sim", "footprint", "lib"]];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The top-level module a source file belongs to: `src/net/port.rs` is in `net`, `src/lib.rs` in `lib`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("under src");
    let first = relative.components().next().expect("a path").as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source folder") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of `text` without line comments (doc comments included), which may name any module.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, line)| (i + 1, line.split("//").next().unwrap_or("")))
}

/// Every top-level module named by a `crate::module` path in `line`, and the paths that name an item
/// at the crate root (`crate::Item`), which hide their layer.
fn crate_paths(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            found.push(name);
        }
        rest = after;
    }
    found
}

#[test]
fn no_module_imports_from_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    assert!(files.len() > 10, "found only {} source files under {}", files.len(), src.display());
    let mut problems = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        let Some(own) = layer_of(&module) else {
            problems.push(format!("{}: module `{module}` is in no layer; add it to LAYERS", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("readable source");
        for (line_no, code) in code_lines(&text) {
            for target in crate_paths(code) {
                let at = format!("{}:{line_no}", file.strip_prefix(&src).unwrap().display());
                match layer_of(&target) {
                    Some(layer) if layer > own => {
                        problems.push(format!("{at}: `{module}` (layer {own}) uses `crate::{target}` (layer {layer})"))
                    }
                    Some(_) => {}
                    None if target.starts_with(char::is_uppercase) && own < LAYERS.len() - 1 => problems
                        .push(format!("{at}: `crate::{target}` names a crate-root re-export; use its module's path")),
                    None if target.starts_with(char::is_uppercase) => {}
                    None => problems.push(format!("{at}: `crate::{target}` is in no layer; add it to LAYERS")),
                }
            }
        }
    }
    assert!(problems.is_empty(), "layering violations:\n{}", problems.join("\n"));
}

#[test]
fn the_checker_finds_crate_paths_and_skips_comments() {
    assert_eq!(crate_paths("use crate::engine::{Core, Event};"), vec!["engine"]);
    assert_eq!(crate_paths("let x = crate::host::tokens::f(crate::stats::X);"), vec!["host", "stats"]);
    let text = "/// See [`crate::host`].\nuse crate::net::port::Port; // not crate::sim";
    let found: Vec<String> = code_lines(text).flat_map(|(_, code)| crate_paths(code)).collect();
    assert_eq!(found, vec!["net"]);
    assert!(layer_of("host").unwrap() > layer_of("net").unwrap());
    assert_eq!(layer_of("nowhere"), None);
}
