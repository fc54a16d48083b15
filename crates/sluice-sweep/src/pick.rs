//! Picking the best configuration: an objective to minimise or maximise, subject to constraints, both
//! written in a small expression language over the table's columns.
//!
//! ```text
//! objective   := ["min" | "max"] expr            (min by default)
//! constraint  := expr ("==" | "!=" | "<=" | ">=" | "<" | ">") expr
//! expr        := term (("+" | "-") term)*
//! term        := factor (("*" | "/") factor)*
//! factor      := number | "-" factor | "(" expr ")" | stat "(" figure ["," bucket] ")" | column
//! ```
//!
//! A column is a table column's name (`goodput_gbps`, `cc.params.g`, or any name in backquotes:
//! `` `slowdown_p99:<10KB` ``). `p99(slowdown, <10KB)` is shorthand for `slowdown_p99:<10KB`, and
//! `avg(fct)` for `fct_ns_avg`; the statistics are `avg`, `p50`, `p95`, `p99` and `p999`.
//!
//! Runs of one configuration with several seeds are judged together: each column is averaged over the
//! configuration's runs first. A configuration with a failed run, or with an empty cell in a column the
//! expressions read, cannot be picked. Ties go to the earlier configuration.

use crate::error::SweepError;

/// An arithmetic expression over columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Number(f64),
    /// A column, by name.
    Column(String),
    /// `-x`.
    Negate(Box<Expr>),
    /// `a op b`.
    Binary(Box<Expr>, char, Box<Expr>),
}

/// What the objective does with its expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// Smaller is better.
    Min,
    /// Larger is better.
    Max,
}

/// An objective: the expression and whether to minimise or maximise it.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    /// As written.
    pub text: String,
    /// Minimise or maximise.
    pub goal: Goal,
    /// What is judged.
    pub expr: Expr,
}

/// A constraint `left op right`.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// As written.
    pub text: String,
    /// Left side.
    pub left: Expr,
    /// The comparison (`==`, `!=`, `<=`, `>=`, `<`, `>`).
    pub op: &'static str,
    /// Right side.
    pub right: Expr,
}

impl Goal {
    /// `min` or `max`, as written before an objective.
    pub fn name(self) -> &'static str {
        match self {
            Goal::Min => "min",
            Goal::Max => "max",
        }
    }
}

impl Objective {
    /// The expression as written, without a leading `min` or `max`.
    pub fn expr_text(&self) -> &str {
        let text = self.text.trim();
        match text.split_once(char::is_whitespace) {
            Some(("min" | "max", rest)) => rest.trim(),
            _ => text,
        }
    }
}

impl Expr {
    /// The columns the expression reads.
    pub fn columns(&self) -> Vec<&str> {
        match self {
            Expr::Number(_) => Vec::new(),
            Expr::Column(name) => vec![name.as_str()],
            Expr::Negate(inner) => inner.columns(),
            Expr::Binary(a, _, b) => a.columns().into_iter().chain(b.columns()).collect(),
        }
    }

    /// The value with `column` giving each column's value; `None` if a column has none.
    pub fn eval(&self, column: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
        Some(match self {
            Expr::Number(n) => *n,
            Expr::Column(name) => column(name)?,
            Expr::Negate(inner) => -inner.eval(column)?,
            Expr::Binary(a, op, b) => {
                let (a, b) = (a.eval(column)?, b.eval(column)?);
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    _ => a / b,
                }
            }
        })
    }
}

impl Constraint {
    /// Whether the constraint holds; `None` if a column has no value.
    pub fn holds(&self, column: &dyn Fn(&str) -> Option<f64>) -> Option<bool> {
        let (a, b) = (self.left.eval(column)?, self.right.eval(column)?);
        Some(match self.op {
            "==" => a == b,
            "!=" => a != b,
            "<=" => a <= b,
            ">=" => a >= b,
            "<" => a < b,
            _ => a > b,
        })
    }
}

/// Parses an objective; `argument` names it in errors (`--best`).
pub fn objective(text: &str, argument: &str) -> Result<Objective, SweepError> {
    let trimmed = text.trim();
    let (goal, rest) = match trimmed.split_once(char::is_whitespace) {
        Some(("min", rest)) => (Goal::Min, rest),
        Some(("max", rest)) => (Goal::Max, rest),
        _ => (Goal::Min, trimmed),
    };
    let mut parser = Parser::new(rest);
    let expr = parser.expr().and_then(|e| parser.end().map(|()| e)).map_err(|m| error(argument, text, m))?;
    Ok(Objective { text: text.to_string(), goal, expr })
}

