-- `store::migrate::before_down` has put every compressed payload back as text; an older build
-- cannot read one, so reverting is refused (the CHECK below fails, naming itself) if any is left.
CREATE TEMP TABLE tollgate_downgrade_guard (
    compressed INTEGER CONSTRAINT events_hold_compressed_payloads_that_an_older_build_cannot_read
        CHECK (compressed = 0)
);
INSERT INTO tollgate_downgrade_guard SELECT COUNT(*) FROM events WHERE typeof(payload) = 'blob';
DROP TABLE tollgate_downgrade_guard;
