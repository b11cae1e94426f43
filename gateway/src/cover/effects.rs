//! Side-effect boundaries inside a tool: HTTP, files, processes and code, databases, email,
//! cloud SDKs and MCP clients, found by what each call resolves to, and followed through the
//! calls the tool makes to functions of the codebase.

use std::collections::{HashMap, HashSet};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt, StmtFunctionDef};

use super::frameworks::{Calls, ToolBody, keyword};
use super::index::{Index, literal_str, literal_template, source_of};
use super::{Effect, Unknown};

/// How deep calls into the codebase are followed from a tool.
const MAX_DEPTH: usize = 8;

/// HTTP client roots: module functions and the methods of their sessions.
const HTTP_ROOTS: &[&str] = &[
    "requests",
    "requests.Session()",
    "requests.session()",
    "httpx",
    "httpx.Client()",
    "httpx.AsyncClient()",
    "aiohttp.ClientSession()",
    "urllib3.PoolManager()",
];
const HTTP_READ: &[&str] = &["get", "head", "options"];
const HTTP_WRITE: &[&str] = &["post", "put", "patch", "delete"];

/// Database connections (what `.execute` is called on, or what makes it).
const DB_ROOTS: &[&str] = &[
    "sqlite3.connect()",
    "psycopg.connect()",
    "psycopg2.connect()",
    "psycopg.AsyncConnection.connect()",
    "asyncpg.connect()",
    "asyncpg.create_pool()",
    "pymysql.connect()",
    "mysql.connector.connect()",
    "sqlalchemy.create_engine()",
    "redis.Redis()",
    "redis.StrictRedis()",
];
const DB_METHODS: &[&str] = &[
    "execute",
    "executemany",
    "executescript",
    "fetch",
    "fetchval",
    "fetchrow",
    "copy_records_to_table",
];

/// Processes and code.
const PROCESS: &[(&str, &str)] = &[
    ("subprocess.run", "exec"),
    ("subprocess.call", "exec"),
    ("subprocess.check_call", "exec"),
    ("subprocess.check_output", "exec"),
    ("subprocess.Popen", "exec"),
    ("os.system", "shell"),
    ("os.popen", "shell"),
    ("os.execv", "exec"),
    ("os.execvp", "exec"),
    ("os.spawnv", "exec"),
    ("asyncio.create_subprocess_exec", "exec"),
    ("asyncio.create_subprocess_shell", "shell"),
];
const CODE: &[(&str, &str)] = &[
    ("eval", "eval"),
    ("exec", "exec"),
    ("compile", "compile"),
    ("__import__", "import"),
    ("importlib.import_module", "import"),
];

/// File functions: qualified name, operation, mutating.
const FILES: &[(&str, &str, bool)] = &[
    ("os.remove", "delete", true),
    ("os.unlink", "delete", true),
    ("os.rmdir", "delete", true),
    ("os.removedirs", "delete", true),
    ("shutil.rmtree", "delete", true),
    ("os.rename", "write", true),
    ("os.replace", "write", true),
    ("os.makedirs", "write", true),
    ("os.mkdir", "write", true),
    ("shutil.move", "write", true),
    ("shutil.copy", "write", true),
    ("shutil.copy2", "write", true),
    ("shutil.copyfile", "write", true),
    ("shutil.copytree", "write", true),
    ("os.listdir", "read", false),
    ("os.scandir", "read", false),
    ("os.walk", "read", false),
    ("os.stat", "read", false),
    ("os.path.exists", "read", false),
    ("shutil.disk_usage", "read", false),
];
const PATH_READ: &[&str] = &[
    "read_text",
    "read_bytes",
    "exists",
    "iterdir",
    "glob",
    "rglob",
    "stat",
    "is_file",
    "is_dir",
];
const PATH_WRITE: &[(&str, &str)] = &[
    ("write_text", "write"),
    ("write_bytes", "write"),
    ("unlink", "delete"),
    ("rmdir", "delete"),
    ("mkdir", "write"),
    ("rename", "write"),
    ("replace", "write"),
    ("touch", "write"),
];

