-- Numbers that grow with every change of what a gateway keeps in memory or waits on (issue 38),
-- as two counters of `tollgate_counters`: `changes/policy` with every envelope version stored
-- and every run re-pinned, `changes/approvals` with every approval decided, used or expired
-- (a counter not yet written reads as 0). Each gateway keeps the envelope set in force and the
-- runs' engines in memory, and reads `changes/policy` before it decides: when another gateway
-- (or a command on the same store) changed policy since it last looked, it loads again. While
-- a client long-polls an approval, the gateway watches `changes/approvals`, so a decision made
-- through another gateway wakes the wait. Triggers keep both, so no writer can forget to.

CREATE TRIGGER envelope_versions_changes_insert AFTER INSERT ON envelope_versions
BEGIN
    INSERT INTO tollgate_counters (name, value) SELECT 'changes/policy', 0
    WHERE NOT EXISTS (SELECT 1 FROM tollgate_counters WHERE name = 'changes/policy');
    UPDATE tollgate_counters SET value = value + 1 WHERE name = 'changes/policy';
END;
CREATE TRIGGER envelope_versions_changes_update AFTER UPDATE ON envelope_versions
BEGIN
    INSERT INTO tollgate_counters (name, value) SELECT 'changes/policy', 0
    WHERE NOT EXISTS (SELECT 1 FROM tollgate_counters WHERE name = 'changes/policy');
    UPDATE tollgate_counters SET value = value + 1 WHERE name = 'changes/policy';
END;
CREATE TRIGGER envelope_versions_changes_delete AFTER DELETE ON envelope_versions
BEGIN
    INSERT INTO tollgate_counters (name, value) SELECT 'changes/policy', 0
    WHERE NOT EXISTS (SELECT 1 FROM tollgate_counters WHERE name = 'changes/policy');
    UPDATE tollgate_counters SET value = value + 1 WHERE name = 'changes/policy';
END;
CREATE TRIGGER run_pins_changes_insert AFTER INSERT ON run_pins
BEGIN
    INSERT INTO tollgate_counters (name, value) SELECT 'changes/policy', 0
    WHERE NOT EXISTS (SELECT 1 FROM tollgate_counters WHERE name = 'changes/policy');
    UPDATE tollgate_counters SET value = value + 1 WHERE name = 'changes/policy';
END;
CREATE TRIGGER run_pins_changes_update AFTER UPDATE ON run_pins
BEGIN
    INSERT INTO tollgate_counters (name, value) SELECT 'changes/policy', 0
    WHERE NOT EXISTS (SELECT 1 FROM tollgate_counters WHERE name = 'changes/policy');
    UPDATE tollgate_counters SET value = value + 1 WHERE name = 'changes/policy';
END;
CREATE TRIGGER run_pins_changes_delete AFTER DELETE ON run_pins
BEGIN
    INSERT INTO tollgate_counters (name, value) SELECT 'changes/policy', 0
    WHERE NOT EXISTS (SELECT 1 FROM tollgate_counters WHERE name = 'changes/policy');
    UPDATE tollgate_counters SET value = value + 1 WHERE name = 'changes/policy';
END;
CREATE TRIGGER approvals_changes_update AFTER UPDATE ON approvals
BEGIN
    INSERT INTO tollgate_counters (name, value) SELECT 'changes/approvals', 0
    WHERE NOT EXISTS (SELECT 1 FROM tollgate_counters WHERE name = 'changes/approvals');
    UPDATE tollgate_counters SET value = value + 1 WHERE name = 'changes/approvals';
END;
