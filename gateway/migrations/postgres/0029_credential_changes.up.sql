-- `changes/credentials`, raised with every token updated (revoked) or deleted (see the SQLite
-- migration): the tool call's write reads it to check the tokens a gateway keeps verified.

CREATE FUNCTION tollgate_credentials_changed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tollgate_counters (name, value) VALUES ('changes/credentials', 1)
    ON CONFLICT (name) DO UPDATE SET value = tollgate_counters.value + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER tokens_changes AFTER UPDATE OR DELETE ON tokens
FOR EACH STATEMENT EXECUTE FUNCTION tollgate_credentials_changed();
