//! Envelopes: any text loads or fails with at least one diagnostic whose span lies in the
//! text, and the diagnostics render.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tollgate_rules::envelope::load_envelopes;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(errors) = load_envelopes(&[("fuzz.yaml", text)]) {
        let len = errors.source.text.len() as u32;
        assert!(
            !errors.diagnostics.is_empty(),
            "an error without a diagnostic"
        );
        for d in &errors.diagnostics {
            assert!(
                d.span.start <= d.span.end && d.span.end <= len,
                "span {:?} outside the text: {d:?}",
                d.span
            );
        }
        let _ = errors.render();
        let _ = errors.located();
    }
});
