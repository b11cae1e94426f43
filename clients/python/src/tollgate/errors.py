"""Errors the client raises: the gateway's error shape as exceptions.

Every error the gateway answers is ``{"error": {"code", "message", "details"}}``; the client
raises :class:`TollgateError` (or the subclass for its status) carrying those three and, when
the error is about a recorded decision, the receipt (``run#seq``).
"""

from __future__ import annotations

from typing import Any


class TollgateError(Exception):
    """An error answer from the gateway, or a failure to reach it."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "unknown",
        details: Any = None,
        receipt: str | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.receipt = receipt
        self.method = method
        self.path = path
        where = f"{method} {path}: " if method and path else ""
        status_text = f"{status} " if status is not None else ""
        super().__init__(f"{where}{status_text}{code}: {message}")


class ConnectionFailed(TollgateError):
    """The gateway could not be reached (not started, wrong URL, timed out)."""


class Unauthorized(TollgateError):
    """401: no token, or one the gateway does not know (expired, revoked)."""


class Forbidden(TollgateError):
    """403: the credential may not do this (another agent's run, a kind not admitted)."""


class NotFound(TollgateError):
    """404: no such run, approval, memory, contract or case."""


class Conflict(TollgateError):
    """409: the state changed under the call (a finished run, a used approval, a version)."""


class Invalid(TollgateError):
    """400, 413, 415, 422: the request itself is wrong; ``details`` says where."""


class ApprovalTimeout(TollgateError):
    """A call needing approval was not decided within the wait given."""


class ToolDenied(TollgateError):
    """Raised by :meth:`tollgate.Run.authorize` with ``raise_on_deny``: policy refused a call."""


_BY_STATUS: dict[int, type[TollgateError]] = {
    400: Invalid,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: Invalid,
    415: Invalid,
    422: Invalid,
}


def from_response(status: int, body: Any, method: str, path: str) -> TollgateError:
    """The exception for an error answer (``body`` parsed JSON, or text when it was not)."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = str(error.get("code") or "unknown")
        message = str(error.get("message") or "")
        details = error.get("details")
    else:
        code = "unknown"
        message = body if isinstance(body, str) else repr(body)
        details = None
    receipt = None
    found = details.get("receipt") if isinstance(details, dict) else None
    if isinstance(found, str):
        receipt = found
    elif isinstance(found, dict) and found.get("run") and found.get("seq") is not None:
        receipt = f"{found['run']}#{found['seq']}"
    cls = _BY_STATUS.get(status, TollgateError)
    return cls(
        message,
        status=status,
        code=code,
        details=details,
        receipt=receipt,
        method=method,
        path=path,
    )
