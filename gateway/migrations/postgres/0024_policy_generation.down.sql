DROP TRIGGER run_pins_generation ON run_pins;
DROP TRIGGER envelope_versions_generation ON envelope_versions;
DROP FUNCTION tollgate_policy_changed;
DROP TABLE policy_generation;
