use super::*;
use crate::store::tests::tempdir::Dir;

/// A codebase of `files` (path, text) in a fresh folder.
fn codebase(files: &[(&str, &str)]) -> Dir {
    let dir = Dir::new("cover");
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

const APP: &str = r#"
from agents import Agent, function_tool
from .clients import fetch, send
import subprocess, tools_registry

@function_tool
def lookup(order_id: str, verbose: bool = False) -> dict:
    """Look up an order.

    Read only."""
    return fetch(order_id)

@function_tool(name_override="refund")
def refund(order_id: str, *extra, **options) -> str:
    send(order_id)
    subprocess.run("make deploy", shell=True)
    handler = tools_registry.pick(order_id)
    handlers[order_id](order_id)
    return "ok"

billing = Agent(name="Billing", model="gpt-4.1", tools=[refund])
triage = Agent(name="Triage", model="gpt-4.1-mini", tools=[lookup, built_later()], handoffs=[billing])
"#;

const CLIENTS: &str = r#"
import httpx, requests

def fetch(order_id):
    return _get(f"https://api.shop.example/orders/{order_id}")

def _get(url):
    return httpx.get(url)

def send(order_id):
    with requests.Session() as s:
        return s.post("https://payments.example/refunds", json={"id": order_id})
"#;

fn support() -> Dir {
    codebase(&[
        ("support/__init__.py", ""),
        ("support/app.py", APP),
        ("support/clients.py", CLIENTS),
    ])
}

#[test]
fn agents_tools_and_effects_followed_through_the_code() {
    let dir = support();
    let r = inspect(dir.path(), "support.app:triage").unwrap();
    assert_eq!(r.schema, REPORT_SCHEMA);
    assert_eq!(
        (r.entrypoint.kind.as_str(), r.entrypoint.at.line),
        ("agent", 22)
    );
    assert_eq!(r.frameworks, ["openai_agents"]);
    let triage = r
        .agents
        .iter()
        .find(|a| a.id == "support.app:triage")
        .unwrap();
    assert_eq!(triage.model.as_deref(), Some("gpt-4.1-mini"));
    assert_eq!(triage.tools, ["support.app:lookup"]);
    assert_eq!(triage.handoffs, ["support.app:billing"]);
    // Reached through the handoff.
    assert!(r.agents.iter().all(|a| a.reachable));

    let lookup = r.tools.iter().find(|t| t.name == "lookup").unwrap();
    assert_eq!(
        lookup.description.as_deref(),
        Some("Look up an order.\n\nRead only.")
    );
    assert_eq!(lookup.parameters.len(), 2);
    assert_eq!(lookup.parameters[1].ty.as_deref(), Some("bool"));
    assert!(!lookup.parameters[1].required);
    assert_eq!(lookup.agents, ["support.app:triage"]);
    assert_eq!(lookup.classification, "read_only");
    let get = &lookup.effects[0];
    // The URL is the caller's literal only when it reaches the call as one: here it is a
    // parameter, so no target is claimed.
    assert_eq!(
        (get.kind.as_str(), get.call.as_str()),
        ("http", "httpx.get")
    );
    assert_eq!(get.target, None);
    assert_eq!(get.via, ["support.clients:fetch", "support.clients:_get"]);
    assert_eq!(
        (get.at.file.as_str(), get.at.line),
        ("support/clients.py", 8)
    );

    let refund = r
        .tools
        .iter()
        .find(|t| t.id == "support.app:refund")
        .unwrap();
    assert_eq!(refund.name, "refund");
    assert_eq!(refund.classification, "executes");
    let names: Vec<&str> = refund.parameters.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["order_id", "*extra", "**options"]);
    let post = refund.effects.iter().find(|e| e.kind == "http").unwrap();
    assert_eq!(post.operation.as_deref(), Some("POST"));
    assert_eq!(
        post.target.as_deref(),
        Some("https://payments.example/refunds")
    );
    assert_eq!(post.call, "requests.Session.post");
    let shell = refund.effects.iter().find(|e| e.kind == "process").unwrap();
    assert_eq!(shell.operation.as_deref(), Some("shell"));
    assert_eq!(shell.target.as_deref(), Some("make deploy"));

    // What could not be resolved is said, never guessed.
    let unknown: Vec<&str> = r.unknowns.iter().map(|u| u.what.as_str()).collect();
    assert!(
        unknown
            .iter()
            .any(|w| w.contains("a tool of `support.app:triage`")),
        "{unknown:?}"
    );
    assert!(
        unknown.iter().any(|w| w.contains("handlers[order_id]")),
        "{unknown:?}"
    );
}

#[test]
fn the_same_code_gives_the_same_report() {
    let dir = support();
    let a = serde_json::to_string(&inspect(dir.path(), "support.app:triage").unwrap()).unwrap();
    let b = serde_json::to_string(&inspect(dir.path(), "support.app:triage").unwrap()).unwrap();
    assert_eq!(a, b);
    let back = read_report(&a).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), a);
    assert!(
        read_report(r#"{"schema": "tollgate.cover/v0"}"#)
            .unwrap_err()
            .contains("v0")
    );
}

