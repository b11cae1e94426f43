//! Properties of the built-in packs on generated envelope sets: every request gets exactly one
//! effect, deny (a deny rule or a tool level above the clearance) overrides allow, a tool level
//! only forbids, a child never widens what its parents decide, the order of facts never
//! matters, and staged queries agree with plain evaluation.
//!
//! `PROPTEST_CASES` sets the number of cases per property (64 when unset).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use proptest::prelude::*;
use tollgate_engine::functions::compile_glob;
use tollgate_engine::{Fact, FactSet, Limits, Model, Program, Value};
use tollgate_rules::packs::{REQUEST_RELATIONS, builtin_program};

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

fn program() -> &'static Program {
    static PROGRAM: OnceLock<Program> = OnceLock::new();
    PROGRAM.get_or_init(|| builtin_program().unwrap())
}

const ENVS: usize = 4;
const TARGETS: [(&str, &str); 3] = [("run", "r1"), ("agent", "coder"), ("task", "T-1")];
const TOOLS: [&str; 4] = ["fs.read", "fs.write", "shell.exec", "net.fetch"];
const TOOL_PATTERNS: [&str; 6] = ["fs.*", "fs.read", "shell.*", "**", "net.fetch", "*.write"];
const TOOL_EFFECTS: [&str; 4] = ["allow", "deny", "require_approval", "rate_limit"];
const ARG_PATTERNS: [&str; 3] = ["src/**", "*.md", "**"];
/// `src/../etc/passwd` climbs out of `src/`: it matches `src/**` as a glob, but no permitting
/// rule's condition holds on it (a deny's still does).
const ARG_VALUES: [&str; 4] = ["src/a.rs", "README.md", "etc/passwd", "src/../etc/passwd"];
const SCOPES: [&str; 3] = ["org:acme", "org:acme/repo:api", "org:globex"];
const SCOPE_PATTERNS: [&str; 3] = ["org:acme/**", "**", "org:globex"];
const LEVELS: [&str; 4] = ["public", "internal", "confidential", "secret"];
const DATA_EFFECTS: [&str; 3] = ["see", "redact", "block"];
const KINDS: [&str; 2] = ["file", "credential"];
const MODELS: [(&str, &str); 3] = [("openai", "gpt-4o"), ("openai", "o3"), ("ollama", "llama3")];
const MODEL_PATTERNS: [(&str, &str); 3] = [("openai", "*"), ("*", "gpt-4*"), ("ollama", "*")];

#[derive(Debug, Clone)]
struct ToolRule {
    env: usize,
    pattern: usize,
    effect: usize,
    arg: Option<usize>,
    /// `only_named_args`: the rule names `/path` at most, so a request with `/mode` fails it.
    closed: bool,
    limit: i32,
}

#[derive(Debug, Clone)]
struct World {
    attached: Vec<(usize, usize)>,
    extends: Vec<(usize, usize)>,
    tool_rules: Vec<ToolRule>,
    approvals: Vec<(usize, usize)>,
    /// `tool_level`s: envelope, tool pattern, level.
    tool_levels: Vec<(usize, usize, usize)>,
    /// Tool, `/path` value, usage, whether a `/mode` argument rides along.
    tool_requests: Vec<(usize, Option<usize>, i32, bool)>,
    clearance: usize,
    data_rules: Vec<(usize, usize, usize, usize, Option<usize>, bool)>,
    context_requests: Vec<(usize, usize, usize, bool)>,
    model_rules: Vec<(usize, bool, usize)>,
    model_requests: Vec<usize>,
}

fn tool_rule(envs: usize) -> impl Strategy<Value = ToolRule> {
    (
        0..envs,
        0..TOOL_PATTERNS.len(),
        0..TOOL_EFFECTS.len(),
        prop::option::weighted(0.3, 0..ARG_PATTERNS.len()),
        prop::bool::weighted(0.3),
        0..3i32,
    )
        .prop_map(|(env, pattern, effect, arg, closed, limit)| ToolRule {
            env,
            pattern,
            effect,
            arg,
            closed,
            limit,
        })
}

