-- A number that grows with every change to what policy is read from (issue 38): a stored
-- envelope version, a run re-pinned. Each gateway keeps the envelope set in force and the
-- runs' engines in memory; before it decides it reads this number, and when another gateway
-- (or a command on the same store) changed policy since it last looked, it loads again.
-- Triggers keep it, so no writer can forget to.

CREATE TABLE policy_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    value BIGINT NOT NULL
);
INSERT INTO policy_generation (id, value) VALUES (1, 0);

CREATE FUNCTION tollgate_policy_changed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE policy_generation SET value = value + 1 WHERE id = 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER envelope_versions_generation AFTER INSERT OR UPDATE OR DELETE ON envelope_versions
FOR EACH STATEMENT EXECUTE FUNCTION tollgate_policy_changed();
CREATE TRIGGER run_pins_generation AFTER INSERT OR UPDATE OR DELETE ON run_pins
FOR EACH STATEMENT EXECUTE FUNCTION tollgate_policy_changed();
