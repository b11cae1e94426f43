//! Event rows as the store keeps them: a payload inline, compressed in its row or, still too
//! large, an artifact; and the rows of one append sent as one `INSERT` (a round trip on
//! PostgreSQL however many events a write appends).

use crate::store::{Connection, Param, StoreError, params_from_iter};

use super::super::{COMPRESS_PAYLOAD_OVER, INLINE_PAYLOAD_LIMIT, event_hash};

/// Most rows in one `INSERT` (10 values each: well under either engine's limit on parameters).
pub(super) const ROWS_PER_INSERT: usize = 64;

/// One event, ready to insert.
pub(super) struct EventRow {
    seq: i64,
    step: u32,
    kind: String,
    at: String,
    inline: Option<String>,
    packed: Option<Vec<u8>>,
    payload_hash: String,
    prev: String,
    /// The event's own hash (the next one's `prev`).
    pub(super) hash: String,
}

impl EventRow {
    /// The row of event `seq` of `run` whose payload's canonical text is `text`, chained to
    /// `prev`. A payload too large for its row even compressed is stored as an artifact here,
    /// in the caller's write.
    #[expect(clippy::too_many_arguments, reason = "the columns of one event")]
    pub(super) fn new(
        c: &Connection,
        run: &str,
        seq: u64,
        step: u32,
        kind: &str,
        at: &str,
        text: &str,
        prev: &str,
    ) -> Result<EventRow, StoreError> {
        let payload_hash = blake3::hash(text.as_bytes()).to_hex().to_string();
        let (inline, packed) = if text.len() <= COMPRESS_PAYLOAD_OVER {
            (Some(text.to_string()), None)
        } else {
            let z = super::super::compress_payload(text);
            if z.len() <= INLINE_PAYLOAD_LIMIT {
                (None, Some(z))
            } else {
                crate::store::artifacts::store(
                    c,
                    &payload_hash,
                    "application/json",
                    text.as_bytes(),
                )?;
                (None, None)
            }
        };
        let hash = event_hash(run, seq, step, kind, at, &payload_hash, prev);
        Ok(EventRow {
            seq: i64::try_from(seq).map_err(StoreError::corrupt)?,
            step,
            kind: kind.to_string(),
            at: at.to_string(),
            inline,
            packed,
            payload_hash,
            prev: prev.to_string(),
            hash,
        })
    }
}

/// Inserts `rows` of `run`, up to [`ROWS_PER_INSERT`] a statement.
pub(super) fn insert(c: &Connection, run: &str, rows: &[EventRow]) -> Result<(), StoreError> {
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let mut values: Vec<&dyn Param> = Vec::with_capacity(chunk.len() * 10);
        for row in chunk {
            values.extend([
                &run as &dyn Param,
                &row.seq,
                &row.step,
                &row.kind,
                &row.at,
                &row.inline,
                &row.packed,
                &row.payload_hash,
                &row.prev,
                &row.hash,
            ]);
        }
        c.prepare_cached(statement(chunk.len()))?
            .execute(params_from_iter(values))?;
    }
    Ok(())
}

/// The `INSERT` of `n` rows (1 to [`ROWS_PER_INSERT`]): each text written once per process and
/// prepared once per connection (a call appends two rows, so one text serves nearly every
/// write).
fn statement(n: usize) -> &'static str {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        (1..=ROWS_PER_INSERT)
            .map(|n| {
                let tuples: Vec<String> = (0..n)
                    .map(|row| {
                        let places: Vec<String> =
                            (1..=10).map(|k| format!("?{}", row * 10 + k)).collect();
                        format!("({})", places.join(", "))
                    })
                    .collect();
                format!(
                    "INSERT INTO events (run_id, seq, step_idx, kind, at, payload, payload_z,
                                         payload_hash, prev_hash, hash)
                     VALUES {}",
                    tuples.join(", ")
                )
            })
            .collect()
    });
    &texts[n.clamp(1, ROWS_PER_INSERT) - 1]
}
