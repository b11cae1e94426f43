//! Several gateways, one database (issue 38): `tollgate serve` processes started as a team
//! would behind a load balancer, each on the same store (the same SQLite file, or with
//! `TOLLGATE_TEST_ENGINE=postgres` the same PostgreSQL schema), behave as one gateway. Each
//! test spreads its requests over the gateways and checks what one gateway promises.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use serde_json::json;
use support::dashboard::{cookie_of, get_page, header, send};
use support::{Gateway, root, stderr, stdout};

/// The same token key on every gateway: tokens made through one verify on all.
const TOKEN_KEY: &str = support::CLUSTER_TOKEN_KEY;

fn envelopes() -> Vec<String> {
    vec![
        "--envelopes".into(),
        root().join("fixtures/envelopes").display().to_string(),
    ]
}

/// `n` gateways on one store, the first made fresh, with the fixture envelopes.
fn cluster(n: usize) -> Vec<Gateway> {
    let args = envelopes();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    support::cluster(n, &[("TOLLGATE_TOKEN_KEY", TOKEN_KEY)], &args)
}

#[test]
fn a_dashboard_login_on_one_gateway_is_a_session_on_every_gateway() {
    let gws = cluster(3);
    // The login URL the first gateway printed, opened through the second (a load balancer
    // sends the browser anywhere).
    let path = gws[0]
        .dashboard_url
        .split_once("/ui/")
        .map(|(_, rest)| format!("/ui/{rest}"))
        .unwrap();
    let (status, headers, _) = send(&gws[1], "GET", &path, None, &[]);
    assert_eq!(
        status, 303,
        "the first gateway's login token works on the second"
    );
    let cookie = cookie_of(&headers);
    for gw in &gws {
        let (status, _) = get_page(gw, &cookie, "/ui/runs");
        assert_eq!(status, 200, "the session works on {}", gw.base);
    }
    // Spent on the second: the first no longer takes it.
    let (status, _, _) = send(&gws[0], "GET", &path, None, &[]);
    assert_eq!(status, 401, "a one-time token is spent on every gateway");

    // A logout on the third ends the session everywhere.
    let (_, page) = get_page(&gws[2], &cookie, "/ui/runs");
    let csrf = support::dashboard::csrf_of(&page);
    let (status, _, _) = send(
        &gws[2],
        "POST",
        "/ui/logout",
        Some(&format!("csrf={csrf}")),
        &[("Cookie", &cookie)],
    );
    assert_eq!(status, 303);
    for gw in &gws {
        let (status, headers, _) = send(gw, "GET", "/ui/runs", None, &[("Cookie", &cookie)]);
        assert_eq!(status, 303, "logged out on {}", gw.base);
        assert_eq!(header(&headers, "location"), Some("/ui/login"));
    }
}

