DROP TRIGGER tokens_changes ON tokens;
DROP FUNCTION tollgate_credentials_changed;
