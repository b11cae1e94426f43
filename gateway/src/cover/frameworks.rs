//! Agents, tools and model calls of the frameworks cover knows, found by what their names
//! resolve to through the imports (an `Agent` imported from `agents` is the OpenAI Agents
//! SDK's; one from `crewai` is CrewAI's), never by a bare name alone.

use std::collections::HashMap;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt, StmtClassDef, StmtFunctionDef};

use super::index::{DefRef, Index, MAX_NESTING, docstring, literal_str, source_of};
use super::{Agent, Location, ModelCall, Parameter, Tool, Unknown};

/// Where a tool's code is, for the walk of its effects.
pub enum ToolBody {
    /// A top-level function.
    Function(DefRef),
    /// A method of a top-level class (`BaseTool._run`).
    Method(DefRef, &'static str),
}

/// What the frameworks pass found.
pub struct Found {
    pub agents: Vec<Agent>,
    pub tools: Vec<Tool>,
    pub model_calls: Vec<ModelCall>,
    pub unknowns: Vec<Unknown>,
    pub definitions: HashMap<String, ToolBody>,
}

/// Decorators that make a function a tool: the qualified name, the framework, and whether
/// the tool's name is the decorator's first literal argument.
const TOOL_DECORATORS: &[(&str, &str, bool)] = &[
    ("agents.function_tool", "openai_agents", false),
    ("agents.tool.function_tool", "openai_agents", false),
    ("langchain_core.tools.tool", "langchain", true),
    ("langchain.tools.tool", "langchain", true),
    ("langchain.agents.tool", "langchain", true),
    ("langchain_core.tools.convert.tool", "langchain", true),
    ("crewai.tools.tool", "crewai", true),
    ("crewai_tools.tool", "crewai", true),
];

/// Base classes that make a class a tool.
const TOOL_CLASSES: &[(&str, &str)] = &[
    ("langchain_core.tools.BaseTool", "langchain"),
    ("langchain.tools.BaseTool", "langchain"),
    ("langchain_core.tools.base.BaseTool", "langchain"),
    ("crewai.tools.BaseTool", "crewai"),
];

/// Calls that make a tool of a function: `StructuredTool.from_function(func=f, name=...)`.
const TOOL_FACTORIES: &[(&str, &str)] = &[
    (
        "langchain_core.tools.StructuredTool.from_function",
        "langchain",
    ),
    ("langchain.tools.StructuredTool.from_function", "langchain"),
    ("langchain_core.tools.Tool.from_function", "langchain"),
    ("langchain.tools.Tool.from_function", "langchain"),
    ("langchain_core.tools.Tool", "langchain"),
    ("langchain.tools.Tool", "langchain"),
];

/// Objects whose `.tool` / `.tool_plain` decorators make tools: the class, the framework,
/// what the object is.
const TOOL_HOSTS: &[(&str, &str, &str)] = &[
    ("pydantic_ai.Agent()", "pydantic_ai", "agent"),
    ("mcp.server.fastmcp.FastMCP()", "mcp", "mcp_server"),
    ("fastmcp.FastMCP()", "mcp", "mcp_server"),
];

pub fn find(index: &Index<'_>) -> Found {
    let mut f = Finder {
        index,
        found: Found {
            agents: Vec::new(),
            tools: Vec::new(),
            model_calls: Vec::new(),
            unknowns: Vec::new(),
            definitions: HashMap::new(),
        },
        host_tools: HashMap::new(),
    };
    for m in 0..index.modules.len() {
        f.tools_of(m);
    }
    for m in 0..index.modules.len() {
        f.agents_of(m);
        f.model_calls_of(m);
    }
    f.found
}

struct Finder<'i, 'w> {
    index: &'i Index<'w>,
    found: Found,
    /// Agent or server id → the tools its decorators made.
    host_tools: HashMap<String, Vec<String>>,
}

impl<'i> Finder<'i, '_> {
    fn at(&self, m: usize, node: &impl ruff_text_size::Ranged) -> Location {
        self.index.at(m, node)
    }

    fn source(&self, m: usize) -> &str {
        &self.index.modules[m].file.text
    }

