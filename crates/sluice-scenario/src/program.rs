//! Datapath programs written in a scenario (`cc.params.program = """..."""`, see docs/programs.md):
//! an error inside the program points at the scenario line that holds the program's offending line,
//! not only at the key. The program's own `line:column` stays in the message.

use crate::error::{Location, ScenarioError};

/// The algorithm parameter that holds a program's text.
const KEY: &str = "program";

/// Moves `error`, about parameter `key` whose value starts on its location's line of `text`, to the
/// line of `text` that holds the program line the message names (`L:C: ...`). Only multi-line strings
/// keep the program's lines as the file's; any other error is returned as it is.
pub(crate) fn locate(error: ScenarioError, key: Option<&str>, text: &str) -> ScenarioError {
    if key != Some(KEY) {
        return error;
    }
    let Location::Line { file, line } = &error.location else { return error };
    let Some(program_line) = program_line(&error.message) else { return error };
    let Some(key_line) = text.lines().nth(line.saturating_sub(1)) else { return error };
    let Some((_, value)) = key_line.split_once('=') else { return error };
    let value = value.trim_start();
    let Some(delimiter) = ["\"\"\"", "'''"].into_iter().find(|d| value.starts_with(d)) else { return error };
    // TOML drops a newline that follows the opening delimiter: the program starts on the next line.
    let first = if value[delimiter.len()..].trim().is_empty() { line + 1 } else { *line };
    let location = Location::Line { file: file.clone(), line: first + program_line - 1 };
    ScenarioError { location, ..error }
}

/// The program line an error message starts with (`2:8: unknown operator ...`), from 1.
fn program_line(message: &str) -> Option<usize> {
    let (line, rest) = message.split_once(':')?;
    let (column, _) = rest.split_once(':')?;
    column.parse::<u32>().ok()?;
    line.parse::<usize>().ok().filter(|l| *l >= 1)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{load_str, resolve};

    fn error(text: &str) -> String {
        let scenario = load_str(text, "s.toml", Path::new("."), &[]).unwrap();
        resolve(&scenario).map(drop).unwrap_err().to_string()
    }

    const HEAD: &str =
        "[topology]\nkind = \"star\"\nhosts = 4\nrate = \"25Gbps\"\n\n[[workload]]\nkind = \"permutation\"\n\
                        size = \"20KB\"\n\n[cc]\nalgorithm = \"dctcp_burst\"\n[cc.params]\n";

    #[test]
    fn an_error_in_a_multi_line_program_points_at_its_line() {
        // Line 13 opens the string; the program's line 2 is the file's line 15.
        let text = format!("{HEAD}program = \"\"\"\n(def (Report (w_acked 0)))\n(when (foo 1) (report))\n\"\"\"\n");
        assert_eq!(error(&text), "s.toml:15: cc.params.program: 2:8: unknown operator `foo` (algorithm dctcp_burst)");
        let literal = format!("{HEAD}program = '''(def)\n(when)'''\n");
        assert_eq!(
            error(&literal),
            "s.toml:14: cc.params.program: 2:1: `when` needs a condition (algorithm dctcp_burst)"
        );
    }

    #[test]
    fn other_errors_stay_at_the_key() {
        let one_line = format!("{HEAD}program = \"(def) (when)\"\n");
        assert_eq!(
            error(&one_line),
            "s.toml:13: cc.params.program: 1:7: `when` needs a condition (algorithm dctcp_burst)"
        );
        let missing = format!("{HEAD}program = \"\"\"\n(def) (when true (report))\n\"\"\"\n");
        assert!(error(&missing).starts_with("s.toml:13: cc.params.program: the program does not declare register"));
        let other = format!("{HEAD}n_acks = 0\n");
        assert!(error(&other).starts_with("s.toml:13: cc.params.n_acks: must be 1 to 64"), "{}", error(&other));
    }
}
