//! Checks one envelope document against the format, one diagnostic per problem, and builds
//! the normalised JSON that the serde types then read (nulls dropped, so `tools:` left empty
//! is an empty list).
//!
//! Cross-envelope checks (duplicate ids, unknown parents, cycles) are in `load.rs`.

use serde_json::{Map, Value as Json};
use tollgate_engine::Diagnostic;
use tollgate_engine::ast::Span;
use tollgate_engine::diag::codes;

use super::format::{DataEffect, Level, PolicyEnvelope, RuleEffect, Section, ToolEffect};
use super::yaml::Node;

pub(crate) mod values;

pub(crate) use values::closest;
use values::{Fields, is_json_pointer};

/// An envelope that passed the checks, with the spans later checks point at.
#[derive(Debug)]
pub(crate) struct CheckedEnvelope {
    pub envelope: PolicyEnvelope,
    pub spans: EnvelopeSpans,
}

/// Where the parts of an envelope were written.
#[derive(Debug, Clone)]
pub(crate) struct EnvelopeSpans {
    /// The `id` value.
    pub id: Span,
    /// Each entry of `extends`, in order.
    pub extends: Vec<Span>,
    /// Each rule's local id with the span of its `id` (or of the whole rule when it has none).
    pub rules: Vec<(String, Span)>,
}

/// The keys one kind of mapping accepts, for unknown-key errors.
pub(super) struct Shape {
    /// `an envelope`, `a tool rule`...
    pub(super) what: &'static str,
    pub(super) keys: &'static [&'static str],
    /// A one-line example, for help lines.
    pub(super) example: &'static str,
}

pub(super) const ENVELOPE: Shape = Shape {
    what: "an envelope",
    keys: &[
        "id",
        "version",
        "description",
        "extends",
        "attach",
        "max_clearance",
        "tools",
        "data",
        "models",
        "memory",
        "approvals",
        "tool_levels",
        "extensions",
    ],
    example: "{id: coding-agent, version: 1, tools: [...]}",
};

pub(super) const ATTACH: Shape = Shape {
    what: "`attach`",
    keys: &["runs", "agents", "tasks"],
    example: "attach: {agents: [coder], tasks: [T-12]}",
};

pub(super) const TOOL_RULE: Shape = Shape {
    what: "a tool rule",
    keys: &[
        "id",
        "effect",
        "tools",
        "args",
        "only_named_args",
        "limit",
        "description",
    ],
    example: "- {id: read-only, effect: allow, tools: [\"fs.read*\"]}",
};

pub(super) const LIMIT: Shape = Shape {
    what: "a rate limit",
    keys: &["count", "window_seconds", "per"],
    example: "limit: {count: 10, window_seconds: 60, per: run}",
};

pub(super) const DATA_RULE: Shape = Shape {
    what: "a data rule",
    keys: &[
        "id",
        "effect",
        "scopes",
        "max_sensitivity",
        "kinds",
        "labels",
        "description",
    ],
    example: "- {id: secrets, effect: redact, labels: [secret]}",
};

pub(super) const MODEL_RULE: Shape = Shape {
    what: "a model rule",
    keys: &[
        "id",
        "effect",
        "provider",
        "model",
        "reasoning",
        "description",
    ],
    example: "- {effect: allow, provider: openai, model: gpt-4.1-mini}",
};

pub(super) const MEMORY_RULE: Shape = Shape {
    what: "a memory rule",
    keys: &["id", "effect", "classes", "description"],
    example: "- {effect: allow, classes: [fact, procedure]}",
};

pub(super) const APPROVAL_RULE: Shape = Shape {
    what: "an approval rule",
    keys: &["id", "tools", "approvers", "ttl_seconds", "description"],
    example: "- {tools: [\"shell.*\"], approvers: [lead], ttl_seconds: 3600}",
};

pub(super) const TOOL_LEVEL_RULE: Shape = Shape {
    what: "a tool level rule",
    keys: &["id", "tools", "level", "description"],
    example: "- {id: secret-store, tools: [\"secrets.*\"], level: secret}",
};

