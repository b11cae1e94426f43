//! AgentGW-Bench: one RBAC-style tool policy for an agent gateway, generated deterministically,
//! encoded for Tollgate (envelope YAML) and decided by a plain-Rust reference. The Cedar and Rego
//! encodings live in `benches/agentgw.rs` (those engines are dev-dependencies only).
//!
//! # The policy
//!
//! - 50 roles in a ternary tree: `role00` is the root, the parent of `roleI` is `role((I-1)/3)`
//!   (depths 0–4). One envelope per role, `extends` its parent's envelope.
//! - 1,000 agents, each attached to one role drawn uniformly from `role01`..`role49` (none to
//!   the root), each with a clearance drawn uniformly from public < internal < confidential <
//!   secret.
//! - 200 tools `catCC.toolTTT` in 20 categories of 10 (`TTT / 10 = CC`).
//! - 60 grants (`allow` tool rules with one pattern each): the three depth-1 roles get 7
//!   category grants each (`catCC.*`); 13 deeper roles, chosen with the seeded generator,
//!   narrow with 3 grants each (2 categories and 1 single tool, drawn from the categories
//!   their nearest granting ancestor grants).
//! - Tollgate's combining rule, which the other encodings reproduce: a child envelope only
//!   narrows. A tool is *permitted* when every envelope governing the agent that has tool
//!   rules (its role's and its ancestors') has a rule allowing it, and at least one does.
//! - Clearance forbid: tools of category `cat13` are secret (a `tool_levels` rule on the root
//!   envelope); an agent whose clearance is below `secret` may not call them
//!   (`clearance-forbid`, which overrides everything as deny does).
//! - Approval: calls of `cat05.*` need approval (an approval rule on the root envelope: it
//!   gates a permitted call, it does not permit).
//! - Decision: `deny` if the clearance forbid applies; else `deny` if not permitted; else
//!   `require_approval` for `cat05`; else `allow`.
//! - 5,000 requests `(agent, tool)` drawn uniformly with xorshift64 (seed fixed).

use std::fmt::Write as _;

use tollgate_engine::{Fact, FactSet, Limits, Model, Value};
use tollgate_rules::decide::{DecisionEffect, EnvelopeDecision, PolicyEngine, PolicyRequest};
use tollgate_rules::request::{RunSubject, ToolCall, subject_facts, tool_request_facts};
use tollgate_rules::envelope::{EnvelopeSet, Level, load_envelopes};
use tollgate_rules::packs::builtin_program;

/// Number of agents.
pub const AGENTS: usize = 1_000;
/// Number of roles (one envelope each).
pub const ROLES: usize = 50;
/// Number of tool categories.
pub const CATEGORIES: usize = 20;
/// Number of tools (10 per category).
pub const TOOLS: usize = 200;
/// Number of grants (allow rules with one pattern each).
pub const GRANTS: usize = 60;
/// Number of requests.
pub const REQUESTS: usize = 5_000;
/// The category whose tools are secret.
pub const SECRET_CATEGORY: usize = 13;
/// The category whose tools need approval.
pub const APPROVAL_CATEGORY: usize = 5;
/// Clearance rank of `secret`.
pub const SECRET: u8 = 3;
/// Generator seed.
pub const SEED: u64 = 0x5EED_A6E7_6B00_0001;

/// The three outcomes every engine decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// Go ahead.
    Allow,
    /// Wait for a human approval.
    RequireApproval,
    /// Refused.
    Deny,
}

impl Effect {
    /// `allow`, `require_approval`, `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::RequireApproval => "require_approval",
            Effect::Deny => "deny",
        }
    }

    /// From a decision's text.
    pub fn parse(s: &str) -> Option<Effect> {
        match s {
            "allow" => Some(Effect::Allow),
            "require_approval" => Some(Effect::RequireApproval),
            "deny" => Some(Effect::Deny),
            _ => None,
        }
    }
}

/// One grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Every tool of a category (`catCC.*`).
    Category(usize),
    /// One tool.
    Tool(usize),
}

/// xorshift64: deterministic, no dependencies.
pub struct XorShift(u64);

