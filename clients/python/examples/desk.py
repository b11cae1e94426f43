"""The support desk's tools, shared by the examples: plain Python functions whose side effects
are files in DESK_DIR (default ./support-desk), so a test can see what ran and what did not."""

from __future__ import annotations

import json
import os
from pathlib import Path

# What policy knows each tool by (examples/support.yaml names these).
POLICY_NAMES = {
    "lookup_order": "orders.lookup",
    "add_note": "crm.add_note",
    "delete_customer": "crm.delete_customer",
    "issue_refund": "payments.issue_refund",
}

# The conversation both examples run. With a real model, the first paragraph is the request;
# Tollgate's deterministic fake provider (the default, with no TOLLGATE_PROVIDER set) plays the
# model's part and makes the calls the [[call ...]] lines script, in order.
REQUEST = """Customer 42 wants order 7 refunded; note the card token they pasted,
and they asked us to delete their account.
[[call lookup_order {"order_id": 7}]]
[[call add_note {"customer_id": 42, "text": "customer pasted AKIAPYDATUTGFKRXITKP in chat"}]]
[[call delete_customer {"customer_id": 42}]]
[[call transfer_to_refunds {}]]
[[call issue_refund {"order_id": 7, "amount_cents": 1999}]]"""


def desk() -> Path:
    path = Path(os.environ.get("DESK_DIR", "support-desk"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def lookup_order(order_id: int) -> str:
    """Looks an order up."""
    return json.dumps({"order_id": order_id, "items": ["mug", "mug"], "total_cents": 1999})


def add_note(customer_id: int, text: str) -> str:
    """Adds a note to a customer's file."""
    with open(desk() / f"note-{customer_id}.txt", "a", encoding="utf-8") as f:
        f.write(text + "\n")
    return "noted"


def delete_customer(customer_id: int) -> str:
    """Deletes a customer and everything about them."""
    (desk() / f"deleted-{customer_id}").write_text("deleted\n", encoding="utf-8")
    return "deleted"


def issue_refund(order_id: int, amount_cents: int) -> str:
    """Refunds an order."""
    (desk() / f"refund-{order_id}.json").write_text(
        json.dumps({"order_id": order_id, "amount_cents": amount_cents}), encoding="utf-8"
    )
    return f"refunded {amount_cents} cents on order {order_id}"