/// The effects of a tool and what in it could not be resolved.
pub fn of_tool(index: &Index<'_>, body: &ToolBody) -> (Vec<Effect>, Vec<Unknown>) {
    let mut walk = Walk {
        index,
        effects: Vec::new(),
        unknowns: Vec::new(),
        visited: HashSet::new(),
    };
    match body {
        ToolBody::Function(def) => {
            if let Some(Stmt::FunctionDef(f)) = index.stmt(*def) {
                walk.function(def.module, f, &[], 0, None);
            }
        }
        ToolBody::Method(class, method) => {
            if let Some(Stmt::ClassDef(c)) = index.stmt(*class) {
                for stmt in &c.body {
                    if let Stmt::FunctionDef(f) = stmt
                        && f.name.as_str() == *method
                    {
                        let receiver = format!("{}()", index.id(*class).replace(':', "."));
                        walk.function(class.module, f, &[], 0, Some(receiver));
                    }
                }
            }
        }
    }
    walk.effects
        .sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.call.cmp(&b.call)));
    walk.effects.dedup();
    (walk.effects, walk.unknowns)
}

/// The strongest classification among effects.
pub fn strongest(effects: &[Effect]) -> &'static str {
    if effects.iter().any(|e| e.classification == "executes") {
        "executes"
    } else if effects.iter().any(|e| e.classification == "mutating") {
        "mutating"
    } else if effects.is_empty() {
        "none"
    } else {
        "read_only"
    }
}

/// The bindings of a function: parameters with a resolvable annotation hold an instance of
/// it; `x = call(...)` and `with call(...) as x` hold what the call makes.
pub fn bindings(index: &Index<'_>, m: usize, f: &StmtFunctionDef) -> HashMap<String, String> {
    let mut locals = HashMap::new();
    let p = &f.parameters;
    for param in p
        .posonlyargs
        .iter()
        .chain(p.args.iter())
        .chain(p.kwonlyargs.iter())
    {
        if let Some(ann) = &param.parameter.annotation
            && let Some(q) = index.resolve(m, ann, &locals)
        {
            locals.insert(param.parameter.name.as_str().to_string(), format!("{q}()"));
        }
    }
    let mut binds = Binds::default();
    for s in &f.body {
        binds.visit_stmt(s);
    }
    // In source order, so a binding can use an earlier one (`cur = conn.cursor()`).
    for (name, value) in binds.found {
        if let Some(q) = index.resolve(m, value, &locals) {
            let q = if matches!(value, Expr::Call(_)) {
                q
            } else {
                q.clone()
            };
            locals.insert(name, q);
        }
    }
    locals
}

#[derive(Default)]
struct Binds<'a> {
    found: Vec<(String, &'a Expr)>,
}

impl<'a> Visitor<'a> for Binds<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assign(a) => {
                for t in &a.targets {
                    if let Expr::Name(n) = t {
                        self.found.push((n.id.as_str().to_string(), &a.value));
                    }
                }
            }
            Stmt::AnnAssign(a) => {
                if let (Expr::Name(n), Some(v)) = (&*a.target, &a.value) {
                    self.found.push((n.id.as_str().to_string(), v));
                }
            }
            Stmt::With(w) => {
                for item in &w.items {
                    if let Some(Expr::Name(n)) = item.optional_vars.as_deref() {
                        self.found
                            .push((n.id.as_str().to_string(), &item.context_expr));
                    }
                }
            }
            // Nested functions and classes bind their own names.
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => return,
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    // Expressions hold no statement: nothing below them binds a name here.
    fn visit_expr(&mut self, _: &'a Expr) {}
}

struct Walk<'i, 'w> {
    index: &'i Index<'w>,
    effects: Vec<Effect>,
    unknowns: Vec<Unknown>,
    /// Functions walked, by module and the offset of their `def` (a class's methods share its
    /// definition).
    visited: HashSet<(usize, u32)>,
}

/// A function's key in [`Walk::visited`].
fn key(m: usize, f: &StmtFunctionDef) -> (usize, u32) {
    (m, f.range.start().to_u32())
}

