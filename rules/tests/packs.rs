//! Runs the built-in packs' test files (`rules/tests/packs/*.test.yaml`) through the pack test
//! runner: every case must pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use tollgate_rules::pack_test::PackTester;

#[test]
fn every_builtin_pack_test_passes() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/packs");
    let report = PackTester::default().run_paths(&[dir]);
    let errors: String = report.errors.iter().map(|e| e.render()).collect();
    assert!(report.errors.is_empty(), "{errors}");
    assert!(report.is_success(), "{}", report.to_text());
    // Every built-in pack has its test file.
    for pack in tollgate_rules::packs::builtin_packs() {
        assert!(
            report
                .files
                .iter()
                .any(|f| f.file.ends_with(&format!("{}.test.yaml", pack.name))),
            "no test file for the `{}` pack",
            pack.name
        );
    }
    assert!(report.passed >= 40, "{} cases", report.passed);
}
