-- Numbers that grow with every change of what a gateway keeps in memory or waits on (issue 38),
-- as two counters of `tollgate_counters`: `changes/policy` with every envelope version stored
-- and every run re-pinned, `changes/approvals` with every approval decided, used or expired
-- (a counter not yet written reads as 0). Each gateway keeps the envelope set in force and the
-- runs' engines in memory, and reads `changes/policy` before it decides: when another gateway
-- (or a command on the same store) changed policy since it last looked, it loads again. While
-- a client long-polls an approval, the gateway watches `changes/approvals`, so a decision made
-- through another gateway wakes the wait. Triggers keep both, so no writer can forget to.

CREATE FUNCTION tollgate_policy_changed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tollgate_counters (name, value) VALUES ('changes/policy', 1)
    ON CONFLICT (name) DO UPDATE SET value = tollgate_counters.value + 1;
    RETURN NULL;
END
$$;
CREATE FUNCTION tollgate_approvals_changed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tollgate_counters (name, value) VALUES ('changes/approvals', 1)
    ON CONFLICT (name) DO UPDATE SET value = tollgate_counters.value + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER envelope_versions_changes AFTER INSERT OR UPDATE OR DELETE ON envelope_versions
FOR EACH STATEMENT EXECUTE FUNCTION tollgate_policy_changed();
CREATE TRIGGER run_pins_changes AFTER INSERT OR UPDATE OR DELETE ON run_pins
FOR EACH STATEMENT EXECUTE FUNCTION tollgate_policy_changed();
CREATE TRIGGER approvals_changes AFTER UPDATE ON approvals
FOR EACH STATEMENT EXECUTE FUNCTION tollgate_approvals_changed();
