ALTER TABLE runs DROP COLUMN decisions_deny;
ALTER TABLE runs DROP COLUMN decisions_rate_limited;
ALTER TABLE runs DROP COLUMN decisions_require_approval;
ALTER TABLE runs DROP COLUMN decisions_redact;
ALTER TABLE runs DROP COLUMN decisions_allow;