#[test]
fn an_entrypoint_not_found_lists_the_candidates() {
    let dir = support();
    let e = inspect(dir.path(), "support.ap:triage")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no module `support.ap`") && e.contains("support.app"),
        "{e}"
    );
    let e = inspect(dir.path(), "support.app:nobody")
        .unwrap_err()
        .to_string();
    assert!(e.contains("billing, lookup, refund, triage"), "{e}");
    // Imports are not offered as candidates.
    assert!(!e.contains("Agent"), "{e}");
    let e = inspect(dir.path(), "support/app.py")
        .unwrap_err()
        .to_string();
    assert!(e.contains("module:object"), "{e}");
    let e = inspect(&dir.path().join("nowhere"), "a:b")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot inspect"), "{e}");
}

#[test]
fn a_file_that_does_not_parse_is_reported_and_inspection_goes_on() {
    let dir = support();
    std::fs::write(
        dir.path().join("support/broken.py"),
        "x = 1\n\ndef f(:\n    pass\n",
    )
    .unwrap();
    let r = inspect(dir.path(), "support.app:triage").unwrap();
    assert_eq!(r.parse_errors.len(), 1);
    assert_eq!(
        (
            r.parse_errors[0].at.file.as_str(),
            r.parse_errors[0].at.line
        ),
        ("support/broken.py", 3)
    );
    assert_eq!((r.files.python, r.files.parsed), (4, 3));
    assert_eq!(r.tools.len(), 2);
    let e = inspect(dir.path(), "support.broken:x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not parse"), "{e}");
}

#[test]
fn loops_binaries_and_paths_outside_are_skipped_and_counted() {
    let dir = support();
    let outside = Dir::new("cover-outside");
    std::fs::write(outside.path().join("secret.py"), "import os\n").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.path().join("support"), dir.path().join("support/loop"))
            .unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.py"),
            dir.path().join("support/secret.py"),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("support/blob.py"), b"\x00\x01binary").unwrap();
    let big = "x = 1\n".repeat((MAX_FILE_BYTES / 6 + 1) as usize);
    std::fs::write(dir.path().join("support/huge.py"), big).unwrap();
    let r = inspect(dir.path(), "support.app:triage").unwrap();
    let s = &r.files.skipped;
    assert_eq!((s.binary, s.oversized), (1, 1));
    #[cfg(unix)]
    assert_eq!((s.symlink_loop, s.outside_root), (1, 1));
    assert_eq!(r.files.python, 3);
}

#[test]
fn module_names_come_from_paths() {
    assert_eq!(files::module_of("a/b/c.py").as_deref(), Some("a.b.c"));
    assert_eq!(files::module_of("a/b/__init__.py").as_deref(), Some("a.b"));
    assert_eq!(files::module_of("my-script.py"), None);
    assert_eq!(files::module_of("a/README.md"), None);
}

#[test]
fn draft_envelopes_follow_the_effects_and_load() {
    let dir = codebase(&[(
        "app.py",
        r#"
import httpx, subprocess
from agents import Agent, function_tool

@function_tool
def fetch(url: str) -> str:
    httpx.get("https://status.example.com/health")
    return httpx.get(url).text

@function_tool
def browse(path: str) -> str:
    return open(path).read()

@function_tool
def save(path: str, text: str) -> None:
    open(path, "w").write(text)

@function_tool
def run(cmd: str) -> str:
    return subprocess.run(cmd, shell=True).stdout

helper = Agent(name="Helper", tools=[fetch, browse, save, run])
"#,
    )]);
    let r = inspect(dir.path(), "app:helper").unwrap();
    let drafts = envelope::drafts(&r);
    assert_eq!(drafts.len(), 1);
    let d = &drafts[0];
    assert_eq!(
        (d.id.as_str(), d.file.as_str()),
        ("cover-app-helper", "cover-app-helper.yaml")
    );
    let set = tollgate_rules::envelope::load_envelopes(&[(d.file.as_str(), d.text.as_str())])
        .unwrap_or_else(|e| panic!("{e}\n{}", d.text));
    assert_eq!(set.len(), 1);
    let text = &d.text;
    // Read-only, narrowed to the host the tool's code names.
    assert!(text.contains("  - id: fetch\n    effect: allow\n    tools: [\"fetch\"]\n    args:\n      /url: {url: \"https://status.example.com/**\"}\n"), "{text}");
    // Read-only with nothing literal to narrow to: said, not guessed.
    assert!(text.contains("  - id: browse\n    effect: allow\n    tools: [\"browse\"]\n    # `path` goes unchanged to open file: narrow it"), "{text}");
    assert!(
        text.contains("  - id: save\n    effect: require_approval\n"),
        "{text}"
    );
    assert!(text.contains("  - id: run\n    effect: deny\n"), "{text}");
    // Each rule says where it came from.
    assert!(
        text.contains("# `save` (app:save) at app.py:14: mutating"),
        "{text}"
    );
    assert!(
        text.contains("#   process subprocess.run shell (from `cmd`) at app.py:20"),
        "{text}"
    );
}

