//! End-to-end tests of the case-workflow service: the seed's edit loop from `tollgate init
//! intake_review` to `cases inspect`, commits refused (and recorded) without approval, with a
//! stale preview and in real mode without its guardrails, concurrent appends at one version,
//! projections rebuilt from the events, a registered pack run over HTTP, an unregistered one
//! read-only, and the author's checks on a scaffold and a broken pack.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::{Gateway, TempDir, stderr, stdout};
use tollgate_gateway::store::{Value as StoreValue, params};

const BIN: &str = env!("CARGO_BIN_EXE_tollgate");

/// Runs `tollgate ARGS` in `dir` (its own `.tollgate/` store), with `envs`.
fn run_in(dir: &Path, envs: &[(&str, &str)], args: &[&str]) -> Output {
    support::with_store(&mut Command::new(BIN), dir)
        .current_dir(dir)
        .env_remove("TOLLGATE_PACK_ROOTS")
        .env_remove("TOLLGATE_ALLOW_REAL_ADAPTERS")
        .envs(envs.iter().copied())
        .args(args)
        .output()
        .expect("run tollgate")
}

fn json_of(out: &Output) -> Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(out), stderr(out)))
}

/// `tollgate init intake_review --output DIR/pack`.
fn init_pack(dir: &Path) -> std::path::PathBuf {
    let out = run_in(dir, &[], &["init", "intake_review", "--output", "pack"]);
    assert!(out.status.success(), "{}", stderr(&out));
    dir.join("pack")
}

/// Runs the pack's demo script as a user does; returns the case id it printed.
fn demo_script(dir: &Path, pack: &Path) -> String {
    let out = support::with_store(&mut Command::new(pack.join("demo.sh")), dir)
        .current_dir(dir)
        .env("TOLLGATE", BIN)
        .output()
        .expect("run demo.sh");
    assert!(out.status.success(), "{}", stderr(&out));
    let id = stdout(&out).trim().to_string();
    assert!(id.starts_with("case-"), "{id}");
    id
}

fn timeline_kinds(dir: &Path, case: &str) -> Vec<(String, Value)> {
    let out = run_in(dir, &[], &["cases", "timeline", case, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    json_of(&out)["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["payload"].clone(),
            )
        })
        .collect()
}