#[test]
fn tool_calls_of_one_run_spread_over_gateways_keep_its_chain_linear() {
    let gws = cluster(3);
    let (status, body) = gws[0].call(
        "POST",
        "/v1/runs",
        Some(&json!({"id": "spread", "agent": "coder", "task": "T-12",
                     "scope": "org:acme/repo:api/task:T-12", "clearance": "internal"})),
    );
    assert_eq!(status, 201, "{body}");
    const EACH: usize = 25;
    let bodies = [
        json!({"tool": "fs.read_file", "arguments": {"path": "src/lib.rs"}}),
        json!({"tool": "shell.rm", "arguments": {"path": "/"}}),
        json!({"tool": "net.upload"}),
    ];
    let receipts: Vec<(u64, String)> = std::thread::scope(|threads| {
        let clients: Vec<_> = gws
            .iter()
            .flat_map(|gw| [gw, gw])
            .enumerate()
            .map(|(c, gw)| {
                let bodies = &bodies;
                threads.spawn(move || {
                    (0..EACH)
                        .map(|i| {
                            let (status, answer) = gw.call(
                                "POST",
                                "/v1/runs/spread/tool-calls",
                                Some(&bodies[(c + i) % bodies.len()]),
                            );
                            assert_eq!(status, 200, "{}: {answer}", gw.base);
                            let receipt = &answer["receipt"];
                            (
                                receipt["seq"].as_u64().unwrap(),
                                receipt["hash"].as_str().unwrap().to_string(),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });
    let mut seqs: Vec<u64> = receipts.iter().map(|(s, _)| *s).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), receipts.len(), "no two answers got one seq");
    let out = gws[0].tollgate(&["runs", "verify", "spread"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let stored: std::collections::HashMap<u64, String> = support::store_in(gws[0].dir.path())
        .read(|c| {
            c.prepare("SELECT seq, hash FROM events WHERE run_id = 'spread'")?
                .query_map((), |r| Ok((r.get::<i64>(0)? as u64, r.get::<String>(1)?)))?
                .collect()
        })
        .unwrap();
    for (seq, hash) in &receipts {
        assert_eq!(
            stored.get(seq),
            Some(hash),
            "answered seq {seq} is stored as answered"
        );
    }
}

/// `coding-agent` at version 3: reading files denied (version 2 allows it).
fn reads_denied() -> String {
    let v2 = std::fs::read_to_string(root().join("fixtures/envelopes/coding-agent.yaml")).unwrap();
    let v3 = v2.replacen("version: 2", "version: 3", 1).replacen(
        "  - id: read-only\n    effect: allow",
        "  - id: read-only\n    effect: deny",
        1,
    );
    assert_ne!(v2, v3);
    v3
}

/// The effect of reading a file in `run`, asked of `gw`.
fn read_effect(gw: &Gateway, run: &str) -> String {
    let (status, answer) = gw.call(
        "POST",
        &format!("/v1/runs/{run}/tool-calls"),
        Some(&json!({"tool": "fs.read_file", "arguments": {"path": "src/lib.rs"}})),
    );
    assert_eq!(status, 200, "{}: {answer}", gw.base);
    answer["decision"]["effect"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string()
}

fn open(gw: &Gateway, run: &str) {
    let (status, body) = gw.call(
        "POST",
        "/v1/runs",
        Some(&json!({"id": run, "agent": "coder", "task": "T-12",
                     "scope": "org:acme/repo:api/task:T-12", "clearance": "internal"})),
    );
    assert_eq!(status, 201, "{body}");
}

/// What each gateway keeps of policy in memory (the envelope set in force, each run's engine)
/// follows a change made through another at once: a version stored on A governs the next run
/// opened on B, and a run re-pinned on A is decided on B under its new versions by the very
/// next call, though B had its engine cached.
#[test]
fn an_envelope_stored_or_a_run_repinned_on_one_gateway_governs_the_next_decision_on_another() {
    let gws = cluster(2);
    let (a, b) = (&gws[0], &gws[1]);
    open(b, "before");
    assert_eq!(read_effect(b, "before"), "allow", "version 2 allows reads");

    let auth = format!("Bearer {}", a.token);
    let (status, text) = a.raw(
        "POST",
        "/v2/policies/envelopes",
        Some(reads_denied()),
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/yaml"),
        ],
    );
    assert_eq!(status, 201, "{text}");

    // A run opened on B right after: under version 3.
    open(b, "after");
    assert_eq!(
        read_effect(b, "after"),
        "deny",
        "B opened the run under version 3"
    );
    // The run opened before stays on version 2 (runs are pinned), on either gateway.
    assert_eq!(read_effect(b, "before"), "allow");
    assert_eq!(read_effect(a, "before"), "allow");

    // Re-pinned on A; B, its engine cached, decides under version 3 from its next call.
    let (status, body) = a.call("POST", "/v1/runs/before/repin", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["changed"], true, "{body}");
    assert_eq!(read_effect(b, "before"), "deny", "B saw the re-pin at once");
    let out = a.tollgate(&["runs", "verify", "before"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

/// An agent token made through gateway A, as `POST /v1/tokens` answers it: `(text, id)`.
fn agent_token(a: &Gateway, name: &str) -> (String, String) {
    let (status, made) = a.call(
        "POST",
        "/v1/tokens",
        Some(&json!({"kind": "agent", "name": name})),
    );
    assert_eq!(status, 201, "{made}");
    (
        made["token"].as_str().unwrap().to_string(),
        made["record"]["id"].as_str().unwrap().to_string(),
    )
}

/// Gateway B keeps the tokens its tool calls were admitted with (`auth::verified`): a token
/// revoked through gateway A is refused by B's very next tool call, though B verified it
/// before, and nothing is recorded for it, nor is any other answer given to it; a token still
/// live, kept by B from before the revocation, is read again and its call recorded.
#[test]
fn a_token_revoked_on_one_gateway_is_refused_by_the_next_tool_call_on_another_that_kept_it() {
    let gws = cluster(2);
    let (a, b) = (&gws[0], &gws[1]);
    open(a, "kept");
    let (revoked, id) = agent_token(a, "coder");
    let (live, _) = agent_token(a, "coder");
    let call = json!({"tool": "fs.read_file", "arguments": {"path": "src/lib.rs"}});
    for token in [&revoked, &live, &revoked, &live] {
        let (status, answer) = b.call_as(token, "POST", "/v1/runs/kept/tool-calls", Some(&call));
        assert_eq!(status, 200, "{answer}");
    }
    let events = |gw: &Gateway| {
        let (status, run) = gw.call("GET", "/v1/runs/kept", None);
        assert_eq!(status, 200, "{run}");
        run["summary"]["events"]
            .as_u64()
            .unwrap_or_else(|| panic!("{run}"))
    };
    let before = events(a);

    let (status, body) = a.call("POST", &format!("/v1/tokens/{id}/revoke"), None);
    assert_eq!(status, 200, "{body}");
    // Answers that no write checks (a run that does not exist, a body refused) do not reach
    // the revoked token either, though B still keeps it.
    let (status, probe) = b.call_as(&revoked, "POST", "/v1/runs/nope/tool-calls", Some(&call));
    assert_eq!(status, 401, "not a 404 for a revoked token: {probe}");
    let (status, probe) = b.call_as(
        &revoked,
        "POST",
        "/v1/runs/kept/tool-calls",
        Some(&json!({"tool": ""})),
    );
    assert_eq!(status, 401, "not a 422 for a revoked token: {probe}");
    let (status, refused) = b.call_as(&revoked, "POST", "/v1/runs/kept/tool-calls", Some(&call));
    assert_eq!(
        status, 401,
        "B refuses the revoked token it had kept: {refused}"
    );
    assert_eq!(refused["error"]["code"], "unauthorized", "{refused}");
    assert_eq!(
        events(a),
        before,
        "nothing was recorded for the refused call"
    );

    let (status, answer) = b.call_as(&live, "POST", "/v1/runs/kept/tool-calls", Some(&call));
    assert_eq!(
        status, 200,
        "the live token is read again and admitted: {answer}"
    );
    assert_eq!(answer["effect"], "allow", "{answer}");
    assert_eq!(events(a), before + 2, "its call and decision are recorded");
    let out = a.tollgate(&["runs", "verify", "kept"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

/// A long poll on gateway B for an approval decided through gateway A ends promptly: B's
/// watcher reads the store's count of approval changes every 20 ms while a wait is open (the
/// waits look again every 250 ms on their own, which alone would answer 125 ms late on
/// average, and more than 100 ms in most rounds). Twenty rounds; on a quiet machine all
/// answer within 25 ms, and at most three may be slower than 100 ms, so a loaded CI machine's
/// stalls do not fail it.
#[test]
fn an_approval_decided_on_one_gateway_wakes_a_long_poll_on_another_at_once() {
    let gws = cluster(2);
    let (a, b) = (&gws[0], &gws[1]);
    let lead = support::team_lead(a);
    open(a, "gated");
    let mut late = Vec::new();
    for round in 0..20 {
        let (status, gated) = a.call(
            "POST",
            "/v1/runs/gated/tool-calls",
            Some(
                &json!({"tool": "fs.write_file", "arguments": {"path": format!("src/{round}.rs")}}),
            ),
        );
        assert_eq!(status, 200, "{gated}");
        assert_eq!(gated["effect"], "require_approval", "{gated}");
        let id = gated["approval"]["id"].as_str().unwrap().to_string();
        let answered = std::thread::scope(|threads| {
            let waiter = threads.spawn(|| {
                let (status, answer) = b.call("GET", &format!("/v1/approvals/{id}?wait=20"), None);
                (status, answer, std::time::Instant::now())
            });
            // The wait is open on B before the decision.
            std::thread::sleep(std::time::Duration::from_millis(150));
            let (status, body) = a.call_as(
                &lead,
                "POST",
                &format!("/v2/policies/approvals/{id}"),
                Some(&json!({"decision": "approve"})),
            );
            assert_eq!(status, 200, "{body}");
            let decided = std::time::Instant::now();
            let (status, answer, at) = waiter.join().unwrap();
            assert_eq!(status, 200, "{answer}");
            assert_eq!(answer["state"], "approved", "{answer}");
            at.saturating_duration_since(decided)
        });
        late.push(answered);
    }
    late.sort();
    eprintln!("a decision on A to the answer on B, sorted: {late:?}");
    assert!(
        late[late.len() - 4] < std::time::Duration::from_millis(100),
        "more than three of 20 long polls answered later than 100 ms: {late:?}"
    );
}

/// What one gateway counts it counts across all: `coding-agent`'s `web-budget` lets a run make
/// 30 `http.get` calls an hour, and 48 asked at once through three gateways get exactly 30
/// allowed; an approval presented through three gateways at once lets exactly one call go.
#[test]
fn a_rate_limit_and_an_approval_hold_across_gateways() {
    let gws = cluster(3);
    open(&gws[0], "limited");
    let effects: Vec<String> = std::thread::scope(|threads| {
        let calls: Vec<_> = (0..48)
            .map(|i| {
                let gw = &gws[i % gws.len()];
                threads.spawn(move || {
                    let (status, answer) = gw.call(
                        "POST",
                        "/v1/runs/limited/tool-calls",
                        Some(&json!({"tool": "http.get", "call_id": format!("c{i}"),
                                     "arguments": {"url": "https://a.example/"}})),
                    );
                    assert_eq!(status, 200, "{answer}");
                    answer["effect"].as_str().unwrap().to_string()
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let count = |effect: &str| effects.iter().filter(|e| *e == effect).count();
    assert_eq!(count("allow"), 30, "{effects:?}");
    assert_eq!(count("rate_limited"), 18, "{effects:?}");

    let lead = support::team_lead(&gws[0]);
    let call = json!({"tool": "shell.exec", "arguments": {"cmd": "make test"}});
    let (status, gated) = gws[1].call("POST", "/v1/runs/limited/tool-calls", Some(&call));
    assert_eq!(status, 200, "{gated}");
    let id = gated["approval"]["id"].as_str().unwrap().to_string();
    let (status, body) = gws[2].call_as(
        &lead,
        "POST",
        &format!("/v2/policies/approvals/{id}"),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 200, "{body}");
    let with_approval = json!({"tool": "shell.exec", "arguments": {"cmd": "make test"},
                               "approval_id": id});
    let answers: Vec<(u16, serde_json::Value)> = std::thread::scope(|threads| {
        let uses: Vec<_> = gws
            .iter()
            .map(|gw| {
                let body = &with_approval;
                threads.spawn(move || gw.call("POST", "/v1/runs/limited/tool-calls", Some(body)))
            })
            .collect();
        uses.into_iter().map(|u| u.join().unwrap()).collect()
    });
    let allowed = answers
        .iter()
        .filter(|(status, a)| *status == 200 && a["effect"] == "allow")
        .count();
    assert_eq!(allowed, 1, "the approval is used once: {answers:?}");
    assert!(
        answers
            .iter()
            .all(|(status, a)| (*status == 200 && a["effect"] == "allow") || *status == 409),
        "{answers:?}"
    );
}

/// Behind a load balancer, clients name the balancer's host, at its port: a gateway started
/// with `--allow-host NAME` answers to NAME at any port, and still refuses every other host
/// and origin. A name that is not a bare host name stops the start with how to write it.
#[test]
fn a_gateway_behind_a_load_balancer_answers_to_the_name_it_is_given() {
    let gw = Gateway::start_args(&[], &["--allow-host", "tollgate.internal"]);
    let auth = format!("Bearer {}", gw.token);
    for host in [
        "tollgate.internal",
        "tollgate.internal:443",
        "Tollgate.Internal:8080",
    ] {
        let (status, body) = gw.call_with(
            "GET",
            "/v1/runs",
            None,
            &[("Host", host), ("Authorization", &auth)],
        );
        assert_eq!(status, 200, "{host}: {body}");
    }
    let (status, body) = gw.call_with(
        "GET",
        "/v1/runs",
        None,
        &[
            ("Origin", "https://tollgate.internal"),
            ("Authorization", &auth),
        ],
    );
    assert_eq!(status, 200, "{body}");
    for (header, value) in [
        ("Host", "evil.example"),
        ("Host", "tollgate.internal.evil.example"),
        ("Origin", "https://evil.example"),
    ] {
        let (status, body) = gw.call_with(
            "GET",
            "/v1/runs",
            None,
            &[(header, value), ("Authorization", &auth)],
        );
        assert_eq!(status, 403, "{header}: {value}: {body}");
    }
    // The dashboard login URL it prints names that host, not the address it listens on, and
    // logs in through it (a gateway behind the balancer spends the stored token).
    let port = gw.base.rsplit(':').next().unwrap();
    let prefix = format!("http://tollgate.internal:{port}/ui/login?token=");
    assert!(
        gw.dashboard_url.starts_with(&prefix),
        "{}",
        gw.dashboard_url
    );
    let path = &gw.dashboard_url[gw.dashboard_url.find("/ui/").unwrap()..];
    let (status, headers, _) =
        support::dashboard::send(&gw, "GET", path, None, &[("Host", "tollgate.internal")]);
    assert_eq!(status, 303, "{headers:?}");
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "set-cookie" && v.contains("HttpOnly")),
        "{headers:?}"
    );
    let dir = support::TempDir::new("gateway");
    let out = support::with_store(
        &mut std::process::Command::new(env!("CARGO_BIN_EXE_tollgate")),
        dir.path(),
    )
    .current_dir(dir.path())
    .args([
        "serve",
        "--port",
        "0",
        "--allow-host",
        "https://tollgate.internal",
    ])
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not a host name") && stderr(&out).contains("help:"),
        "{}",
        stderr(&out)
    );
}

/// Gateways of a new deployment start at once on an empty database: each migrates it, one
/// after the other (migrations run in a write, under the write lock), and every start succeeds
/// on the one schema.
#[test]
fn gateways_starting_at_once_on_an_empty_database_migrate_it_once() {
    let dir = support::TempDir::new("gateway");
    let url = dir.database_url();
    let started: Vec<std::process::Output> = std::thread::scope(|threads| {
        let starts: Vec<_> = (0..3)
            .map(|_| {
                let (url, dir) = (&url, &dir);
                threads.spawn(move || {
                    std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
                        .current_dir(dir.path())
                        .env("TOLLGATE_DATABASE_URL", url)
                        .args(["db", "upgrade"])
                        .output()
                        .unwrap()
                })
            })
            .collect();
        starts.into_iter().map(|s| s.join().unwrap()).collect()
    });
    for out in &started {
        assert!(out.status.success(), "{}{}", stdout(out), stderr(out));
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .current_dir(dir.path())
        .env("TOLLGATE_DATABASE_URL", &url)
        .args(["db", "check"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

/// The example deployment (`examples/cluster/`): three gateways with one configuration on one
/// PostgreSQL, behind a balancer that sends requests round robin to each of them and checks
/// their health route; the gateways' command is one `tollgate serve` accepts (started here with
/// it, on a free port and the test's store).
#[test]
fn the_example_deployment_runs_three_alike_gateways_on_one_database_behind_a_balancer() {
    let folder = root().join("examples/cluster");
    let text = std::fs::read_to_string(folder.join("compose.yaml")).unwrap();
    let compose: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let services = compose["services"].as_mapping().unwrap();
    let gateways: Vec<(&str, &serde_yaml::Value)> = services
        .iter()
        .filter(|(_, s)| s["command"][0].as_str() == Some("serve"))
        .map(|(name, s)| (name.as_str().unwrap(), s))
        .collect();
    assert_eq!(gateways.len(), 3, "three gateways");
    let first = gateways[0].1;
    for (name, gateway) in &gateways {
        assert_eq!(*gateway, first, "{name} is configured as the others are");
    }
    let env = &first["environment"];
    let database = env["TOLLGATE_DATABASE_URL"].as_str().unwrap();
    assert!(
        database.starts_with("postgres://") && database.contains("@postgres:5432/"),
        "{database}"
    );
    assert!(services.contains_key("postgres"));
    for shared in ["TOLLGATE_TOKEN", "TOLLGATE_TOKEN_KEY"] {
        assert!(
            env[shared].as_str().is_some(),
            "{shared} is set alike on every gateway"
        );
    }
    assert_eq!(
        first["depends_on"]["postgres"]["condition"].as_str(),
        Some("service_healthy")
    );

    // The balancer: round robin over every gateway, each health-checked, on the published port.
    let balancer = &services["balancer"];
    assert_eq!(balancer["ports"][0].as_str(), Some("8000:8000"));
    let haproxy = std::fs::read_to_string(folder.join("haproxy.cfg")).unwrap();
    assert!(haproxy.contains("balance roundrobin"), "{haproxy}");
    assert!(haproxy.contains("option httpchk GET /health"), "{haproxy}");
    for (name, _) in &gateways {
        assert!(
            haproxy.contains(&format!("server {name} {name}:8000 check")),
            "{name} is behind the balancer"
        );
    }
    let dockerfile = std::fs::read_to_string(folder.join("Dockerfile")).unwrap();
    assert!(dockerfile.contains("cargo build --release --locked -p tollgate"));
    assert_eq!(
        first["build"]["dockerfile"].as_str(),
        Some("examples/cluster/Dockerfile")
    );

    // The command starts a gateway (its address made local, its envelopes the fixtures the
    // image copies).
    let mut args: Vec<String> = first["command"]
        .as_sequence()
        .unwrap()
        .iter()
        .skip(1)
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    // The test's gateway picks its own port (`serve --port 0`).
    let port = args.iter().position(|a| a == "--port").unwrap();
    args.drain(port..port + 2);
    for (flag, local) in [
        ("--addr", "127.0.0.1".to_string()),
        (
            "--envelopes",
            root().join("fixtures/envelopes").display().to_string(),
        ),
    ] {
        let at = args.iter().position(|a| a == flag).unwrap();
        args[at + 1] = local;
    }
    assert!(args.iter().all(|a| !a.contains("${")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let gw = Gateway::start_args(&[], &args);
    let (status, body) = gw.call_with("GET", "/health", None, &[("Host", "balancer:8000")]);
    assert_eq!(status, 200, "{body}");
}
