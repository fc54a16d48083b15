//! The text form of a program: S-expressions in CCP's style, read into [`Program`] with every error
//! located (line:column) and saying what was expected. Nothing here panics on any input: nesting,
//! length and counts are bounded before they are used.

use super::{
    Binary, Clause, Expr, Field, Op, Program, ProgramError, Register, Scope, Stmt, Unary, MAX_CLAUSES, MAX_OPS,
    MAX_REGISTERS, MAX_SOURCE, MAX_STATEMENTS,
};

/// Deepest nesting of parentheses (bounds the reader's recursion).
const MAX_DEPTH: usize = 32;

/// Where a token starts.
#[derive(Debug, Clone, Copy)]
struct Pos {
    line: u32,
    column: u32,
}

/// A read S-expression.
#[derive(Debug)]
enum Sexp<'a> {
    Atom(&'a str, Pos),
    List(Vec<Sexp<'a>>, Pos),
}

impl Sexp<'_> {
    fn pos(&self) -> Pos {
        match self {
            Sexp::Atom(_, p) | Sexp::List(_, p) => *p,
        }
    }

    fn describe(&self) -> String {
        match self {
            Sexp::Atom(a, _) => format!("`{a}`"),
            Sexp::List(items, _) => match items.first() {
                Some(Sexp::Atom(head, _)) => format!("`({head} ...)`"),
                _ => "a list".to_string(),
            },
        }
    }
}

fn error(pos: Pos, message: String) -> ProgramError {
    ProgramError { line: pos.line, column: pos.column, message }
}

/// Splits the text into S-expressions; `;` starts a comment to the end of the line.
struct Reader<'a> {
    text: &'a str,
    /// Byte offset of the next character.
    at: usize,
    pos: Pos,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.at += c.len_utf8();
            if c == '\n' {
                self.pos.line += 1;
                self.pos.column = 1;
            } else {
                self.pos.column += 1;
            }
        }
    }

    fn skip_space(&mut self) {
        while let Some(c) = self.peek() {
            if c == ';' {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.bump();
                }
            } else if c.is_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }

    fn read(&mut self, depth: usize) -> Result<Sexp<'a>, ProgramError> {
        self.skip_space();
        let start = self.pos;
        match self.peek() {
            None => Err(error(start, "expected an expression, found the end of the program".into())),
            Some(')') => Err(error(start, "unexpected `)`".into())),
            Some('(') => {
                if depth >= MAX_DEPTH {
                    return Err(error(start, format!("nested deeper than {MAX_DEPTH} parentheses")));
                }
                self.bump();
                let mut items = Vec::new();
                loop {
                    self.skip_space();
                    match self.peek() {
                        None => return Err(error(start, "`(` is never closed".into())),
                        Some(')') => {
                            self.bump();
                            return Ok(Sexp::List(items, start));
                        }
                        Some(_) => items.push(self.read(depth + 1)?),
                    }
                }
            }
            Some(_) => {
                let from = self.at;
                while self.peek().is_some_and(|c| !c.is_whitespace() && c != '(' && c != ')' && c != ';') {
                    self.bump();
                }
                Ok(Sexp::Atom(&self.text[from..self.at], start))
            }
        }
    }
}

/// Builds the program as its parts are read.
#[derive(Default)]
struct Builder {
    registers: Vec<Register>,
    ops: Vec<Op>,
    stmts: Vec<Stmt>,
    clauses: Vec<Clause>,
}

pub(super) fn parse(text: &str) -> Result<Program, ProgramError> {
    let start = Pos { line: 1, column: 1 };
    if text.len() > MAX_SOURCE {
        return Err(error(start, format!("program text of {} bytes, at most {MAX_SOURCE}", text.len())));
    }
    let mut reader = Reader { text, at: 0, pos: start };
    let mut top = Vec::new();
    loop {
        reader.skip_space();
        if reader.peek().is_none() {
            break;
        }
        top.push(reader.read(0)?);
    }
    let mut b = Builder::default();
    let mut items = top.iter();
    match items.next() {
        Some(first) if head(first) == Some("def") => b.defs(first)?,
        Some(first) => return Err(error(first.pos(), format!("expected `(def ...)`, found {}", first.describe()))),
        None => return Err(error(start, "empty program: expected `(def ...)` and `(when ...)` clauses".into())),
    }
    for item in items {
        b.clause(item)?;
    }
    if b.clauses.is_empty() {
        return Err(error(reader.pos, "expected at least one `(when ...)` clause".into()));
    }
    let Builder { registers, ops, stmts, clauses } = b;
    // The reader checked every bound; verification is the same check any bytecode gets.
    Program::new(registers, ops, stmts, clauses).map_err(|e| ProgramError {
        line: start.line,
        column: start.column,
        ..e
    })
}