/// Parses a constraint; `argument` names it in errors (`--subject-to`).
pub fn constraint(text: &str, argument: &str) -> Result<Constraint, SweepError> {
    let mut parser = Parser::new(text);
    let parsed = (|| {
        let left = parser.expr()?;
        let op = parser.comparison()?;
        let right = parser.expr()?;
        parser.end()?;
        Ok(Constraint { text: text.to_string(), left, op, right })
    })();
    parsed.map_err(|m: String| error(argument, text, m))
}

fn error(argument: &str, text: &str, message: String) -> SweepError {
    SweepError::argument(format!("{argument} \"{text}\""), message)
}

/// Checks that every column the expressions read exists (or belongs to a section only some runs report,
/// [`crate::metrics::EXTRA_SECTIONS`]); the error lists what does.
pub fn check_columns<'a>(
    exprs: impl IntoIterator<Item = (&'a Expr, String)>,
    known: &[String],
) -> Result<(), SweepError> {
    for (expr, argument) in exprs {
        let is_known = |c: &str| {
            known.iter().any(|k| k == c)
                || crate::metrics::EXTRA_SECTIONS.iter().any(|s| c.strip_prefix(s).is_some_and(|r| r.starts_with('.')))
        };
        if let Some(unknown) = expr.columns().into_iter().find(|c| !is_known(c)) {
            return Err(SweepError::argument(
                argument,
                format!("unknown metric `{unknown}`; the columns are: {}", known.join(", ")),
            ));
        }
    }
    Ok(())
}

