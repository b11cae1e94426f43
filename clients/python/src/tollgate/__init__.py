"""Tollgate's Python client: put an agent's runs, tool calls and model calls behind a
Tollgate gateway.

    from tollgate import Tollgate
    tg = Tollgate()                       # TOLLGATE_URL, TOLLGATE_TOKEN
    with tg.open_run(agent="coder", task="T-12", scope="org:acme/repo") as run:
        auth = run.authorize("fs.write_file", {"path": "README.md"})
        ...

Framework adapters: :mod:`tollgate.integrations.openai_agents`,
:mod:`tollgate.integrations.langgraph`.
"""

from . import errors, models
from ._client import AsyncTollgate, Tollgate
from ._run import AsyncRun, Authorization, Run
from ._version import __version__
from .errors import (
    ApprovalTimeout,
    Conflict,
    ConnectionFailed,
    Forbidden,
    Invalid,
    NotFound,
    TollgateError,
    ToolDenied,
    Unauthorized,
)

__all__ = [
    "ApprovalTimeout",
    "AsyncRun",
    "AsyncTollgate",
    "Authorization",
    "Conflict",
    "ConnectionFailed",
    "Forbidden",
    "Invalid",
    "NotFound",
    "Run",
    "Tollgate",
    "TollgateError",
    "ToolDenied",
    "Unauthorized",
    "__version__",
    "errors",
    "models",
]