#[test]
fn hostile_nesting_is_refused_or_read_to_a_bound_never_a_crash() {
    let deep_prefix = format!("x = {}1\n", "-".repeat(200_000));
    let deep_brackets = format!("y = {}{}\n", "[".repeat(5_000), "]".repeat(5_000));
    // Postfix chains and operator chains the parser reads in a loop: deep trees, read to a bound
    // and dropped on the inspection's own stack.
    let chain = format!(
        "from agents import function_tool\nimport requests\n\n@function_tool\ndef calls(u: str) -> str:\n    return f{}\n\n@function_tool\ndef hidden(u: str) -> str:\n    return {}requests.post(u){}\n\n@function_tool\ndef adds(u: str) -> int:\n    return 1{}\n\nagent = 1\n",
        "()".repeat(150_000),
        "[".repeat(300),
        "]".repeat(300),
        " + 1".repeat(150_000),
    );
    let dir = codebase(&[
        ("app/__init__.py", ""),
        ("app/prefix.py", &deep_prefix),
        ("app/brackets.py", &deep_brackets),
        ("app/main.py", &chain),
    ]);
    let report = inspect(dir.path(), "app.main:agent").unwrap();
    let faults: Vec<&str> = report
        .parse_errors
        .iter()
        .map(|f| f.at.file.as_str())
        .collect();
    assert_eq!(faults, ["app/brackets.py", "app/prefix.py"], "{report:#?}");
    assert!(
        report.parse_errors[0]
            .message
            .contains("more than the 1000 cover parses"),
        "{}",
        report.parse_errors[0].message
    );
    // `hidden` wraps its POST in 300 lists: more than the inspection reads, so the tool is
    // taken to run code (fail closed), with an unknown saying why.
    let hidden = report.tools.iter().find(|t| t.name == "hidden").unwrap();
    assert_eq!(hidden.classification, "executes", "{hidden:#?}");
    assert!(hidden.effects.iter().any(|e| e.kind == "unknown"));
    assert!(
        report
            .unknowns
            .iter()
            .any(|u| u.what.contains("nested deeper"))
    );
    let calls = report.tools.iter().find(|t| t.name == "calls").unwrap();
    assert_eq!(calls.classification, "executes", "{calls:#?}");
}

#[test]
fn nesting_is_counted_from_tokens() {
    assert_eq!(index::nesting_beyond("x = ((1))\n", 10), None);
    assert_eq!(index::nesting_beyond("x = ((((1))))\n", 3), Some(4));
    // Brackets in strings and comments are not nesting.
    assert_eq!(
        index::nesting_beyond("x = '((((((('  # ((((((((\n", 3),
        None
    );
    assert_eq!(index::nesting_beyond("x = - - - - 1\n", 3), Some(4));
    assert_eq!(
        index::nesting_beyond("f = lambda: lambda: lambda: lambda: 1\n", 3),
        Some(4)
    );
    // A statement per line: `else` counts within one logical line only.
    let ifs = "if a:\n    pass\nelse:\n    pass\n".repeat(10);
    assert_eq!(index::nesting_beyond(&ifs, 3), None);
}

#[test]
fn methods_of_the_codebase_classes_are_followed() {
    let dir = codebase(&[
        ("svc/__init__.py", ""),
        (
            "svc/client.py",
            "import httpx, requests\n\nclass Client:\n    def fetch(self, item: str) -> dict:\n        return httpx.get(\"https://svc.example/items\").json()\n\n    def create(self, payload: dict) -> dict:\n        return self._send(payload)\n\n    def _send(self, payload: dict) -> dict:\n        return requests.post(\"https://svc.example/items\", json=payload).json()\n",
        ),
        (
            "svc/app.py",
            "from agents import Agent, function_tool\nfrom svc.client import Client\n\n@function_tool\ndef lookup(item: str) -> dict:\n    \"\"\"Look up.\"\"\"\n    return Client().fetch(item)\n\n@function_tool\ndef create(name: str) -> dict:\n    \"\"\"Create.\"\"\"\n    client = Client()\n    return client.create({\"name\": name})\n\nagent = Agent(name=\"A\", tools=[lookup, create])\n",
        ),
    ]);
    let report = inspect(dir.path(), "svc.app:agent").unwrap();
    let lookup = report.tools.iter().find(|t| t.name == "lookup").unwrap();
    assert_eq!(lookup.classification, "read_only", "{lookup:#?}");
    assert_eq!(lookup.effects[0].via, ["svc.client:Client.fetch"]);
    let create = report.tools.iter().find(|t| t.name == "create").unwrap();
    assert_eq!(create.classification, "mutating", "{create:#?}");
    assert_eq!(
        create.effects[0].via,
        ["svc.client:Client.create", "svc.client:Client._send"]
    );
    assert_eq!(create.effects[0].call, "requests.post");
}
