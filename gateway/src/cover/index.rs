//! Every module parsed once, with its imports and top-level definitions, and the resolution of
//! names and dotted expressions to qualified names (`requests.post`, `support.clients.get`,
//! `httpx.Client().post` for a method of an instance made by a known call).

use std::collections::{BTreeSet, HashMap, VecDeque};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ModModule, Stmt};
use ruff_python_parser::Parsed;
use ruff_source_file::LineIndex;
use ruff_text_size::{Ranged, TextSize};

use super::files::{SourceFile, Walked};
use super::{CoverError, FileCounts, Location, ParseFault};

/// Python's builtins a tool may call with an effect, resolved as bare names.
const BUILTINS: &[&str] = &["open", "eval", "exec", "compile", "__import__", "getattr"];

/// How deep a name is followed through re-exports.
const MAX_ALIAS_HOPS: usize = 8;

/// How deep the inspection follows nested expressions (`f()()()`, `a.b.c...`, `x + y + ...`).
/// Code nested deeper is not read further: what it holds is reported as an unknown and, inside a
/// tool, as an effect of unknown kind classified `executes` (fail closed). Ruff's parser guards
/// its own recursion; this guards the inspection's.
pub const MAX_NESTING: usize = 128;

/// How deep a file may nest what the parser descends into recursively (brackets, runs of prefix
/// operators, lambdas and conditional expressions in one statement) before it is parsed at all:
/// CPython refuses 200 nested brackets, and a hostile file could make the parser's stack grow
/// by gigabytes.
pub const MAX_PARSE_NESTING: usize = 1000;

/// The nesting of `text` as its tokens show it, when it passes `limit`: brackets open, plus the
/// run of prefix operators (`-`, `+`, `~`, `not`, `await`, `*`), plus the lambdas and `else`s of
/// the logical line. An upper bound of what the parser recurses on, counted without recursing.
pub fn nesting_beyond(text: &str, limit: usize) -> Option<usize> {
    use ruff_python_ast::token::TokenKind as T;
    let mut lexer = ruff_python_parser::lexer::lex(text, ruff_python_parser::Mode::Module);
    let (mut brackets, mut run, mut line) = (0usize, 0usize, 0usize);
    loop {
        match lexer.next_token() {
            T::EndOfFile => return None,
            T::Lpar | T::Lsqb | T::Lbrace => {
                brackets += 1;
                run = 0;
            }
            T::Rpar | T::Rsqb | T::Rbrace => {
                brackets = brackets.saturating_sub(1);
                run = 0;
            }
            T::Minus | T::Plus | T::Tilde | T::Not | T::Await | T::Star | T::DoubleStar => {
                run += 1;
            }
            T::Lambda | T::Else => {
                line += 1;
                run = 0;
            }
            T::Newline => {
                line = 0;
                run = 0;
            }
            _ => run = 0,
        }
        let depth = brackets + run + line;
        if depth > limit {
            return Some(depth);
        }
    }
}

/// One parsed module.
pub struct Module<'w> {
    pub file: &'w SourceFile,
    pub is_package: bool,
    /// `None` when the file did not parse.
    pub parsed: Option<Parsed<ModModule>>,
    pub fault: Option<ParseFault>,
    lines: LineIndex,
    /// Local name → qualified name, from `import` and `from … import`.
    pub imports: HashMap<String, String>,
    /// Top-level name → index of its statement in the body (the last binding wins).
    pub defs: HashMap<String, usize>,
}

/// A top-level definition: module and statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DefRef {
    pub module: usize,
    pub stmt: usize,
}

/// The entrypoint's definition.
pub struct Entry {
    pub def: DefRef,
    pub id: String,
    pub kind: &'static str,
    pub at: Location,
}

/// All modules of the codebase.
pub struct Index<'w> {
    pub modules: Vec<Module<'w>>,
    by_name: HashMap<String, usize>,
}