    fn qualified(&self, m: usize, expr: &Expr) -> Option<String> {
        self.index.resolve(m, expr, &HashMap::new())
    }

    fn tools_of(&mut self, m: usize) {
        let Some(body) = self.index.modules[m].body() else {
            return;
        };
        let module = self.index.modules[m].file.module.clone();
        for (i, stmt) in body.iter().enumerate() {
            let def = DefRef { module: m, stmt: i };
            match stmt {
                Stmt::FunctionDef(func) => self.decorated(m, def, &module, func),
                Stmt::ClassDef(class) => self.tool_class(m, def, &module, class),
                Stmt::Assign(a) => {
                    let (Some(Expr::Name(target)), Expr::Call(call)) =
                        (a.targets.first(), &*a.value)
                    else {
                        continue;
                    };
                    let Some(callee) = self.qualified(m, &call.func) else {
                        continue;
                    };
                    let Some((_, framework)) = TOOL_FACTORIES.iter().find(|(q, _)| *q == callee)
                    else {
                        continue;
                    };
                    let func = keyword(call, "func").or_else(|| call.arguments.args.first());
                    let target_def = func.and_then(|e| self.index.def_at(m, e));
                    let id = format!("{module}:{}", target.id.as_str());
                    let func_stmt = target_def.and_then(|d| self.index.stmt(d));
                    let name = keyword(call, "name")
                        .and_then(literal_str)
                        .or_else(|| match func_stmt {
                            Some(Stmt::FunctionDef(f)) => Some(f.name.as_str().to_string()),
                            _ => None,
                        })
                        .unwrap_or_else(|| target.id.as_str().to_string());
                    let description =
                        keyword(call, "description")
                            .and_then(literal_str)
                            .or_else(|| match func_stmt {
                                Some(Stmt::FunctionDef(f)) => docstring(&f.body),
                                _ => None,
                            });
                    let parameters = match (func_stmt, target_def) {
                        (Some(Stmt::FunctionDef(f)), Some(d)) => {
                            parameters(self.source(d.module), f, 0)
                        }
                        _ => Vec::new(),
                    };
                    match target_def {
                        Some(d) => {
                            self.found
                                .definitions
                                .insert(id.clone(), ToolBody::Function(d));
                        }
                        None => self.found.unknowns.push(Unknown {
                            what: format!("the function of tool `{name}`"),
                            why: "its `func` is not a function defined in the code".into(),
                            at: self.at(m, call),
                        }),
                    }
                    self.push_tool(
                        id,
                        name,
                        framework,
                        description,
                        parameters,
                        self.at(m, stmt),
                    );
                }
                _ => {}
            }
        }
    }