impl XorShift {
    /// A generator with a non-zero seed.
    pub fn new(seed: u64) -> Self {
        XorShift(seed | 1)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform-ish in `0..n` (modulo bias is irrelevant here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// `k` distinct values of `from`, in drawing order.
    pub fn pick(&mut self, from: &[usize], k: usize) -> Vec<usize> {
        let mut pool = from.to_vec();
        let mut out = Vec::new();
        while out.len() < k && !pool.is_empty() {
            let i = self.below(pool.len());
            out.push(pool.swap_remove(i));
        }
        out
    }
}

/// Role name.
pub fn role_name(r: usize) -> String {
    format!("role{r:02}")
}

/// Agent name (also its run id).
pub fn agent_name(a: usize) -> String {
    format!("agent{a:04}")
}

/// Category name.
pub fn category_name(c: usize) -> String {
    format!("cat{c:02}")
}

/// Tool name.
pub fn tool_name(t: usize) -> String {
    format!("cat{:02}.tool{t:03}", category_of(t))
}

/// A tool's category.
pub fn category_of(t: usize) -> usize {
    t / (TOOLS / CATEGORIES)
}

/// Clearance level names by rank.
pub const LEVELS: [&str; 4] = ["public", "internal", "confidential", "secret"];

/// The generated workload.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Parent of each role (`None` for the root).
    pub role_parent: Vec<Option<usize>>,
    /// Grants of each role (empty: the role's envelope has no tool rules).
    pub grants: Vec<Vec<Grant>>,
    /// Each agent's role.
    pub agent_role: Vec<usize>,
    /// Each agent's clearance rank (0 public .. 3 secret).
    pub agent_clearance: Vec<u8>,
    /// `(agent, tool)` per request.
    pub requests: Vec<(usize, usize)>,
}

impl Workload {
    /// The workload for `SEED`.
    pub fn generate() -> Workload {
        let mut rng = XorShift::new(SEED);
        let role_parent: Vec<Option<usize>> = (0..ROLES)
            .map(|r| if r == 0 { None } else { Some((r - 1) / 3) })
            .collect();
        let mut grants: Vec<Vec<Grant>> = vec![Vec::new(); ROLES];
        let all: Vec<usize> = (0..CATEGORIES).collect();
        for g in grants.iter_mut().take(4).skip(1) {
            *g = rng.pick(&all, 7).into_iter().map(Grant::Category).collect();
        }
        let deeper: Vec<usize> = (4..ROLES).collect();
        let mut narrowing = rng.pick(&deeper, (GRANTS - 21) / 3);
        // Parents before children, so a narrowing role draws from its ancestor's final grants.
        narrowing.sort_unstable();
        for r in narrowing {
            let mut p = role_parent[r];
            while let Some(q) = p {
                if !grants[q].is_empty() {
                    break;
                }
                p = role_parent[q];
            }
            let available: Vec<usize> = p
                .map(|q| {
                    grants[q]
                        .iter()
                        .filter_map(|g| match g {
                            Grant::Category(c) => Some(*c),
                            Grant::Tool(_) => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut cats = rng.pick(&available, 3);
            while cats.len() < 3 {
                cats.push(rng.below(CATEGORIES));
            }
            let per = TOOLS / CATEGORIES;
            grants[r] = vec![
                Grant::Category(cats[0]),
                Grant::Category(cats[1]),
                Grant::Tool(cats[2] * per + rng.below(per)),
            ];
        }
        let agent_role = (0..AGENTS).map(|_| 1 + rng.below(ROLES - 1)).collect();
        let agent_clearance = (0..AGENTS).map(|_| rng.below(4) as u8).collect();
        let requests = (0..REQUESTS)
            .map(|_| (rng.below(AGENTS), rng.below(TOOLS)))
            .collect();
        Workload {
            role_parent,
            grants,
            agent_role,
            agent_clearance,
            requests,
        }
    }

    /// Number of grants.
    pub fn grant_count(&self) -> usize {
        self.grants.iter().map(Vec::len).sum()
    }

    /// A role and its ancestors, the role first.
    pub fn chain(&self, role: usize) -> Vec<usize> {
        let mut out = vec![role];
        let mut r = role;
        while let Some(p) = self.role_parent[r] {
            out.push(p);
            r = p;
        }
        out
    }

    /// Glob pattern of a grant.
    pub fn pattern(g: Grant) -> String {
        match g {
            Grant::Category(c) => format!("{}.*", category_name(c)),
            Grant::Tool(t) => tool_name(t),
        }
    }

    /// The envelopes as YAML documents, one per role. The root envelope, which governs every
    /// agent, holds the approval rule and the clearance forbid: `tool_levels` puts `cat13.*`
    /// at `secret`, so the packs deny those tools to runs cleared below it
    /// (`clearance-forbid`); a tool level neither permits nor takes part in the intersection.
    pub fn envelopes_yaml(&self) -> String {
        let mut by_role: Vec<Vec<String>> = vec![Vec::new(); ROLES];
        for (a, &r) in self.agent_role.iter().enumerate() {
            by_role[r].push(agent_name(a));
        }
        let mut y = String::new();
        for (r, agents) in by_role.iter().enumerate() {
            let _ = writeln!(y, "---\nid: {}\nversion: 1", role_name(r));
            if let Some(p) = self.role_parent[r] {
                let _ = writeln!(y, "extends: [{}]", role_name(p));
            }
            if !agents.is_empty() {
                let _ = writeln!(y, "attach: {{agents: [{}]}}", agents.join(", "));
            }
            if !self.grants[r].is_empty() {
                y.push_str("tools:\n");
                for (i, g) in self.grants[r].iter().enumerate() {
                    let _ = writeln!(
                        y,
                        "  - {{id: grant{i}, effect: allow, tools: [\"{}\"]}}",
                        Workload::pattern(*g)
                    );
                }
            }
            if r == 0 {
                let _ = writeln!(
                    y,
                    "approvals:\n  - {{id: approval, tools: [\"{}.*\"], approvers: [security-team]}}",
                    category_name(APPROVAL_CATEGORY)
                );
                let _ = writeln!(
                    y,
                    "tool_levels:\n  - {{id: secret-tools, tools: [\"{}.*\"], level: secret}}",
                    category_name(SECRET_CATEGORY)
                );
            }
        }
        y
    }

    /// One run per agent (run id = agent id), with its clearance.
    pub fn subjects(&self) -> FactSet {
        let runs: Vec<RunSubject> = (0..AGENTS)
            .map(|a| RunSubject {
                run: agent_name(a),
                agent: agent_name(a),
                task: "agentgw".to_string(),
                scope: "org:acme".to_string(),
                clearance: match self.agent_clearance[a] {
                    0 => Level::Public,
                    1 => Level::Internal,
                    2 => Level::Confidential,
                    _ => Level::Secret,
                },
            })
            .collect();
        subject_facts(&runs, &[])
    }

    /// The envelope set, through the YAML loader.
    pub fn envelope_set(&self) -> Result<EnvelopeSet, String> {
        load_envelopes(&[("agentgw.yaml", self.envelopes_yaml())]).map_err(|e| e.render())
    }
}

/// The plain-Rust reference: per role, a category bitmask and a tool bitset; a request walks
/// the agent's role chain.
pub struct Reference {
    /// Per agent: role, clearance.
    agents: Vec<(usize, u8)>,
    /// Per role: its chain of roles with grants.
    ruled_chain: Vec<Vec<usize>>,
    /// Per role: granted categories (bit per category) and tools (bit per tool).
    masks: Vec<(u32, [u64; 4])>,
}

impl Reference {
    /// Builds the reference from the workload.
    pub fn new(w: &Workload) -> Reference {
        let masks = w
            .grants
            .iter()
            .map(|gs| {
                let mut cats = 0u32;
                let mut tools = [0u64; 4];
                for g in gs {
                    match *g {
                        Grant::Category(c) => cats |= 1 << c,
                        Grant::Tool(t) => tools[t / 64] |= 1 << (t % 64),
                    }
                }
                (cats, tools)
            })
            .collect();
        let ruled_chain = (0..ROLES)
            .map(|r| {
                w.chain(r)
                    .into_iter()
                    .filter(|&q| !w.grants[q].is_empty())
                    .collect()
            })
            .collect();
        Reference {
            agents: w
                .agent_role
                .iter()
                .copied()
                .zip(w.agent_clearance.iter().copied())
                .collect(),
            ruled_chain,
            masks,
        }
    }

    /// Decides `agent` calling `tool`.
    pub fn decide(&self, agent: usize, tool: usize) -> Effect {
        let (role, clearance) = self.agents[agent];
        let cat = category_of(tool);
        if cat == SECRET_CATEGORY && clearance < SECRET {
            return Effect::Deny;
        }
        let chain = &self.ruled_chain[role];
        let permitted = !chain.is_empty()
            && chain.iter().all(|&r| {
                let (cats, tools) = self.masks[r];
                cats & (1 << cat) != 0 || tools[tool / 64] & (1 << (tool % 64)) != 0
            });
        if !permitted {
            Effect::Deny
        } else if cat == APPROVAL_CATEGORY {
            Effect::RequireApproval
        } else {
            Effect::Allow
        }
    }
}

/// Maps a Tollgate decision effect to the bench's three outcomes.
pub fn from_decision(e: DecisionEffect) -> Effect {
    match e {
        DecisionEffect::Allow => Effect::Allow,
        DecisionEffect::RequireApproval => Effect::RequireApproval,
        _ => Effect::Deny,
    }
}

/// Tollgate, both ways: the public [`PolicyEngine`] (proofs on), and the built-in program
/// materialised separately over the same facts, queried without building a proof (the
/// decision read straight from `tool_decision`).
pub struct Tollgate {
    /// The public engine.
    pub engine: PolicyEngine,
    /// The public engine with `explain_denials(false)`: receipts (proofs) without why-nots.
    pub receipts: PolicyEngine,
    /// The same program and facts, for proof-less queries.
    pub model: Model,
    /// The same program evaluated without provenance (`Program::evaluate`).
    pub model_no_provenance: Model,
    limits: Limits,
    args: serde_json::Value,
}

impl Tollgate {
    /// Loads the envelopes from YAML text and materialises them.
    pub fn new(w: &Workload) -> Result<Tollgate, String> {
        let set = w.envelope_set()?;
        let subjects = w.subjects();
        let engine = PolicyEngine::new(&set, &subjects).map_err(|e| e.to_string())?;
        let receipts = PolicyEngine::new(&set, &subjects)
            .map_err(|e| e.to_string())?
            .explain_denials(false);
        let program = builtin_program().map_err(|d| format!("{d:?}"))?;
        let mut facts = set.facts();
        facts.extend_from(&subjects);
        let limits = Limits::default();
        let model = program
            .materialise(&facts, &limits)
            .map_err(|e| e.to_string())?;
        let model_no_provenance = program
            .evaluate(&facts, &limits)
            .map_err(|e| e.to_string())?;
        Ok(Tollgate {
            engine,
            receipts,
            model,
            model_no_provenance,
            limits,
            args: serde_json::Value::Object(Default::default()),
        })
    }

    /// Proofs on: `PolicyEngine::decide_tool`, the gateway's call (input hash, staged query,
    /// proof of the decision, why-not for a default denial).
    pub fn decide_with_proof(&self, run: &str, tool: &str) -> Effect {
        let d = self.engine.decide_tool(run, tool, &self.args);
        debug_assert!(d.error.is_none(), "{:?}", d.error);
        from_decision(d.effect)
    }

    /// The tool request the gateway decides for `run` calling `tool` (no arguments, no usage).
    pub fn request(&self, run: &str, tool: &str) -> PolicyRequest {
        PolicyRequest::Tool {
            run: run.to_string(),
            call: ToolCall {
                name: tool.to_string(),
                args: self.args.clone(),
                usage: Default::default(),
            },
            now: None,
        }
    }

    /// The decision as the gateway records it: `PolicyEngine::decide_receipt` (input hash,
    /// staged query, effect and rules; the proof and why-not rendered when read).
    pub fn decide_on_read(&self, run: &str, tool: &str) -> Effect {
        let d = self.engine.decide_receipt(&self.request(run, tool));
        debug_assert!(d.error.is_none(), "{:?}", d.error);
        from_decision(d.effect)
    }

    /// The receipt the gateway records for a request.
    pub fn receipt(&self, run: &str, tool: &str) -> EnvelopeDecision {
        self.engine.decide_receipt(&self.request(run, tool))
    }

    /// Renders a recorded receipt on read (`PolicyEngine::render`: decided again with its
    /// proof and why-not, input hash, effect and rules checked).
    pub fn render(&self, run: &str, tool: &str, receipt: &EnvelopeDecision) -> Effect {
        match self.engine.render(&self.request(run, tool), receipt) {
            Ok(d) => from_decision(d.effect),
            Err(e) => panic!("a receipt of this engine renders: {e}"),
        }
    }

    /// Proofs on without why-nots: `decide_tool` on an engine with `explain_denials(false)`
    /// (input hash, staged query, proof of the decision).
    pub fn decide_receipt(&self, run: &str, tool: &str) -> Effect {
        let d = self.receipts.decide_tool(run, tool, &self.args);
        debug_assert!(d.error.is_none(), "{:?}", d.error);
        from_decision(d.effect)
    }

    /// Proofs off: the staged query and the `tool_decision` rows, as `decide` reads them,
    /// without the proof, the why-not or the input hash.
    pub fn decide_no_proof(&self, run: &str, tool: &str) -> Effect {
        Tollgate::query(&self.model, &self.limits, &self.args, run, tool)
    }

    /// Like [`Tollgate::decide_no_proof`] on the model evaluated without provenance.
    pub fn decide_no_provenance(&self, run: &str, tool: &str) -> Effect {
        Tollgate::query(
            &self.model_no_provenance,
            &self.limits,
            &self.args,
            run,
            tool,
        )
    }

    /// The staged query plus the proof of the deciding `tool_decision` fact: `decide` without
    /// the input hash and without the why-not of default denials.
    pub fn decide_query_and_proof(&self, run: &str, tool: &str) -> Effect {
        let call = ToolCall {
            name: tool.to_string(),
            args: self.args.clone(),
            usage: Default::default(),
        };
        let facts = tool_request_facts("q", run, &call);
        let Ok(answer) = self.model.query(&facts, &self.limits) else {
            return Effect::Deny;
        };
        let key = Value::sym("q");
        let mut best: Option<(Effect, Vec<Value>)> = None;
        for row in answer.relation("tool_decision").unwrap_or_default() {
            if row.first() != Some(&key) {
                continue;
            }
            let e = match row.get(1) {
                Some(Value::Symbol(s)) => Effect::parse(s).unwrap_or(Effect::Deny),
                _ => Effect::Deny,
            };
            if best.as_ref().is_none_or(|(b, _)| e > *b) {
                best = Some((e, row));
            }
        }
        let Some((effect, row)) = best else {
            return Effect::Deny;
        };
        match answer.prove(&Fact::new("tool_decision", row)) {
            Ok(proof) => {
                std::hint::black_box(proof);
                effect
            }
            Err(_) => Effect::Deny,
        }
    }

    fn query(
        model: &Model,
        limits: &Limits,
        args: &serde_json::Value,
        run: &str,
        tool: &str,
    ) -> Effect {
        let call = ToolCall {
            name: tool.to_string(),
            args: args.clone(),
            usage: Default::default(),
        };
        let facts = tool_request_facts("q", run, &call);
        let Ok(answer) = model.query(&facts, limits) else {
            return Effect::Deny;
        };
        let key = Value::sym("q");
        let mut effect: Option<Effect> = None;
        for row in answer.relation("tool_decision").unwrap_or_default() {
            if row.first() != Some(&key) {
                continue;
            }
            let e = match row.get(1) {
                Some(Value::Symbol(s)) => Effect::parse(s).unwrap_or(Effect::Deny),
                _ => Effect::Deny,
            };
            effect = Some(effect.map_or(e, |x| x.max(e)));
        }
        // No decision row: fail closed, as `decide` does.
        effect.unwrap_or(Effect::Deny)
    }
}

/// What [`check_render`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderCheck {
    /// Decisions checked.
    pub decisions: usize,
    /// Why-nots among them.
    pub why_nots: usize,
    /// Rendered decisions that differ from deciding in full.
    pub differ: usize,
}

/// Decides every request of the workload as the gateway records it (`decide_receipt`),
/// renders each receipt on an engine materialised separately, and counts those that are not
/// byte for byte what the public engine writes deciding in full.
pub fn check_render(w: &Workload) -> Result<RenderCheck, String> {
    let decider = Tollgate::new(w)?;
    let reader = Tollgate::new(w)?;
    let mut check = RenderCheck {
        decisions: 0,
        why_nots: 0,
        differ: 0,
    };
    for &(a, t) in &w.requests {
        let (run, tool) = (agent_name(a), tool_name(t));
        let full = decider.engine.decide_tool(&run, &tool, &decider.args);
        let receipt = decider.receipt(&run, &tool);
        let rendered = reader
            .engine
            .render(&decider.request(&run, &tool), &receipt)
            .map_err(|e| format!("{run} {tool}: {e}"))?;
        let text = |d: &EnvelopeDecision| serde_json::to_string(d).map_err(|e| e.to_string());
        check.decisions += 1;
        check.why_nots += full.why_not.len();
        if receipt.proof.is_some() || text(&rendered)? != text(&full)? {
            check.differ += 1;
        }
    }
    Ok(check)
}
