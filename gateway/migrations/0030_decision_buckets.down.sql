DROP TABLE decision_buckets;
