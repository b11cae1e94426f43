DROP TABLE dashboard_logins;
DROP INDEX dashboard_sessions_by_expiry;
DROP TABLE dashboard_sessions;
