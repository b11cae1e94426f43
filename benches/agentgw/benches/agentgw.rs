//! AgentGW-Bench: the same tool policy (see the crate docs) decided by Tollgate (proofs on and
//! off), cedar-policy, regorus and plain Rust. Before timing, all of them must agree on every
//! request. Then a manual loop prints p50/p90/p99 per decision, and criterion measures means.
//!
//! Run with `cd benches/agentgw && cargo bench`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The gateway binary's allocator (`cli/src/main.rs`): every variant, Cedar and regorus
/// included, allocates through it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::{BTreeMap, HashSet};
use std::hint::black_box;
use std::str::FromStr;
use std::time::{Duration, Instant};

use cedar_policy::{Authorizer, Context, Decision, Entities, EntityUid, PolicySet, Request};
use criterion::Criterion;
use tollgate_agentgw_bench::{
    AGENTS, APPROVAL_CATEGORY, CATEGORIES, Effect, Grant, LEVELS, REQUESTS, ROLES, Reference,
    SECRET, SECRET_CATEGORY, TOOLS, Tollgate, Workload, agent_name, category_name, category_of,
    role_name, tool_name,
};

/// Timed passes over the 5,000 requests in the manual loop (after one warm-up pass).
const PASSES: usize = 3;

// ---- Cedar ---------------------------------------------------------------------------------

/// Agents are members of their role; roles of their parent role; tools of their category.
/// Grants are `permit`s; the narrowing rule is a `forbid ... unless` per role with grants
/// (its "ceiling"); the clearance rule is a `forbid` on attributes. Approval is a second policy
/// set, evaluated only for requests the first allows.
struct Cedar {
    authorizer: Authorizer,
    policies: PolicySet,
    approval: PolicySet,
    entities: Entities,
    agents: Vec<EntityUid>,
    tools: Vec<EntityUid>,
    action: EntityUid,
}

fn uid(ty: &str, id: &str) -> serde_json::Value {
    serde_json::json!({"type": ty, "id": id})
}

impl Cedar {
    fn policy_text(w: &Workload) -> String {
        let cond = |g: &Grant| match *g {
            Grant::Category(c) => format!("resource in Category::\"{}\"", category_name(c)),
            Grant::Tool(t) => format!("resource == Tool::\"{}\"", tool_name(t)),
        };
        let mut text = String::new();
        for r in 0..ROLES {
            let role = role_name(r);
            for g in &w.grants[r] {
                let scope = cond(g);
                text.push_str(&format!(
                    "permit(principal in Role::\"{role}\", action == Action::\"call\", {scope});\n"
                ));
            }
            if !w.grants[r].is_empty() {
                let allowed: Vec<String> = w.grants[r].iter().map(cond).collect();
                text.push_str(&format!(
                    "forbid(principal in Role::\"{role}\", action == Action::\"call\", resource) unless {{ {} }};\n",
                    allowed.join(" || ")
                ));
            }
        }
        text.push_str(&format!(
            "forbid(principal, action == Action::\"call\", resource) when {{ resource.secret && principal.clearance < {SECRET} }};\n"
        ));
        text
    }

    fn new(w: &Workload) -> Cedar {
        let mut ents = Vec::new();
        for r in 0..ROLES {
            let parents: Vec<_> = w.role_parent[r]
                .map(|p| uid("Role", &role_name(p)))
                .into_iter()
                .collect();
            ents.push(serde_json::json!({"uid": uid("Role", &role_name(r)), "attrs": {}, "parents": parents}));
        }
        for a in 0..AGENTS {
            ents.push(serde_json::json!({
                "uid": uid("Agent", &agent_name(a)),
                "attrs": {"clearance": w.agent_clearance[a]},
                "parents": [uid("Role", &role_name(w.agent_role[a]))],
            }));
        }
        for c in 0..CATEGORIES {
            ents.push(serde_json::json!({"uid": uid("Category", &category_name(c)), "attrs": {}, "parents": []}));
        }
        for t in 0..TOOLS {
            ents.push(serde_json::json!({
                "uid": uid("Tool", &tool_name(t)),
                "attrs": {"secret": category_of(t) == SECRET_CATEGORY},
                "parents": [uid("Category", &category_name(category_of(t)))],
            }));
        }
        ents.push(serde_json::json!({"uid": uid("Action", "call"), "attrs": {}, "parents": []}));
        let entities = Entities::from_json_value(serde_json::Value::Array(ents), None)
            .expect("cedar entities");
        let policies = PolicySet::from_str(&Cedar::policy_text(w)).expect("cedar policies");
        let approval = PolicySet::from_str(&format!(
            "permit(principal, action == Action::\"call\", resource in Category::\"{}\");",
            category_name(APPROVAL_CATEGORY)
        ))
        .expect("cedar approval policy");
        let euid = |ty: &str, id: &str| {
            EntityUid::from_str(&format!("{ty}::\"{id}\"")).expect("entity uid")
        };
        Cedar {
            authorizer: Authorizer::new(),
            policies,
            approval,
            entities,
            agents: (0..AGENTS).map(|a| euid("Agent", &agent_name(a))).collect(),
            tools: (0..TOOLS).map(|t| euid("Tool", &tool_name(t))).collect(),
            action: euid("Action", "call"),
        }
    }

