-- Who may do what (issue 32): credentials per kind of principal, and the log of what admins
-- and approvers did.
--
-- A token is stored only as a keyed hash of its secret (the key is the gateway's, outside
-- the database); `id` is the public part a token carries, so a use reads one row by key.

CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    max_scope TEXT,
    max_clearance TEXT,
    secret_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    created_by TEXT NOT NULL,
    expires_at INTEGER,
    revoked_at TEXT,
    revoked_by TEXT
);

CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    principal TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    status INTEGER NOT NULL
);
