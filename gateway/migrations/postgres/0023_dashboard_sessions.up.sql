-- The dashboard's browser sessions and one-time login tokens, stored (issue 38): several
-- gateways on one database share them, so a login on one works on every other, and a
-- restart no longer logs everyone out. Only hashes of the session ids and login tokens are
-- kept (blake3, hex): whoever reads the database cannot take over a session.

CREATE TABLE dashboard_sessions (
    id_hash TEXT COLLATE "C" PRIMARY KEY,
    principal TEXT COLLATE "C" NOT NULL,
    csrf TEXT COLLATE "C" NOT NULL,
    expires_ms BIGINT NOT NULL
);
CREATE INDEX dashboard_sessions_by_expiry ON dashboard_sessions (expires_ms);

CREATE TABLE dashboard_logins (
    token_hash TEXT COLLATE "C" PRIMARY KEY,
    expires_ms BIGINT NOT NULL
);