fn world() -> impl Strategy<Value = World> {
    let tools = (
        prop::collection::vec((0..ENVS, 0..TARGETS.len()), 0..4),
        prop::collection::vec((0..ENVS, 0..ENVS), 0..3),
        prop::collection::vec(tool_rule(ENVS), 0..8),
        prop::collection::vec((0..ENVS, 0..TOOL_PATTERNS.len()), 0..2),
        prop::collection::vec(
            (
                0..TOOLS.len(),
                prop::option::of(0..ARG_VALUES.len()),
                0..3i32,
                prop::bool::weighted(0.3),
            ),
            1..5,
        ),
        prop::collection::vec((0..ENVS, 0..TOOL_PATTERNS.len(), 0..LEVELS.len()), 0..3),
    );
    let rest = (
        0..LEVELS.len(),
        prop::collection::vec(
            (
                0..ENVS,
                0..DATA_EFFECTS.len(),
                0..SCOPE_PATTERNS.len(),
                0..LEVELS.len(),
                prop::option::weighted(0.3, 0..KINDS.len()),
                prop::bool::weighted(0.2),
            ),
            0..6,
        ),
        prop::collection::vec(
            (
                0..KINDS.len(),
                0..SCOPES.len(),
                0..LEVELS.len(),
                any::<bool>(),
            ),
            1..4,
        ),
        prop::collection::vec(
            (0..ENVS, prop::bool::weighted(0.3), 0..MODEL_PATTERNS.len()),
            0..4,
        ),
        prop::collection::vec(0..MODELS.len(), 1..3),
    );
    (tools, rest).prop_map(
        |(
            (attached, extends, tool_rules, approvals, tool_requests, tool_levels),
            (clearance, data_rules, context_requests, model_rules, model_requests),
        )| World {
            attached,
            extends,
            tool_rules,
            approvals,
            tool_levels,
            tool_requests,
            clearance,
            data_rules,
            context_requests,
            model_rules,
            model_requests,
        },
    )
}

fn env(i: usize) -> String {
    format!("e{i}")
}

fn rule_id(kind: &str, i: usize, env_index: usize) -> String {
    format!("{}/{kind}-{i}", env(env_index))
}

fn fact(relation: &str, values: Vec<Value>) -> Fact {
    Fact::new(relation, values)
}

fn s(text: &str) -> Value {
    Value::sym(text)
}

