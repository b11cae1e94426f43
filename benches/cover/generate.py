#!/usr/bin/env python3
"""Writes a synthetic agent codebase of about LINES lines of Python for the `cover inspect`
benchmark (BENCHMARKS.md): packages of HTTP, file and database clients, tools of the OpenAI
Agents SDK and LangChain that call them through helpers, agents wiring the tools with handoffs,
and ordinary business code around them. Deterministic: the same LINES gives the same files.

    python3 benches/cover/generate.py 100000 /tmp/cover-100k
    tollgate cover inspect /tmp/cover-100k --entrypoint app.main:triage --output /tmp/r.json
"""
import os
import random
import sys

CLIENT = '''
import httpx
import requests
import sqlite3
from pathlib import Path


class Client{n}:
    """A client of service {n}."""

    def __init__(self, base: str = "https://svc{n}.example/api"):
        self.base = base
        self.session = requests.Session()

    def get_item(self, item_id: str) -> dict:
        return httpx.get(f"{{self.base}}/items/{{item_id}}", timeout=5).json()

    def create_item(self, payload: dict) -> dict:
        return requests.post("https://svc{n}.example/api/items", json=payload, timeout=5).json()


def fetch_{n}(item_id: str) -> dict:
    return Client{n}().get_item(item_id)


def store_{n}(payload: dict) -> dict:
    return Client{n}().create_item(payload)


def save_{n}(name: str, text: str) -> None:
    Path("out/{n}").mkdir(parents=True, exist_ok=True)
    with open(f"out/{n}/{{name}}.txt", "w") as f:
        f.write(text)


def count_{n}(table: str) -> int:
    conn = sqlite3.connect("data{n}.db")
    return conn.execute("SELECT count(*) FROM items").fetchone()[0]
'''

TOOLS = '''
from agents import function_tool
from langchain_core.tools import tool

from app.clients.c{n} import fetch_{n}, store_{n}, save_{n}, count_{n}


def _normalise_{n}(value: str) -> str:
    return value.strip().lower()


@function_tool
def lookup_{n}(item_id: str) -> dict:
    """Look up an item of service {n}."""
    return fetch_{n}(_normalise_{n}(item_id))


@function_tool
def create_{n}(name: str, amount: int) -> dict:
    """Create an item in service {n}."""
    return store_{n}({{"name": name, "amount": amount}})


@tool
def note_{n}(name: str, text: str) -> str:
    """Write a note for service {n}."""
    save_{n}(name, text)
    return "ok"


@function_tool
def stats_{n}(table: str = "items") -> int:
    """Count the items of service {n}."""
    return count_{n}(table)
'''

FILLER_FN = '''

def compute_{m}_{k}(values: list[int], factor: float = 1.5) -> float:
    """Business logic {m}.{k}: a weighted sum with a threshold."""
    total = 0.0
    for i, v in enumerate(values):
        if v % 3 == 0:
            total += v * factor
        elif v % 5 == 0:
            total -= v / (i + 1)
        else:
            total += sum(x for x in range(v % 7))
    result = {{"total": total, "count": len(values), "mean": total / max(len(values), 1)}}
    return result["mean"] if result["count"] else 0.0
'''

FILLER_CLASS = '''

class Model{m}_{k}:
    """A record {m}.{k}."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.tags: list[str] = []

    def grow(self, by: int) -> "Model{m}_{k}":
        self.size += by
        return self

    def describe(self) -> str:
        return f"{{self.name}} ({{self.size}}) [{{', '.join(self.tags)}}]"
'''


def main():
    lines, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(lines)
    services = max(1, lines // 2000)
    os.makedirs(f"{out}/app/clients", exist_ok=True)
    os.makedirs(f"{out}/app/tools", exist_ok=True)
    os.makedirs(f"{out}/app/logic", exist_ok=True)
    for d in ("app", "app/clients", "app/tools", "app/logic"):
        open(f"{out}/{d}/__init__.py", "w").close()
    written = 0
    for n in range(services):
        for path, text in ((f"app/clients/c{n}.py", CLIENT), (f"app/tools/t{n}.py", TOOLS)):
            body = text.format(n=n)
            with open(f"{out}/{path}", "w") as f:
                f.write(body)
            written += body.count("\n")
    agents = ["from agents import Agent\n"]
    for n in range(services):
        agents.append(f"from app.tools.t{n} import lookup_{n}, create_{n}, note_{n}, stats_{n}\n")
    for n in range(services):
        handoffs = f", handoffs=[agent_{n - 1}]" if n else ""
        agents.append(
            f"agent_{n} = Agent(name=\"Service {n}\", model=\"gpt-4.1-mini\", "
            f"tools=[lookup_{n}, create_{n}, note_{n}, stats_{n}]{handoffs})\n"
        )
    agents.append(f"triage = Agent(name=\"Triage\", model=\"gpt-4.1\", handoffs=[agent_{services - 1}])\n")
    with open(f"{out}/app/main.py", "w") as f:
        f.write("".join(agents))
    written += len(agents)
    m = 0
    while written < lines:
        parts = []
        for k in range(20):
            parts.append((FILLER_FN if rng.random() < 0.6 else FILLER_CLASS).format(m=m, k=k))
        body = "import math\n" + "".join(parts)
        with open(f"{out}/app/logic/l{m}.py", "w") as f:
            f.write(body)
        written += body.count("\n")
        m += 1
    print(f"wrote {written} lines: {services} services ({services * 4} tools), {m} logic modules")


if __name__ == "__main__":
    main()
