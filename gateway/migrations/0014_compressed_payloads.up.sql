-- From this version on, an event payload over 1 KiB is kept compressed (LZ4 block format, its
-- size prepended) as a BLOB in `events.payload`, where smaller ones stay TEXT: a decision's
-- proof is most of a recorded tool call and compresses about fourfold, so the event stays in
-- its row (no artifact, no overflow page). `payload_hash` is still the hash of the canonical
-- JSON text, so the chain is unchanged. Nothing to change in the schema (a SQLite TEXT column
-- keeps a BLOB as it is; a PostgreSQL port would add a bytea column): the migration marks the
-- format, so an older build refuses the database instead of misreading it, and its down step
-- first puts every compressed payload back as text (`store::migrate::before_down`).
SELECT 1;
