use super::*;
use crate::store::tests::tempdir::Dir;

fn fixture(name: &str) -> (String, String) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/envelopes/");
    (
        format!("{name}.yaml"),
        std::fs::read_to_string(format!("{path}{name}.yaml")).unwrap(),
    )
}

fn store() -> (Dir, Store) {
    let dir = Dir::new("policy");
    let store = crate::store::tests::open_in(dir.path());
    (dir, store)
}

fn labels(stored: &[Stored]) -> Vec<(String, bool)> {
    stored.iter().map(|s| (s.version.label(), s.new)).collect()
}

#[test]
fn storing_keeps_each_content_once() {
    let (_d, store) = store();
    let files = vec![fixture("org-baseline"), fixture("coding-agent")];
    let first = store_envelopes(&store, &files).unwrap();
    assert_eq!(
        labels(&first),
        [
            ("coding-agent@2".to_string(), true),
            ("org-baseline@1".to_string(), true)
        ]
    );
    // Same content, reformatted: not a new version.
    let reformatted = vec![
        fixture("org-baseline"),
        (
            "coding-agent.yaml".to_string(),
            fixture("coding-agent")
                .1
                .replace("# What the coding agent", "# Reformatted: what"),
        ),
    ];
    let again = store_envelopes(&store, &reformatted).unwrap();
    assert!(again.iter().all(|s| !s.new), "{again:?}");
    // The text kept is the first one stored, comments included.
    let (name, text) = version_source(&store, "coding-agent@2").unwrap();
    assert_eq!(name, "coding-agent@2");
    assert!(text.starts_with("# What the coding agent"), "{text}");
}

#[test]
fn a_changed_envelope_must_raise_its_version_and_old_versions_stay_readable() {
    let (_d, store) = store();
    store_envelopes(&store, &[fixture("org-baseline"), fixture("coding-agent")]).unwrap();
    let changed = fixture("coding-agent")
        .1
        .replace("tools: [http.get]\n", "tools: [http.get, http.head]\n");
    let err = store_envelopes(
        &store,
        &[
            fixture("org-baseline"),
            ("coding-agent.yaml".to_string(), changed.clone()),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("version 2 is already stored with different content"),
        "{err}"
    );
    assert_eq!(list_versions(&store, None).unwrap().len(), 2);
    let bumped = changed.replace("version: 2", "version: 3");
    let stored = store_envelopes(
        &store,
        &[
            fixture("org-baseline"),
            ("coding-agent.yaml".to_string(), bumped.clone()),
        ],
    )
    .unwrap();
    assert!(
        stored
            .iter()
            .any(|s| s.version.label() == "coding-agent@3" && s.new)
    );
    // Going backwards with new content is refused too.
    let backwards = bumped.replace("version: 3", "version: 1");
    let err = store_envelopes(
        &store,
        &[
            fixture("org-baseline"),
            ("coding-agent.yaml".into(), backwards),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("give the changed envelope `version: 4`"),
        "{err}"
    );
    let versions: Vec<String> = list_versions(&store, Some("coding-agent"))
        .unwrap()
        .iter()
        .map(EnvelopeVersion::label)
        .collect();
    assert_eq!(versions, ["coding-agent@2", "coding-agent@3"]);
    assert!(
        version_source(&store, "coding-agent@2")
            .unwrap()
            .1
            .contains("tools: [http.get]\n")
    );
    let current = current_set(&store).unwrap();
    assert_eq!(current.get("coding-agent").unwrap().version, 3);
}

#[test]
fn invalid_envelopes_store_nothing() {
    let (_d, store) = store();
    let broken = (
        "bad.yaml".to_string(),
        "id: bad\nversion: 1\nextends: [missing]\n".to_string(),
    );
    let err = store_envelopes(&store, &[fixture("org-baseline"), broken]).unwrap_err();
    assert!(matches!(err, PolicyStoreError::Envelopes(_)), "{err}");
    assert!(list_versions(&store, None).unwrap().is_empty());
    assert!(version_source(&store, "bad").is_err());
    assert!(
        version_source(&store, "bad@x")
            .unwrap_err()
            .to_string()
            .contains("ID@VERSION")
    );
}

#[test]
fn an_envelope_may_extend_one_already_stored() {
    let (_d, store) = store();
    store_envelopes(&store, &[fixture("org-baseline")]).unwrap();
    let stored = store_envelopes(&store, &[fixture("coding-agent")]).unwrap();
    let labels: Vec<String> = stored.iter().map(|s| s.version.label()).collect();
    assert_eq!(labels, ["coding-agent@2"], "only what was given is stored");
    // A parent that is neither given nor stored is still an error, and nothing is stored.
    let orphan = (
        "o.yaml".to_string(),
        "id: o\nversion: 1\nextends: [nobody]\n".to_string(),
    );
    assert!(matches!(
        store_envelopes(&store, &[orphan]),
        Err(PolicyStoreError::Envelopes(_))
    ));
    assert_eq!(list_versions(&store, None).unwrap().len(), 2);
}

/// The same endless syntax error as `simulate::candidate_ids` (Schemathesis): the ids of a
/// text that stops parsing end at the error.
#[test]
fn document_ids_end_at_a_syntax_error() {
    assert_eq!(document_ids("id: a\n---\nid: b\n"), ["a", "b"]);
    assert!(document_ids("\u{1b}").is_empty());
    assert!(document_ids("id: a\n---\n\u{1b}: [").len() <= 1);
}
