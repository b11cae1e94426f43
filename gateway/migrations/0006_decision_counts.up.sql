-- A run's decisions counted by effect, kept on the run's row by every append and import in
-- the same write as the events: each `decision` event by what the gateway answered (its
-- `outcome`, else the policy's `effect`) and each policy decision on a `compile`'s items. The
-- dashboard's runs list reads five integers per run instead of parsing every decision.
ALTER TABLE runs ADD COLUMN decisions_allow INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN decisions_redact INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN decisions_require_approval INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN decisions_rate_limited INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN decisions_deny INTEGER NOT NULL DEFAULT 0;

-- Counts for the runs recorded before this migration. The one SQLite-specific part of the
-- migrations: `json_extract` and `json_each` (PostgreSQL would read the same paths with `->`,
-- `->>` and `jsonb_array_elements`). A payload larger than the inline limit is an artifact.
UPDATE runs SET
    decisions_allow = c.allow,
    decisions_redact = c.redact,
    decisions_require_approval = c.require_approval,
    decisions_rate_limited = c.rate_limited,
    decisions_deny = c.deny
FROM (
    WITH bodies AS (
        SELECT e.run_id, e.kind,
               COALESCE(e.payload,
                        (SELECT CAST(a.body AS TEXT) FROM artifacts a
                         WHERE a.hash = e.payload_hash)) AS body
        FROM events e
        WHERE e.kind IN ('decision', 'compile')
    ),
    decided AS (
        SELECT run_id,
               COALESCE(json_extract(body, '$.outcome'),
                        json_extract(body, '$.decision.effect')) AS effect
        FROM bodies WHERE kind = 'decision'
        UNION ALL
        SELECT b.run_id, json_extract(o.value, '$.policy.effect') AS effect
        FROM bodies b, json_each(b.body, '$.outcomes') o
        WHERE b.kind = 'compile'
    )
    SELECT run_id,
           SUM(effect = 'allow') AS allow,
           SUM(effect = 'redact') AS redact,
           SUM(effect = 'require_approval') AS require_approval,
           SUM(effect = 'rate_limited') AS rate_limited,
           SUM(effect = 'deny') AS deny
    FROM decided
    GROUP BY run_id
) AS c
WHERE c.run_id = runs.id;