impl<'w> Index<'w> {
    pub fn build(walked: &'w Walked) -> Index<'w> {
        let modules: Vec<Module<'w>> = walked.files.iter().map(Module::parse).collect();
        let by_name = modules
            .iter()
            .enumerate()
            .map(|(i, m)| (m.file.module.clone(), i))
            .collect();
        Index { modules, by_name }
    }

    pub fn counts(&self, walked: &Walked) -> FileCounts {
        FileCounts {
            python: self.modules.len() as u64,
            parsed: self.modules.iter().filter(|m| m.parsed.is_some()).count() as u64,
            lines: self
                .modules
                .iter()
                .map(|m| m.file.text.lines().count() as u64)
                .sum(),
            skipped: walked.skipped.clone(),
        }
    }

    pub fn parse_errors(&self) -> Vec<ParseFault> {
        self.modules
            .iter()
            .filter_map(|m| m.fault.clone())
            .collect()
    }

    /// The module named `name`: exactly, or (for code under `src/` or another folder that is
    /// not itself a package) the one module whose name ends with `.name`.
    pub fn module(&self, name: &str) -> Option<usize> {
        if let Some(&i) = self.by_name.get(name) {
            return Some(i);
        }
        let suffix = format!(".{name}");
        let mut found = self
            .modules
            .iter()
            .enumerate()
            .filter(|(_, m)| m.file.module.ends_with(&suffix));
        match (found.next(), found.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    }

    /// The statement of a definition.
    pub fn stmt(&self, d: DefRef) -> Option<&Stmt> {
        self.modules[d.module].body()?.get(d.stmt)
    }

    /// `module:name` of a definition.
    pub fn id(&self, d: DefRef) -> String {
        let m = &self.modules[d.module];
        let name = m
            .defs
            .iter()
            .find(|(_, s)| **s == d.stmt)
            .map_or("?", |(n, _)| n.as_str());
        format!("{}:{name}", m.file.module)
    }

    /// Where a node of module `m` starts.
    pub fn at(&self, m: usize, node: &impl Ranged) -> Location {
        self.modules[m].at(node.start())
    }

    /// The entrypoint `module:object`, or what could have been meant.
    pub fn entrypoint(&self, module: &str, object: &str) -> Result<Entry, CoverError> {
        let Some(m) = self.module(module) else {
            let mut names: Vec<&str> = self
                .modules
                .iter()
                .map(|m| m.file.module.as_str())
                .collect();
            let last = module.rsplit('.').next().unwrap_or(module);
            names.sort_by_key(|n| (!n.ends_with(last), *n));
            names.truncate(12);
            return Err(CoverError::NotFound {
                what: format!("no module `{module}` in the inspected folder"),
                candidates: if names.is_empty() {
                    "no Python file was found there".into()
                } else {
                    format!("modules found: {}", names.join(", "))
                },
            });
        };
        let Some(def) = self.def_in(m, object, 0) else {
            let mut names: Vec<&str> = self.modules[m]
                .defs
                .iter()
                .filter(|(_, i)| {
                    !matches!(
                        self.modules[m].body().and_then(|b| b.get(**i)),
                        Some(Stmt::Import(_) | Stmt::ImportFrom(_))
                    )
                })
                .map(|(n, _)| n.as_str())
                .collect();
            names.sort();
            return Err(CoverError::NotFound {
                what: format!(
                    "no top-level `{object}` in `{}` ({})",
                    self.modules[m].file.module, self.modules[m].file.path
                ),
                candidates: if let Some(f) = &self.modules[m].fault {
                    format!(
                        "the file does not parse: {} at line {}",
                        f.message, f.at.line
                    )
                } else if names.is_empty() {
                    "the module defines nothing at its top level".into()
                } else {
                    format!("defined there: {}", names.join(", "))
                },
            });
        };
        let stmt = self.stmt(def).ok_or_else(|| CoverError::NotFound {
            what: format!("`{module}:{object}` could not be read"),
            candidates: "inspect again".into(),
        })?;
        let kind = match stmt {
            Stmt::FunctionDef(_) => "function",
            Stmt::ClassDef(_) => "class",
            _ => "value",
        };
        Ok(Entry {
            id: self.id(def),
            kind,
            at: self.at(def.module, stmt),
            def,
        })
    }

    /// `name` defined at the top of module `m`, following re-exports (`from .x import name`).
    pub fn def_in(&self, m: usize, name: &str, hops: usize) -> Option<DefRef> {
        let module = &self.modules[m];
        if let Some(&stmt) = module.defs.get(name) {
            let def = DefRef { module: m, stmt };
            // An import re-exported under this name is followed to its definition.
            if let Some(Stmt::Import(_) | Stmt::ImportFrom(_)) = self.stmt(def) {
                let target = module.imports.get(name)?;
                return (hops < MAX_ALIAS_HOPS)
                    .then(|| self.def_of(target, hops + 1))
                    .flatten();
            }
            return Some(def);
        }
        None
    }

    /// The definition a qualified name names in the codebase (`pkg.mod.name`).
    pub fn def_of(&self, qualified: &str, hops: usize) -> Option<DefRef> {
        let (module, name) = qualified.rsplit_once('.')?;
        let m = self.module(module)?;
        self.def_in(m, name, hops)
    }

    /// The definition of the codebase an expression names: a name defined or imported in
    /// module `m`, or an attribute of an imported module of the codebase (`tools.search`).
    pub fn def_at(&self, m: usize, expr: &Expr) -> Option<DefRef> {
        match expr {
            Expr::Name(n) => self.def_in(m, n.id.as_str(), 0).or_else(|| {
                let q = self.modules[m].imports.get(n.id.as_str())?;
                self.def_of(q, 0)
            }),
            Expr::Attribute(_) => {
                let q = self.resolve(m, expr, &HashMap::new())?;
                self.def_of(&q, 0)
            }
            _ => None,
        }
    }

    /// The qualified name of `expr` in module `m`, with `locals` (a function's bindings, each
    /// to the qualified name of what it holds).
    pub fn resolve(
        &self,
        m: usize,
        expr: &Expr,
        locals: &HashMap<String, String>,
    ) -> Option<String> {
        self.resolve_in(m, expr, locals, 0, 0)
    }

    fn resolve_in(
        &self,
        m: usize,
        expr: &Expr,
        locals: &HashMap<String, String>,
        hops: usize,
        depth: usize,
    ) -> Option<String> {
        if hops > MAX_ALIAS_HOPS || depth > MAX_NESTING {
            return None;
        }
        match expr {
            Expr::Name(n) => self.resolve_name(m, n.id.as_str(), locals, hops),
            Expr::Attribute(a) => {
                let base = self.resolve_in(m, &a.value, locals, hops, depth + 1)?;
                Some(format!("{base}.{}", a.attr.as_str()))
            }
            Expr::Call(c) => {
                let callee = self.resolve_in(m, &c.func, locals, hops, depth + 1)?;
                // `boto3.client("s3")`: the literal first argument names the instance.
                let first = c.arguments.args.first().and_then(literal_str);
                Some(match first {
                    Some(arg) if callee.ends_with(".client") || callee.ends_with(".resource") => {
                        format!("{callee}({arg})")
                    }
                    _ => format!("{callee}()"),
                })
            }
            _ => None,
        }
    }

    fn resolve_name(
        &self,
        m: usize,
        name: &str,
        locals: &HashMap<String, String>,
        hops: usize,
    ) -> Option<String> {
        if let Some(q) = locals.get(name) {
            return Some(q.clone());
        }
        let module = &self.modules[m];
        if let Some(&stmt) = module.defs.get(name) {
            let own = format!("{}.{name}", module.file.module);
            return Some(match module.body().and_then(|b| b.get(stmt)) {
                Some(Stmt::Import(_) | Stmt::ImportFrom(_)) => module.imports.get(name)?.clone(),
                // A module-level value made by a call holds what the call makes.
                Some(Stmt::Assign(a))
                    if matches!(*a.value, Expr::Call(_) | Expr::Name(_) | Expr::Attribute(_)) =>
                {
                    self.resolve_in(m, &a.value, &HashMap::new(), hops + 1, 0)
                        .filter(|q| !q.starts_with(&module.file.module))
                        .unwrap_or(own)
                }
                _ => own,
            });
        }
        if let Some(q) = module.imports.get(name) {
            return Some(q.clone());
        }
        BUILTINS.contains(&name).then(|| name.to_string())
    }

    /// The ids (`module:name`) of every top-level definition the entrypoint's definition
    /// reaches through the names it uses, transitively.
    pub fn reachable_from(&self, start: &DefRef) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::from([*start]);
        let mut visited = std::collections::HashSet::new();
        while let Some(d) = queue.pop_front() {
            if !visited.insert(d) {
                continue;
            }
            seen.insert(self.id(d));
            let Some(stmt) = self.stmt(d) else { continue };
            let mut names = Names::default();
            names.visit_stmt(stmt);
            // Module-level statements that use a definition (decorators applied by
            // `@agent.tool`, `builder.add_node(...)`) reach it too: they are part of the
            // value the entrypoint names.
            for (i, other) in self.modules[d.module]
                .body()
                .unwrap_or(&[])
                .iter()
                .enumerate()
            {
                if i != d.stmt && mentions(other, &self.modules[d.module], d.stmt) {
                    names.visit_stmt(other);
                }
            }
            for e in names.found {
                if let Some(target) = self.def_at(d.module, e) {
                    queue.push_back(target);
                }
            }
        }
        seen
    }
}

/// Whether a module-level statement (not a definition) uses the name defined by statement
/// `def` (`graph.add_node("a", fn)` uses `graph`).
fn mentions(stmt: &Stmt, module: &Module<'_>, def: usize) -> bool {
    if !matches!(stmt, Stmt::Expr(_)) {
        return false;
    }
    let Some(name) = module.defs.iter().find(|(_, s)| **s == def).map(|(n, _)| n) else {
        return false;
    };
    let mut names = Names::default();
    names.visit_stmt(stmt);
    names
        .found
        .iter()
        .any(|e| matches!(e, Expr::Name(n) if n.id.as_str() == name))
}

/// The names and attribute chains an AST mentions.
#[derive(Default)]
struct Names<'a> {
    found: Vec<&'a Expr>,
    depth: usize,
}

