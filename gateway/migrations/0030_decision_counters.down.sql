DROP TABLE decision_task_reasons;
DROP TABLE decision_reasons;
DROP TABLE decision_task_buckets;
DROP TABLE decision_buckets;
