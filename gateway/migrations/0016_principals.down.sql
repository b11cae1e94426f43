DROP TABLE audit_log;
DROP TABLE tokens;
