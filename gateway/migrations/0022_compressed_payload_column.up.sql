-- A compressed event payload gets a column of its own (`payload_z`, BLOB), where migration 14
-- kept it in `payload` beside the text of the smaller ones: one column holding TEXT in some rows
-- and BLOB in others is SQLite's alone (PostgreSQL types a column once). An event's payload is
-- then in exactly one place: `payload` (its text), `payload_z` (LZ4, size prepended) or, when
-- both are NULL, the artifact under `payload_hash`.

ALTER TABLE events ADD COLUMN payload_z BLOB;
UPDATE events SET payload_z = payload, payload = NULL WHERE typeof(payload) = 'blob';