impl Walk<'_, '_> {
    /// Walks function `f` of module `m`; `receiver` is what `self` holds in a method
    /// (`support.clients.Client()`).
    fn function(
        &mut self,
        m: usize,
        f: &StmtFunctionDef,
        via: &[String],
        depth: usize,
        receiver: Option<String>,
    ) {
        if !self.visited.insert(key(m, f)) && via.is_empty() {
            return;
        }
        let mut locals = bindings(self.index, m, f);
        if let Some(r) = receiver {
            locals.entry("self".into()).or_insert(r);
        }
        let targets = literal_targets(f);
        // Only the tool's own parameters can be narrowed by an envelope.
        let params: HashSet<&str> = if via.is_empty() {
            let p = &f.parameters;
            p.posonlyargs
                .iter()
                .chain(p.args.iter())
                .chain(p.kwonlyargs.iter())
                .map(|a| a.parameter.name.as_str())
                .collect()
        } else {
            HashSet::new()
        };
        let mut calls = Calls::default();
        for s in &f.body {
            calls.visit_stmt(s);
        }
        for expr in calls.too_deep {
            // Fail closed: what is nested too deep to read could do anything.
            let at = self.index.at(m, expr);
            self.unknowns.push(Unknown {
                what: "an expression nested deeper than the inspection reads".into(),
                why: format!(
                    "more than {} levels: not inspected, so the tool is taken to run code",
                    super::index::MAX_NESTING
                ),
                at: at.clone(),
            });
            self.effects.push(Effect {
                kind: "unknown".into(),
                call: "(nested too deep to inspect)".into(),
                operation: None,
                target: None,
                classification: "executes".into(),
                confidence: "low".into(),
                parameter: None,
                via: via.to_vec(),
                at,
            });
        }
        for call in calls.found {
            let before = self.effects.len();
            self.call(m, call, &locals, &targets, via, depth);
            if self.effects.len() > before
                && let Some(e) = self.effects.last_mut()
                && e.target.is_none()
                && e.via.is_empty()
            {
                // `requests.request(method, url)`: the target is the second argument.
                let skip = usize::from(e.call.ends_with(".request"));
                e.parameter = target_param(call, &params, skip);
            }
        }
    }

    fn call(
        &mut self,
        m: usize,
        call: &ExprCall,
        locals: &HashMap<String, String>,
        targets: &HashMap<String, String>,
        via: &[String],
        depth: usize,
    ) {
        let source = &self.index.modules[m].file.text;
        let at = self.index.at(m, call);
        let resolved = self.index.resolve(m, &call.func, locals);
        if let Some(q) = &resolved {
            if let Some(mut effect) = classify(q, call, source, targets) {
                effect.via = via.to_vec();
                effect.at = at;
                self.effects.push(effect);
                return;
            }
            if let Some(def) = self.index.def_of(q, 0)
                && let Some(Stmt::FunctionDef(f)) = self.index.stmt(def)
            {
                if depth < MAX_DEPTH && !self.visited.contains(&key(def.module, f)) {
                    let mut next = via.to_vec();
                    next.push(self.index.id(def));
                    self.function(def.module, f, &next, depth + 1, None);
                }
                return;
            }
            // `Client().get(...)`, `self.get(...)`: a method of a class of the code, on an
            // instance whose class is known.
            if let Some((class_q, method)) = q.rsplit_once("().")
                && !method.contains(['.', '('])
                && let Some(class) = self.index.def_of(class_q, 0)
                && let Some(Stmt::ClassDef(c)) = self.index.stmt(class)
            {
                let found = c.body.iter().find_map(|s| match s {
                    Stmt::FunctionDef(f) if f.name.as_str() == method => Some(f),
                    _ => None,
                });
                if let Some(f) = found
                    && depth < MAX_DEPTH
                    && !self.visited.contains(&key(class.module, f))
                {
                    let mut next = via.to_vec();
                    next.push(format!("{}.{method}", self.index.id(class)));
                    self.function(
                        class.module,
                        f,
                        &next,
                        depth + 1,
                        Some(format!("{class_q}()")),
                    );
                }
                return;
            }
            // A method of a class of the code, or anything else resolved outside the catalogue:
            // no effect known.
            return;
        }
        // The callee did not resolve: a method of an object whose type is not known here, or a
        // callee chosen at run time.
        match &*call.func {
            Expr::Attribute(a) => {
                if let Some(mut effect) = by_method(a.attr.as_str(), call, source) {
                    effect.call = source_of(source, &*call.func).to_string();
                    effect.via = via.to_vec();
                    effect.at = at;
                    self.effects.push(effect);
                }
            }
            Expr::Name(_) => {}
            other => self.unknowns.push(Unknown {
                what: format!(
                    "the callee `{}`",
                    super::frameworks::snippet(source_of(source, other))
                ),
                why: "chosen at run time; its effects are not known".into(),
                at,
            }),
        }
    }
}

