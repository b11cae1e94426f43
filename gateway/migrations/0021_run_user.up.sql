-- Who a run was for (`metadata.user`, when it is text) as a column of its own: memory search
-- narrows to a user's runs by it, where reading it out of the JSON text (`json_extract`) was
-- SQLite's own SQL. A run's metadata is written once, when the run is recorded.

ALTER TABLE runs ADD COLUMN user_id TEXT;
UPDATE runs SET user_id = json_extract(metadata, '$.user')
WHERE json_valid(metadata) AND json_type(metadata, '$.user') = 'text';
