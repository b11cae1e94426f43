#!/usr/bin/env python3
"""The dry-run external adapter of a pack written by `tollgate cover` (protocol
tollgate.adapter/v1: one JSON request on stdin, one JSON answer on stdout).

Each worker and action of the pack stands for a tool of the inspected codebase; which one, with
which arguments and what a real call would do, is in `external_adapters.json` beside this file.
Nothing of the inspected code is imported or run, and nothing is sent anywhere:

- `collect` (a worker) records the arguments the tool would get, from the case input, and
  `mode: dry_run`;
- `preview`, `apply`, `verify` and `compensate` (an action) keep the calls the tool would make
  in `state_dir/calls.json`, one record per case and action, journalled under the idempotency
  key: applying a key twice has one effect, and `compensate` restores what the apply replaced.

A real adapter is written by hand from templates/real_external_adapters.py
(REAL_ADAPTER_RUNBOOK.md says how); this one refuses to run in real mode.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


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


def call_text(entry, fields):
    args = ", ".join(f"{k}={fields.get(k)!r}" for k in entry["arguments"])
    effects = "; ".join(entry["effects"]) or "no effect found by the inspection"
    return f"{entry['name']}({args}) → {effects}"


def collect(table, req):
    entry = table["workers"].get(req["name"])
    if entry is None:
        return {"error": f"no worker `{req['name']}` in external_adapters.json"}
    case = req.get("input") or {}
    evidence = {k: case[k] for k in entry["arguments"] if k in case}
    evidence["mode"] = "dry_run"
    return {"evidence": evidence}


def action(table, req):
    name, op = req["name"], req["op"]
    entry = table["actions"].get(name)
    if entry is None:
        return {"error": f"no action `{name}` in external_adapters.json"}
    state_dir = req["state_dir"]
    os.makedirs(state_dir, exist_ok=True)
    calls_path = os.path.join(state_dir, "calls.json")
    journal_path = os.path.join(state_dir, "journal.json")
    calls = load(calls_path, {})
    journal = load(journal_path, {})
    record_id = f"{req.get('case_id') or 'case'}/{name}"
    key = req.get("idempotency_key") or ""
    inputs = req.get("input") or {}
    fields = {k: inputs.get(k) for k in entry["arguments"]}
    fields["called"] = True
    record = calls.get(record_id, {})

    if op == "preview":
        changes = [
            {"target": record_id, "field": k, "before": record.get(k), "after": v}
            for k, v in sorted(fields.items())
            if record.get(k) != v
        ]
        return {
            "changes": changes,
            "summary": f"would call {call_text(entry, fields)} (dry run: nothing is sent)",
        }
    if op == "apply":
        applied = key not in journal
        if applied:
            journal[key] = {"record": record_id, "before": {k: record.get(k) for k in fields}}
            record.update(fields)
            calls[record_id] = record
            save(calls_path, calls)
            save(journal_path, journal)
        return {
            "applied": applied,
            "receipt": {"dry_run": True, "record": record_id, "key": key, "call": call_text(entry, fields)},
        }
    if op == "verify":
        verified = key in journal and all(record.get(k) == v for k, v in fields.items())
        return {"verified": verified, "state": calls}
    if op == "compensate":
        entry = journal.pop(key, None)
        if entry is not None:
            rec = calls.get(entry["record"], {})
            for k, v in entry["before"].items():
                if v is None:
                    rec.pop(k, None)
                else:
                    rec[k] = v
            if rec:
                calls[entry["record"]] = rec
            else:
                calls.pop(entry["record"], None)
            save(calls_path, calls)
            save(journal_path, journal)
        return {"compensated": entry is not None}
    return {"error": f"operation `{op}` is not supported by this adapter"}


def main():
    req = json.load(sys.stdin)
    if req.get("mode") == "real" or os.environ.get("TOLLGATE_ADAPTER_MODE") == "real":
        answer = {"error": "this is the dry-run adapter: wire a real one (REAL_ADAPTER_RUNBOOK.md)"}
    else:
        table = load(os.path.join(HERE, "external_adapters.json"), {"workers": {}, "actions": {}})
        answer = collect(table, req) if req.get("op") == "collect" else action(table, req)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
