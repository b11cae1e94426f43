use super::*;
use crate::recorder::Recorder;
use crate::recorder::format::RunFile;
use crate::store::tests::tempdir::Dir;

/// 2026-11-25T00:00:00Z.
const NOW_MS: i64 = 1_795_564_800_000;

fn fixture(name: &str) -> RunFile {
    let path = format!("{}/../fixtures/runs/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn recorder_with(files: &[&str]) -> (Dir, Recorder) {
    let dir = Dir::new("memory");
    let store = crate::store::tests::open_in(dir.path());
    let recorder = Recorder::new(store);
    for f in files {
        recorder.import(&fixture(f)).unwrap();
    }
    (dir, recorder)
}

fn distill(recorder: &Recorder, run: &str) -> DistillReport {
    distill_run(recorder, run, NOW_MS, &mut |_, _, _| {}).unwrap()
}

const BUGFIX: &str = "01-bugfix-users-404.json";
const PAGINATION: &str = "02-feature-users-pagination.json";

#[test]
fn a_run_groups_into_explained_episodes_deterministically() {
    let run = fixture(BUGFIX);
    let eps = episodes(&run);
    assert_eq!(eps, episodes(&run), "the same run, the same episodes");
    assert!(
        eps.len() >= 4 && eps.len() < run.steps.len(),
        "{}",
        eps.len()
    );
    assert_eq!(eps[0].first_step, 0);
    assert_eq!(eps[0].boundary, "the run starts");
    // Contiguous, covering every step once.
    for pair in eps.windows(2) {
        assert_eq!(pair[1].first_step, pair[0].last_step + 1);
    }
    assert_eq!(eps.last().unwrap().last_step as usize, run.steps.len() - 1);
    // The user's second message opens an episode, and says so.
    let asked = eps
        .iter()
        .find(|e| e.boundary.contains("a new request from the user"))
        .expect("an episode opened by the user's preference");
    assert_eq!(asked.intent, "take the user's testing preference");
    assert!(eps.iter().any(|e| e.boundary.contains("tool phase turns")));
}

#[test]
fn distilling_a_run_yields_typed_memories_with_provenance_and_promotes_only_what_passes() {
    let (_d, recorder) = recorder_with(&[BUGFIX]);
    let report = distill(&recorder, "run-bugfix-users-404");
    assert!(report.count("created") >= 4, "{}", report.to_text());

    // The user's preference: a preference, widened from the task to the repository, promoted,
    // with the event that said it as its source.
    let pref = report
        .outcomes
        .iter()
        .find(|o| {
            o.candidate.class == MemoryClass::Preference
                && o.candidate
                    .text
                    .contains("name regression tests after the ticket")
        })
        .unwrap_or_else(|| panic!("{}", report.to_text()));
    assert_eq!(pref.candidate.scope, "org:acme/repo:api");
    assert_eq!(pref.candidate.extractor, "user_request");
    assert_eq!(pref.status, MemoryStatus::Approved, "{}", pref.verdict);
    let stored = get(recorder.store(), &pref.memory).unwrap();
    assert_eq!(stored.sources[0].run, "run-bugfix-users-404");
    assert_eq!(stored.decisions[0].decision, Decision::Accept);
    assert_eq!(stored.decisions[0].by, "distiller");
    // Its provenance reaches back to the event and the run.
    let answer = crate::provenance::query(
        &recorder,
        &format!("memory:{}", pref.memory),
        crate::provenance::Walk::Ancestors,
    )
    .unwrap();
    assert!(
        answer
            .nodes
            .iter()
            .any(|n| n.id == "run:run-bugfix-users-404"),
        "{:?}",
        answer.nodes
    );

    // An inferred procedure waits for review, its score's parts saying why.
    let procedure = report
        .outcomes
        .iter()
        .find(|o| o.candidate.class == MemoryClass::Procedure)
        .expect("a procedure from the commands that ran");
    assert_eq!(procedure.status, MemoryStatus::Candidate);
    assert!(
        procedure.verdict.contains("confidence 0.70 < 0.80"),
        "{}",
        procedure.verdict
    );
    // Nothing stored carries a secret or personal data.
    for m in list(recorder.store(), &MemoryFilter::default()).unwrap() {
        assert!(
            !crate::secrets::holds_secret(&serde_json::json!(m.text)),
            "{}",
            m.text
        );
        assert!(
            !m.text.contains("acme:acme@"),
            "credentials in a URL: {}",
            m.text
        );
    }
}

#[test]
fn distilling_the_same_run_twice_adds_nothing() {
    let (_d, recorder) = recorder_with(&[BUGFIX]);
    distill(&recorder, "run-bugfix-users-404");
    let before = list(recorder.store(), &MemoryFilter::default()).unwrap();
    let again = distill(&recorder, "run-bugfix-users-404");
    assert_eq!(again.count("created"), 0);
    assert_eq!(again.count("strengthened"), 0);
    assert_eq!(again.count("unchanged"), again.outcomes.len());
    assert_eq!(
        list(recorder.store(), &MemoryFilter::default()).unwrap(),
        before
    );
}

#[test]
fn the_same_preference_from_another_run_strengthens_the_memory_instead_of_copying_it() {
    let (_d, recorder) = recorder_with(&[BUGFIX, PAGINATION]);
    distill(&recorder, "run-bugfix-users-404");
    let first = list(recorder.store(), &MemoryFilter::default())
        .unwrap()
        .len();
    let second = distill(&recorder, "run-feature-users-pagination");
    // The pagination run restates the bugfix run's procedure and rules in its notes and
    // messages; whatever it repeats strengthens, what is new is created.
    let all = list(recorder.store(), &MemoryFilter::default()).unwrap();
    assert_eq!(all.len(), first + second.count("created"));
    // Its notes' preferences, split at `;`, are preferences of their own.
    let crates = all
        .iter()
        .find(|m| {
            m.text
                .contains("no new crates in Cargo.toml without asking first")
        })
        .expect("the crates preference");
    assert_eq!(crates.class, MemoryClass::Preference);
    assert_eq!(crates.status, MemoryStatus::Approved);
    // The user's message and the agent's note both said it: one memory, two sources... or,
    // worded apart, two memories; never two copies of one text.
    let mut texts: Vec<String> = all.iter().map(|m| normalise(&m.text)).collect();
    texts.sort();
    let n = texts.len();
    texts.dedup();
    assert_eq!(texts.len(), n, "no two memories say the same words");
}

#[test]
fn a_reviewer_accepts_quarantines_or_rejects_with_a_reason_and_a_final_state_stays_final() {
    let (_d, recorder) = recorder_with(&[BUGFIX]);
    let report = distill(&recorder, "run-bugfix-users-404");
    let waiting = report
        .outcomes
        .iter()
        .find(|o| o.status == MemoryStatus::Candidate)
        .expect("a candidate waiting for review")
        .memory
        .clone();
    let store = recorder.store();
    let err = record_decision(store, &waiting, Decision::Accept, "lead", " ", "t").unwrap_err();
    assert!(matches!(err, MemoryError::Invalid(_)));
    let m = record_decision(
        store,
        &waiting,
        Decision::Quarantine,
        "lead",
        "check it",
        "t1",
    )
    .unwrap();
    assert_eq!(m.status, MemoryStatus::Quarantined);
    let m = record_decision(store, &waiting, Decision::Reject, "lead", "not true", "t2").unwrap();
    assert_eq!(m.status, MemoryStatus::Rejected);
    assert_eq!(m.decisions.len(), 2);
    let err = record_decision(
        store,
        &waiting,
        Decision::Accept,
        "lead",
        "changed my mind",
        "t3",
    )
    .unwrap_err();
    assert!(err.to_string().contains("rejected already"), "{err}");
    assert!(matches!(
        record_decision(store, "mem-none", Decision::Accept, "lead", "x", "t").unwrap_err(),
        MemoryError::NotFound(_)
    ));
    // Re-distilling does not undo a review.
    distill(&recorder, "run-bugfix-users-404");
    assert_eq!(get(store, &waiting).unwrap().status, MemoryStatus::Rejected);
}

#[test]
fn a_run_still_running_is_not_distilled() {
    let (_d, recorder) = recorder_with(&[]);
    let mut run = fixture(BUGFIX);
    run.run.id = "still-going".into();
    run.run.status = "running".into();
    run.run.finished_at = None;
    recorder.import(&run).unwrap();
    let err = distill_run(&recorder, "still-going", NOW_MS, &mut |_, _, _| {}).unwrap_err();
    assert!(err.to_string().contains("still running"), "{err}");
    assert!(
        list(recorder.store(), &MemoryFilter::default())
            .unwrap()
            .is_empty()
    );
}

mod retrieval {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::compiler::{CandidateItem, CompileInput, ItemKind, ItemStatus};
    use crate::providers::FakeProvider;
    use crate::runtime::{OpenRun, Runtime};

    const PREFERENCE: &str = "name regression tests after the ticket";

    fn envelope(name: &str) -> (String, String) {
        let path = format!(
            "{}/../fixtures/envelopes/{name}.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        (path.clone(), std::fs::read_to_string(&path).unwrap())
    }

    /// The bugfix run distilled into a store with the fixture envelopes, and a runtime over it.
    fn distilled() -> (Dir, Runtime, String) {
        let (dir, recorder) = recorder_with(&[BUGFIX]);
        let report = distill(&recorder, "run-bugfix-users-404");
        let pref = report
            .outcomes
            .iter()
            .find(|o| o.candidate.text.contains(PREFERENCE))
            .unwrap()
            .memory
            .clone();
        let store = recorder.store().clone();
        crate::policy::store_envelopes(
            &store,
            &[envelope("org-baseline"), envelope("coding-agent")],
        )
        .unwrap();
        let clock = ManualClock::new(NOW_MS);
        let rt =
            Runtime::with_clock(store, Arc::new(FakeProvider::new()), Arc::new(clock)).unwrap();
        (dir, rt, pref)
    }

    /// Stores coding-agent@4: version 2 with preferences among the memory classes it allows.
    fn allow_preferences(rt: &Runtime) {
        let (path, text) = envelope("coding-agent");
        let v4 = text.replace("version: 2", "version: 4").replace(
            "classes: [fact, procedure, warning]",
            "classes: [fact, procedure, warning, preference]",
        );
        assert_ne!(v4, text);
        crate::policy::store_envelopes(rt.store(), &[(path, v4)]).unwrap();
        rt.reload_envelopes().unwrap();
    }

    fn open(rt: &Runtime, id: &str, scope: &str, clearance: Level) {
        rt.open_run(OpenRun {
            id: Some(id.into()),
            agent: "coder".into(),
            task: "T-114".into(),
            scope: scope.into(),
            clearance: Some(clearance),
            envelopes: vec![],
            parent_run: None,
            handoff: None,
            metadata: Default::default(),
        })
        .unwrap();
    }

    /// A compile about adding tests to a new endpoint, as the agent offers it.
    fn compile_about_tests(rt: &Runtime, run: &str) -> crate::runtime::CompileAnswer {
        let mut ask = CandidateItem::new(
            "msg-user",
            ItemKind::Message,
            "T-114: cursor pagination for GET /users. Add a regression test for the last page.",
        );
        ask.role = Some("user".into());
        ask.scope = "org:acme/repo:api/task:T-114".into();
        ask.sensitivity = Level::Internal;
        rt.compile(run, CompileInput::new(vec![ask]), None).unwrap()
    }

    #[test]
    fn a_preference_from_an_earlier_run_is_reused_in_a_later_similar_task_and_the_compile_says_why()
    {
        let (_d, rt, pref) = distilled();
        allow_preferences(&rt);
        open(
            &rt,
            "later",
            "org:acme/repo:api/task:T-114",
            Level::Confidential,
        );
        let answer = compile_about_tests(&rt, "later");
        let verdict = answer.memories.iter().find(|m| m.memory == pref).unwrap();
        assert!(verdict.eligible && verdict.offered, "{verdict:?}");
        assert_eq!(verdict.rules, ["memory.eligible"]);
        let outcome = answer
            .compiled
            .outcomes
            .iter()
            .find(|o| o.id == pref)
            .unwrap();
        assert_eq!(outcome.status, ItemStatus::Included, "{outcome:?}");
        assert!(answer.compiled.text.contains(PREFERENCE));
        assert!(
            answer
                .explanation
                .contains(&format!("{pref} eligible (memory.eligible), rank 1")),
            "{}",
            answer.explanation
        );
        // A link records the use; the memory counts it; provenance leads to the compile.
        let m = get(rt.store(), &pref).unwrap();
        assert_eq!(m.usage_count, 1);
        let links = usage(rt.store(), &pref).unwrap();
        assert_eq!(links.len(), 1);
        assert_eq!(
            (links[0].run.as_str(), links[0].compile_seq),
            ("later", answer.seq)
        );
        assert!(links[0].reason.starts_with("rank "), "{}", links[0].reason);
        let used_by = crate::provenance::query(
            rt.recorder(),
            &format!("memory:{pref}"),
            crate::provenance::Walk::Descendants,
        )
        .unwrap();
        assert!(
            used_by
                .nodes
                .iter()
                .any(|n| n.id.starts_with("event:later/")),
            "{used_by:?}"
        );
        // The compile records what it retrieved, so exact replay recomputes it unchanged.
        let report = crate::replay::replay_exact(rt.recorder(), "later").unwrap();
        assert!(!report.drifted(), "{}", report.to_text());
    }

    #[test]
    fn a_memory_out_of_scope_above_clearance_expired_quarantined_or_of_a_denied_class_is_never_retrieved()
     {
        let (_d, rt, pref) = distilled();
        // coding-agent@2 allows facts, procedures and warnings only: the preference is withheld.
        open(
            &rt,
            "v2-run",
            "org:acme/repo:api/task:T-114",
            Level::Confidential,
        );
        let answer = compile_about_tests(&rt, "v2-run");
        assert!(!answer.memories.iter().any(|m| m.memory == pref));
        let why = withheld(&answer, &pref);
        assert_eq!(why.reasons, ["class_denied"]);
        assert_eq!(why.rules, ["memory.class-denied"]);
        // With the pack's proof: its root is the rule, and it goes down to the envelope's
        // memory rules.
        let proof = why.proof.as_ref().expect("a proof of the withholding");
        match &proof.step {
            tollgate_rules::engine::ProofStep::Rule { rule, .. } => {
                assert_eq!(rule.to_string(), "memory.class-denied")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            serde_json::to_string(proof)
                .unwrap()
                .contains("memory_class_denied"),
            "{proof:?}"
        );
        assert!(!answer.compiled.outcomes.iter().any(|o| o.id == pref));
        assert!(
            answer
                .explanation
                .contains("not retrieved: class_denied (rule memory.class-denied)"),
            "{}",
            answer.explanation
        );

        allow_preferences(&rt);
        // Another organisation's run: out of scope.
        open(
            &rt,
            "elsewhere",
            "org:globex/repo:web/task:G-1",
            Level::Confidential,
        );
        let answer = compile_about_tests(&rt, "elsewhere");
        assert!(answer.memories.is_empty(), "{:?}", answer.memories);
        // Off the run's scope chain: left out by the scope index, counted, not listed.
        let stored = list(rt.store(), &MemoryFilter::default()).unwrap().len() as u64;
        assert_eq!(answer.memories_withheld.len(), 1, "{}", answer.explanation);
        let why = &answer.memories_withheld[0];
        assert_eq!(why.reasons, ["out_of_scope"]);
        assert_eq!(why.rules, ["memory.out-of-scope"]);
        assert_eq!(why.count, stored);
        assert!(answer.explanation.contains(&format!(
            "{stored} memories not retrieved: out_of_scope (rule memory.out-of-scope)"
        )));
        // With the pack's proof, though none of them was decided one by one: a representative
        // off the chain, proved out of scope (regression: off-chain memories had no proof).
        let proof = why.proof.as_ref().expect("a proof of out_of_scope");
        assert!(
            matches!(&proof.step, tollgate_rules::engine::ProofStep::Rule { rule, .. } if &**rule == "memory.out-of-scope"),
            "{}",
            proof.to_text()
        );
        assert!(
            proof
                .to_text()
                .contains("!memory_run_within(\"elsewhere\", \"org:acme/repo:api\")"),
            "{}",
            proof.to_text()
        );

        // A public-clearance run and a memory raised to confidential: above clearance.
        rt.store()
            .write(|c| {
                c.execute("UPDATE memories SET sensitivity = 'confidential'", ())?;
                Ok(())
            })
            .unwrap();
        open(
            &rt,
            "public-run",
            "org:acme/repo:api/task:T-114",
            Level::Public,
        );
        let answer = compile_about_tests(&rt, "public-run");
        let why = withheld(&answer, &pref);
        assert!(
            why.reasons.contains(&"above_clearance".to_string()),
            "{why:?}"
        );

        // Quarantined, then expired: never retrieved, and said so.
        record_decision(
            rt.store(),
            &pref,
            Decision::Quarantine,
            "lead",
            "check",
            "t",
        )
        .unwrap();
        open(
            &rt,
            "q-run",
            "org:acme/repo:api/task:T-114",
            Level::Confidential,
        );
        let answer = compile_about_tests(&rt, "q-run");
        let why = withheld(&answer, &pref);
        assert_eq!(why.reasons, ["status_quarantined"], "{why:?}");
        assert_eq!(why.rules, ["memory.status"]);
        rt.store()
            .write(|c| {
                c.execute(
                    "UPDATE memories SET expires_at = 1000, status = 'approved'",
                    (),
                )?;
                Ok(())
            })
            .unwrap();
        open(
            &rt,
            "x-run",
            "org:acme/repo:api/task:T-114",
            Level::Confidential,
        );
        let answer = compile_about_tests(&rt, "x-run");
        assert!(answer.memories.is_empty(), "{:?}", answer.memories);
        let why = withheld(&answer, &pref);
        assert_eq!(why.reasons, ["expired"], "{why:?}");
        assert_eq!(why.rules, ["memory.expired"]);
        assert_eq!(get(rt.store(), &pref).unwrap().usage_count, 0, "never used");
    }

    /// The exclusion that names `memory` among its examples.
    fn withheld(
        answer: &crate::runtime::CompileAnswer,
        memory: &str,
    ) -> crate::memory::RetrievalExclusion {
        answer
            .memories_withheld
            .iter()
            .find(|e| e.examples.iter().any(|m| m == memory))
            .unwrap_or_else(|| panic!("{memory} is not withheld: {}", answer.explanation))
            .clone()
    }
}

#[test]
fn decay_with_the_clock_advanced_expires_stale_unpinned_memories_and_spares_pinned_ones() {
    let (_d, recorder) = recorder_with(&[BUGFIX]);
    distill(&recorder, "run-bugfix-users-404");
    let store = recorder.store();
    let approved = list(
        store,
        &MemoryFilter {
            status: Some(MemoryStatus::Approved),
            ..Default::default()
        },
    )
    .unwrap();
    let pref = approved
        .iter()
        .find(|m| m.class == MemoryClass::Preference)
        .unwrap();
    let all = list(store, &MemoryFilter::default()).unwrap();
    let pinned = all
        .iter()
        .find(|m| m.id != pref.id && m.status == MemoryStatus::Candidate)
        .unwrap();
    set_pinned(store, &pinned.id, true, "t").unwrap();

    // A day later nothing is stale; recency may fall, nothing expires.
    let day = NOW_MS / 1000 + 86_400;
    let report = decay(store, day).unwrap();
    assert!(report.expired.is_empty(), "{report:?}");
    assert_eq!(report.pinned, 1);

    // A year later: the unpinned preference (no fixed end) is stale, facts and warnings are
    // past their 90 days; the pinned memory stays.
    let later = NOW_MS / 1000 + 365 * 86_400;
    let report = decay(store, later).unwrap();
    let expired: Vec<&str> = report.expired.iter().map(|(id, _)| id.as_str()).collect();
    assert!(expired.contains(&pref.id.as_str()), "{report:?}");
    assert!(!expired.contains(&pinned.id.as_str()));
    let gone = get(store, &pref.id).unwrap();
    assert_eq!(gone.status, MemoryStatus::Expired);
    let last = gone.decisions.last().unwrap();
    assert_eq!(
        (last.decision, last.by.as_str()),
        (Decision::Expire, "decay")
    );
    assert!(
        last.reason.contains("stale") || last.reason.contains("time ran out"),
        "{}",
        last.reason
    );
    assert_eq!(
        get(store, &pinned.id).unwrap().status,
        MemoryStatus::Candidate
    );
    // Decaying again changes nothing more.
    assert!(decay(store, later).unwrap().expired.is_empty());
}

#[test]
fn collection_deletes_expired_and_rejected_memories_past_retention_with_their_records() {
    let (_d, recorder) = recorder_with(&[BUGFIX]);
    distill(&recorder, "run-bugfix-users-404");
    let store = recorder.store();
    let all = list(store, &MemoryFilter::default()).unwrap();
    let (a, b, kept) = (&all[0].id, &all[1].id, &all[2].id);
    let decided = "2026-11-25T00:00:00Z";
    record_decision(store, a, Decision::Reject, "lead", "wrong", decided).unwrap();
    record_decision(store, b, Decision::Expire, "lead", "old", decided).unwrap();
    set_pinned(store, b, true, decided).unwrap();
    let now = NOW_MS / 1000;

    // Within retention: nothing goes.
    assert!(
        collect(store, now + 10 * 86_400, 90)
            .unwrap()
            .collected
            .is_empty()
    );
    // Past it: the rejected one goes with everything about it; the pinned one stays.
    let report = collect(store, now + 91 * 86_400, 90).unwrap();
    assert_eq!(report.collected, vec![a.clone()]);
    assert!(matches!(get(store, a), Err(MemoryError::NotFound(_))));
    assert!(get(store, b).is_ok());
    assert!(get(store, kept).is_ok());
    let left: i64 = store
        .read({
            let node = format!("memory:{a}");
            let a = a.clone();
            move |c| {
                let mut n: i64 = 0;
                for sql in [
                    "SELECT COUNT(*) FROM memory_sources WHERE memory_id = ?1",
                    "SELECT COUNT(*) FROM memory_decisions WHERE memory_id = ?1",
                ] {
                    n += c.query_row(sql, [&a], |r| r.get::<i64>(0))?;
                }
                n += c.query_row(
                    "SELECT COUNT(*) FROM provenance_edges WHERE parent = ?1 OR child = ?1",
                    [&node],
                    |r| r.get::<i64>(0),
                )?;
                Ok(n)
            }
        })
        .unwrap();
    assert_eq!(left, 0, "nothing recorded about it is left");
    // The census the search uses follows.
    let census: i64 = store
        .read(|c| c.query_row("SELECT members FROM memory_census", (), |r| r.get(0)))
        .unwrap();
    assert_eq!(census as usize, all.len() - 1);
    // So do the word counts BM25 reads: each word counted once per memory that says it.
    let mut want: std::collections::BTreeMap<String, i64> = Default::default();
    for m in list(store, &MemoryFilter::default()).unwrap() {
        let words: std::collections::BTreeSet<String> = dedupe::normalise(&m.text)
            .split(' ')
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        for w in words {
            *want.entry(w).or_default() += 1;
        }
    }
    let counted: std::collections::BTreeMap<String, i64> = store
        .read(|c| {
            let mut stmt =
                c.prepare("SELECT word, documents FROM memory_words WHERE documents > 0")?;
            let rows = stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<Result<_, _>>()
        })
        .unwrap();
    assert_eq!(counted, want);
    // A negative retention is refused.
    assert!(matches!(
        collect(store, now, -1),
        Err(MemoryError::Invalid(_))
    ));
}

#[test]
fn a_quarantine_left_undecided_past_its_limit_ends_in_a_recorded_rejection() {
    let (_d, recorder) = recorder_with(&[BUGFIX]);
    distill(&recorder, "run-bugfix-users-404");
    let store = recorder.store();
    let all = list(store, &MemoryFilter::default()).unwrap();
    let id = &all[0].id;
    record_decision(
        store,
        id,
        Decision::Quarantine,
        "lead",
        "check it",
        "2026-11-25T00:00:00Z",
    )
    .unwrap();
    let now = NOW_MS / 1000;
    let early = review_quarantine(store, now + 29 * 86_400).unwrap();
    assert_eq!((early.considered, early.rejected.len()), (1, 0));
    let late = review_quarantine(store, now + 30 * 86_400).unwrap();
    assert_eq!(late.rejected, vec![id.clone()]);
    let m = get(store, id).unwrap();
    assert_eq!(m.status, MemoryStatus::Rejected);
    let last = m.decisions.last().unwrap();
    assert_eq!(
        (last.decision, last.by.as_str()),
        (Decision::Reject, "quarantine-review")
    );
    assert!(last.reason.contains("30 days"), "{}", last.reason);
}

#[test]
fn a_sensitivity_edit_is_recorded_with_who_and_why_and_moves_the_memory_out_of_reach() {
    let (_d, recorder) = recorder_with(&[BUGFIX]);
    distill(&recorder, "run-bugfix-users-404");
    let store = recorder.store();
    let m = list(store, &MemoryFilter::default()).unwrap().remove(0);
    // Refused without who and why, or to the level it has; nothing changes.
    assert!(matches!(
        set_sensitivity(store, &m.id, Level::Secret, "", "x", "t"),
        Err(MemoryError::Invalid(_))
    ));
    assert!(matches!(
        set_sensitivity(store, &m.id, m.sensitivity, "lead", "x", "t"),
        Err(MemoryError::Conflict(_))
    ));
    assert!(get(store, &m.id).unwrap().edits.is_empty());
    let edited =
        set_sensitivity(store, &m.id, Level::Secret, "lead", "names a customer", "t").unwrap();
    assert_eq!(edited.sensitivity, Level::Secret);
    assert_eq!(
        edited.edits,
        vec![MemoryEdit {
            field: "sensitivity".into(),
            from: m.sensitivity.as_str().into(),
            to: "secret".into(),
            by: "lead".into(),
            reason: "names a customer".into(),
            at: "t".into(),
        }]
    );
    // Its group moved with it: the group of secret memories of its kind holds it now.
    let grouped: String = store
        .read({
            let id = m.id.clone();
            move |c| {
                c.query_row(
                    "SELECT g.sensitivity FROM memories m JOIN memory_groups g ON g.id = m.group_id
                     WHERE m.id = ?1",
                    [&id],
                    |r| r.get(0),
                )
            }
        })
        .unwrap();
    assert_eq!(grouped, "secret");
}

#[test]
fn the_memory_screen_pages_a_status_by_id() {
    let (_d, recorder) = recorder_with(&[BUGFIX, PAGINATION]);
    distill(&recorder, "run-bugfix-users-404");
    distill(&recorder, "run-feature-users-pagination");
    let store = recorder.store();
    let everything = list(
        store,
        &MemoryFilter {
            status: Some(MemoryStatus::Candidate),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(everything.len() > 3, "{}", everything.len());
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let p = page(
            store,
            Some(MemoryStatus::Candidate),
            None,
            after.as_deref(),
            3,
        )
        .unwrap();
        assert!(p.memories.len() <= 3);
        seen.extend(p.memories.iter().map(|m| m.id.clone()));
        match p.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    let mut want: Vec<String> = everything.into_iter().map(|m| m.id).collect();
    want.sort();
    assert_eq!(seen, want, "every candidate once, by id");
}

#[test]
fn feedback_moves_a_memory_s_rank_and_wrong_quarantines_it_with_who_and_why() {
    let (_d, recorder) = recorder_with(&[BUGFIX]);
    distill(&recorder, "run-bugfix-users-404");
    let store = recorder.store();
    let m = list(
        store,
        &MemoryFilter {
            status: Some(MemoryStatus::Approved),
            ..Default::default()
        },
    )
    .unwrap()
    .remove(0);
    let give = |verdict, by: &str, note: &str| {
        give_feedback(
            store,
            &m.id,
            MemoryFeedback {
                verdict,
                by: by.into(),
                note: note.into(),
                run: Some("run-bugfix-users-404".into()),
                at: "2026-11-25T01:00:00Z".into(),
            },
        )
    };
    // Refused without who, or `wrong` without why; nothing recorded.
    assert!(matches!(
        give(FeedbackVerdict::Helpful, " ", ""),
        Err(MemoryError::Invalid(_))
    ));
    assert!(matches!(
        give(FeedbackVerdict::Wrong, "lead", ""),
        Err(MemoryError::Invalid(_))
    ));
    assert!(get(store, &m.id).unwrap().feedback.is_empty());

    let helped = give(FeedbackVerdict::Helpful, "coder", "saved a step").unwrap();
    assert_eq!(helped.feedback.len(), 1);
    assert_eq!(helped.status, MemoryStatus::Approved);
    let (helpful, unhelpful): (i64, i64) = store
        .read({
            let id = m.id.clone();
            move |c| {
                c.query_row(
                    "SELECT helpful, unhelpful FROM memories WHERE id = ?1",
                    [&id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
            }
        })
        .unwrap();
    assert_eq!((helpful, unhelpful), (1, 0));

    let wrong = give(FeedbackVerdict::Wrong, "lead", "the handler moved").unwrap();
    assert_eq!(wrong.status, MemoryStatus::Quarantined);
    let last = wrong.decisions.last().unwrap();
    assert_eq!(
        (last.decision, last.by.as_str()),
        (Decision::Quarantine, "lead")
    );
    assert_eq!(last.reason, "reported wrong: the handler moved");
    assert_eq!(wrong.feedback.len(), 2);
    // Rejected: feedback changes nothing, and says so.
    record_decision(store, &m.id, Decision::Reject, "lead", "wrong", "t").unwrap();
    assert!(matches!(
        give(FeedbackVerdict::Helpful, "coder", ""),
        Err(MemoryError::Conflict(_))
    ));
}

#[test]
fn search_narrows_to_the_memories_of_a_user_s_runs() {
    let (_d, recorder) = recorder_with(&[BUGFIX, PAGINATION]);
    distill(&recorder, "run-bugfix-users-404");
    distill(&recorder, "run-feature-users-pagination");
    let store = recorder.store();
    store
        .write(|c| {
            let metadata: String = c.query_row(
                "SELECT metadata FROM runs WHERE id = 'run-bugfix-users-404'",
                (),
                |r| r.get(0),
            )?;
            let mut metadata: serde_json::Value = serde_json::from_str(&metadata).unwrap();
            metadata["user"] = "alice".into();
            c.execute(
                "UPDATE runs SET metadata = ?1, user_id = 'alice'
                 WHERE id = 'run-bugfix-users-404'",
                [metadata.to_string()],
            )?;
            Ok(())
        })
        .unwrap();
    let set = tollgate_rules::envelope::EnvelopeSet::empty();
    let ask = |user: Option<&str>| {
        search(
            store,
            &set,
            &SearchQuery {
                scope: "org:acme/repo:api/task:T-1".into(),
                clearance: Level::Confidential,
                agent: None,
                task: None,
                user: user.map(str::to_string),
                repo: None,
                class: None,
                text: String::new(),
                limit: MAX_HITS,
            },
            NOW_MS / 1000,
        )
        .unwrap()
    };
    let everyone = ask(None);
    let alice = ask(Some("alice"));
    assert!(!alice.hits.is_empty());
    assert!(
        alice.hits.len() < everyone.hits.len(),
        "{} {}",
        alice.hits.len(),
        everyone.hits.len()
    );
    for h in &alice.hits {
        assert!(
            h.memory
                .sources
                .iter()
                .any(|s| s.run == "run-bugfix-users-404"),
            "{:?}",
            h.memory.sources
        );
    }
    assert!(ask(Some("bob")).hits.is_empty());
}

/// Ranking reads whole rows only for the matches that can be among the best (`retrieve::
/// matching`'s two passes); asking for the best `k` must give the first `k` of asking for
/// all, whatever the recency the bound leaves open.
#[test]
fn the_best_k_matches_are_the_first_k_of_all_matches_whatever_their_recency() {
    let (_d, recorder) = recorder_with(&[BUGFIX, PAGINATION]);
    distill(&recorder, "run-bugfix-users-404");
    distill(&recorder, "run-feature-users-pagination");
    let store = recorder.store();
    let set = tollgate_rules::envelope::EnvelopeSet::empty();
    for spread in [0, 37, 91] {
        store
            .write(move |c| {
                // Recency spread over the memories in id order, (i * spread) % 100 percent.
                let scores: Vec<(String, String)> = {
                    let mut stmt = c.prepare("SELECT id, score FROM memories ORDER BY id")?;
                    let rows = stmt.query_map((), |r| Ok((r.get(0)?, r.get(1)?)))?;
                    rows.collect::<Result<_, _>>()?
                };
                for (i, (id, score)) in scores.into_iter().enumerate() {
                    let mut score: serde_json::Value = serde_json::from_str(&score).unwrap();
                    score["recency"] = (((i as i64 + 1) * spread % 100) as f64 / 100.0).into();
                    c.execute(
                        "UPDATE memories SET score = ?1, status = 'approved' WHERE id = ?2",
                        crate::store::params![score.to_string(), id],
                    )?;
                }
                Ok(())
            })
            .unwrap();
        for text in ["tests users pagination cursor", "cargo test clippy", "page"] {
            let ask = |limit: usize| {
                search(
                    store,
                    &set,
                    &SearchQuery {
                        scope: "org:acme/repo:api/task:T-1".into(),
                        clearance: Level::Confidential,
                        agent: None,
                        task: None,
                        user: None,
                        repo: None,
                        class: None,
                        text: text.into(),
                        limit,
                    },
                    NOW_MS / 1000,
                )
                .unwrap()
                .hits
                .into_iter()
                .map(|h| (h.memory.id, h.relevance))
                .collect::<Vec<_>>()
            };
            let all = ask(MAX_HITS);
            assert!(all.len() >= 2, "{text}: {all:?}");
            for k in 1..=all.len() {
                assert_eq!(
                    ask(k),
                    all[..k],
                    "{text}, best {k}, recency spread {spread}"
                );
            }
        }
    }
}

/// Search reads its hits, and the memory screen its page, through one `load_many` (a
/// statement per table per 32 memories, where one statement per table per memory took 45 round
/// trips of a PostgreSQL search): each memory comes back in the order asked, with its sources
/// and decisions, across chunks, asked twice, and `None` where none is stored.
#[test]
fn memories_read_together_are_each_what_reading_it_alone_gives_across_chunks() {
    let (_d, recorder) = recorder_with(&[BUGFIX, PAGINATION]);
    distill(&recorder, "run-bugfix-users-404");
    distill(&recorder, "run-feature-users-pagination");
    let store = recorder.store();
    let all = list(store, &MemoryFilter::default()).unwrap();
    assert!(all.len() >= 2, "{} memories", all.len());
    assert!(all.iter().all(|m| !m.sources.is_empty()));
    assert!(all.iter().any(|m| !m.decisions.is_empty()));
    let mut asked: Vec<String> = Vec::new();
    while asked.len() <= 2 * crate::store::IN_LIST {
        asked.push("no-such-memory".into());
        asked.extend(all.iter().rev().map(|m| m.id.clone()));
    }
    let ids = asked.clone();
    let many = store
        .read(move |c| store::load_many(c, &ids.iter().map(String::as_str).collect::<Vec<_>>()))
        .unwrap();
    assert_eq!(many.len(), asked.len());
    for (id, m) in asked.iter().zip(&many) {
        let alone = get(store, id).ok();
        assert_eq!(m.as_ref(), alone.as_ref(), "{id}");
        assert_eq!(m.as_ref(), all.iter().find(|a| &a.id == id), "{id}");
    }
}
