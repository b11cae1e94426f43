#!/usr/bin/env python3
"""A worker of the tollgate.adapter/v1 protocol (operation `collect`): reads the case input and
records evidence. This scaffold records the input's `subject` and its length; replace it with a
worker that reads what your pack needs, and list every key it records under `produces`.
"""
import json
import sys


def main():
    req = json.load(sys.stdin)
    if req.get("op") != "collect":
        json.dump({"error": "this worker only collects"}, sys.stdout)
        return
    case = req.get("input") or {}
    subject = str(case.get("subject", ""))
    json.dump({"evidence": {"subject": subject, "length": len(subject)}}, sys.stdout)


if __name__ == "__main__":
    main()