/// The parameter a call's target is, unchanged: its first argument, its `url`, `file` or
/// `path` keyword, or the first argument of the object it is called on (`Path(path).read_text()`).
fn target_param(call: &ExprCall, params: &HashSet<&str>, skip: usize) -> Option<String> {
    let receiver_arg = match &*call.func {
        Expr::Attribute(a) => match &*a.value {
            Expr::Call(c) => c.arguments.args.first(),
            _ => None,
        },
        _ => None,
    };
    [
        call.arguments.args.get(skip),
        keyword(call, "url"),
        keyword(call, "file"),
        keyword(call, "path"),
        receiver_arg,
    ]
    .into_iter()
    .flatten()
    .find_map(|e| match e {
        Expr::Name(n) if params.contains(n.id.as_str()) => Some(n.id.as_str().to_string()),
        _ => None,
    })
}

/// Targets of local names bound to a call with a literal first argument
/// (`with smtplib.SMTP("smtp.example.com") as s`, `conn = sqlite3.connect("leads.db")`).
fn literal_targets(f: &StmtFunctionDef) -> HashMap<String, String> {
    let mut binds = Binds::default();
    for s in &f.body {
        binds.visit_stmt(s);
    }
    binds
        .found
        .into_iter()
        .filter_map(|(name, value)| match value {
            Expr::Call(c) => c
                .arguments
                .args
                .first()
                .and_then(literal_str)
                .map(|t| (name, t)),
            _ => None,
        })
        .collect()
}

fn effect(
    kind: &str,
    call: &str,
    operation: Option<&str>,
    target: Option<String>,
    class: &str,
    confidence: &str,
) -> Effect {
    Effect {
        kind: kind.into(),
        call: call
            .replace("()", "")
            .replace("(", "(\"")
            .replace(')', "\")"),
        operation: operation.map(str::to_string),
        target,
        classification: class.into(),
        confidence: confidence.into(),
        parameter: None,
        via: Vec::new(),
        at: super::Location {
            file: String::new(),
            line: 0,
            column: 0,
        },
    }
}

/// The target a receiver was made with: `Path("x").write_text` → `x`.
fn receiver_target(
    call: &ExprCall,
    source: &str,
    targets: &HashMap<String, String>,
) -> Option<String> {
    let Expr::Attribute(a) = &*call.func else {
        return None;
    };
    match &*a.value {
        Expr::Call(c) => c
            .arguments
            .args
            .first()
            .and_then(|e| literal_template(e, source)),
        Expr::Name(n) => targets.get(n.id.as_str()).cloned(),
        Expr::Attribute(inner) => match &*inner.value {
            Expr::Name(n) => targets.get(n.id.as_str()).cloned(),
            _ => None,
        },
        _ => None,
    }
}

