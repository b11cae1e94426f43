-- A third counter of changes (see migration 24): `changes/credentials`, raised with every token
-- updated (revoked) or deleted. A gateway keeps the tokens it verified in memory for the one
-- route it answers with a write, the tool call, and that write reads this counter: when it
-- moved since the token was verified, nothing is recorded and the token is read again. So a
-- revocation, through any gateway or by hand in the database, holds from the first write
-- that follows it, as before, and a tool call reads nothing before its write.

CREATE TRIGGER tokens_changes_update AFTER UPDATE ON tokens
BEGIN
    INSERT INTO tollgate_counters (name, value) SELECT 'changes/credentials', 0
    WHERE NOT EXISTS (SELECT 1 FROM tollgate_counters WHERE name = 'changes/credentials');
    UPDATE tollgate_counters SET value = value + 1 WHERE name = 'changes/credentials';
END;
CREATE TRIGGER tokens_changes_delete AFTER DELETE ON tokens
BEGIN
    INSERT INTO tollgate_counters (name, value) SELECT 'changes/credentials', 0
    WHERE NOT EXISTS (SELECT 1 FROM tollgate_counters WHERE name = 'changes/credentials');
    UPDATE tollgate_counters SET value = value + 1 WHERE name = 'changes/credentials';
END;