#[test]
fn the_intake_review_edit_loop_runs_from_init_to_inspect() {
    let dir = TempDir::new("cases-edit-loop");
    let pack = init_pack(dir.path());
    let pack_s = pack.to_str().unwrap();
    let v = run_in(
        dir.path(),
        &[],
        &["packs", "validate", "--pack-root", pack_s, "--json"],
    );
    assert!(v.status.success(), "{}", stdout(&v));
    let v = json_of(&v);
    assert_eq!(v["counted"]["capabilities"], 2, "{v}");
    let a = run_in(
        dir.path(),
        &[],
        &["packs", "author-check", "--pack-root", pack_s],
    );
    assert!(a.status.success(), "{}", stderr(&a));
    let h = run_in(
        dir.path(),
        &[],
        &["packs", "adapter-dry-run", "--pack-root", pack_s, "--json"],
    );
    assert!(h.status.success(), "{}", stdout(&h));
    let h = json_of(&h);
    let checks: Vec<String> = h["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}/{}",
                c["subject"].as_str().unwrap(),
                c["check"].as_str().unwrap()
            )
        })
        .collect();
    for want in [
        "worker:triage/collect",
        "action:assign_queue/preview",
        "action:assign_queue/apply",
        "action:assign_queue/verify",
        "action:assign_queue/idempotency",
        "action:assign_queue/compensation",
        "action:set_priority/compensation",
    ] {
        assert!(
            checks.iter().any(|c| c == want),
            "{want} missing from {checks:?}"
        );
    }

    let case = demo_script(dir.path(), &pack);
    let out = run_in(dir.path(), &[], &["cases", "inspect", &case, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = json_of(&out);
    assert_eq!(r["case"]["state"], "awaiting_approval", "{r}");
    assert_eq!(r["replay_health"]["status"], "healthy", "{r}");
    assert_eq!(r["replay_health"]["chain"], "verified");
    let evidence: Vec<(String, Value)> = r["worker_evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["key"].as_str().unwrap().to_string(), e["value"].clone()))
        .collect();
    assert!(
        evidence.contains(&("queue".into(), json!("legal"))),
        "{evidence:?}"
    );
    assert_eq!(r["proposal_actions"][0]["input"]["queue"], "legal");
    assert_eq!(r["preview_diffs"][0]["changes"][0]["after"], "legal");
    assert_eq!(r["policy_status"][0]["effect"], "allow");
    assert_eq!(
        r["policy_status"][0]["rules"],
        json!(["intake.route-permitted"])
    );
    assert_eq!(r["policy_status"][0]["approval_state"], "pending");
    assert!(r["commit_status"].as_array().unwrap().is_empty());
    assert_eq!(r["timeline"].as_array().unwrap().len(), 6);
    // The decision carries its proof, down to the proposal's facts.
    let events = timeline_kinds(dir.path(), &case);
    let decided = &events
        .iter()
        .find(|(k, _)| k == "policy_decided")
        .unwrap()
        .1;
    assert_eq!(
        decided["pack"]["proof"]["rule"], "intake.route-permitted",
        "{decided}"
    );
    // The human-readable report names each section.
    let text = stdout(&run_in(
        dir.path(),
        &[],
        &["cases", "inspect", &case, "--timeline-limit", "2"],
    ));
    for section in [
        "worker evidence",
        "proposal actions",
        "preview diffs",
        "policy status",
        "commit status",
        "replay health: healthy",
    ] {
        assert!(text.contains(section), "{section} missing:\n{text}");
    }
}

#[test]
fn a_commit_is_refused_and_recorded_without_approval_with_a_stale_preview_and_in_real_mode_without_its_guardrails()
 {
    let dir = TempDir::new("cases-refusals");
    let d = dir.path();
    let pack = init_pack(d);
    let case = demo_script(d, &pack);
    let refused = |envs: &[(&str, &str)], args: &[&str], code: &str| {
        let mut all = vec!["cases", "commit", case.as_str(), "--json"];
        all.extend_from_slice(args);
        let out = run_in(d, envs, &all);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}\n{}",
            stdout(&out),
            stderr(&out)
        );
        let body = json_of(&out);
        assert_eq!(body["error"]["code"], code, "{body}");
        body["error"]["message"].as_str().unwrap().to_string()
    };
    let msg = refused(&[], &[], "approval_required");
    assert!(msg.contains("cases approve"), "{msg}");

    let ok = run_in(
        d,
        &[],
        &[
            "cases", "approve", &case, "--by", "alice", "--reason", "checked",
        ],
    );
    assert!(ok.status.success(), "{}", stderr(&ok));

    // The intake desk changes under the approved preview: the record is in a queue already.
    let records = d.join(".tollgate/adapter-state/intake_review/dry_run/records.json");
    std::fs::create_dir_all(records.parent().unwrap()).unwrap();
    std::fs::write(
        &records,
        json!({ case.as_str(): {"queue": "finance"} }).to_string(),
    )
    .unwrap();
    let msg = refused(&[], &[], "stale_preview");
    assert!(
        msg.contains("queue → legal") || msg.contains("stale"),
        "{msg}"
    );
    std::fs::remove_file(&records).unwrap();

    let msg = refused(&[], &["--mode", "real"], "real_adapters_off");
    assert!(msg.contains("TOLLGATE_ALLOW_REAL_ADAPTERS=1"), "{msg}");
    let allow = [("TOLLGATE_ALLOW_REAL_ADAPTERS", "1")];
    let msg = refused(&allow, &["--mode", "real"], "adapter_policy_missing");
    assert!(msg.contains("--policy"), "{msg}");
    let policy = d.join("adapters-policy.yaml");
    std::fs::write(
        &policy,
        "version: 1\npack_id: intake_review\nallow_actions: [set_priority]\n",
    )
    .unwrap();
    let p = policy.to_str().unwrap();
    refused(
        &allow,
        &["--mode", "real", "--policy", p],
        "adapter_policy_refuses",
    );
    std::fs::write(
        &policy,
        "version: 1\npack_id: intake_review\nallow_actions: [assign_queue]\nowner: ops\n",
    )
    .unwrap();
    refused(
        &allow,
        &["--mode", "real", "--policy", p],
        "real_adapter_not_wired",
    );

    // Every refusal is in the case's record, and nothing was applied.
    let events = timeline_kinds(d, &case);
    let codes: Vec<&str> = events
        .iter()
        .filter(|(k, _)| k == "commit_refused")
        .map(|(_, p)| p["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "approval_required",
            "stale_preview",
            "real_adapters_off",
            "adapter_policy_missing",
            "adapter_policy_refuses",
            "real_adapter_not_wired"
        ]
    );
    assert!(!events.iter().any(|(k, _)| k == "commit_started"));

    // The author wires a real adapter explicitly; with the variable and the policy, the commit
    // runs it through the engine host — its effect lands in the real state, not the dry run's.
    std::fs::copy(
        pack.join("adapters/intake_desk.py"),
        pack.join("adapters/intake_desk_real.py"),
    )
    .unwrap();
    let actions = std::fs::read_to_string(pack.join("actions.yaml")).unwrap().replacen(
        "    adapter: adapters/intake_desk.py\n    input: [queue]",
        "    adapter: adapters/intake_desk.py\n    real_adapter: adapters/intake_desk_real.py\n    input: [queue]",
        1,
    );
    std::fs::write(pack.join("actions.yaml"), actions).unwrap();
    // In real mode the change is previewed again by the real adapter, against the real system:
    // one that moved since the approval is refused too.
    let real_records = d.join(".tollgate/adapter-state/intake_review/real/records.json");
    std::fs::create_dir_all(real_records.parent().unwrap()).unwrap();
    std::fs::write(
        &real_records,
        json!({ case.as_str(): {"queue": "it"} }).to_string(),
    )
    .unwrap();
    refused(&allow, &["--mode", "real", "--policy", p], "stale_preview");
    std::fs::remove_file(&real_records).unwrap();
    let out = run_in(
        d,
        &allow,
        &[
            "cases", "commit", &case, "--mode", "real", "--policy", p, "--json",
        ],
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(json_of(&out)["state"], "committed");
    let real =
        std::fs::read_to_string(d.join(".tollgate/adapter-state/intake_review/real/records.json"))
            .unwrap();
    assert!(real.contains("legal"), "{real}");
    assert!(!records.exists(), "the dry-run state was not touched");
    let again = run_in(d, &[], &["cases", "commit", &case, "--json"]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(json_of(&again)["error"]["code"], "proposal_settled");
    let started = timeline_kinds(d, &case)
        .into_iter()
        .find(|(k, _)| k == "commit_started")
        .unwrap()
        .1;
    assert_eq!(started["mode"], "real");
    assert_eq!(started["authorization"]["owner"], "ops", "{started}");
}

#[test]
fn two_appends_at_the_same_expected_version_one_succeeds_and_one_gets_409() {
    let dir = TempDir::new("cases-concurrency");
    let pack = init_pack(dir.path());
    let gw = Gateway::start_with(&[("TOLLGATE_PACK_ROOTS", pack.to_str().unwrap())]);
    let (status, m) = gw.call("POST", "/packs/intake_review/0.1.0/demo-case", None);
    assert_eq!(status, 201, "{m}");
    let case = m["case_id"].as_str().unwrap().to_string();
    let version = m["version"].as_i64().unwrap();
    let path = format!("/cases/{case}/evidence");
    let appends: Vec<(u16, Value)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let (gw, path) = (&gw, &path);
                s.spawn(move || {
                    gw.call(
                        "POST",
                        path,
                        Some(
                            &json!({"expected_version": version, "event_id": format!("ev-{i}"),
                                     "worker": "triage", "evidence": {"urgency": format!("u{i}")}}),
                        ),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut statuses: Vec<u16> = appends.iter().map(|(s, _)| *s).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 409], "{appends:?}");
    let (_, lost) = appends.iter().find(|(s, _)| *s == 409).unwrap();
    assert_eq!(lost["error"]["code"], "version_conflict", "{lost}");
    assert_eq!(lost["error"]["details"]["version"], version + 1);
    let (_, won) = appends.iter().find(|(s, _)| *s == 201).unwrap();
    // The winner's append repeated is stored once.
    let winner = if won["detail"]["urgency"] == "u0" {
        0
    } else {
        1
    };
    let (status, again) = gw.call(
        "POST",
        &path,
        Some(
            &json!({"expected_version": version, "event_id": format!("ev-{winner}"),
                     "worker": "triage", "evidence": {"urgency": format!("u{winner}")}}),
        ),
    );
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["version"], version + 1);
    // The same id with other content is a conflict, not an overwrite.
    let (status, reused) = gw.call(
        "POST",
        &path,
        Some(
            &json!({"expected_version": version + 1, "event_id": format!("ev-{winner}"),
                     "worker": "triage", "evidence": {"urgency": "other"}}),
        ),
    );
    assert_eq!(status, 409, "{reused}");
    assert_eq!(reused["error"]["code"], "event_id_reused");
    let (_, timeline) = gw.call("GET", &format!("/cases/{case}/timeline"), None);
    assert_eq!(
        timeline["events"].as_array().unwrap().len() as i64,
        version + 1
    );
    // A caller's id may not take the form of the case's own generated ids.
    let (status, bad) = gw.call(
        "POST",
        &path,
        Some(
            &json!({"expected_version": version + 1, "event_id": format!("{case}/99"),
                     "worker": "triage", "evidence": {"urgency": "high"}}),
        ),
    );
    assert_eq!(status, 422, "{bad}");
    // Posted triage evidence is not collected evidence: the pack's rules see the difference.
    let (status, p2) = gw.call(
        "POST",
        &format!("/cases/{case}/proposals"),
        Some(&json!({"capability": "route_to_queue"})),
    );
    assert_eq!(status, 201, "{p2}");
    let pid = p2["proposal_id"].as_str().unwrap();
    let (status, _) = gw.call(
        "POST",
        &format!("/cases/{case}/proposals/{pid}/preview"),
        None,
    );
    assert_eq!(status, 201);
    let (status, d) = gw.call(
        "POST",
        &format!("/cases/{case}/proposals/{pid}/policy"),
        None,
    );
    assert_eq!(status, 201, "{d}");
    assert_eq!(d["detail"]["effect"], "deny", "{d}");
    assert_eq!(
        d["detail"]["rules"],
        json!(["intake.triage-evidence-collected"])
    );
    // Evidence a worker does not declare is refused.
    let (status, bad) = gw.call(
        "POST",
        &path,
        Some(&json!({"expected_version": version + 1, "worker": "triage", "evidence": {"colour": "red"}})),
    );
    assert_eq!(status, 422, "{bad}");
}

fn dump(dir: &Path) -> Vec<String> {
    let store = support::store_in(dir);
    let mut out = Vec::new();
    for (table, order) in [
        ("cases", "case_id"),
        ("case_evidence", "case_id, worker, key"),
        ("case_proposals", "case_id, proposal_id"),
        ("case_previews", "case_id, proposal_id"),
        ("case_policy", "case_id, proposal_id"),
        ("case_commits", "case_id, proposal_id"),
        ("case_timeline", "case_id, version"),
    ] {
        let sql = format!("SELECT * FROM {table} ORDER BY {order}");
        let rows = store
            .read(move |c| {
                let mut q = c.prepare(&sql)?;
                let n = q.column_count();
                let mut rows = q.query(())?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    let mut cells = Vec::new();
                    for i in 0..n {
                        cells.push(format!("{:?}", r.get::<StoreValue>(i)?));
                    }
                    out.push(format!("{table}: {}", cells.join(" | ")));
                }
                Ok(out)
            })
            .unwrap();
        out.extend(rows);
    }
    out
}

#[test]
fn dropping_the_projections_and_replaying_the_events_restores_identical_projections() {
    let dir = TempDir::new("cases-rebuild");
    let d = dir.path();
    let seeded = run_in(d, &[], &["demo", "seed", "--json"]);
    assert!(seeded.status.success(), "{}", stderr(&seeded));
    let cases = json_of(&seeded)["cases"].as_array().unwrap().clone();
    assert_eq!(cases.len(), 4);
    let before = dump(d);
    assert!(
        before.iter().any(|r| r.starts_with("case_commits:")),
        "the seed commits one change"
    );
    for t in [
        "cases",
        "case_evidence",
        "case_proposals",
        "case_previews",
        "case_policy",
        "case_commits",
        "case_timeline",
    ] {
        support::store_in(d)
            .write(move |c| c.execute(&format!("DELETE FROM {t}"), ()))
            .unwrap();
    }
    assert!(dump(d).is_empty());
    let out = run_in(d, &[], &["cases", "replay", "--rebuild", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&out)["rebuilt"]["cases"], 4);
    assert_eq!(dump(d), before);

    // A projection row that no longer matches its events is reported as drift.
    let case = cases[0]["case_id"].as_str().unwrap();
    let id = case.to_string();
    support::store_in(d)
        .write(move |c| {
            c.execute(
                "UPDATE case_proposals SET state = 'committed' WHERE case_id = ?1",
                params![id],
            )
        })
        .unwrap();
    let out = run_in(d, &[], &["cases", "replay", case, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let h = json_of(&out);
    assert_eq!(h["status"], "drift", "{h}");
    assert_eq!(h["drift"][0]["table"], "case_proposals");
    assert_eq!(h["drift"][0]["stored"]["state"], "committed");
    assert!(h["help"].as_str().unwrap().contains("timeline"));
}

/// Bug 12 of issue 33: `demo seed` added four more cases each time it ran.
#[test]
fn demo_seed_twice_adds_nothing_the_second_time() {
    let dir = TempDir::new("cases-seed-twice");
    let d = dir.path();
    let first = json_of(&run_in(d, &[], &["demo", "seed", "--json"]));
    assert_eq!(first["cases"].as_array().unwrap().len(), 4);
    let again = run_in(d, &[], &["demo", "seed"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("already seeded (4 case(s)"),
        "{}",
        stdout(&again)
    );
    let listed = json_of(&run_in(d, &[], &["cases", "list", "--json"]));
    assert_eq!(listed["cases"].as_array().unwrap().len(), 4);
}

#[test]
fn a_registered_pack_runs_over_http_from_demo_case_to_commit() {
    let dir = TempDir::new("cases-http");
    let pack = init_pack(dir.path());
    let gw = Gateway::start_with(&[("TOLLGATE_PACK_ROOTS", pack.to_str().unwrap())]);
    assert!(
        gw.log
            .lock()
            .unwrap()
            .contains("pack intake_review@0.1.0 registered")
    );
    let (status, packs) = gw.call("GET", "/packs", None);
    assert_eq!(status, 200);
    assert_eq!(packs["packs"][0]["engine_id"], "intake_review", "{packs}");
    let (status, m) = gw.call("POST", "/packs/intake_review/0.1.0/demo-case", None);
    assert_eq!(status, 201, "{m}");
    assert_eq!(m["state"], "awaiting_approval");
    let case = m["case_id"].as_str().unwrap();
    let pid = m["proposal_id"].as_str().unwrap();
    let base = format!("/cases/{case}/proposals/{pid}");
    let (status, r) = gw.call("POST", &format!("{base}/commit"), Some(&json!({})));
    assert_eq!(status, 409, "{r}");
    assert_eq!(r["error"]["code"], "approval_required");
    assert_eq!(r["error"]["details"]["recorded"], true);
    // The approver is the credential's principal (issue 32): `alice`'s own token.
    let alice = gw.create_token(&["--kind", "approver", "--name", "alice"]);
    let (status, r) = gw.call_as(
        &alice,
        "POST",
        &format!("{base}/approval"),
        Some(&json!({"approve": true})),
    );
    assert_eq!(status, 201, "{r}");
    assert_eq!(r["state"], "approved");
    // A client cannot name the real-mode policy file: the server's operator does.
    let (status, r) = gw.call(
        "POST",
        &format!("{base}/commit"),
        Some(&json!({"mode": "real", "policy": "/etc/passwd"})),
    );
    assert_eq!(status, 422, "{r}");
    let (status, r) = gw.call("POST", &format!("{base}/commit"), None);
    assert_eq!(status, 201, "{r}");
    assert_eq!(r["state"], "committed");
    assert_eq!(r["detail"]["verification"]["verified"], true);
    // The approval went through the gateway's approvals: used, bound to the case's run.
    let (_, approvals) = gw.call("GET", &format!("/v1/approvals?run={case}"), None);
    assert_eq!(approvals["approvals"][0]["state"], "used", "{approvals}");

    let (status, r) = gw.call(
        "GET",
        &format!("/cases/{case}/inspection?timeline_limit=3"),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(r["commit_status"][0]["state"], "committed", "{r}");
    assert_eq!(r["timeline"].as_array().unwrap().len(), 3);
    assert_eq!(r["pack"]["registered"], true);
    let (_, g) = gw.call("GET", &format!("/cases/{case}/graph"), None);
    let kinds: Vec<&str> = g["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "case", "evidence", "proposal", "preview", "policy", "approval", "commit"
        ]
    );
    let (status, run) = gw.call(
        "POST",
        &format!("/cases/{case}/model-runs"),
        Some(&json!({"purpose": "brief the reviewer"})),
    );
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["detail"]["provider"], "fake");
    assert!(
        run["detail"]["note"]
            .as_str()
            .unwrap()
            .contains("fake provider")
    );
    let (status, list) = gw.call("GET", "/cases?pack=intake_review", None);
    assert_eq!(status, 200);
    assert_eq!(list["cases"][0]["case_id"], case);
    let (status, h) = gw.call("GET", &format!("/cases/{case}/replay"), None);
    assert_eq!(status, 200);
    assert_eq!(h["status"], "healthy", "{h}");
    let (status, _) = gw.call("GET", "/cases/case-nope/inspection", None);
    assert_eq!(status, 404);
    let (status, r) = gw.call("POST", "/packs/nope/1.0.0/demo-case", None);
    assert_eq!(status, 404, "{r}");
}

/// Bug 10 of issue 33: a pack refused because its engine id was taken got the hint `tollgate
/// packs validate`, which passes on it: the clash is named instead.
#[test]
fn a_pack_refused_for_an_engine_already_registered_names_the_clash() {
    let dir = TempDir::new("cases-clash");
    let first = init_pack(dir.path());
    let second = dir.path().join("copy");
    let out = Command::new("cp")
        .args(["-r", first.to_str().unwrap(), second.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let roots = format!("{}:{}", first.display(), second.display());
    let gw = Gateway::start_with(&[("TOLLGATE_PACK_ROOTS", &roots)]);
    let (status, packs) = gw.call("GET", "/packs", None);
    assert_eq!(status, 200);
    let refused = &packs["unregistered"][0];
    assert_eq!(refused["root"], second.display().to_string(), "{packs}");
    assert!(
        refused["clashes_with"]
            .as_str()
            .is_some_and(|r| r.ends_with("/pack")),
        "{packs}"
    );
    // The pack itself is valid: the command the old hint named passes on it.
    let out = run_in(
        dir.path(),
        &[],
        &["packs", "validate", "--pack-root", "copy"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_case_of_an_unregistered_pack_is_read_only_over_http_and_says_how_to_register_it() {
    let dir = TempDir::new("cases-readonly");
    let pack = init_pack(dir.path());
    let gw = Gateway::start();
    let out = gw.tollgate(&["cases", "demo", "--pack-root", pack.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let case = stdout(&out).trim().to_string();
    let (status, r) = gw.call("GET", &format!("/cases/{case}/inspection"), None);
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["pack"]["registered"], false);
    let guidance = r["pack"]["guidance"].as_str().unwrap();
    assert!(
        guidance.contains("TOLLGATE_PACK_ROOTS=") && guidance.contains(pack.to_str().unwrap()),
        "{guidance}"
    );
    let (status, r) = gw.call(
        "POST",
        &format!("/cases/{case}/proposals"),
        Some(&json!({"capability": "escalate"})),
    );
    assert_eq!(status, 403, "{r}");
    assert_eq!(r["error"]["code"], "case_read_only");
}

#[test]
fn a_scaffold_validates_and_fails_author_check_until_its_author_fills_it_in() {
    let dir = TempDir::new("cases-scaffold");
    let d = dir.path();
    let out = run_in(
        d,
        &[],
        &[
            "packs",
            "scaffold",
            "--kind",
            "transactional",
            "--pack-id",
            "refunds",
            "--output",
            "refunds",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = run_in(d, &[], &["packs", "validate", "--pack-root", "refunds"]);
    assert!(v.status.success(), "{}", stderr(&v));
    let h = run_in(
        d,
        &[],
        &["packs", "adapter-dry-run", "--pack-root", "refunds"],
    );
    assert!(h.status.success(), "{}", stdout(&h));
    let a = run_in(
        d,
        &[],
        &["packs", "author-check", "--pack-root", "refunds", "--json"],
    );
    assert_eq!(a.status.code(), Some(1));
    let what: Vec<String> = json_of(&a)["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["what"].as_str().unwrap().to_string())
        .collect();
    for owed in ["description", "preview", "verify", "compensate", "reviewed"] {
        assert!(what.iter().any(|w| w == owed), "{owed} not in {what:?}");
    }
    // Same name twice is refused: nothing is overwritten.
    let again = run_in(
        d,
        &[],
        &[
            "packs",
            "scaffold",
            "--kind",
            "transactional",
            "--pack-id",
            "refunds",
            "--output",
            "refunds",
        ],
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("not empty"));
}

#[test]
fn a_broken_pack_gets_every_fault_with_its_file_line_and_help() {
    let dir = TempDir::new("cases-broken");
    let d = dir.path();
    let pack = init_pack(d);
    let caps = std::fs::read_to_string(pack.join("capabilities.yaml"))
        .unwrap()
        .replace(
            "policy_rule: intake.escalate-permitted",
            "policy_rule: intake.no-such-rule",
        )
        .replace("action: set_priority", "action: set_prio");
    std::fs::write(pack.join("capabilities.yaml"), caps).unwrap();
    std::fs::write(
        pack.join("rules/extra.dl"),
        "permit(p) :- proposal(p, _, _, _), nope(p).\n",
    )
    .unwrap();
    let out = run_in(d, &[], &["packs", "validate", "--pack-root", "pack"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("rules/extra.dl:1:"), "{err}");
    assert!(
        err.contains("capabilities.yaml:") && err.contains("`set_prio`"),
        "{err}"
    );
    let out = run_in(
        d,
        &[],
        &["packs", "validate", "--pack-root", "pack", "--json"],
    );
    let faults = json_of(&out)["faults"].as_array().unwrap().clone();
    let action_fault = faults
        .iter()
        .find(|f| f["path"] == "/capabilities/1/action")
        .expect("the action fault");
    assert_eq!(action_fault["line"], 10, "{action_fault}");
    assert!(
        action_fault["help"]
            .as_str()
            .unwrap()
            .contains("assign_queue")
    );

    std::fs::write(pack.join("pack.yaml"), "pack_id: Intake\nkind: batch\n").unwrap();
    let out = run_in(
        d,
        &[],
        &["packs", "validate", "--pack-root", "pack", "--json"],
    );
    let faults = json_of(&out)["faults"].as_array().unwrap().clone();
    assert!(
        faults
            .iter()
            .any(|f| f["file"] == "pack.yaml" && f["path"] == "/pack_id" && f["line"] == 1),
        "{faults:?}"
    );
    assert!(
        faults
            .iter()
            .any(|f| f["path"] == "/kind" && f["line"] == 2),
        "{faults:?}"
    );
}

#[test]
fn adapter_preflight_checks_the_guardrails_of_a_mode_and_writes_its_findings() {
    let dir = TempDir::new("cases-preflight");
    let d = dir.path();
    init_pack(d);
    let out = run_in(
        d,
        &[],
        &[
            "packs",
            "adapter-preflight",
            "--pack-root",
            "pack",
            "--mode",
            "dry_run",
        ],
    );
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        d.join(".tollgate/adapter-preflight/intake_review-dry_run.json")
            .exists()
    );
    let out = run_in(
        d,
        &[],
        &[
            "packs",
            "adapter-preflight",
            "--pack-root",
            "pack",
            "--mode",
            "real",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let r = json_of(&out);
    let failed: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["ok"] == false)
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        ["env:TOLLGATE_ALLOW_REAL_ADAPTERS", "policy"],
        "{r}"
    );
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join(".tollgate/adapter-preflight/intake_review-real.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(written["ok"], false);
}

#[test]
fn a_port_in_use_names_the_flag_that_moves_the_server() {
    let gw = Gateway::start();
    let port = gw.base.rsplit(':').next().unwrap().to_string();
    let dir = TempDir::new("cases-port");
    let out = run_in(
        dir.path(),
        &[("TOLLGATE_TOKEN", "t-0123456789abcdef")],
        &["serve", "--port", &port],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port}")) && err.contains("--port"),
        "{err}"
    );
}

#[test]
fn a_rejected_change_is_previewed_decided_and_approved_anew() {
    let dir = TempDir::new("cases-reject");
    let d = dir.path();
    let pack = init_pack(d);
    let case = demo_script(d, &pack);
    let out = run_in(
        d,
        &[],
        &[
            "cases", "reject", &case, "--by", "lead", "--reason", "not yet", "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&out)["state"], "rejected");
    let out = run_in(
        d,
        &[],
        &["cases", "approve", &case, "--by", "lead", "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["error"]["code"], "no_pending_approval");
    for step in ["preview", "decide"] {
        let out = run_in(d, &[], &["cases", step, &case]);
        assert!(out.status.success(), "{step}: {}", stderr(&out));
    }
    let out = run_in(
        d,
        &[],
        &["cases", "approve", &case, "--by", "lead", "--json"],
    );
    assert!(out.status.success(), "{}", stdout(&out));
    let out = run_in(d, &[], &["cases", "commit", &case, "--json"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let events = timeline_kinds(d, &case);
    let approvals: Vec<&str> = events
        .iter()
        .filter(|(k, _)| k == "approval_requested")
        .map(|(_, p)| p["approval_id"].as_str().unwrap())
        .collect();
    assert_eq!(approvals.len(), 2);
    assert_ne!(
        approvals[0], approvals[1],
        "a new decision asks for a new approval"
    );
}
