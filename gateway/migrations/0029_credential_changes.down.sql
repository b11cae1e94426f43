DROP TRIGGER tokens_changes_delete;
DROP TRIGGER tokens_changes_update;