    fn decide(&self, agent: usize, tool: usize) -> Effect {
        let req = Request::new(
            self.agents[agent].clone(),
            self.action.clone(),
            self.tools[tool].clone(),
            Context::empty(),
            None,
        )
        .expect("cedar request");
        let resp = self
            .authorizer
            .is_authorized(&req, &self.policies, &self.entities);
        debug_assert!(resp.diagnostics().errors().next().is_none());
        if resp.decision() == Decision::Deny {
            return Effect::Deny;
        }
        let gate = self
            .authorizer
            .is_authorized(&req, &self.approval, &self.entities);
        if gate.decision() == Decision::Allow {
            Effect::RequireApproval
        } else {
            Effect::Allow
        }
    }
}

// ---- Rego (regorus) ------------------------------------------------------------------------

const REGO: &str = r#"
package agentgw

import rego.v1

agent := data.agents[input.agent]

category := data.tool_category[input.tool]

# The agent's role and its ancestors that have grants (the envelopes that take part).
ruled contains r if {
	some r in data.chain[agent.role]
	data.grants[r]
}

permits(r) if data.grants[r].categories[category]

permits(r) if data.grants[r].tools[input.tool]

# A child only narrows: every role with grants must allow the tool.
permitted if {
	count(ruled) > 0
	every r in ruled {
		permits(r)
	}
}

denied if {
	data.secret_categories[category]
	agent.clearance < data.secret_rank
}

needs_approval if data.approval_categories[category]

default decision := "deny"

decision := "deny" if {
	denied
} else := "require_approval" if {
	permitted
	needs_approval
} else := "allow" if {
	permitted
}
"#;

struct Rego {
    engine: regorus::Engine,
    agents: Vec<regorus::Value>,
    tools: Vec<regorus::Value>,
    k_agent: regorus::Value,
    k_tool: regorus::Value,
}

impl Rego {
    fn new(w: &Workload) -> Rego {
        let mut agents = serde_json::Map::new();
        for a in 0..AGENTS {
            agents.insert(
                agent_name(a),
                serde_json::json!({"role": role_name(w.agent_role[a]), "clearance": w.agent_clearance[a]}),
            );
        }
        let mut chain = serde_json::Map::new();
        let mut grants = serde_json::Map::new();
        for r in 0..ROLES {
            let names: Vec<String> = w.chain(r).into_iter().map(role_name).collect();
            chain.insert(role_name(r), serde_json::json!(names));
            if w.grants[r].is_empty() {
                continue;
            }
            let mut cats = serde_json::Map::new();
            let mut tools = serde_json::Map::new();
            for g in &w.grants[r] {
                match *g {
                    Grant::Category(c) => cats.insert(category_name(c), true.into()),
                    Grant::Tool(t) => tools.insert(tool_name(t), true.into()),
                };
            }
            grants.insert(
                role_name(r),
                serde_json::json!({"categories": cats, "tools": tools}),
            );
        }
        let tool_category: serde_json::Map<String, serde_json::Value> = (0..TOOLS)
            .map(|t| (tool_name(t), category_name(category_of(t)).into()))
            .collect();
        let data = serde_json::json!({
            "agents": agents,
            "chain": chain,
            "grants": grants,
            "tool_category": tool_category,
            "secret_categories": {category_name(SECRET_CATEGORY): true},
            "approval_categories": {category_name(APPROVAL_CATEGORY): true},
            "secret_rank": SECRET,
            "levels": LEVELS,
        });
        let mut engine = regorus::Engine::new();
        engine
            .add_policy("agentgw.rego".to_string(), REGO.to_string())
            .expect("rego policy");
        engine
            .add_data(regorus::Value::from_json_str(&data.to_string()).expect("rego data"))
            .expect("rego data");
        Rego {
            engine,
            agents: (0..AGENTS)
                .map(|a| regorus::Value::from(agent_name(a)))
                .collect(),
            tools: (0..TOOLS)
                .map(|t| regorus::Value::from(tool_name(t)))
                .collect(),
            k_agent: regorus::Value::from("agent"),
            k_tool: regorus::Value::from("tool"),
        }
    }