impl World {
    fn facts(&self) -> Vec<Fact> {
        let mut out = vec![
            fact(
                "run",
                vec![s("r1"), s("coder"), s("T-1"), s("org:acme/repo:api")],
            ),
            fact("scope_parent", vec![s("org:acme/repo:api"), s("org:acme")]),
            fact("clearance", vec![s("r1"), s(LEVELS[self.clearance])]),
        ];
        for &(e, t) in &self.attached {
            let (kind, target) = TARGETS[t];
            out.push(fact(
                "envelope_attached",
                vec![s(&env(e)), s(kind), s(target)],
            ));
        }
        for &(c, p) in &self.extends {
            out.push(fact("envelope_extends", vec![s(&env(c)), s(&env(p))]));
        }
        for (i, r) in self.tool_rules.iter().enumerate() {
            let id = rule_id("tool", i, r.env);
            out.push(fact(
                "tool_rule",
                vec![
                    s(&env(r.env)),
                    s(&id),
                    s(TOOL_EFFECTS[r.effect]),
                    s(TOOL_PATTERNS[r.pattern]),
                ],
            ));
            if let Some(a) = r.arg {
                out.push(fact(
                    "tool_rule_arg",
                    vec![s(&env(r.env)), s(&id), s("/path"), s(ARG_PATTERNS[a])],
                ));
            }
            if r.closed {
                out.push(fact("tool_rule_closed", vec![s(&env(r.env)), s(&id)]));
            }
            if TOOL_EFFECTS[r.effect] == "rate_limit" {
                out.push(fact(
                    "tool_rule_limit",
                    vec![
                        s(&env(r.env)),
                        s(&id),
                        Value::Number(r.limit),
                        Value::Number(60),
                        s("run"),
                    ],
                ));
            }
        }
        for (i, &(e, p)) in self.approvals.iter().enumerate() {
            out.push(fact(
                "approval_rule",
                vec![
                    s(&env(e)),
                    s(&rule_id("approval", i, e)),
                    s(TOOL_PATTERNS[p]),
                    s("alice"),
                    Value::Number(600),
                ],
            ));
        }
        for (i, &(e, p, l)) in self.tool_levels.iter().enumerate() {
            out.push(fact(
                "tool_level",
                vec![
                    s(&env(e)),
                    s(&rule_id("level", i, e)),
                    s(TOOL_PATTERNS[p]),
                    s(LEVELS[l]),
                ],
            ));
        }
        for (q, &(t, arg, used, extra)) in self.tool_requests.iter().enumerate() {
            let req = format!("q{q}");
            out.push(fact("tool_request", vec![s(&req), s("r1"), s(TOOLS[t])]));
            if let Some(a) = arg {
                out.push(fact(
                    "tool_arg",
                    vec![s(&req), s("/path"), s(ARG_VALUES[a])],
                ));
            }
            if extra {
                out.push(fact("tool_arg", vec![s(&req), s("/mode"), s("fast")]));
            }
            for (i, r) in self.tool_rules.iter().enumerate() {
                if TOOL_EFFECTS[r.effect] == "rate_limit" {
                    let id = rule_id("tool", i, r.env);
                    out.push(fact(
                        "tool_usage",
                        vec![s(&req), s(&id), Value::Number(used)],
                    ));
                }
            }
        }
        for (i, &(e, eff, sp, ml, kind, label)) in self.data_rules.iter().enumerate() {
            let id = rule_id("data", i, e);
            out.push(fact(
                "data_rule",
                vec![
                    s(&env(e)),
                    s(&id),
                    s(DATA_EFFECTS[eff]),
                    s(SCOPE_PATTERNS[sp]),
                    s(LEVELS[ml]),
                ],
            ));
            if let Some(k) = kind {
                out.push(fact(
                    "data_rule_kind",
                    vec![s(&env(e)), s(&id), s(KINDS[k])],
                ));
            }
            if label {
                out.push(fact("data_rule_label", vec![s(&env(e)), s(&id), s("pii")]));
            }
        }
        for (c, &(kind, scope, level, pii)) in self.context_requests.iter().enumerate() {
            let req = format!("c{c}");
            out.push(fact(
                "context_request",
                vec![
                    s(&req),
                    s("r1"),
                    s(&format!("item{c}")),
                    s(KINDS[kind]),
                    s(SCOPES[scope]),
                    s(LEVELS[level]),
                ],
            ));
            if pii {
                out.push(fact("context_label", vec![s(&req), s("pii")]));
            }
        }
        for (i, &(e, deny, p)) in self.model_rules.iter().enumerate() {
            let (pp, mp) = MODEL_PATTERNS[p];
            out.push(fact(
                "model_rule",
                vec![
                    s(&env(e)),
                    s(&rule_id("model", i, e)),
                    s(if deny { "deny" } else { "allow" }),
                    s(pp),
                    s(mp),
                    s("*"),
                ],
            ));
        }
        for (m, &which) in self.model_requests.iter().enumerate() {
            let (provider, model) = MODELS[which];
            out.push(fact(
                "model_request",
                vec![s(&format!("m{m}")), s("r1"), s(provider), s(model), s("")],
            ));
        }
        out
    }

    /// The envelopes governing r1, computed without the packs.
    fn governing(&self) -> BTreeSet<usize> {
        let mut set: BTreeSet<usize> = self.attached.iter().map(|&(e, _)| e).collect();
        loop {
            let more: Vec<usize> = self
                .extends
                .iter()
                .filter(|(c, p)| set.contains(c) && !set.contains(p))
                .map(|&(_, p)| p)
                .collect();
            if more.is_empty() {
                return set;
            }
            set.extend(more);
        }
    }

