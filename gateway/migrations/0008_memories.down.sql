DROP INDEX memory_links_by_run;
DROP TABLE memory_links;
DROP TABLE memory_decisions;
DROP INDEX memory_sources_by_run;
DROP TABLE memory_sources;
DROP INDEX memories_by_class_scope;
DROP INDEX memories_by_status;
DROP TABLE memories;