/// The head atom of a list.
fn head<'a>(s: &Sexp<'a>) -> Option<&'a str> {
    match s {
        Sexp::List(items, _) => match items.first() {
            Some(Sexp::Atom(a, _)) => Some(a),
            _ => None,
        },
        Sexp::Atom(..) => None,
    }
}

fn list<'s, 'a>(s: &'s Sexp<'a>, what: &str) -> Result<&'s [Sexp<'a>], ProgramError> {
    match s {
        Sexp::List(items, _) => Ok(items),
        Sexp::Atom(a, p) => Err(error(*p, format!("expected {what}, found `{a}`"))),
    }
}

fn atom<'a>(s: &Sexp<'a>, what: &str) -> Result<&'a str, ProgramError> {
    match s {
        Sexp::Atom(a, _) => Ok(a),
        other => Err(error(other.pos(), format!("expected {what}, found {}", other.describe()))),
    }
}

/// A literal: a decimal or `0x` integer, `true`, `false` or `max`.
fn literal(a: &str) -> Option<u64> {
    match a {
        "true" => Some(1),
        "false" => Some(0),
        "max" => Some(u64::MAX),
        _ => match a.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16).ok(),
            None if a.starts_with(|c: char| c.is_ascii_digit()) => a.replace('_', "").parse().ok(),
            None => None,
        },
    }
}