/// The effect of a call resolved to `q`, when it is one.
fn classify(
    q: &str,
    call: &ExprCall,
    source: &str,
    targets: &HashMap<String, String>,
) -> Option<Effect> {
    let first = call.arguments.args.first();
    let url = || {
        keyword(call, "url")
            .or(first)
            .and_then(|e| literal_template(e, source))
    };
    if let Some((root, method)) = q.rsplit_once('.')
        && HTTP_ROOTS.contains(&root)
    {
        let m = method.to_ascii_uppercase();
        if HTTP_READ.contains(&method) {
            return Some(effect("http", q, Some(&m), url(), "read_only", "high"));
        }
        if HTTP_WRITE.contains(&method) {
            return Some(effect("http", q, Some(&m), url(), "mutating", "high"));
        }
        if method == "request" {
            let verb = first.and_then(literal_str).map(|v| v.to_ascii_uppercase());
            let url = call
                .arguments
                .args
                .get(1)
                .or(keyword(call, "url"))
                .and_then(|e| literal_template(e, source));
            return Some(match verb {
                Some(v) if HTTP_READ.contains(&v.to_ascii_lowercase().as_str()) => {
                    effect("http", q, Some(&v), url, "read_only", "high")
                }
                Some(v) => effect("http", q, Some(&v), url, "mutating", "high"),
                // The method is a variable: it may write.
                None => effect("http", q, None, url, "mutating", "medium"),
            });
        }
    }
    if q == "urllib.request.urlopen" {
        let writes = keyword(call, "data").is_some() || call.arguments.args.len() > 1;
        let (op, class) = if writes {
            ("POST", "mutating")
        } else {
            ("GET", "read_only")
        };
        return Some(effect(
            "http",
            q,
            Some(op),
            url(),
            class,
            if writes { "medium" } else { "high" },
        ));
    }
    if q == "open" || q == "io.open" {
        let mode = call.arguments.args.get(1).or(keyword(call, "mode"));
        let path = first
            .or(keyword(call, "file"))
            .and_then(|e| literal_template(e, source));
        return Some(match mode.map(literal_str) {
            None => effect("file", q, Some("read"), path, "read_only", "high"),
            Some(Some(mode)) if mode.contains(['w', 'a', 'x', '+']) => {
                effect("file", q, Some("write"), path, "mutating", "high")
            }
            Some(Some(_)) => effect("file", q, Some("read"), path, "read_only", "high"),
            Some(None) => effect("file", q, None, path, "mutating", "medium"),
        });
    }
    if let Some((_, op, writes)) = FILES.iter().find(|(name, _, _)| *name == q) {
        let path = first.and_then(|e| literal_template(e, source));
        let class = if *writes { "mutating" } else { "read_only" };
        return Some(effect("file", q, Some(op), path, class, "high"));
    }
    if let Some(method) = q.strip_prefix("pathlib.Path().") {
        let target = receiver_target(call, source, targets);
        if PATH_READ.contains(&method) {
            return Some(effect("file", q, Some("read"), target, "read_only", "high"));
        }
        if let Some((_, op)) = PATH_WRITE.iter().find(|(name, _)| *name == method) {
            return Some(effect("file", q, Some(op), target, "mutating", "high"));
        }
        if method == "open" {
            let mode = first
                .or(keyword(call, "mode"))
                .and_then(literal_str)
                .unwrap_or_else(|| "r".into());
            let (op, class) = if mode.contains(['w', 'a', 'x', '+']) {
                ("write", "mutating")
            } else {
                ("read", "read_only")
            };
            return Some(effect("file", q, Some(op), target, class, "high"));
        }
    }
    if let Some((_, op)) = PROCESS.iter().find(|(name, _)| *name == q) {
        let shell =
            keyword(call, "shell").is_some_and(|v| matches!(v, Expr::BooleanLiteral(b) if b.value));
        let program = match first {
            Some(Expr::List(l)) => l.elts.first().and_then(literal_str),
            Some(e) => literal_template(e, source),
            None => None,
        };
        let op = if shell { "shell" } else { op };
        return Some(effect("process", q, Some(op), program, "executes", "high"));
    }
    if q == "socket.create_connection" || q == "socket.socket().connect" {
        let host = match first {
            Some(Expr::Tuple(t)) => t.elts.first().and_then(literal_str),
            _ => None,
        };
        return Some(effect(
            "network",
            q,
            Some("connect"),
            host,
            "read_only",
            "medium",
        ));
    }
    if let Some((_, op)) = CODE.iter().find(|(name, _)| *name == q) {
        return Some(effect(
            "code",
            q,
            Some(op),
            first.and_then(literal_str),
            "executes",
            "high",
        ));
    }
    if let Some((root, method)) = q.rsplit_once('.') {
        let db_root = DB_ROOTS
            .iter()
            .find(|r| root == **r || root.starts_with(&format!("{r}.")));
        if db_root.is_some() && DB_METHODS.contains(&method) {
            let sql = first.and_then(literal_str);
            let verb = sql
                .as_deref()
                .and_then(|s| s.split_whitespace().next())
                .map(str::to_ascii_uppercase);
            let reads = verb
                .as_deref()
                .is_some_and(|v| matches!(v, "SELECT" | "WITH" | "SHOW" | "EXPLAIN" | "PRAGMA"));
            let target = receiver_target(call, source, targets);
            return Some(match verb {
                Some(v) => effect(
                    "database",
                    q,
                    Some(&v),
                    target,
                    if reads { "read_only" } else { "mutating" },
                    "high",
                ),
                None => effect("database", q, None, target, "mutating", "medium"),
            });
        }
        if root.starts_with("redis.Redis()") || root.starts_with("redis.StrictRedis()") {
            let reads = method.starts_with("get")
                || matches!(
                    method,
                    "exists" | "keys" | "scan" | "hget" | "hgetall" | "lrange" | "smembers"
                );
            return Some(effect(
                "database",
                q,
                Some(method),
                None,
                if reads { "read_only" } else { "mutating" },
                "high",
            ));
        }
        if (root.starts_with("smtplib.SMTP()") || root.starts_with("smtplib.SMTP_SSL()"))
            && matches!(method, "send_message" | "sendmail")
        {
            return Some(effect(
                "email",
                q,
                Some("send"),
                receiver_target(call, source, targets),
                "mutating",
                "high",
            ));
        }
        if let Some(service) = root
            .strip_prefix("boto3.client(")
            .or(root.strip_prefix("boto3.resource("))
            .and_then(|r| r.split(')').next())
        {
            let class = if reads_by_name(method) {
                "read_only"
            } else {
                "mutating"
            };
            return Some(effect(
                "cloud",
                q,
                Some(method),
                Some(format!("aws:{service}")),
                class,
                "high",
            ));
        }
        if (root.starts_with("google.cloud.") || root.starts_with("azure.")) && root.contains("()")
        {
            let class = if reads_by_name(method) {
                "read_only"
            } else {
                "mutating"
            };
            return Some(effect("cloud", q, Some(method), None, class, "medium"));
        }
        if method == "call_tool" && (root.starts_with("mcp.") || root.starts_with("fastmcp.")) {
            return Some(effect(
                "mcp",
                q,
                Some("call_tool"),
                first.and_then(literal_str),
                "mutating",
                "high",
            ));
        }
    }
    None
}

