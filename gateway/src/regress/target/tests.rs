#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::regress::bundle::tests::fixture;
use crate::regress::execute::run_case;
use crate::regress::{CaseOptions, from_run};

fn fixture_envelopes(edit: impl Fn(&str, String) -> String) -> Vec<(String, String)> {
    ["coding-agent", "org-baseline"]
        .iter()
        .map(|name| {
            let path = format!(
                "{}/../fixtures/envelopes/{name}.yaml",
                env!("CARGO_MANIFEST_DIR")
            );
            (
                format!("{name}.yaml"),
                edit(name, std::fs::read_to_string(path).unwrap()),
            )
        })
        .collect()
}

#[test]
fn the_recorded_target_changes_nothing() {
    let run = fixture("01-bugfix-users-404");
    assert!(matches!(
        retarget(&run, &Target::recorded()),
        Cow::Borrowed(_)
    ));
    // The envelopes the run was recorded with, as a target: the same run.
    let same = Target::from_parts(
        "same",
        &fixture_envelopes(|_, y| y),
        SettingsOverride::default(),
    )
    .unwrap();
    assert_eq!(same.envelopes.len(), 2);
    let (case, bundle) = from_run(
        &run,
        &CaseOptions {
            step: Some(9),
            ..CaseOptions::default()
        },
    )
    .unwrap();
    let r = run_case(&case, &bundle, &same).unwrap();
    assert!(r.passed && !r.drift, "{r:?}");
}

#[test]
fn a_loosened_envelope_fails_the_case_that_relied_on_it() {
    let run = fixture("04-forbidden-tool-pool-exhaustion");
    let (case, bundle) = from_run(&run, &CaseOptions::default()).unwrap();
    let loose = fixture_envelopes(|name, yaml| {
        if name == "org-baseline" {
            yaml.replace("version: 1", "version: 2").replace(
                "tools: [\"shell.rm*\"]",
                "tools: [\"shell.rmdir_never_called\"]",
            )
        } else {
            yaml
        }
    });
    let target = Target::from_parts("loose", &loose, SettingsOverride::default()).unwrap();
    let r = run_case(&case, &bundle, &target).unwrap();
    assert!(!r.passed);
    assert!(r.drift, "the target decides differently from the recording");
    assert!(
        r.failures().any(|a| a.message.contains("\"deny\"")),
        "{:#?}",
        r.failures().collect::<Vec<_>>()
    );
    // The bundle itself is untouched: recorded, it still passes.
    assert!(
        run_case(&case, &bundle, &Target::recorded())
            .unwrap()
            .passed
    );
}

#[test]
fn a_broken_budget_fails_the_compile_shape() {
    let run = fixture("01-bugfix-users-404");
    let (case, bundle) = from_run(
        &run,
        &CaseOptions {
            step: Some(12),
            ..CaseOptions::default()
        },
    )
    .unwrap();
    let target = Target::from_parts(
        "tight",
        &[],
        SettingsOverride {
            budget: Some(400),
            ..SettingsOverride::default()
        },
    )
    .unwrap();
    let r = run_case(&case, &bundle, &target).unwrap();
    assert!(!r.passed, "{r:?}");
    assert!(
        r.failures()
            .any(|a| a.class == crate::regress::case::AssertionClass::Structural),
        "{:#?}",
        r.failures().collect::<Vec<_>>()
    );
}

#[test]
fn a_target_file_reads_its_folder_and_refuses_bad_envelopes() {
    let dir = std::env::temp_dir().join(format!("tollgate-target-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("policies")).unwrap();
    for (name, yaml) in fixture_envelopes(|_, y| y) {
        std::fs::write(dir.join("policies").join(name), yaml).unwrap();
    }
    std::fs::write(
        dir.join("target.yaml"),
        "envelopes: policies\nsettings: {budget: 2500}\n",
    )
    .unwrap();
    let t = Target::load(&dir.join("target.yaml")).unwrap();
    assert_eq!(t.envelopes.len(), 2);
    assert_eq!(t.settings.budget, Some(2500));
    std::fs::write(dir.join("target.yaml"), "envelopes: policies\nbudget: 1\n").unwrap();
    let err = Target::load(&dir.join("target.yaml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("target.yaml:2"), "{err}");
    std::fs::write(dir.join("target.yaml"), "envelopes: policies\n").unwrap();
    std::fs::write(dir.join("policies/broken.yaml"), "id: x\nversion: one\n").unwrap();
    let err = Target::load(&dir.join("target.yaml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("broken.yaml"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
