//! Agents (and graphs, crews, MCP servers, OpenAI conversations) and model calls.

use std::collections::HashMap;

use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{Expr, ExprCall, Stmt};

use super::{Calls, Finder, keyword, snippet};
use crate::cover::index::{literal_str, source_of};
use crate::cover::{Agent, ModelCall, Unknown};

/// Calls whose result is an agent: qualified name, framework, kind.
const AGENT_CALLS: &[(&str, &str, &str)] = &[
    ("agents.Agent", "openai_agents", "agent"),
    (
        "langgraph.prebuilt.create_react_agent",
        "langgraph",
        "agent",
    ),
    (
        "langgraph.prebuilt.chat_agent_executor.create_react_agent",
        "langgraph",
        "agent",
    ),
    ("langchain.agents.create_agent", "langgraph", "agent"),
    ("crewai.Agent", "crewai", "agent"),
    ("crewai.Crew", "crewai", "crew"),
    ("pydantic_ai.Agent", "pydantic_ai", "agent"),
    ("mcp.server.fastmcp.FastMCP", "mcp", "mcp_server"),
    ("fastmcp.FastMCP", "mcp", "mcp_server"),
];

/// A graph builder's nodes, edges and tools, as its calls add them.
type Graph = (Vec<String>, Vec<String>, Vec<String>);

/// LangGraph's graph builders.
const GRAPH_BUILDERS: &[&str] = &[
    "langgraph.graph.StateGraph()",
    "langgraph.graph.state.StateGraph()",
];

/// LangGraph's tool node.
const TOOL_NODES: &[&str] = &[
    "langgraph.prebuilt.ToolNode",
    "langgraph.prebuilt.tool_node.ToolNode",
];

/// Chat model classes and calls: qualified name (a prefix for methods of clients), provider,
/// the keyword naming the model.
const MODEL_APIS: &[(&str, &str, &str)] = &[
    ("openai.OpenAI().chat.completions.create", "openai", "model"),
    (
        "openai.AsyncOpenAI().chat.completions.create",
        "openai",
        "model",
    ),
    ("openai.OpenAI().responses.create", "openai", "model"),
    ("openai.AsyncOpenAI().responses.create", "openai", "model"),
    (
        "openai.AzureOpenAI().chat.completions.create",
        "azure",
        "model",
    ),
    (
        "anthropic.Anthropic().messages.create",
        "anthropic",
        "model",
    ),
    (
        "anthropic.AsyncAnthropic().messages.create",
        "anthropic",
        "model",
    ),
    ("langchain_openai.ChatOpenAI", "openai", "model"),
    ("langchain_openai.AzureChatOpenAI", "azure", "model"),
    ("langchain_anthropic.ChatAnthropic", "anthropic", "model"),
    (
        "langchain_google_genai.ChatGoogleGenerativeAI",
        "google",
        "model",
    ),
    ("langchain_mistralai.ChatMistralAI", "mistral", "model"),
    ("langchain_ollama.ChatOllama", "ollama", "model"),
    ("langchain.chat_models.init_chat_model", "", "model"),
    ("litellm.completion", "", "model"),
    ("litellm.acompletion", "", "model"),
    ("crewai.LLM", "", "model"),
];