    fn decide(&mut self, agent: usize, tool: usize) -> Effect {
        let mut input = BTreeMap::new();
        input.insert(self.k_agent.clone(), self.agents[agent].clone());
        input.insert(self.k_tool.clone(), self.tools[tool].clone());
        self.engine.set_input(regorus::Value::from(input));
        let v = self
            .engine
            .eval_rule("data.agentgw.decision".to_string())
            .expect("rego eval");
        v.as_string()
            .ok()
            .and_then(|s| Effect::parse(s))
            .unwrap_or(Effect::Deny)
    }
}

// ---- harness -------------------------------------------------------------------------------

struct Setup {
    w: Workload,
    reference: Reference,
    tollgate: Tollgate,
    cedar: Cedar,
    rego: Rego,
    agent_names: Vec<String>,
    tool_names: Vec<String>,
    /// Each request's receipt as the gateway records it, for the render variant.
    receipts: Vec<tollgate_rules::decide::EnvelopeDecision>,
}

fn setup() -> Setup {
    let w = Workload::generate();
    assert_eq!(w.grant_count(), 60, "grant count");
    let t0 = Instant::now();
    let tollgate = Tollgate::new(&w).expect("tollgate");
    println!(
        "agentgw setup: tollgate load_envelopes + 2 materialisations + 1 evaluate in {:.1} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let t0 = Instant::now();
    let cedar = Cedar::new(&w);
    println!(
        "agentgw setup: cedar entities + policies in {:.1} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let t0 = Instant::now();
    let rego = Rego::new(&w);
    println!(
        "agentgw setup: regorus policy + data in {:.1} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let receipts = w
        .requests
        .iter()
        .map(|&(a, t)| tollgate.receipt(&agent_name(a), &tool_name(t)))
        .collect();
    Setup {
        reference: Reference::new(&w),
        agent_names: (0..AGENTS).map(agent_name).collect(),
        tool_names: (0..TOOLS).map(tool_name).collect(),
        receipts,
        w,
        tollgate,
        cedar,
        rego,
    }
}

fn check_agreement(s: &mut Setup) {
    let mut counts: BTreeMap<Effect, usize> = BTreeMap::new();
    let mut disagreements = Vec::new();
    let requests = s.w.requests.clone();
    for (i, &(a, t)) in requests.iter().enumerate() {
        let (an, tn) = (&s.agent_names[a], &s.tool_names[t]);
        let expected = s.reference.decide(a, t);
        let got = [
            ("tollgate+proof", s.tollgate.decide_with_proof(an, tn)),
            ("tollgate-proof", s.tollgate.decide_no_proof(an, tn)),
            ("tollgate+qproof", s.tollgate.decide_query_and_proof(an, tn)),
            ("tollgate-prov", s.tollgate.decide_no_provenance(an, tn)),
            ("tollgate on read", s.tollgate.decide_on_read(an, tn)),
            ("tollgate render", s.tollgate.render(an, tn, &s.receipts[i])),
            ("cedar", s.cedar.decide(a, t)),
            ("regorus", s.rego.decide(a, t)),
        ];
        for (name, e) in got {
            if e != expected {
                disagreements.push(format!(
                    "request {i} ({an}, {tn}): reference {} but {name} {}",
                    expected.as_str(),
                    e.as_str()
                ));
            }
        }
        *counts.entry(expected).or_default() += 1;
    }
    // Every proof is present, and every decision's rules are the expected kind.
    for &(a, t) in requests.iter().take(200) {
        let d = s.tollgate.engine.decide_tool(
            &s.agent_names[a],
            &s.tool_names[t],
            &serde_json::json!({}),
        );
        assert!(d.error.is_none(), "{:?}", d.error);
        assert!(d.proof.is_some(), "no proof for {a} {t}");
    }
    // Glob tests a Tollgate query runs in `tool_rule_hit` / `tool.approval-checkpoint` /
    // `tool.above-clearance`: every tool pattern of every governing envelope, plus the
    // approval pattern and the tool level pattern (both on the root envelope).
    let patterns: usize = requests
        .iter()
        .map(|&(a, _)| {
            let chain: usize =
                s.w.chain(s.w.agent_role[a])
                    .iter()
                    .map(|&r| s.w.grants[r].len())
                    .sum();
            chain + 2
        })
        .sum();
    println!(
        "agentgw glob patterns tested per Tollgate request: mean {:.1}",
        patterns as f64 / requests.len() as f64
    );
    let roles_with_agents: HashSet<usize> = s.w.agent_role.iter().copied().collect();
    println!(
        "agentgw workload: {AGENTS} agents in {} roles, {} grants on {} roles, {TOOLS} tools, {REQUESTS} requests",
        roles_with_agents.len(),
        s.w.grant_count(),
        s.w.grants.iter().filter(|g| !g.is_empty()).count()
    );
    println!(
        "agentgw agreement: {} requests x 6 variants vs reference, {} disagreements; decisions: {}",
        requests.len(),
        disagreements.len(),
        counts
            .iter()
            .map(|(e, n)| format!("{} {n}", e.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for d in disagreements.iter().take(20) {
        println!("  {d}");
    }
    // The clearance forbid is the packs' own `clearance-forbid` (a `tool_levels` rule on the
    // root envelope), not a deny rule: every request it applies to is decided by it alone.
    let mut forbidden = 0usize;
    for &(a, t) in &requests {
        if category_of(t) == SECRET_CATEGORY && s.w.agent_clearance[a] < SECRET {
            let d = s.tollgate.engine.decide_tool(
                &s.agent_names[a],
                &s.tool_names[t],
                &serde_json::json!({}),
            );
            assert_eq!(d.rules, ["clearance-forbid"], "agent {a} tool {t}");
            forbidden += 1;
        }
    }
    assert!(forbidden > 0, "no request meets the clearance forbid");
    println!("agentgw clearance forbid: {forbidden} requests denied by clearance-forbid");
    assert!(disagreements.is_empty(), "the engines disagree");
}

#[derive(Clone, Copy)]
enum Variant {
    TollgateProof,
    TollgateReceipt,
    TollgateQueryProof,
    TollgateNoProof,
    TollgateNoProvenance,
    TollgateOnRead,
    TollgateRender,
    Cedar,
    Regorus,
    Plain,
}

const VARIANTS: [(Variant, &str); 10] = [
    (Variant::TollgateOnRead, "tollgate_receipt_on_read"),
    (Variant::TollgateRender, "tollgate_render_on_read"),
    (Variant::TollgateProof, "tollgate_proofs_on"),
    (Variant::TollgateReceipt, "tollgate_proofs_on_no_why_not"),
    (Variant::TollgateQueryProof, "tollgate_query_and_proof"),
    (Variant::TollgateNoProof, "tollgate_proofs_off"),
    (Variant::TollgateNoProvenance, "tollgate_no_provenance"),
    (Variant::Cedar, "cedar"),
    (Variant::Regorus, "regorus"),
    (Variant::Plain, "plain_rust"),
];

/// [`run`], as the one function a profiler's collection is toggled on.
#[inline(never)]
fn profiled_run(s: &mut Setup, v: Variant, i: usize) -> Effect {
    run(s, v, i)
}

fn run(s: &mut Setup, v: Variant, i: usize) -> Effect {
    let (a, t) = s.w.requests[i % REQUESTS];
    match v {
        Variant::TollgateProof => s
            .tollgate
            .decide_with_proof(&s.agent_names[a], &s.tool_names[t]),
        Variant::TollgateReceipt => s
            .tollgate
            .decide_receipt(&s.agent_names[a], &s.tool_names[t]),
        Variant::TollgateQueryProof => s
            .tollgate
            .decide_query_and_proof(&s.agent_names[a], &s.tool_names[t]),
        Variant::TollgateNoProof => s
            .tollgate
            .decide_no_proof(&s.agent_names[a], &s.tool_names[t]),
        Variant::TollgateNoProvenance => s
            .tollgate
            .decide_no_provenance(&s.agent_names[a], &s.tool_names[t]),
        Variant::TollgateOnRead => s
            .tollgate
            .decide_on_read(&s.agent_names[a], &s.tool_names[t]),
        Variant::TollgateRender => s.tollgate.render(
            &s.agent_names[a],
            &s.tool_names[t],
            &s.receipts[i % REQUESTS],
        ),
        Variant::Cedar => s.cedar.decide(a, t),
        Variant::Regorus => s.rego.decide(a, t),
        Variant::Plain => s.reference.decide(a, t),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn manual(s: &mut Setup) -> BTreeMap<&'static str, (Duration, Duration, Duration)> {
    let mut out = BTreeMap::new();
    for (v, name) in VARIANTS {
        for i in 0..REQUESTS {
            black_box(run(s, v, i));
        }
        let mut d = Vec::with_capacity(REQUESTS * PASSES);
        let mut by_effect: BTreeMap<Effect, Vec<Duration>> = BTreeMap::new();
        for i in 0..REQUESTS * PASSES {
            let t0 = Instant::now();
            let e = black_box(run(s, v, i));
            let dt = t0.elapsed();
            d.push(dt);
            by_effect.entry(e).or_default().push(dt);
        }
        d.sort_unstable();
        let split: Vec<String> = by_effect
            .iter_mut()
            .map(|(e, ds)| {
                ds.sort_unstable();
                format!(
                    "{} {:.2} µs",
                    e.as_str(),
                    percentile(ds, 0.5).as_secs_f64() * 1e6
                )
            })
            .collect();
        let (p50, p90, p99) = (
            percentile(&d, 0.5),
            percentile(&d, 0.9),
            percentile(&d, 0.99),
        );
        println!(
            "agentgw manual {name:<24} n={} p50 {:>9.2} µs  p90 {:>9.2} µs  p99 {:>9.2} µs",
            d.len(),
            p50.as_secs_f64() * 1e6,
            p90.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6
        );
        println!(
            "agentgw manual {name:<24} p50 by effect: {}",
            split.join(", ")
        );
        out.insert(name, (p50, p90, p99));
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for base in [
        "tollgate_receipt_on_read",
        "tollgate_proofs_on",
        "tollgate_proofs_on_no_why_not",
        "tollgate_proofs_off",
    ] {
        let b = out[base];
        for other in ["cedar", "regorus"] {
            let o = out[other];
            println!(
                "agentgw ratio {other}/{base}: p50 {:.2}x  p99 {:.2}x",
                us(o.0) / us(b.0),
                us(o.2) / us(b.2)
            );
        }
    }
    out
}

fn main() {
    let mut s = setup();
    check_agreement(&mut s);
    // `AGENTGW_PROFILE=NAME` loops one variant for 10 s and exits: a target for `perf record`.
    if let Ok(only) = std::env::var("AGENTGW_PROFILE") {
        let (v, name) = VARIANTS
            .into_iter()
            .find(|(_, n)| *n == only)
            .expect("AGENTGW_PROFILE names a variant");
        // `AGENTGW_PROFILE_COUNT=N` runs exactly N decisions instead (the first N requests, in
        // order): the same work whatever the load, for instruction counts under callgrind
        // (`--toggle-collect='agentgw::profiled_run'`). Like the timed loops, one warm-up pass
        // first (model proofs are cached by the engine on first use).
        let count: Option<usize> = std::env::var("AGENTGW_PROFILE_COUNT")
            .ok()
            .map(|n| n.parse().expect("AGENTGW_PROFILE_COUNT is a number"));
        for i in 0..REQUESTS {
            black_box(run(&mut s, v, i));
        }
        let t0 = Instant::now();
        let mut i = 0usize;
        while count.map_or(t0.elapsed() < Duration::from_secs(10), |n| i < n) {
            black_box(profiled_run(&mut s, v, i));
            i += 1;
        }
        println!(
            "agentgw profile {name}: {i} decisions in {:.1} s",
            t0.elapsed().as_secs_f64()
        );
        return;
    }
    let filter_only = std::env::args().any(|a| a == "--list");
    if !filter_only {
        manual(&mut s);
    }
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("agentgw");
        for (v, name) in VARIANTS {
            let mut i = 0usize;
            g.bench_function(name, |b| {
                b.iter(|| {
                    i += 1;
                    black_box(run(&mut s, v, i))
                })
            });
        }
        g.finish();
    }
    c.final_summary();
}
