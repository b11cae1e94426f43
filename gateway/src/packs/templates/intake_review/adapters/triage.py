#!/usr/bin/env python3
"""The intake triage worker (tollgate.adapter/v1, operation `collect`): reads the intake request
(the case input) and records evidence — the queue it belongs to, its urgency, whether it holds
personal data, and the amount it concerns. Deterministic: the same request, the same evidence.
"""
import json
import re
import sys

QUEUES = [
    ("privacy", ("gdpr", "personal data", "data subject", "erase my")),
    ("legal", ("contract", "nda", "liability", "lawsuit", "terms")),
    ("finance", ("invoice", "refund", "payment", "reimburse", "purchase order")),
    ("it", ("password", "laptop", "access", "vpn", "account locked")),
]
URGENT = ("urgent", "asap", "today", "immediately", "deadline")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
PHONE = re.compile(r"\+?\d[\d ()-]{8,}\d")


def main():
    req = json.load(sys.stdin)
    if req.get("op") != "collect":
        json.dump({"error": "the triage worker only collects"}, sys.stdout)
        return
    case = req.get("input") or {}
    text = " ".join(str(case.get(k, "")) for k in ("title", "body")).lower()
    queue = next((q for q, words in QUEUES if any(w in text for w in words)), "general")
    urgency = "high" if any(w in text for w in URGENT) else "normal"
    pii = "yes" if EMAIL.search(text) or PHONE.search(text) else "no"
    amount = case.get("amount", 0)
    if not isinstance(amount, int):
        amount = 0
    json.dump(
        {"evidence": {"queue": queue, "urgency": urgency, "contains_pii": pii, "amount": amount}},
        sys.stdout,
    )


if __name__ == "__main__":
    main()
