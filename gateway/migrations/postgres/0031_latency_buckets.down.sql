DROP INDEX memory_links_by_time;
DROP TABLE latency_buckets;
