"""Where the gateway is and which credential to present."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000"
TOKEN_FILE = Path(".tollgate") / "token"


def resolve_url(url: str | None) -> str:
    """``url``, else ``TOLLGATE_URL``, else the gateway's default address."""
    chosen = url or os.environ.get("TOLLGATE_URL") or DEFAULT_URL
    return chosen.rstrip("/")


def resolve_token(token: str | None) -> str:
    """``token``, else ``TOLLGATE_TOKEN``, else ``.tollgate/token`` (the owner's, on the
    gateway's own machine); a clear error when there is none."""
    if token:
        return token.strip()
    env = os.environ.get("TOLLGATE_TOKEN", "").strip()
    if env:
        return env
    if TOKEN_FILE.is_file():
        return TOKEN_FILE.read_text(encoding="utf-8").strip()
    raise ValueError(
        "no Tollgate credential: pass token=, set TOLLGATE_TOKEN (an agent's own, from "
        "`tollgate tokens create --kind agent --agent NAME`), or run where .tollgate/token is"
    )
