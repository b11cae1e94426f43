//! The built-in `sleep` job, a diagnostic: it waits `ms` milliseconds in `steps` equal steps,
//! reporting progress after each. Enqueue one to check that a worker deployment picks up jobs,
//! reports progress and finishes them:
//!
//! ```text
//! tollgate jobs enqueue sleep --payload '{"ms": 3000, "steps": 6}'
//! tollgate jobs run --idle-exit
//! ```
//!
//! Payload: `ms` (required, at most one hour) and `steps` (default 1, from 1 to 10 000).
//! Result: `{"slept_ms": MS, "steps": STEPS}`. A malformed payload is a permanent failure.

use std::time::Duration;

use serde_json::{Value, json};

use super::{JobContext, JobFailure};

/// The kind of the built-in diagnostic job.
pub const SLEEP_KIND: &str = "sleep";

/// The longest sleep, so a typo cannot hold a worker for days.
const MAX_MS: u64 = 3_600_000;
/// The most steps.
const MAX_STEPS: u64 = 10_000;

/// The `sleep` handler (see the module docs).
pub fn sleep_job(context: &JobContext<'_>, payload: &Value) -> Result<Value, JobFailure> {
    let (ms, steps) = sleep_payload(payload).map_err(|e| {
        JobFailure::permanent(format!(
            "{e}\n  help: a `sleep` payload looks like {{\"ms\": 3000, \"steps\": 6}}"
        ))
    })?;
    let step = ms / steps;
    let mut slept = 0;
    context.progress(0, steps, &format!("sleeping {ms} ms in {steps} steps"))?;
    for done in 1..=steps {
        // The last step takes the remainder, so the total is exactly `ms`.
        let this = if done == steps { ms - slept } else { step };
        context.clock().sleep(Duration::from_millis(this));
        slept += this;
        context.progress(done, steps, &format!("slept {slept} of {ms} ms"))?;
    }
    Ok(json!({"slept_ms": ms, "steps": steps}))
}

fn sleep_payload(payload: &Value) -> Result<(u64, u64), String> {
    let whole = |key: &str| -> Result<Option<u64>, String> {
        match payload.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("`{key}` must be a whole number, not `{v}`")),
        }
    };
    if !payload.is_object() {
        return Err(format!(
            "the `sleep` payload must be an object, not `{payload}`"
        ));
    }
    let ms = whole("ms")?.ok_or("the `sleep` payload needs `ms`")?;
    if ms > MAX_MS {
        return Err(format!("`ms` is {ms}; the most is {MAX_MS} (one hour)"));
    }
    let steps = whole("steps")?.unwrap_or(1);
    if !(1..=MAX_STEPS).contains(&steps) {
        return Err(format!("`steps` is {steps}; use 1 to {MAX_STEPS}"));
    }
    Ok((ms, steps))
}