impl Finder<'_, '_> {
    pub(super) fn agents_of(&mut self, m: usize) {
        let Some(body) = self.index.modules[m].body() else {
            return;
        };
        let module = self.index.modules[m].file.module.clone();
        // Graph builders first: their nodes and edges are module-level calls.
        let mut graphs: HashMap<String, Graph> = HashMap::new();
        for stmt in body {
            let Stmt::Expr(e) = stmt else { continue };
            let Expr::Call(call) = &*e.value else {
                continue;
            };
            let Expr::Attribute(method) = &*call.func else {
                continue;
            };
            let Expr::Name(builder) = &*method.value else {
                continue;
            };
            let Some(q) = self.qualified(m, &method.value) else {
                continue;
            };
            if !GRAPH_BUILDERS.contains(&q.as_str()) {
                continue;
            }
            let entry = graphs.entry(builder.id.as_str().to_string()).or_default();
            let args: Vec<String> = call
                .arguments
                .args
                .iter()
                .map(|a| node_name(self, m, a))
                .collect();
            match method.attr.as_str() {
                "add_node" => {
                    if let Some(first) = args.first() {
                        entry.0.push(first.clone());
                    }
                    let value = call.arguments.args.get(1).or(call.arguments.args.first());
                    if let Some(Expr::Call(node)) = value
                        && self
                            .qualified(m, &node.func)
                            .is_some_and(|q| TOOL_NODES.contains(&q.as_str()))
                        && let Some(list) = node.arguments.args.first()
                    {
                        let tools = self.tool_list(m, list, &format!("{module}:{}", builder.id));
                        entry.2.extend(tools);
                    }
                    if let Some(Expr::Name(n)) = value
                        && let Some(tools) = self.tool_node_tools(m, n.id.as_str(), &module)
                    {
                        entry.2.extend(tools);
                    }
                }
                "add_edge" if args.len() == 2 => {
                    entry.1.push(format!("{} -> {}", args[0], args[1]))
                }
                "add_conditional_edges" if !args.is_empty() => {
                    let to = args.get(1).cloned().unwrap_or_else(|| "?".into());
                    entry.1.push(format!("{} -> {to}?", args[0]));
                }
                "set_entry_point" if args.len() == 1 => {
                    entry.1.push(format!("__start__ -> {}", args[0]))
                }
                "set_finish_point" if args.len() == 1 => {
                    entry.1.push(format!("{} -> __end__", args[0]))
                }
                _ => {}
            }
        }
        for stmt in body {
            let Stmt::Assign(a) = stmt else { continue };
            let (Some(Expr::Name(target)), Expr::Call(call)) = (a.targets.first(), &*a.value)
            else {
                continue;
            };
            let id = format!("{module}:{}", target.id.as_str());
            let Some(callee) = self.qualified(m, &call.func) else {
                continue;
            };
            // `graph = builder.compile()`
            if let Some(builder) = callee.strip_suffix(".compile")
                && GRAPH_BUILDERS.contains(&builder)
                && let Expr::Attribute(attr) = &*call.func
                && let Expr::Name(b) = &*attr.value
            {
                let (nodes, edges, tools) = graphs.remove(b.id.as_str()).unwrap_or_default();
                self.found.agents.push(Agent {
                    id,
                    name: None,
                    framework: "langgraph".into(),
                    kind: "graph".into(),
                    model: None,
                    tools,
                    handoffs: Vec::new(),
                    nodes,
                    edges,
                    reachable: false,
                    at: self.at(m, stmt),
                });
                continue;
            }
            let Some((_, framework, kind)) = AGENT_CALLS.iter().find(|(q, _, _)| *q == callee)
            else {
                continue;
            };
            self.agent(m, id, framework, kind, call, stmt);
        }
        self.conversations(m);
    }