fn reads_by_name(method: &str) -> bool {
    [
        "get", "list", "describe", "head", "download", "scan", "query", "read", "fetch", "exists",
        "lookup",
    ]
    .iter()
    .any(|p| method.starts_with(p))
}

/// A method called on an object of unknown type, matched by its name alone (low confidence).
fn by_method(method: &str, call: &ExprCall, source: &str) -> Option<Effect> {
    let first = call.arguments.args.first();
    let url = keyword(call, "url")
        .or(first)
        .and_then(|e| literal_template(e, source));
    let looks_like_url = url
        .as_deref()
        .is_some_and(|u| u.starts_with("http://") || u.starts_with("https://"));
    let m = method.to_ascii_uppercase();
    if HTTP_WRITE.contains(&method) && looks_like_url {
        return Some(effect("http", method, Some(&m), url, "mutating", "low"));
    }
    if HTTP_READ.contains(&method) && looks_like_url {
        return Some(effect("http", method, Some(&m), url, "read_only", "low"));
    }
    if DB_METHODS.contains(&method) {
        let sql = first.and_then(literal_str)?;
        let verb = sql.split_whitespace().next()?.to_ascii_uppercase();
        if !matches!(
            verb.as_str(),
            "SELECT"
                | "WITH"
                | "INSERT"
                | "UPDATE"
                | "DELETE"
                | "CREATE"
                | "DROP"
                | "ALTER"
                | "REPLACE"
                | "MERGE"
                | "UPSERT"
        ) {
            return None;
        }
        let class = if matches!(verb.as_str(), "SELECT" | "WITH") {
            "read_only"
        } else {
            "mutating"
        };
        return Some(effect("database", method, Some(&verb), None, class, "low"));
    }
    if method == "call_tool" {
        return Some(effect(
            "mcp",
            method,
            Some("call_tool"),
            first.and_then(literal_str),
            "mutating",
            "low",
        ));
    }
    if matches!(method, "send_message" | "sendmail") {
        return Some(effect(
            "email",
            method,
            Some("send"),
            None,
            "mutating",
            "low",
        ));
    }
    None
}