fn is_name(a: &str) -> bool {
    a.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Builder {
    /// `(def (Report (volatile a 0) (b 0)) (Control (c 0)))`
    fn defs(&mut self, def: &Sexp) -> Result<(), ProgramError> {
        for group in &list(def, "`(def ...)`")?[1..] {
            let items = list(group, "`(Report ...)` or `(Control ...)`")?;
            let scope = match items.first().map(|s| atom(s, "`Report` or `Control`")).transpose()? {
                Some("Report") => Scope::Report,
                Some("Control") => Scope::Control,
                Some(other) => {
                    return Err(error(group.pos(), format!("expected `Report` or `Control`, found `{other}`")))
                }
                None => {
                    return Err(error(group.pos(), "expected `(Report ...)` or `(Control ...)`, found `()`".into()))
                }
            };
            if scope == Scope::Report && self.registers.iter().any(|r| r.scope == Scope::Control) {
                return Err(error(group.pos(), "`Report` registers come before `Control` registers".into()));
            }
            for reg in &items[1..] {
                self.register(reg, scope)?;
            }
        }
        Ok(())
    }

    fn register(&mut self, reg: &Sexp, scope: Scope) -> Result<(), ProgramError> {
        let items = list(reg, "a register `(name initial)` or `(volatile name initial)`")?;
        let (volatile, rest) = match items.first() {
            Some(Sexp::Atom("volatile", p)) => {
                if scope == Scope::Control {
                    return Err(error(
                        *p,
                        "control registers cannot be volatile (they keep what the algorithm sets)".into(),
                    ));
                }
                (true, &items[1..])
            }
            _ => (false, items),
        };
        let [name, init] = rest else {
            return Err(error(reg.pos(), "expected `(name initial)` or `(volatile name initial)`".into()));
        };
        let name_text = atom(name, "a register name")?;
        if !is_name(name_text) {
            return Err(error(name.pos(), format!("`{name_text}` is not a register name (letters, digits, `_`)")));
        }
        if self.registers.iter().any(|r| r.name == name_text) {
            return Err(error(name.pos(), format!("register `{name_text}` is declared twice")));
        }
        if self.registers.len() >= MAX_REGISTERS {
            return Err(error(reg.pos(), format!("more than {MAX_REGISTERS} registers")));
        }
        let init_text = atom(init, "an initial value")?;
        let Some(value) = literal(init_text) else {
            return Err(error(
                init.pos(),
                format!("expected an integer, `true`, `false` or `max`, found `{init_text}`"),
            ));
        };
        self.registers.push(Register { name: name_text.to_string(), scope, init: value, volatile });
        Ok(())
    }

    /// `(when cond stmt...)`
    fn clause(&mut self, s: &Sexp) -> Result<(), ProgramError> {
        if head(s) != Some("when") {
            return Err(error(
                s.pos(),
                format!("expected a `(when condition statement...)` clause, found {}", s.describe()),
            ));
        }
        let items = list(s, "a clause")?;
        let Some(cond) = items.get(1) else {
            return Err(error(s.pos(), "`when` needs a condition".into()));
        };
        if self.clauses.len() >= MAX_CLAUSES {
            return Err(error(s.pos(), format!("more than {MAX_CLAUSES} clauses")));
        }
        let cond = self.expr(cond)?;
        let first = self.stmts.len() as u16;
        for stmt in &items[2..] {
            self.stmt(stmt)?;
        }
        self.clauses.push(Clause { cond, first, len: self.stmts.len() as u16 - first });
        Ok(())
    }

    fn stmt(&mut self, s: &Sexp) -> Result<(), ProgramError> {
        const EXPECTED: &str = "a statement: `(:= Report.x e)`, `(report)`, `(urgent)`, `(fallthrough)` or `(wake e)`";
        let items = list(s, EXPECTED)?;
        if self.stmts.len() >= MAX_STATEMENTS {
            return Err(error(s.pos(), format!("more than {MAX_STATEMENTS} statements")));
        }
        let arity = |n: usize, form: &str| {
            if items.len() == n + 1 {
                Ok(())
            } else {
                Err(error(s.pos(), format!("`{form}` takes {n} operand(s), found {}", items.len() - 1)))
            }
        };
        let stmt = match head(s) {
            Some(":=") => {
                arity(2, ":=")?;
                let reg = self.reference(&items[1])?;
                let expr = self.expr(&items[2])?;
                Stmt::Assign { reg, expr }
            }
            Some("report") => {
                arity(0, "report")?;
                Stmt::Report
            }
            Some("urgent") => {
                arity(0, "urgent")?;
                Stmt::Urgent
            }
            Some("fallthrough") => {
                arity(0, "fallthrough")?;
                Stmt::Fallthrough
            }
            Some("wake") => {
                arity(1, "wake")?;
                Stmt::Wake(self.expr(&items[1])?)
            }
            _ => return Err(error(s.pos(), format!("expected {EXPECTED}, found {}", s.describe()))),
        };
        self.stmts.push(stmt);
        Ok(())
    }

    /// `Report.x` or `Control.x`, as a register index.
    fn reference(&self, s: &Sexp) -> Result<u8, ProgramError> {
        let a = atom(s, "a register `Report.x` or `Control.x`")?;
        let (scope, name) = match a.split_once('.') {
            Some(("Report", name)) => (Scope::Report, name),
            Some(("Control", name)) => (Scope::Control, name),
            _ => return Err(error(s.pos(), format!("expected a register `Report.x` or `Control.x`, found `{a}`"))),
        };
        match self.registers.iter().position(|r| r.name == name) {
            Some(i) if self.registers[i].scope == scope => Ok(i as u8),
            Some(_) => Err(error(s.pos(), format!("`{name}` is not a {scope:?} register"))),
            None => Err(error(s.pos(), format!("register `{name}` is not declared in `(def ...)`"))),
        }
    }

    fn push(&mut self, op: Op, pos: Pos) -> Result<(), ProgramError> {
        if self.ops.len() >= MAX_OPS {
            return Err(error(pos, format!("program longer than {MAX_OPS} instructions")));
        }
        self.ops.push(op);
        Ok(())
    }

    fn expr(&mut self, s: &Sexp) -> Result<Expr, ProgramError> {
        let start = self.ops.len() as u16;
        self.emit(s)?;
        let expr = Expr { start, len: self.ops.len() as u16 - start };
        // Operand-stack depth is checked with the program; locate an overflow here.
        let mut depth = 0usize;
        let mut most = 0usize;
        for op in &self.ops[start as usize..] {
            depth = match op {
                Op::Const(_) | Op::Field(_) | Op::Load(_) => depth + 1,
                Op::Unary(_) => depth,
                Op::Binary(_) => depth.saturating_sub(1),
                Op::Select => depth.saturating_sub(2),
            };
            most = most.max(depth);
        }
        if most > super::MAX_STACK {
            return Err(error(s.pos(), format!("expression needs {most} stack entries, at most {}", super::MAX_STACK)));
        }
        Ok(expr)
    }

    fn emit(&mut self, s: &Sexp) -> Result<(), ProgramError> {
        let pos = s.pos();
        match s {
            Sexp::Atom(a, _) => {
                let op = if let Some(v) = literal(a) {
                    Op::Const(v)
                } else if let Some(field) = Field::lookup(a) {
                    Op::Field(field)
                } else if a.starts_with("Report.") || a.starts_with("Control.") {
                    Op::Load(self.reference(s)?)
                } else if a.starts_with(|c: char| c.is_ascii_digit()) {
                    return Err(error(pos, format!("`{a}` is not an integer that fits 64 bits")));
                } else {
                    return Err(error(
                        pos,
                        format!("unknown name `{a}`: expected a number, a field (`Ack.bytes_acked`, `Now`, ...) or a register (`Report.x`)"),
                    ));
                };
                self.push(op, pos)
            }
            Sexp::List(items, _) => {
                let Some(op) = items.first() else {
                    return Err(error(pos, "expected an expression, found `()`".into()));
                };
                let name = atom(op, "an operator")?;
                let args = &items[1..];
                let count = |n: usize| {
                    if args.len() == n {
                        Ok(())
                    } else {
                        Err(error(pos, format!("`{name}` takes {n} operand(s), found {}", args.len())))
                    }
                };
                if let Some(unary) = unary(name) {
                    count(1)?;
                    self.emit(&args[0])?;
                    return self.push(Op::Unary(unary), pos);
                }
                if name == "if" {
                    count(3)?;
                    for arg in args {
                        self.emit(arg)?;
                    }
                    return self.push(Op::Select, pos);
                }
                let Some((binary, chains)) = binary(name) else {
                    return Err(error(op.pos(), format!("unknown operator `{name}`")));
                };
                if chains && args.len() < 2 {
                    return Err(error(pos, format!("`{name}` takes at least 2 operands, found {}", args.len())));
                }
                if !chains {
                    count(2)?;
                }
                // n-ary forms fold left: (+ a b c) is ((a + b) + c), two stack entries at a time.
                self.emit(&args[0])?;
                for arg in &args[1..] {
                    self.emit(arg)?;
                    self.push(Op::Binary(binary), pos)?;
                }
                Ok(())
            }
        }
    }
}

fn unary(name: &str) -> Option<Unary> {
    Some(match name {
        "not" | "!" => Unary::Not,
        "bits" => Unary::Bits,
        _ => return None,
    })
}

/// The operation and whether it takes more than two operands (folding left).
fn binary(name: &str) -> Option<(Binary, bool)> {
    Some(match name {
        "+" => (Binary::Add, true),
        "-" => (Binary::Sub, false),
        "*" => (Binary::Mul, true),
        "/" => (Binary::Div, false),
        "%" => (Binary::Rem, false),
        "min" => (Binary::Min, true),
        "max" => (Binary::Max, true),
        "<" => (Binary::Lt, false),
        "<=" => (Binary::Le, false),
        ">" => (Binary::Gt, false),
        ">=" => (Binary::Ge, false),
        "==" => (Binary::Eq, false),
        "!=" => (Binary::Ne, false),
        "and" | "&&" => (Binary::And, true),
        "or" | "||" => (Binary::Or, true),
        "&" => (Binary::BitAnd, true),
        "|" => (Binary::BitOr, true),
        "^" => (Binary::BitXor, true),
        "<<" => (Binary::Shl, false),
        ">>" => (Binary::Shr, false),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Program::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_program_reads_into_registers_clauses_and_bytecode() {
        let p = Program::parse(
            "; counts bytes\n(def (Report (volatile acked 0) (seen 0)) (Control (limit 0x10)))\n\
             (when Event.ack (:= Report.acked (+ Report.acked Ack.bytes_acked 1)) (fallthrough))\n\
             (when (>= Report.acked Control.limit) (report))",
        )
        .unwrap();
        assert_eq!(p.registers().len(), 3);
        assert_eq!(
            p.registers()[2],
            Register { name: "limit".into(), scope: Scope::Control, init: 16, volatile: false }
        );
        assert!(p.registers()[0].volatile);
        assert_eq!(p.clauses().len(), 2);
        assert_eq!(
            &p.ops()[1..6],
            &[
                Op::Load(0),
                Op::Field(Field::AckBytesAcked),
                Op::Binary(Binary::Add),
                Op::Const(1),
                Op::Binary(Binary::Add)
            ]
        );
        assert!(!p.reports_every_signal());
        let every = Program::parse("(def (Report (n 0))) (when true (:= Report.n 1) (report))").unwrap();
        assert!(every.reports_every_signal());
    }

    #[test]
    fn errors_say_where_and_what_was_expected() {
        assert_eq!(err(""), "1:1: empty program: expected `(def ...)` and `(when ...)` clauses");
        assert_eq!(err("(when true)"), "1:1: expected `(def ...)`, found `(when ...)`");
        assert_eq!(err("(def)"), "1:6: expected at least one `(when ...)` clause");
        assert_eq!(err("(def)\n(when (+ 1 Ack.bytes) (report))"), "2:12: unknown name `Ack.bytes`: expected a number, a field (`Ack.bytes_acked`, `Now`, ...) or a register (`Report.x`)");
        assert_eq!(err("(def)\n(when true (:= Report.x 1))"), "2:16: register `x` is not declared in `(def ...)`");
        assert_eq!(
            err("(def (Report (a 0)))\n(when true (:= Report.a 1 2))"),
            "2:12: `:=` takes 2 operand(s), found 3"
        );
        assert_eq!(err("(def (Report (a 0)))\n(when (foo 1) (report))"), "2:8: unknown operator `foo`");
        assert_eq!(err("(def (Report (a 0)))\n(when (- 1) (report))"), "2:7: `-` takes 2 operand(s), found 1");
        assert_eq!(err("(def (Report (a 0))) (when true (report)"), "1:22: `(` is never closed");
        assert_eq!(err("(def (Report (a 0))))"), "1:21: unexpected `)`");
        assert_eq!(
            err("(def (Report (a 99999999999999999999)))"),
            "1:17: expected an integer, `true`, `false` or `max`, found `99999999999999999999`"
        );
        assert_eq!(err("(def (Report (a 0) (a 1))) (when true (report))"), "1:21: register `a` is declared twice");
        assert_eq!(
            err("(def (Control (volatile a 0))) (when true (report))"),
            "1:16: control registers cannot be volatile (they keep what the algorithm sets)"
        );
        assert_eq!(err("(def (Report (a 0))) (when true (jump))"), "1:33: expected a statement: `(:= Report.x e)`, `(report)`, `(urgent)`, `(fallthrough)` or `(wake e)`, found `(jump ...)`");
        assert_eq!(err("(def (Control (c 0))) (when true (:= Report.c 1))"), "1:38: `c` is not a Report register");
    }

    #[test]
    fn bounds_are_errors_not_crashes() {
        let deep = format!("(def) (when {}1{} (report))", "(not ".repeat(40), ")".repeat(40));
        assert!(err(&deep).contains("nested deeper than 32 parentheses"), "{}", err(&deep));
        let wide = format!(
            "(def) (when (+ 1 {}) (report))",
            "(+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 (+ 1 1))))))))))))))))"
        );
        assert!(err(&wide).contains("stack entries, at most 16"), "{}", err(&wide));
        let regs: String = (0..33).map(|i| format!("(r{i} 0)")).collect();
        assert!(err(&format!("(def (Report {regs})) (when true (report))")).contains("more than 32 registers"));
        let long = format!("(def) (when (+ {}) (report))", "1 ".repeat(600));
        assert!(err(&long).contains("longer than 512 instructions"));
        let clauses = "(when true (report))".repeat(33);
        assert!(err(&format!("(def) {clauses}")).contains("more than 32 clauses"));
        assert!(err(&"x".repeat(MAX_SOURCE + 1)).contains("at most 65536"));
        assert!(Program::parse("(def) (when é (report))").is_err());
    }
}
