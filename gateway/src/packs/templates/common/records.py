#!/usr/bin/env python3
"""A dry-run adapter of the tollgate.adapter/v1 protocol: one JSON request on stdin, one JSON
answer on stdout.

It keeps a small system of record in `state_dir/records.json`: one record per case, whose fields
an action sets from its input (`assign_queue` sets `queue`, `set_priority` sets `priority`).
Every apply is journalled under its idempotency key, so applying the same key twice has one
effect and `compensate` restores exactly what the apply replaced.

Replace this with an adapter for your real system, keeping the five operations.
"""
import json
import os
import sys


def load(path, default):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def save(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, sort_keys=True)
    os.replace(tmp, path)


def main():
    req = json.load(sys.stdin)
    op, state_dir = req["op"], req["state_dir"]
    record_id = req.get("case_id") or "record"
    fields = req.get("input") or {}
    key = req.get("idempotency_key") or ""
    os.makedirs(state_dir, exist_ok=True)
    records_path = os.path.join(state_dir, "records.json")
    journal_path = os.path.join(state_dir, "journal.json")
    records = load(records_path, {})
    journal = load(journal_path, {})
    record = records.get(record_id, {})

    if op == "preview":
        changes = [
            {"target": record_id, "field": k, "before": record.get(k), "after": v}
            for k, v in sorted(fields.items())
            if record.get(k) != v
        ]
        summary = ", ".join(f"{c['field']} → {c['after']}" for c in changes) or "no change"
        answer = {"changes": changes, "summary": f"{record_id}: {summary}"}
    elif op == "apply":
        applied = key not in journal
        if applied:
            journal[key] = {"record": record_id, "before": {k: record.get(k) for k in fields}}
            record.update(fields)
            records[record_id] = record
            save(records_path, records)
            save(journal_path, journal)
        answer = {"applied": applied, "receipt": {"record": record_id, "key": key, "fields": sorted(fields)}}
    elif op == "verify":
        entry = journal.get(key)
        verified = entry is not None and all(record.get(k) == v for k, v in fields.items())
        answer = {"verified": verified, "state": records}
    elif op == "compensate":
        entry = journal.pop(key, None)
        if entry is not None:
            rec = records.get(entry["record"], {})
            for k, v in entry["before"].items():
                if v is None:
                    rec.pop(k, None)
                else:
                    rec[k] = v
            if rec:
                records[entry["record"]] = rec
            else:
                records.pop(entry["record"], None)
            save(records_path, records)
            save(journal_path, journal)
        answer = {"compensated": entry is not None}
    else:
        answer = {"error": f"operation `{op}` is not supported by this adapter"}
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
