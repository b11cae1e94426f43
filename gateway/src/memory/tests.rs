use super::*;
use crate::recorder::Recorder;
use crate::recorder::format::RunFile;
use crate::store::tests::tempdir::Dir;
use crate::store::{Store, StoreLocation};

/// 2026-11-25T00:00:00Z.
const NOW_MS: i64 = 1_795_564_800_000;

fn fixture(name: &str) -> RunFile {
    let path = format!("{}/../fixtures/runs/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn recorder_with(files: &[&str]) -> (Dir, Recorder) {
    let dir = Dir::new("memory");
    let store = Store::open(&StoreLocation::file(dir.path().join("t.db"))).unwrap();
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
