//! Every `sluice run`, `check`, `bench` and `sweep` command that the README, the docs, BENCHMARKS.md
//! and the bundled scenarios' and sweeps' comments print works as written: each is checked (`sluice
//! check` with the same scenario, overrides and seed; `sluice sweep --dry-run` with the same sweep file
//! and picking rules), so a renamed key or a changed default cannot leave a broken example behind.
//! Templates with placeholders (`SCENARIO`, `SWEEP`, `NAME`, `<name>`, `ARGS`, `[--set ...]`) are not
//! commands.

use std::path::{Path, PathBuf};
use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// The repository root, where documented commands run.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The files whose text shows commands: Markdown at the top and in docs/, and every bundled scenario.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    let mut folders = vec![root.join("docs"), root.join("scenarios"), root.join("sweeps")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()) {
            match entry.extension().and_then(|e| e.to_str()) {
                _ if entry.is_dir() => folders.push(entry),
                Some("md" | "toml") => files.push(entry),
                _ => {}
            }
        }
    }
    files.sort();
    files
}

/// Joins lines continued with a trailing backslash.
fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let line = line.trim_start_matches('#').trim();
        match line.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => lines.push(std::mem::take(&mut pending) + line),
        }
    }
    lines
}

/// The arguments after `sluice` of a documented `run`, `check` or `bench` command on `line`, up to a
/// comment or the end of inline code; `None` for anything else, templates included.
fn documented_command(line: &str) -> Option<Vec<String>> {
    // The binary by name, or through `cargo run --release -- ` as the README's main command.
    let starts = ["sluice ", "-- "].into_iter().flat_map(|program| {
        ["run ", "check ", "bench ", "sweep "]
            .into_iter()
            .filter_map(move |sub| line.find(&format!("{program}{sub}")).map(|at| at + program.len()))
    });
    let start = starts.min()?;
    let command = line[start..].split(['`', '#', '|']).next()?.trim();
    if command.contains(['<', '[']) || ["ARGS", "SCENARIO", "SWEEP", "NAME"].iter().any(|word| command.contains(word)) {
        return None;
    }
    shlex::split(command)
}

/// The command that validates what `args` would run without running it: `sluice check` with the
/// scenario, `--set` and `--seed`; for a sweep, `sluice sweep --dry-run` with the file and its picking
/// rules.
fn as_check(args: &[String]) -> Vec<String> {
    let sweep = args[0] == "sweep";
    let kept: &[&str] = if sweep { &["--best", "--subject-to"] } else { &["--set", "--seed"] };
    let mut check = vec![if sweep { "sweep" } else { "check" }.to_string(), args[1].clone()];
    let mut rest = args[2..].iter();
    while let Some(arg) = rest.next() {
        if kept.contains(&arg.as_str()) {
            check.push(arg.clone());
            check.extend(rest.next().cloned());
        } else if sweep && arg == "--yes" {
            check.push(arg.clone());
        }
    }
    if sweep {
        check.push("--dry-run".to_string());
    }
    check
}

#[test]
fn every_documented_command_is_valid() {
    let root = root();
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in documents(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for args in logical_lines(&text).iter().filter_map(|l| documented_command(l)) {
            let check = as_check(&args);
            let output = Command::new(SLUICE).args(&check).current_dir(&root).output().unwrap();
            checked += 1;
            if !output.status.success() {
                let stderr = String::from_utf8_lossy(&output.stderr);
                failures.push(format!("{}: sluice {}\n  {}", file.display(), args.join(" "), stderr.trim()));
            }
        }
    }
    eprintln!("{checked} documented commands checked");
    assert!(checked >= 40, "only {checked} documented commands found: is the extraction broken?");
    assert!(failures.is_empty(), "{} of {checked} documented commands fail:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn templates_and_prose_are_not_taken_for_commands() {
    assert_eq!(documented_command("sluice run SCENARIO [--set key=value]..."), None);
    assert_eq!(documented_command("`./target/release/sluice bench scenarios/<name>.toml --repeat N`"), None);
    assert_eq!(documented_command("sluice bench ARGS --repeat 15"), None);
    assert_eq!(documented_command("cargo run --release -- run q.toml"), Some(vec!["run".into(), "q.toml".into()]));
    assert_eq!(
        documented_command("`sluice run a.toml --set x=1` # comment"),
        Some(vec!["run".into(), "a.toml".into(), "--set".into(), "x=1".into()])
    );
    let lines = logical_lines("#   sluice run a.toml --set x=1 \\\n#     --set y=2\nnext");
    assert_eq!(lines[0], "sluice run a.toml --set x=1 --set y=2");
    assert_eq!(as_check(&documented_command(&lines[0]).unwrap()), ["check", "a.toml", "--set", "x=1", "--set", "y=2"]);
    let sweep = documented_command("sluice sweep s.toml --jobs 2 --best \"p99(slowdown)\"").unwrap();
    assert_eq!(as_check(&sweep), ["sweep", "s.toml", "--best", "p99(slowdown)", "--dry-run"]);
}
