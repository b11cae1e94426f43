DROP TRIGGER approvals_changes ON approvals;
DROP TRIGGER run_pins_changes ON run_pins;
DROP TRIGGER envelope_versions_changes ON envelope_versions;
DROP FUNCTION tollgate_approvals_changed;
DROP FUNCTION tollgate_policy_changed;