pub(super) struct Checker<'d> {
    pub(super) diags: &'d mut Vec<Diagnostic>,
}

/// Checks one document. Problems go to `diags`; `None` when there was any.
pub(crate) fn check_document(doc: &Node, diags: &mut Vec<Diagnostic>) -> Option<CheckedEnvelope> {
    let before = diags.len();
    let mut cx = Checker { diags };
    let built = cx.envelope(doc);
    if cx.diags.len() > before {
        return None;
    }
    let (json, spans) = built?;
    match serde_json::from_value::<PolicyEnvelope>(json) {
        Ok(envelope) => Some(CheckedEnvelope { envelope, spans }),
        Err(e) => {
            // The checks above accept exactly what the serde types read; this is a bug.
            cx.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_INVALID,
                    format!("the envelope does not fit its format: {e}"),
                    doc.span,
                )
                .with_help("report this: the envelope passed every check but could not be read"),
            );
            None
        }
    }
}

impl Checker<'_> {
    fn envelope(&mut self, doc: &Node) -> Option<(Json, EnvelopeSpans)> {
        let fields = self.fields(doc, &ENVELOPE)?;
        let mut out = Map::new();
        let mut spans = EnvelopeSpans {
            id: doc.span,
            extends: Vec::new(),
            rules: Vec::new(),
        };
        let id = self
            .require(&fields, "id", &ENVELOPE, "add `id: my-envelope`")
            .and_then(|n| {
                spans.id = n.span;
                self.id(n, "`id`")
            });
        let version = self
            .require(
                &fields,
                "version",
                &ENVELOPE,
                "add `version: 1` (raise it whenever the envelope changes)",
            )
            .and_then(|n| self.integer(n, "`version`", 1, "version: 1"));
        if let (Some(id), Some(version)) = (id, version) {
            out.insert("id".into(), Json::String(id));
            out.insert("version".into(), Json::from(version));
        }
        if let Some(n) = fields.get("description")
            && let Some(t) = self.text(n, "`description`")
        {
            out.insert("description".into(), Json::String(t));
        }
        if let Some(n) = fields.get("extends")
            && let Some(items) = self.list(n, "`extends`", "extends: [org-baseline]")
        {
            let mut ids = Vec::new();
            for item in items {
                spans.extends.push(item.span);
                if let Some(id) = self.id(item, "an entry of `extends`") {
                    ids.push(Json::String(id));
                }
            }
            out.insert("extends".into(), Json::Array(ids));
        }
        if let Some(n) = fields.get("attach")
            && let Some(a) = self.attach(n)
        {
            out.insert("attach".into(), a);
        }
        if let Some(n) = fields.get("max_clearance")
            && let Some(l) = self.level(n)
        {
            out.insert("max_clearance".into(), Json::String(l.into()));
        }
        for section in Section::ALL {
            let key = section.key();
            let Some(n) = fields.get(key) else { continue };
            let shape = shape_of(section);
            let Some(items) = self.list(n, &format!("`{key}`"), shape.example) else {
                continue;
            };
            let mut rules = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let local = super::format::local_rule_id(section, i);
                if let Some((rule, id_span)) = self.rule(section, item) {
                    let local = rule
                        .get("id")
                        .and_then(Json::as_str)
                        .map_or(local, str::to_string);
                    spans.rules.push((local, id_span));
                    rules.push(rule);
                }
            }
            out.insert(key.into(), Json::Array(rules));
        }
        if let Some(n) = fields.get("extensions") {
            if let Some(map) = n.as_map() {
                let mut ext = Map::new();
                for (k, v) in map {
                    if k.name.is_empty() {
                        self.diags.push(
                            Diagnostic::error(
                                codes::ENVELOPE_TYPE,
                                "extension keys must not be empty",
                                k.span,
                            )
                            .with_help("name the extension field: `extensions: {ticket: JIRA-1}`"),
                        );
                    } else {
                        ext.insert(k.name.clone(), v.to_json());
                    }
                }
                out.insert("extensions".into(), Json::Object(ext));
            } else {
                self.wrong_type(
                    n,
                    "`extensions`",
                    "a mapping",
                    "write extension fields as a mapping: `extensions: {ticket_system: jira}`",
                );
            }
        }
        Some((Json::Object(out), spans))
    }

    fn attach(&mut self, node: &Node) -> Option<Json> {
        let fields = self.fields(node, &ATTACH)?;
        let mut out = Map::new();
        for key in ATTACH.keys {
            if let Some(n) = fields.get(key) {
                let what = format!("`attach.{key}`");
                if let Some(ids) = self.ids(n, &what) {
                    out.insert((*key).into(), ids);
                }
            }
        }
        Some(Json::Object(out))
    }

    /// One rule of a section: its normalised JSON and the span its id is reported at.
    fn rule(&mut self, section: Section, node: &Node) -> Option<(Json, Span)> {
        let shape = shape_of(section);
        let fields = self.fields(node, shape)?;
        let mut out = Map::new();
        let mut id_span = node.span;
        if let Some(n) = fields.get("id") {
            id_span = n.span;
            if let Some(id) = self.id(n, "a rule `id`") {
                out.insert("id".into(), Json::String(id));
            }
        }
        if let Some(n) = fields.get("description")
            && let Some(t) = self.text(n, "`description`")
        {
            out.insert("description".into(), Json::String(t));
        }
        match section {
            Section::Tools => self.tool_rule(&fields, &mut out),
            Section::Data => self.data_rule(&fields, &mut out),
            Section::Models => self.model_rule(&fields, &mut out),
            Section::Memory => self.memory_rule(&fields, &mut out),
            Section::Approvals => self.approval_rule(&fields, &mut out),
            Section::ToolLevels => self.tool_level_rule(&fields, &mut out),
        }
        Some((Json::Object(out), id_span))
    }

    fn tool_rule(&mut self, fields: &Fields<'_>, out: &mut Map<String, Json>) {
        let options: Vec<&str> = ToolEffect::ALL.iter().map(|e| e.as_str()).collect();
        let effect = self
            .require(
                fields,
                "effect",
                &TOOL_RULE,
                "add `effect: allow` (or deny, require_approval, rate_limit)",
            )
            .and_then(|n| self.effect(n, "tool", &options));
        if let Some(e) = effect {
            out.insert("effect".into(), Json::String(e.into()));
        }
        if let Some(n) = self.require(fields, "tools", &TOOL_RULE, "add `tools: [\"fs.read*\"]`")
            && let Some(g) = self.globs(n, "`tools`")
        {
            out.insert("tools".into(), g);
        }
        if let Some(n) = fields.get("args")
            && let Some(args) = self.args(n)
        {
            out.insert("args".into(), args);
        }
        if let Some(n) = fields.get("only_named_args")
            && let Some(closed) = self.boolean(n, "`only_named_args`", "only_named_args: true")
        {
            out.insert("only_named_args".into(), Json::Bool(closed));
            // Closing narrows a rule: a `deny` or `rate_limit` one would let a call escape it by
            // carrying one more argument.
            if let (true, Some(e @ ("deny" | "rate_limit"))) = (closed, effect) {
                self.diags.push(
                    Diagnostic::error(
                        codes::ENVELOPE_CLOSED_DENIAL,
                        format!(
                            "`only_named_args` narrows `allow` and `require_approval` rules, not `{e}`"
                        ),
                        n.span,
                    )
                    .with_label("a call would escape this rule by carrying one more argument")
                    .with_help(format!(
                        "remove `only_named_args`: a `{e}` rule applies whatever else the call carries"
                    )),
                );
            }
        }
        let limit = fields.get("limit");
        if let Some(n) = limit
            && let Some(l) = self.limit(n)
        {
            out.insert("limit".into(), l);
        }
        match (effect, limit, fields.get("effect")) {
            (Some("rate_limit"), None, Some(effect_node)) => self.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_MISSING_LIMIT,
                    "a `rate_limit` tool rule needs a `limit`",
                    effect_node.span,
                )
                .with_label("no `limit` given for this rule")
                .with_help("add `limit: {count: 10, window_seconds: 60, per: run}`"),
            ),
            (Some(e), Some(_), _) if e != "rate_limit" => {
                let span = fields.key("limit").map_or(fields.node.span, |k| k.span);
                self.diags.push(
                    Diagnostic::error(
                        codes::ENVELOPE_UNUSED_LIMIT,
                        format!("`limit` only applies to `effect: rate_limit`, not `{e}`"),
                        span,
                    )
                    .with_label("ignored by this rule")
                    .with_help("remove `limit`, or set `effect: rate_limit`"),
                );
            }
            _ => {}
        }
    }

    fn args(&mut self, node: &Node) -> Option<Json> {
        let Some(entries) = node.as_map() else {
            self.wrong_type(
                node,
                "`args`",
                "a mapping",
                "map JSON pointers to globs: `args: {/path: \"src/**\"}`",
            );
            return None;
        };
        let mut out = Map::new();
        for (k, v) in entries {
            if !is_json_pointer(&k.name) {
                self.diags.push(
                    Diagnostic::error(
                        codes::ENVELOPE_BAD_POINTER,
                        format!("`{}` is not a JSON pointer", k.name),
                        k.span,
                    )
                    .with_label("expected `/` then the argument's key")
                    .with_help(format!(
                        "write `/{}`: a JSON pointer starts with `/`; `/opts/force` names a nested key, `/files/0` a list item, `~1` a `/` and `~0` a `~` inside a key",
                        k.name.trim_start_matches('/')
                    )),
                );
                continue;
            }
            if let Some(entries) = v.as_map() {
                if let Some(kinded) = self.kinded_arg(&k.name, v, entries) {
                    out.insert(k.name.clone(), kinded);
                }
                continue;
            }
            if let Some(g) = self.glob(v, &format!("the pattern of `{}`", k.name)) {
                if let Some(Err(why)) = super::UrlPattern::parse(&g) {
                    self.diags.push(
                        Diagnostic::error(
                            codes::ENVELOPE_URL_PATTERN,
                            format!("`{g}` is not a URL pattern Tollgate can match by its parts: {why}"),
                            v.span,
                        )
                        .with_label("invalid URL pattern")
                        .with_help("a URL argument is matched by its parsed scheme, host, port and path: write `https://*.example.com/**` or `https://docs.acme.dev/guide/**`"),
                    );
                    continue;
                }
                out.insert(k.name.clone(), Json::String(g));
            }
        }
        Some(Json::Object(out))
    }

    /// `{text: P}`, `{path: P}` or `{url: P}`: a pattern with the kind it reads its argument
    /// as (issue 32, hole 5).
    fn kinded_arg(
        &mut self,
        pointer: &str,
        node: &Node,
        entries: &[(super::yaml::Key, Node)],
    ) -> Option<Json> {
        let help = "write `{text: \"*rm -rf*\"}` (`*` crosses `/`), `{path: \"src/**\"}` (`*` stays within a segment) or `{url: \"https://*.example.com/**\"}` (by the parsed host and path)";
        let [(kind_key, pattern_node)] = entries else {
            self.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_ARG_KIND,
                    format!("the pattern of `{pointer}` names one kind"),
                    node.span,
                )
                .with_label("one of text, path or url")
                .with_help(help),
            );
            return None;
        };
        let Some(kind) = super::ArgKind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind_key.name)
        else {
            self.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_ARG_KIND,
                    format!("`{}` is not a kind of argument", kind_key.name),
                    kind_key.span,
                )
                .with_label("not text, path or url")
                .with_help(help),
            );
            return None;
        };
        let pattern = self.glob(pattern_node, &format!("the pattern of `{pointer}`"))?;
        if kind == super::ArgKind::Url {
            let why = match super::UrlPattern::parse(&pattern) {
                Some(Ok(_)) => None,
                Some(Err(why)) => Some(why),
                None => Some("it names no scheme (`https://`)".to_string()),
            };
            if let Some(why) = why {
                self.diags.push(
                    Diagnostic::error(
                        codes::ENVELOPE_URL_PATTERN,
                        format!("`{pattern}` is not a URL pattern Tollgate can match by its parts: {why}"),
                        pattern_node.span,
                    )
                    .with_label("invalid URL pattern")
                    .with_help("write `{url: \"https://*.example.com/**\"}`"),
                );
                return None;
            }
        }
        if kind == super::ArgKind::Text
            && let Err(e) = tollgate_engine::functions::compile_regex(&super::text_regex(&pattern))
        {
            self.diags.push(
                Diagnostic::error(
                    codes::ENVELOPE_GLOB,
                    format!("`{pattern}` does not read as a text pattern: {e}"),
                    pattern_node.span,
                )
                .with_label("invalid pattern")
                .with_help(help),
            );
            return None;
        }
        let mut map = Map::new();
        map.insert(kind.as_str().to_string(), Json::String(pattern));
        Some(Json::Object(map))
    }

    fn limit(&mut self, node: &Node) -> Option<Json> {
        let fields = self.fields(node, &LIMIT)?;
        let mut out = Map::new();
        let count = self
            .require(
                &fields,
                "count",
                &LIMIT,
                "add `count: 10` (calls per window)",
            )
            .and_then(|n| self.integer(n, "`count`", 1, "count: 10"));
        let window = self
            .require(
                &fields,
                "window_seconds",
                &LIMIT,
                "add `window_seconds: 60`",
            )
            .and_then(|n| self.integer(n, "`window_seconds`", 1, "window_seconds: 60"));
        if let (Some(c), Some(w)) = (count, window) {
            out.insert("count".into(), Json::from(c));
            out.insert("window_seconds".into(), Json::from(w));
        }
        if let Some(n) = fields.get("per")
            && let Some(p) = self.choice(
                n,
                codes::ENVELOPE_UNKNOWN_VALUE,
                "rate limit scope",
                &["run", "agent", "task"],
            )
        {
            out.insert("per".into(), Json::String(p.into()));
        }
        Some(Json::Object(out))
    }

    fn data_rule(&mut self, fields: &Fields<'_>, out: &mut Map<String, Json>) {
        let options: Vec<&str> = DataEffect::ALL.iter().map(|e| e.as_str()).collect();
        if let Some(e) = self
            .require(
                fields,
                "effect",
                &DATA_RULE,
                "add `effect: see` (or redact, block)",
            )
            .and_then(|n| self.effect(n, "data", &options))
        {
            out.insert("effect".into(), Json::String(e.into()));
        }
        if let Some(n) = fields.get("scopes")
            && let Some(g) = self.globs(n, "`scopes`")
        {
            out.insert("scopes".into(), g);
        }
        if let Some(n) = fields.get("max_sensitivity")
            && let Some(l) = self.level(n)
        {
            out.insert("max_sensitivity".into(), Json::String(l.into()));
        }
        if let Some(n) = fields.get("kinds")
            && let Some(g) = self.globs(n, "`kinds`")
        {
            out.insert("kinds".into(), g);
        }
        if let Some(n) = fields.get("labels")
            && let Some(l) = self.texts(n, "`labels`")
        {
            out.insert("labels".into(), l);
        }
    }

    fn model_rule(&mut self, fields: &Fields<'_>, out: &mut Map<String, Json>) {
        let options: Vec<&str> = RuleEffect::ALL.iter().map(|e| e.as_str()).collect();
        if let Some(e) = self
            .require(
                fields,
                "effect",
                &MODEL_RULE,
                "add `effect: allow` (or deny)",
            )
            .and_then(|n| self.effect(n, "model", &options))
        {
            out.insert("effect".into(), Json::String(e.into()));
        }
        for key in ["provider", "model", "reasoning"] {
            if let Some(n) = fields.get(key)
                && let Some(g) = self.glob(n, &format!("`{key}`"))
            {
                out.insert(key.into(), Json::String(g));
            }
        }
    }

    fn memory_rule(&mut self, fields: &Fields<'_>, out: &mut Map<String, Json>) {
        let options: Vec<&str> = RuleEffect::ALL.iter().map(|e| e.as_str()).collect();
        if let Some(e) = self
            .require(
                fields,
                "effect",
                &MEMORY_RULE,
                "add `effect: allow` (or deny)",
            )
            .and_then(|n| self.effect(n, "memory", &options))
        {
            out.insert("effect".into(), Json::String(e.into()));
        }
        if let Some(n) = self.require(
            fields,
            "classes",
            &MEMORY_RULE,
            "add `classes: [fact, procedure]` (globs over memory classes)",
        ) && let Some(g) = self.globs(n, "`classes`")
        {
            out.insert("classes".into(), g);
        }
    }

    fn approval_rule(&mut self, fields: &Fields<'_>, out: &mut Map<String, Json>) {
        if let Some(n) = self.require(
            fields,
            "tools",
            &APPROVAL_RULE,
            "add `tools: [\"shell.*\"]`",
        ) && let Some(g) = self.globs(n, "`tools`")
        {
            out.insert("tools".into(), g);
        }
        if let Some(n) = self.require(
            fields,
            "approvers",
            &APPROVAL_RULE,
            "add `approvers: [team-lead]`",
        ) && let Some(a) = self.approvers(n)
        {
            out.insert("approvers".into(), a);
        }
        if let Some(n) = fields.get("ttl_seconds")
            && let Some(t) = self.integer(n, "`ttl_seconds`", 1, "ttl_seconds: 3600")
        {
            out.insert("ttl_seconds".into(), Json::from(t));
        }
    }

    fn tool_level_rule(&mut self, fields: &Fields<'_>, out: &mut Map<String, Json>) {
        if let Some(n) = self.require(
            fields,
            "tools",
            &TOOL_LEVEL_RULE,
            "add `tools: [\"secrets.*\"]` (globs over tool names)",
        ) && let Some(g) = self.globs(n, "`tools`")
        {
            out.insert("tools".into(), g);
        }
        if let Some(n) = self.require(
            fields,
            "level",
            &TOOL_LEVEL_RULE,
            "add `level: secret` (or public, internal, confidential): runs cleared below it are denied these tools",
        ) && let Some(l) = self.level(n)
        {
            out.insert("level".into(), Json::String(l.into()));
        }
    }

    /// A sensitivity level (`max_sensitivity`, `level`).
    fn level(&mut self, node: &Node) -> Option<&'static str> {
        let levels: Vec<&str> = Level::ALL.iter().map(|l| l.as_str()).collect();
        self.choice(
            node,
            codes::ENVELOPE_UNKNOWN_VALUE,
            "sensitivity level",
            &levels,
        )
    }

    fn approvers(&mut self, node: &Node) -> Option<Json> {
        let items = self.list(node, "`approvers`", "approvers: [team-lead]")?;
        if items.is_empty() {
            self.empty(
                node,
                "`approvers`",
                "name who may approve: `approvers: [team-lead]`",
            );
            return None;
        }
        let mut out = Vec::new();
        for item in items {
            let t = self.text(item, "an approver")?;
            if t.is_empty() || t.contains(',') {
                self.diags.push(
                    Diagnostic::error(
                        codes::ENVELOPE_BAD_ID,
                        format!("`{t}` is not an approver id"),
                        item.span,
                    )
                    .with_help("an approver is a non-empty user or group id without commas"),
                );
                return None;
            }
            out.push(Json::String(t));
        }
        Some(Json::Array(out))
    }
}

fn shape_of(section: Section) -> &'static Shape {
    match section {
        Section::Tools => &TOOL_RULE,
        Section::Data => &DATA_RULE,
        Section::Models => &MODEL_RULE,
        Section::Memory => &MEMORY_RULE,
        Section::Approvals => &APPROVAL_RULE,
        Section::ToolLevels => &TOOL_LEVEL_RULE,
    }
}
