DROP TABLE latency_buckets;