impl<'a> Visitor<'a> for Names<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.depth >= MAX_NESTING {
            return;
        }
        self.depth += 1;
        match expr {
            Expr::Name(_) => self.found.push(expr),
            Expr::Attribute(_) => {
                self.found.push(expr);
                visitor::walk_expr(self, expr);
            }
            _ => visitor::walk_expr(self, expr),
        }
        self.depth -= 1;
    }
}

impl<'w> Module<'w> {
    fn parse(file: &'w SourceFile) -> Module<'w> {
        let lines = LineIndex::from_source_text(&file.text);
        let is_package = file.path.ends_with("__init__.py");
        let mut module = Module {
            file,
            is_package,
            parsed: None,
            fault: None,
            lines,
            imports: HashMap::new(),
            defs: HashMap::new(),
        };
        if let Some(depth) = nesting_beyond(&file.text, MAX_PARSE_NESTING) {
            module.fault = Some(ParseFault {
                at: module.at(TextSize::default()),
                message: format!(
                    "nested at least {depth} levels deep (brackets, prefix operators, lambdas or conditional expressions), more than the {MAX_PARSE_NESTING} cover parses; not inspected"
                ),
            });
            return module;
        }
        match ruff_python_parser::parse_module(&file.text) {
            Ok(parsed) => {
                module.index(parsed.syntax());
                module.parsed = Some(parsed);
            }
            Err(e) => {
                module.fault = Some(ParseFault {
                    at: module.at(e.location.start()),
                    message: e.error.to_string(),
                });
            }
        }
        module
    }

    pub fn body(&self) -> Option<&[Stmt]> {
        self.parsed.as_ref().map(|p| p.syntax().body.as_slice())
    }

    pub fn at(&self, offset: TextSize) -> Location {
        let lc = self.lines.line_column(offset, &self.file.text);
        Location {
            file: self.file.path.clone(),
            line: lc.line.get() as u32,
            column: lc.column.get() as u32,
        }
    }

    /// Imports and top-level names, including those under `if`/`try` at the top level
    /// (`try: import x except ImportError: ...`).
    fn index(&mut self, module: &ModModule) {
        for (i, stmt) in module.body.iter().enumerate() {
            self.index_stmt(i, stmt);
        }
    }

    fn index_stmt(&mut self, i: usize, stmt: &Stmt) {
        match stmt {
            Stmt::Import(s) => {
                for alias in &s.names {
                    let full = alias.name.as_str().to_string();
                    let local = match &alias.asname {
                        Some(a) => a.as_str().to_string(),
                        // `import a.b` binds `a`.
                        None => full.split('.').next().unwrap_or(&full).to_string(),
                    };
                    let target = match &alias.asname {
                        Some(_) => full.clone(),
                        None => local.clone(),
                    };
                    self.imports.insert(local.clone(), target);
                    self.defs.insert(local, i);
                }
            }
            Stmt::ImportFrom(s) => {
                let base = self.absolute(s.module.as_ref().map(|m| m.as_str()), s.level);
                for alias in &s.names {
                    if alias.name.as_str() == "*" {
                        continue;
                    }
                    let local = alias
                        .asname
                        .as_ref()
                        .unwrap_or(&alias.name)
                        .as_str()
                        .to_string();
                    let target = if base.is_empty() {
                        alias.name.as_str().to_string()
                    } else {
                        format!("{base}.{}", alias.name.as_str())
                    };
                    self.imports.insert(local.clone(), target);
                    self.defs.insert(local, i);
                }
            }
            Stmt::FunctionDef(f) => {
                self.defs.insert(f.name.as_str().to_string(), i);
            }
            Stmt::ClassDef(c) => {
                self.defs.insert(c.name.as_str().to_string(), i);
            }
            Stmt::Assign(a) => {
                for t in &a.targets {
                    if let Expr::Name(n) = t {
                        self.defs.insert(n.id.as_str().to_string(), i);
                    }
                }
            }
            Stmt::AnnAssign(a) => {
                if let (Expr::Name(n), Some(_)) = (&*a.target, &a.value) {
                    self.defs.insert(n.id.as_str().to_string(), i);
                }
            }
            Stmt::If(s) => {
                for inner in s
                    .body
                    .iter()
                    .chain(s.elif_else_clauses.iter().flat_map(|c| c.body.iter()))
                {
                    if matches!(inner, Stmt::Import(_) | Stmt::ImportFrom(_)) {
                        self.index_stmt(i, inner);
                    }
                }
            }
            Stmt::Try(s) => {
                for inner in &s.body {
                    if matches!(inner, Stmt::Import(_) | Stmt::ImportFrom(_)) {
                        self.index_stmt(i, inner);
                    }
                }
            }
            _ => {}
        }
    }

    /// The absolute module of `from {level dots}{module} import ...` in this module.
    fn absolute(&self, module: Option<&str>, level: u32) -> String {
        if level == 0 {
            return module.unwrap_or_default().to_string();
        }
        let mut parts: Vec<&str> = self.file.module.split('.').collect();
        // In `pkg/mod.py`, `.` is `pkg`; in `pkg/__init__.py` (module `pkg`), `.` is `pkg`.
        let up = if self.is_package { level - 1 } else { level };
        for _ in 0..up {
            parts.pop();
        }
        let mut base = parts.join(".");
        if let Some(m) = module {
            if !base.is_empty() {
                base.push('.');
            }
            base.push_str(m);
        }
        base
    }
}

/// A string literal's text.
pub fn literal_str(expr: &Expr) -> Option<String> {
    match expr {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        _ => None,
    }
}

/// The literal text of a string, or of an f-string with its placeholders written `{…}`
/// (`f"https://api.example/orders/{id}"` → `https://api.example/orders/{id}`), or of a `+`
/// concatenation starting with a literal.
pub fn literal_template(expr: &Expr, source: &str) -> Option<String> {
    template_in(expr, source, 0)
}

fn template_in(expr: &Expr, source: &str, depth: usize) -> Option<String> {
    if depth > MAX_NESTING {
        return None;
    }
    match expr {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        Expr::FString(_) => {
            let text =
                source.get(expr.range().start().to_usize()..expr.range().end().to_usize())?;
            let start = text.find(['"', '\''])?;
            let quote = &text[start..start + 1];
            let inner = text[start..]
                .trim_start_matches(quote)
                .trim_end_matches(quote);
            Some(inner.to_string())
        }
        Expr::BinOp(b) if b.op == ruff_python_ast::Operator::Add => {
            let left = template_in(&b.left, source, depth + 1)?;
            let right = template_in(&b.right, source, depth + 1).unwrap_or_else(|| "{…}".into());
            Some(format!("{left}{right}"))
        }
        _ => None,
    }
}

/// The docstring of a function or class body.
pub fn docstring(body: &[Stmt]) -> Option<String> {
    match body.first()? {
        Stmt::Expr(e) => literal_str(&e.value).map(|s| clean_doc(&s)),
        _ => None,
    }
}

/// A docstring without its indentation, trimmed.
fn clean_doc(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l.trim()
            } else {
                l.get(indent..).unwrap_or(l.trim())
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// A function's source text for an annotation or other node.
pub fn source_of<'s>(source: &'s str, node: &impl Ranged) -> &'s str {
    source
        .get(node.start().to_usize()..node.end().to_usize())
        .unwrap_or("")
}
