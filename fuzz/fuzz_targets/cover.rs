//! Cover's static inspection on hostile Python: the input is the text of `app/main.py` in a
//! codebase of its own, inspected from `app.main:agent`. It never panics or overflows its stack
//! (deep nesting is refused or read to a bound), the object is found or the error lists the
//! candidates, every classification is one cover knows, and the same code gives the same report.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tollgate_gateway::cover::{CoverError, inspect};

fn dir() -> &'static std::path::Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tollgate-fuzz-cover-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("app")).expect("create the codebase");
        std::fs::write(dir.join("app/__init__.py"), "").expect("write __init__.py");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let root = dir();
    std::fs::write(root.join("app/main.py"), data).expect("write main.py");
    match inspect(root, "app.main:agent") {
        Ok(report) => {
            for t in &report.tools {
                assert!(
                    ["none", "read_only", "mutating", "executes"].contains(&t.classification.as_str()),
                    "{t:?}"
                );
                for e in &t.effects {
                    assert!(
                        ["read_only", "mutating", "executes"].contains(&e.classification.as_str()),
                        "{e:?}"
                    );
                }
            }
            let again = inspect(root, "app.main:agent").expect("the same code inspects again");
            assert_eq!(report, again, "the same code gave two reports");
        }
        Err(CoverError::NotFound { what, candidates }) => {
            assert!(!what.is_empty() && !candidates.is_empty());
        }
        Err(e) => panic!("an inspection of a readable folder failed: {e}"),
    }
});