    fn decorated(&mut self, m: usize, def: DefRef, module: &str, func: &StmtFunctionDef) {
        for d in &func.decorator_list {
            let (target, call) = match &d.expression {
                Expr::Call(c) => (&*c.func, Some(c)),
                other => (other, None),
            };
            let Some(q) = self.qualified(m, target) else {
                continue;
            };
            let id = format!("{module}:{}", func.name.as_str());
            let known = TOOL_DECORATORS.iter().find(|(name, _, _)| *name == q);
            let hosted = q.rsplit_once('.').and_then(|(host, method)| {
                let (_, framework, _) = TOOL_HOSTS.iter().find(|(class, _, _)| *class == host)?;
                matches!(method, "tool" | "tool_plain").then_some((framework, method))
            });
            let (framework, name_from_arg, skip) = match (known, hosted) {
                (Some((_, framework, by_arg)), _) => (*framework, *by_arg, 0),
                (None, Some((framework, method))) => {
                    // `@agent.tool` takes the run context first; `@agent.tool_plain` does not.
                    let skip = usize::from(*framework == "pydantic_ai" && method == "tool");
                    // Which object: the decorator's base, a top-level name.
                    let host = match target {
                        Expr::Attribute(a) => match &*a.value {
                            Expr::Name(n) => Some(format!("{module}:{}", n.id.as_str())),
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some(host) = host {
                        self.host_tools.entry(host).or_default().push(id.clone());
                    }
                    (*framework, false, skip)
                }
                _ => continue,
            };
            let name = call
                .and_then(|c| {
                    keyword(c, "name")
                        .or(keyword(c, "name_override"))
                        .or_else(|| name_from_arg.then(|| c.arguments.args.first()).flatten())
                })
                .and_then(literal_str)
                .unwrap_or_else(|| func.name.as_str().to_string());
            let description = call
                .and_then(|c| keyword(c, "description").or(keyword(c, "description_override")))
                .and_then(literal_str)
                .or_else(|| docstring(&func.body));
            let parameters = parameters(self.source(m), func, skip);
            self.found
                .definitions
                .insert(id.clone(), ToolBody::Function(def));
            self.push_tool(
                id,
                name,
                framework,
                description,
                parameters,
                self.at(m, func),
            );
            return;
        }
    }

    fn tool_class(&mut self, m: usize, def: DefRef, module: &str, class: &StmtClassDef) {
        let Some(args) = &class.arguments else { return };
        let framework = args.args.iter().find_map(|base| {
            let q = self.qualified(m, base)?;
            TOOL_CLASSES
                .iter()
                .find(|(name, _)| *name == q)
                .map(|(_, f)| *f)
        });
        let Some(framework) = framework else { return };
        let id = format!("{module}:{}", class.name.as_str());
        let mut name = None;
        let mut description = None;
        let mut run = None;
        for stmt in &class.body {
            match stmt {
                Stmt::Assign(a) => {
                    if let Some(Expr::Name(n)) = a.targets.first() {
                        match n.id.as_str() {
                            "name" => name = literal_str(&a.value),
                            "description" => description = literal_str(&a.value),
                            _ => {}
                        }
                    }
                }
                Stmt::AnnAssign(a) => {
                    if let (Expr::Name(n), Some(v)) = (&*a.target, &a.value) {
                        match n.id.as_str() {
                            "name" => name = literal_str(v),
                            "description" => description = literal_str(v),
                            _ => {}
                        }
                    }
                }
                Stmt::FunctionDef(f) if f.name.as_str() == "_run" => run = Some(f),
                Stmt::FunctionDef(f) if f.name.as_str() == "_arun" && run.is_none() => {
                    run = Some(f);
                }
                _ => {}
            }
        }
        let parameters = run.map_or_else(Vec::new, |f| parameters(self.source(m), f, 0));
        let method = match run.map(|f| f.name.as_str()) {
            Some("_arun") => "_arun",
            _ => "_run",
        };
        self.found
            .definitions
            .insert(id.clone(), ToolBody::Method(def, method));
        let name = name.unwrap_or_else(|| class.name.as_str().to_string());
        self.push_tool(
            id,
            name,
            framework,
            description,
            parameters,
            self.at(m, class),
        );
    }

    fn push_tool(
        &mut self,
        id: String,
        name: String,
        framework: &str,
        description: Option<String>,
        parameters: Vec<Parameter>,
        at: Location,
    ) {
        self.found.tools.push(Tool {
            id,
            name,
            framework: framework.to_string(),
            description,
            parameters,
            agents: Vec::new(),
            effects: Vec::new(),
            classification: "none".into(),
            reachable: false,
            at,
        });
    }

    /// The tool ids a `tools=[...]` expression names; what it cannot name is unknown.
    fn tool_list(&mut self, m: usize, expr: &Expr, owner: &str) -> Vec<String> {
        let elements = match self.list_of(m, expr) {
            Some(items) => items,
            None => {
                self.found.unknowns.push(Unknown {
                    what: format!("the tools of `{owner}`"),
                    why: format!(
                        "`{}` is not a list written in the code (built at run time?)",
                        snippet(source_of(self.source(m), expr))
                    ),
                    at: self.at(m, expr),
                });
                return Vec::new();
            }
        };
        let mut ids = Vec::new();
        for (em, e) in elements {
            // A tool class is listed as an instance: `SaveReport()`.
            let named = match e {
                Expr::Call(c) if c.arguments.is_empty() => &*c.func,
                other => other,
            };
            let id = self
                .index
                .def_at(em, named)
                .map(|d| self.index.id(d))
                .filter(|id| self.found.tools.iter().any(|t| &t.id == id));
            match id {
                Some(id) => ids.push(id),
                None => self.found.unknowns.push(Unknown {
                    what: format!("a tool of `{owner}`"),
                    why: format!(
                        "`{}` is not a tool defined in the code",
                        snippet(source_of(self.source(em), e))
                    ),
                    at: self.at(em, e),
                }),
            }
        }
        ids
    }

    /// The elements of a list literal, or of a name bound to one at the top of its module
    /// (`tools = [...]`, here or imported), with `a + b` of such lists joined; each with the
    /// module it is written in.
    fn list_of<'a>(&self, m: usize, expr: &'a Expr) -> Option<Vec<(usize, &'a Expr)>>
    where
        'i: 'a,
    {
        list_of(self.index, m, expr, 0)
    }
}

fn list_of<'a>(
    index: &'a Index<'_>,
    m: usize,
    expr: &'a Expr,
    hops: usize,
) -> Option<Vec<(usize, &'a Expr)>> {
    if hops > 8 {
        return None;
    }
    match expr {
        Expr::List(l) => Some(l.elts.iter().map(|e| (m, e)).collect()),
        Expr::Tuple(t) => Some(t.elts.iter().map(|e| (m, e)).collect()),
        Expr::BinOp(b) if b.op == ruff_python_ast::Operator::Add => {
            let mut left = list_of(index, m, &b.left, hops + 1)?;
            left.extend(list_of(index, m, &b.right, hops + 1)?);
            Some(left)
        }
        Expr::Name(_) | Expr::Attribute(_) => {
            let def = index.def_at(m, expr)?;
            match index.stmt(def)? {
                Stmt::Assign(a) => list_of(index, def.module, &a.value, hops + 1),
                Stmt::AnnAssign(a) => list_of(index, def.module, a.value.as_deref()?, hops + 1),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A short, one-line rendering of source text for a message.
pub fn snippet(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 80 {
        format!("{}…", one.chars().take(79).collect::<String>())
    } else {
        one
    }
}

/// A call's keyword argument.
pub fn keyword<'a>(call: &'a ExprCall, name: &str) -> Option<&'a Expr> {
    call.arguments
        .keywords
        .iter()
        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))
        .map(|k| &k.value)
}

/// A function's parameters (skipping `self`, `cls` and the first `skip`), typed from their
/// annotations as written.
fn parameters(source: &str, func: &StmtFunctionDef, skip: usize) -> Vec<Parameter> {
    let p = &func.parameters;
    let mut out = Vec::new();
    let mut skipped = 0;
    for param in p
        .posonlyargs
        .iter()
        .chain(p.args.iter())
        .chain(p.kwonlyargs.iter())
    {
        let name = param.parameter.name.as_str();
        if matches!(name, "self" | "cls") && out.is_empty() && skipped == 0 {
            continue;
        }
        if skipped < skip {
            skipped += 1;
            continue;
        }
        out.push(Parameter {
            name: name.to_string(),
            ty: param
                .parameter
                .annotation
                .as_deref()
                .map(|a| source_of(source, a).to_string()),
            required: param.default.is_none(),
        });
    }
    for (star, param) in [("*", &p.vararg), ("**", &p.kwarg)] {
        if let Some(param) = param {
            out.push(Parameter {
                name: format!("{star}{}", param.name.as_str()),
                ty: param
                    .annotation
                    .as_deref()
                    .map(|a| source_of(source, a).to_string()),
                required: false,
            });
        }
    }
    out
}

/// Every call in a statement, nested ones included, down to [`MAX_NESTING`]; what is nested
/// deeper is in `too_deep`, not read.
#[derive(Default)]
pub struct Calls<'a> {
    pub found: Vec<&'a ExprCall>,
    pub too_deep: Vec<&'a Expr>,
    depth: usize,
}

impl<'a> Visitor<'a> for Calls<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.depth >= MAX_NESTING {
            self.too_deep.push(expr);
            return;
        }
        if let Expr::Call(c) = expr {
            self.found.push(c);
        }
        self.depth += 1;
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}

mod agents;