    /// Whether tool rule `r` applies to tool request `q`, computed without the packs.
    fn tool_rule_applies(&self, r: &ToolRule, q: usize) -> bool {
        let (tool, arg, _, extra) = self.tool_requests[q];
        let glob = |p: &str, v: &str| compile_glob(p).unwrap().is_match(v);
        // A permitting rule's argument condition never holds on a value that climbs.
        let permitting = matches!(TOOL_EFFECTS[r.effect], "allow" | "require_approval");
        let holds = |p: &str, v: &str| {
            glob(p, v) && !(permitting && v.split('/').any(|segment| segment == ".."))
        };
        self.governing().contains(&r.env)
            && glob(TOOL_PATTERNS[r.pattern], TOOLS[tool])
            && r.arg
                .is_none_or(|a| arg.is_some_and(|v| holds(ARG_PATTERNS[a], ARG_VALUES[v])))
            && !(r.closed && (extra || (arg.is_some() && r.arg.is_none())))
    }
}

impl World {
    /// Whether a governing envelope puts tool request `q`'s tool above r1's clearance,
    /// computed without the packs.
    fn tool_above_clearance(&self, q: usize) -> bool {
        let (tool, _, _, _) = self.tool_requests[q];
        let governing = self.governing();
        self.tool_levels.iter().any(|&(e, p, l)| {
            governing.contains(&e)
                && compile_glob(TOOL_PATTERNS[p])
                    .unwrap()
                    .is_match(TOOLS[tool])
                && l > self.clearance
        })
    }
}

fn fact_set(facts: &[Fact]) -> FactSet {
    let mut set = FactSet::new();
    for f in facts {
        set.add(f.relation.clone(), f.values.clone(), "generated");
    }
    set
}

fn evaluate(facts: &[Fact]) -> Model {
    program()
        .materialise(&fact_set(facts), &Limits::default())
        .unwrap()
}

/// Each request's effects in a decision relation.
fn effects(model: &Model, relation: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in model.relation(relation).unwrap() {
        out.entry(row[0].to_string())
            .or_default()
            .insert(row[1].to_string());
    }
    out
}

/// Each request's rows in a decision relation: (effect, rule).
fn decisions(model: &Model, relation: &str) -> BTreeMap<String, BTreeSet<(String, String)>> {
    let mut out: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for row in model.relation(relation).unwrap() {
        out.entry(row[0].to_string())
            .or_default()
            .insert((row[1].to_string(), row[2].to_string()));
    }
    out
}