    fn agent(
        &mut self,
        m: usize,
        id: String,
        framework: &str,
        kind: &str,
        call: &ExprCall,
        stmt: &Stmt,
    ) {
        let first = call.arguments.args.first();
        let name = match framework {
            "crewai" => keyword(call, "role").and_then(literal_str),
            "mcp" => first
                .and_then(literal_str)
                .or(keyword(call, "name").and_then(literal_str)),
            _ => keyword(call, "name").and_then(literal_str),
        };
        let model_expr = match framework {
            "crewai" => keyword(call, "llm"),
            "pydantic_ai" | "langgraph" => keyword(call, "model").or(first),
            _ => keyword(call, "model"),
        };
        let model = model_expr.and_then(|e| self.model_of(m, e));
        if let Some(model) = &model {
            self.found.model_calls.push(ModelCall {
                provider: provider_of(model, ""),
                model: Some(model.clone()),
                api: format!("{framework} {kind}"),
                at: self.at(m, call),
            });
        }
        let tools_expr = match framework {
            "langgraph" => keyword(call, "tools").or(call.arguments.args.get(1)),
            _ => keyword(call, "tools"),
        };
        let mut tools = tools_expr.map_or_else(Vec::new, |e| self.tool_list(m, e, &id));
        tools.extend(self.host_tools.get(&id).cloned().unwrap_or_default());
        let mut handoffs = Vec::new();
        for key in ["handoffs", "agents"] {
            let Some(list) = keyword(call, key) else {
                continue;
            };
            let Some(items) = self.list_of(m, list) else {
                continue;
            };
            for (im, item) in items {
                // `handoff(agent, ...)` or the agent itself.
                let target = match item {
                    Expr::Call(c) => c.arguments.args.first().or(keyword(c, "agent")),
                    other => Some(other),
                };
                let resolved = target
                    .and_then(|t| self.index.def_at(im, t))
                    .map(|d| self.index.id(d));
                match resolved {
                    Some(h) => handoffs.push(h),
                    None => self.found.unknowns.push(Unknown {
                        what: format!("a handoff of `{id}`"),
                        why: format!(
                            "`{}` is not an agent defined in the code",
                            snippet(source_of(self.source(im), item))
                        ),
                        at: self.at(im, item),
                    }),
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        handoffs.retain(|h| seen.insert(h.clone()));
        if let Some(servers) = keyword(call, "mcp_servers") {
            self.found.unknowns.push(Unknown {
                what: format!("the tools of the MCP servers of `{id}`"),
                why: format!(
                    "`{}` lists its tools at run time; put it behind `tollgate mcp proxy` to decide each call",
                    snippet(source_of(self.source(m), servers))
                ),
                at: self.at(m, servers),
            });
        }
        self.found.agents.push(Agent {
            id,
            name,
            framework: framework.to_string(),
            kind: kind.to_string(),
            model,
            tools,
            handoffs,
            nodes: Vec::new(),
            edges: Vec::new(),
            reachable: false,
            at: self.at(m, stmt),
        });
    }

    /// The tools of a top-level `name = ToolNode([...])`.
    fn tool_node_tools(&mut self, m: usize, name: &str, module: &str) -> Option<Vec<String>> {
        let index = self.index;
        let module_ref = &index.modules[m];
        let stmt = module_ref.body()?.get(*module_ref.defs.get(name)?)?;
        let Stmt::Assign(a) = stmt else { return None };
        let Expr::Call(c) = &*a.value else {
            return None;
        };
        let q = self.qualified(m, &c.func)?;
        if !TOOL_NODES.contains(&q.as_str()) {
            return None;
        }
        let list = c.arguments.args.first().or(keyword(c, "tools"))?;
        Some(self.tool_list(m, list, &format!("{module}:{name}")))
    }

    /// A model named by a literal, or by a chat model made by a literal (`ChatOpenAI(model=...)`).
    fn model_of(&self, m: usize, expr: &Expr) -> Option<String> {
        if let Some(s) = literal_str(expr) {
            return Some(s);
        }
        let call = match expr {
            Expr::Call(c) => c,
            Expr::Name(n) => {
                let module = &self.index.modules[m];
                match module.body()?.get(*module.defs.get(n.id.as_str())?)? {
                    Stmt::Assign(a) => match &*a.value {
                        Expr::Call(c) => c,
                        other => return literal_str(other),
                    },
                    _ => return None,
                }
            }
            _ => return None,
        };
        keyword(call, "model")
            .or(keyword(call, "model_name"))
            .or(call.arguments.args.first())
            .and_then(literal_str)
    }

    /// Model calls and chat models made anywhere in the module.
    pub(super) fn model_calls_of(&mut self, m: usize) {
        let Some(body) = self.index.modules[m].body() else {
            return;
        };
        for stmt in body {
            let mut calls = Calls::default();
            calls.visit_stmt(stmt);
            for call in calls.found {
                let locals = locals_for(self, m, stmt);
                let Some(q) = self.index.resolve(m, &call.func, &locals) else {
                    continue;
                };
                let Some((api, provider, key)) = MODEL_APIS.iter().find(|(api, _, _)| *api == q)
                else {
                    continue;
                };
                let model = keyword(call, key)
                    .or(if api.contains('(') {
                        None
                    } else {
                        call.arguments.args.first()
                    })
                    .and_then(literal_str);
                self.found.model_calls.push(ModelCall {
                    provider: model.as_deref().map_or_else(
                        || {
                            if provider.is_empty() {
                                "unknown".into()
                            } else {
                                provider.to_string()
                            }
                        },
                        |md| provider_of(md, provider),
                    ),
                    model,
                    api: api.replace("()", ""),
                    at: self.at(m, call),
                });
            }
        }
    }

    /// OpenAI client conversations with tools: a function calling `chat.completions.create`
    /// with `tools=` and dispatching to the code's functions through a dict of them.
    fn conversations(&mut self, m: usize) {
        let Some(body) = self.index.modules[m].body() else {
            return;
        };
        let module = self.index.modules[m].file.module.clone();
        for stmt in body {
            let Stmt::FunctionDef(func) = stmt else {
                continue;
            };
            let mut calls = Calls::default();
            calls.visit_stmt(stmt);
            let locals = locals_for(self, m, stmt);
            let Some(tools_expr) = calls.found.iter().find_map(|c| {
                let q = self.index.resolve(m, &c.func, &locals)?;
                (q.starts_with("openai.") && q.ends_with(".create")).then(|| keyword(c, "tools"))?
            }) else {
                continue;
            };
            let id = format!("{module}:{}", func.name.as_str());
            let names = self.schema_names(m, tools_expr);
            let table = self.dispatch_table(m);
            let mut tools = Vec::new();
            for name in &names {
                match table.get(name) {
                    Some(def) => {
                        let tool_id = self.index.id(*def);
                        if !self.found.tools.iter().any(|t| t.id == tool_id)
                            && let Some(Stmt::FunctionDef(f)) = self.index.stmt(*def)
                        {
                            let description = docstring(&f.body);
                            let params = super::parameters(self.source(def.module), f, 0);
                            let at = self.at(def.module, f);
                            self.found
                                .definitions
                                .insert(tool_id.clone(), super::ToolBody::Function(*def));
                            self.push_tool(
                                tool_id.clone(),
                                name.clone(),
                                "openai",
                                description,
                                params,
                                at,
                            );
                        }
                        tools.push(tool_id);
                    }
                    None => self.found.unknowns.push(Unknown {
                        what: format!("the function behind tool `{name}` of `{id}`"),
                        why: "no dict of the module maps this name to a function of the code"
                            .into(),
                        at: self.at(m, tools_expr),
                    }),
                }
            }
            self.found.agents.push(Agent {
                id,
                name: None,
                framework: "openai".into(),
                kind: "conversation".into(),
                model: None,
                tools,
                handoffs: Vec::new(),
                nodes: Vec::new(),
                edges: Vec::new(),
                reachable: false,
                at: self.at(m, func),
            });
        }
    }

    /// The function names of `tools=[{"type": "function", "function": {"name": ...}}]`.
    fn schema_names(&mut self, m: usize, expr: &Expr) -> Vec<String> {
        let Some(items) = self.list_of(m, expr) else {
            self.found.unknowns.push(Unknown {
                what: "the tool schemas of an OpenAI call".into(),
                why: format!(
                    "`{}` is not a list written in the code",
                    snippet(source_of(self.source(m), expr))
                ),
                at: self.at(m, expr),
            });
            return Vec::new();
        };
        let mut names = Vec::new();
        for (_, item) in items {
            let Expr::Dict(d) = item else { continue };
            let function = d
                .items
                .iter()
                .find(|i| i.key.as_ref().and_then(literal_str).as_deref() == Some("function"));
            let name_in = |dict: &ruff_python_ast::ExprDict| {
                dict.items
                    .iter()
                    .find(|i| i.key.as_ref().and_then(literal_str).as_deref() == Some("name"))
                    .and_then(|i| literal_str(&i.value))
            };
            let name = match function.map(|f| &f.value) {
                Some(Expr::Dict(inner)) => name_in(inner),
                _ => name_in(d),
            };
            if let Some(name) = name {
                names.push(name);
            }
        }
        names
    }

    /// Dicts of the module (top level or in functions) mapping literal names to functions of
    /// the code.
    fn dispatch_table(&self, m: usize) -> HashMap<String, crate::cover::index::DefRef> {
        let mut table = HashMap::new();
        let Some(body) = self.index.modules[m].body() else {
            return table;
        };
        let mut dicts = Dicts::default();
        for stmt in body {
            dicts.visit_stmt(stmt);
        }
        for d in dicts.found {
            for item in &d.items {
                let (Some(key), value) = (item.key.as_ref().and_then(literal_str), &item.value)
                else {
                    continue;
                };
                if let Some(def) = self.index.def_at(m, value)
                    && matches!(self.index.stmt(def), Some(Stmt::FunctionDef(_)))
                {
                    table.insert(key, def);
                }
            }
        }
        table
    }
}

use crate::cover::index::docstring;

#[derive(Default)]
struct Dicts<'a> {
    found: Vec<&'a ruff_python_ast::ExprDict>,
    depth: usize,
}

impl<'a> Visitor<'a> for Dicts<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.depth >= crate::cover::index::MAX_NESTING {
            return;
        }
        if let Expr::Dict(d) = expr {
            self.found.push(d);
        }
        self.depth += 1;
        ruff_python_ast::visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}

/// A graph node's name: a literal, `START`/`END`, or a function's name.
fn node_name(f: &Finder<'_, '_>, m: usize, e: &Expr) -> String {
    if let Some(s) = literal_str(e) {
        return s;
    }
    match f.qualified(m, e).as_deref() {
        Some("langgraph.graph.START") => "__start__".into(),
        Some("langgraph.graph.END") => "__end__".into(),
        _ => match e {
            Expr::Name(n) => n.id.as_str().to_string(),
            other => source_of(f.source(m), other).to_string(),
        },
    }
}

/// The bindings of a function for resolution: `x = call(...)` and `with call(...) as x`.
pub fn locals_for(f: &Finder<'_, '_>, m: usize, stmt: &Stmt) -> HashMap<String, String> {
    match stmt {
        Stmt::FunctionDef(func) => crate::cover::effects::bindings(f.index, m, func),
        _ => HashMap::new(),
    }
}

/// The provider of a model name: a `provider:` or `provider/` prefix, else its family.
pub fn provider_of(model: &str, default: &str) -> String {
    if let Some((p, _)) = model.split_once([':', '/'])
        && !p.is_empty()
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return p.to_string();
    }
    let m = model.to_ascii_lowercase();
    let family = if m.starts_with("gpt")
        || m.starts_with("o1")
        || m.starts_with("o3")
        || m.starts_with("o4")
        || m.starts_with("chatgpt")
    {
        "openai"
    } else if m.starts_with("claude") {
        "anthropic"
    } else if m.starts_with("gemini") {
        "google"
    } else if m.starts_with("mistral") || m.starts_with("codestral") {
        "mistral"
    } else if !default.is_empty() {
        default
    } else {
        "unknown"
    };
    family.to_string()
}
