-- A number that grows with every change to what policy is read from (issue 38): a stored
-- envelope version, a run re-pinned. Each gateway keeps the envelope set in force and the
-- runs' engines in memory; before it decides it reads this number, and when another gateway
-- (or a command on the same store) changed policy since it last looked, it loads again.
-- Triggers keep it, so no writer can forget to.

CREATE TABLE policy_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
);
INSERT INTO policy_generation (id, value) VALUES (1, 0);

CREATE TRIGGER envelope_versions_generation_insert AFTER INSERT ON envelope_versions
BEGIN
    UPDATE policy_generation SET value = value + 1 WHERE id = 1;
END;
CREATE TRIGGER envelope_versions_generation_update AFTER UPDATE ON envelope_versions
BEGIN
    UPDATE policy_generation SET value = value + 1 WHERE id = 1;
END;
CREATE TRIGGER envelope_versions_generation_delete AFTER DELETE ON envelope_versions
BEGIN
    UPDATE policy_generation SET value = value + 1 WHERE id = 1;
END;
CREATE TRIGGER run_pins_generation_insert AFTER INSERT ON run_pins
BEGIN
    UPDATE policy_generation SET value = value + 1 WHERE id = 1;
END;
CREATE TRIGGER run_pins_generation_update AFTER UPDATE ON run_pins
BEGIN
    UPDATE policy_generation SET value = value + 1 WHERE id = 1;
END;
CREATE TRIGGER run_pins_generation_delete AFTER DELETE ON run_pins
BEGIN
    UPDATE policy_generation SET value = value + 1 WHERE id = 1;
END;