fn severity(effect: &str) -> u8 {
    match effect {
        "allow" => 0,
        "require_approval" => 1,
        "rate_limited" => 2,
        _ => 3,
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_request_gets_exactly_one_effect(w in world()) {
        let model = evaluate(&w.facts());
        for (relation, count) in [
            ("tool_decision", w.tool_requests.len()),
            ("context_decision", w.context_requests.len()),
            ("model_decision", w.model_requests.len()),
        ] {
            let got = effects(&model, relation);
            prop_assert_eq!(got.len(), count, "{} decided {:?}", relation, got);
            for (req, effs) in &got {
                prop_assert_eq!(effs.len(), 1, "{} {}: {:?}", relation, req, effs);
            }
        }
    }

    #[test]
    fn deny_overrides_allow_and_ungoverned_requests_are_denied(w in world()) {
        let model = evaluate(&w.facts());
        let got = effects(&model, "tool_decision");
        for q in 0..w.tool_requests.len() {
            let effect = got[&format!("q{q}")].iter().next().unwrap().clone();
            let denied = w.tool_rules.iter().any(|r| {
                TOOL_EFFECTS[r.effect] == "deny" && w.tool_rule_applies(r, q)
            });
            if denied || w.tool_above_clearance(q) || w.governing().is_empty() {
                prop_assert_eq!(effect, "deny", "q{}", q);
            }
        }
    }

    #[test]
    fn an_allow_is_always_by_an_allow_rule_that_applies(w in world()) {
        // Applies: tool pattern, the `/path` condition, and a closed rule's `/path`-only.
        let model = evaluate(&w.facts());
        let got = effects(&model, "tool_decision");
        for q in 0..w.tool_requests.len() {
            if got[&format!("q{q}")].contains("allow") {
                let by = w.tool_rules.iter().any(|r| {
                    TOOL_EFFECTS[r.effect] == "allow" && w.tool_rule_applies(r, q)
                });
                prop_assert!(by, "q{} allowed by no rule that applies", q);
            }
        }
    }

    #[test]
    fn a_tool_level_only_forbids_calls_above_the_clearance(w in world()) {
        let with = decisions(&evaluate(&w.facts()), "tool_decision");
        let mut bare = w.clone();
        bare.tool_levels.clear();
        let without = decisions(&evaluate(&bare.facts()), "tool_decision");
        let forbid = ("deny".to_string(), "clearance-forbid".to_string());
        for q in 0..w.tool_requests.len() {
            let req = format!("q{q}");
            if w.tool_above_clearance(q) {
                // Denied by clearance-forbid, alongside any deny rule that also applies; a
                // default denial gives way to it.
                let mut expected: BTreeSet<(String, String)> = without[&req]
                    .iter()
                    .filter(|(e, r)| e == "deny" && r != "default-deny" && r != "no-envelope")
                    .cloned()
                    .collect();
                expected.insert(forbid.clone());
                prop_assert_eq!(&with[&req], &expected, "{}", req);
            } else {
                // Below the clearance a level changes nothing: it neither permits nor takes
                // part in the intersection.
                prop_assert_eq!(&with[&req], &without[&req], "{}", req);
            }
        }
    }

    #[test]
    fn a_child_never_widens_what_its_parents_decide(
        w in world(),
        child_rules in prop::collection::vec(tool_rule(1), 0..4),
        child_levels in prop::collection::vec((0..TOOL_PATTERNS.len(), 0..LEVELS.len()), 0..2),
        parent in 0..ENVS,
    ) {
        // Only where some governing envelope has tool rules (otherwise nothing constrains and
        // default deny is all there is): give the agent's envelope one if none has.
        let mut w = w;
        let governing = w.governing();
        if !w.tool_rules.iter().any(|r| governing.contains(&r.env)) {
            w.attached.push((0, 1));
            w.tool_rules.push(ToolRule { env: 0, pattern: 3, effect: 0, arg: None, closed: false, limit: 0 });
        }
        let before = effects(&evaluate(&w.facts()), "tool_decision");
        let mut facts = w.facts();
        let child = "child";
        facts.push(fact("envelope_attached", vec![s(child), s("run"), s("r1")]));
        facts.push(fact("envelope_extends", vec![s(child), s(&env(parent))]));
        for (i, r) in child_rules.iter().enumerate() {
            facts.push(fact(
                "tool_rule",
                vec![
                    s(child),
                    s(&format!("child/{i}")),
                    s(TOOL_EFFECTS[r.effect]),
                    s(TOOL_PATTERNS[r.pattern]),
                ],
            ));
        }
        for (i, &(p, l)) in child_levels.iter().enumerate() {
            facts.push(fact(
                "tool_level",
                vec![
                    s(child),
                    s(&format!("child/level-{i}")),
                    s(TOOL_PATTERNS[p]),
                    s(LEVELS[l]),
                ],
            ));
        }
        let after = effects(&evaluate(&facts), "tool_decision");
        for (req, effs) in &before {
            let old = severity(effs.iter().next().unwrap());
            let new = severity(after[req].iter().next().unwrap());
            prop_assert!(new >= old, "{}: {:?} became {:?}", req, effs, after[req]);
        }
    }

    #[test]
    fn fact_order_never_matters_and_staged_queries_agree(w in world(), seed in any::<u64>()) {
        let facts = w.facts();
        let plain = evaluate(&facts).outputs();
        let mut shuffled = facts.clone();
        // A seeded Fisher-Yates shuffle.
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        prop_assert_eq!(evaluate(&shuffled).outputs().hash(), plain.hash());
        let (request, fixed): (Vec<Fact>, Vec<Fact>) = facts
            .into_iter()
            .partition(|f| REQUEST_RELATIONS.contains(&f.relation.as_str()));
        let model = evaluate(&fixed);
        let answer = model.query(&fact_set(&request), &Limits::default()).unwrap();
        prop_assert_eq!(answer.outputs(), plain);
    }
}