const STATS: [&str; 5] = ["avg", "p50", "p95", "p99", "p999"];

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser { text, at: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        let found = self.rest().starts_with(token);
        if found {
            self.at += token.len();
        }
        found
    }

    fn end(&mut self) -> Result<(), String> {
        self.skip_space();
        match self.rest() {
            "" => Ok(()),
            rest => Err(format!("unexpected `{rest}` at column {}", self.at + 1)),
        }
    }

    fn comparison(&mut self) -> Result<&'static str, String> {
        for op in ["==", "!=", "<=", ">=", "<", ">"] {
            if self.eat(op) {
                return Ok(op);
            }
        }
        Err(format!("expected a comparison (==, !=, <=, >=, <, >) at column {}", self.at + 1))
    }

    fn expr(&mut self) -> Result<Expr, String> {
        let mut left = self.term()?;
        loop {
            let op = if self.eat("+") {
                '+'
            } else if self.eat("-") {
                '-'
            } else {
                return Ok(left);
            };
            left = Expr::Binary(Box::new(left), op, Box::new(self.term()?));
        }
    }

    fn term(&mut self) -> Result<Expr, String> {
        let mut left = self.factor()?;
        loop {
            let op = if self.eat("*") {
                '*'
            } else if self.eat("/") {
                '/'
            } else {
                return Ok(left);
            };
            left = Expr::Binary(Box::new(left), op, Box::new(self.factor()?));
        }
    }

    fn factor(&mut self) -> Result<Expr, String> {
        if self.eat("-") {
            return Ok(Expr::Negate(Box::new(self.factor()?)));
        }
        if self.eat("(") {
            let inner = self.expr()?;
            return if self.eat(")") { Ok(inner) } else { Err(format!("missing `)` at column {}", self.at + 1)) };
        }
        if self.eat("`") {
            let rest = self.rest();
            let end = rest.find('`').ok_or("missing the closing backquote")?;
            self.at += end + 1;
            return Ok(Expr::Column(rest[..end].to_string()));
        }
        self.skip_space();
        let word = self.word();
        if word.is_empty() {
            return Err(format!("expected a number, a metric or `(` at column {}", self.at + 1));
        }
        if let Ok(number) = word.parse::<f64>() {
            return Ok(Expr::Number(number));
        }
        if self.eat("(") {
            return self.statistic(word);
        }
        Ok(Expr::Column(word.to_string()))
    }

    /// A name: letters, digits and `_ . : <`-free characters of column names.
    fn word(&mut self) -> &'a str {
        let rest = self.rest();
        let len = rest.find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':'))).unwrap_or(rest.len());
        self.at += len;
        &rest[..len]
    }

    /// `stat(figure[, bucket])`, after the `(`.
    fn statistic(&mut self, stat: &str) -> Result<Expr, String> {
        if !STATS.contains(&stat) {
            return Err(format!("unknown statistic `{stat}(`; use one of {}", STATS.join(", ")));
        }
        self.skip_space();
        let figure = self.word();
        let column = match (figure, stat) {
            ("slowdown", _) => format!("slowdown_{stat}"),
            ("fct", "avg" | "p99") => format!("fct_ns_{stat}"),
            _ => return Err(format!("`{stat}({figure}`: the figure is `slowdown` or `fct` (fct has avg and p99)")),
        };
        let bucket = if self.eat(",") {
            let rest = self.rest();
            let end = rest.find(')').ok_or("missing `)` after the bucket")?;
            self.at += end;
            Some(rest[..end].trim().to_string())
        } else {
            None
        };
        if !self.eat(")") {
            return Err(format!("missing `)` at column {}", self.at + 1));
        }
        Ok(Expr::Column(match bucket {
            Some(label) => format!("{column}:{label}"),
            None => column,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, columns: &[(&str, f64)]) -> Option<f64> {
        let o = objective(text, "--best").unwrap();
        o.expr.eval(&|name| columns.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
    }

    #[test]
    fn shorthands_name_bucket_columns() {
        let o = objective("p99(slowdown, <10KB)", "--best").unwrap();
        assert_eq!((o.goal, o.expr), (Goal::Min, Expr::Column("slowdown_p99:<10KB".into())));
        let o = objective("max goodput_gbps / offered_gbps", "--best").unwrap();
        assert_eq!(o.goal, Goal::Max);
        assert_eq!(o.expr.columns(), ["goodput_gbps", "offered_gbps"]);
        assert_eq!(objective("avg(fct)", "--best").unwrap().expr, Expr::Column("fct_ns_avg".into()));
        assert_eq!(
            objective("`slowdown_p50:>=1MB`", "--best").unwrap().expr,
            Expr::Column("slowdown_p50:>=1MB".into())
        );
    }

    #[test]
    fn arithmetic_follows_precedence() {
        assert_eq!(value("1 + 2 * 3 - -4 / 2", &[]), Some(9.0));
        assert_eq!(value("(a + b) * 2", &[("a", 1.0), ("b", 2.0)]), Some(6.0));
        assert_eq!(value("a + 1", &[]), None, "a missing value has no result");
    }

    #[test]
    fn constraints_compare() {
        let c = constraint("goodput_gbps >= 0.9 * offered_gbps", "--subject-to").unwrap();
        let cols = |g: f64| move |n: &str| Some(if n == "goodput_gbps" { g } else { 100.0 });
        assert_eq!(c.holds(&cols(95.0)), Some(true));
        assert_eq!(c.holds(&cols(85.0)), Some(false));
        assert_eq!(constraint("unfinished == 0", "-s").unwrap().op, "==");
    }

    #[test]
    fn malformed_expressions_say_where() {
        let cases = [
            ("p98(slowdown)", "unknown statistic `p98(`"),
            ("p99(queue)", "the figure is `slowdown` or `fct`"),
            ("(a + b", "missing `)`"),
            ("a b", "unexpected `b` at column 3"),
            ("", "expected a number"),
        ];
        for (text, expected) in cases {
            let err = objective(text, "--best").unwrap_err();
            assert!(err.message.contains(expected), "{text}: {err}");
            assert_eq!(err.location, format!("--best \"{text}\""));
        }
        assert!(constraint("a = 1", "--subject-to").unwrap_err().message.contains("expected a comparison"));
    }

    #[test]
    fn unknown_columns_are_named_with_the_known_ones() {
        let o = objective("p99(slowdown, <5KB)", "--best").unwrap();
        let known = vec!["slowdown_p99".to_string(), "slowdown_p99:<10KB".to_string()];
        let err = check_columns([(&o.expr, "--best".to_string())], &known).unwrap_err();
        assert!(err.message.contains("unknown metric `slowdown_p99:<5KB`"), "{err}");
        assert!(err.message.contains("slowdown_p99:<10KB"), "{err}");
    }
}
