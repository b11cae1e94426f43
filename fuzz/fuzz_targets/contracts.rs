//! Handoff contracts: any text parses or is refused with at least one fault, whose line (if
//! any) lies in the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tollgate_gateway::handoff::contract::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.lines().count().max(1);
    if let Err(faults) = parse(text) {
        assert!(!faults.0.is_empty(), "a refusal without a fault");
        for f in &faults.0 {
            assert!(
                !f.line.is_some_and(|l| l == 0 || l > lines + 1),
                "line {:?} outside the text's {lines}: {f:?}",
                f.line
            );
        }
    }
});
