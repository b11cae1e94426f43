"""The clients: :class:`Tollgate` (blocking) and :class:`AsyncTollgate` (asyncio).

Both send the operations of :mod:`tollgate._ops` and read the answers into
:mod:`tollgate.models`; a run is a :class:`Run` (or :class:`AsyncRun`) handle.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from . import _ops as ops
from . import errors
from . import models as m
from ._config import resolve_token, resolve_url
from ._run import AsyncRun, Run

USER_AGENT = "tollgate-client-python"


def _request_args(base: str, op: ops.Op) -> dict[str, Any]:
    args: dict[str, Any] = {"method": op.spec.method, "url": base + op.path}
    if op.query:
        args["params"] = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in op.query.items()}
    if op.body is not None:
        args["json"] = op.body
    return args


def _read(op: ops.Op, response: httpx.Response) -> Any:
    try:
        payload = response.json()
    except ValueError:
        payload = response.text
    if response.status_code in op.spec.statuses:
        return op.read(response.status_code, payload)
    raise errors.from_response(response.status_code, payload, op.spec.method, op.path)


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT}


class Tollgate:
    """A blocking client of a Tollgate gateway.

    ``url`` defaults to ``TOLLGATE_URL`` (else ``http://127.0.0.1:8000``), ``token`` to
    ``TOLLGATE_TOKEN`` (else ``.tollgate/token``). Every error answer raises a
    :class:`tollgate.errors.TollgateError` with the gateway's ``code``, ``message``,
    ``details`` and, for a recorded refusal, the ``receipt``.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        self.url = resolve_url(url)
        self.token = resolve_token(token)
        self.timeout = timeout
        self._http = http or httpx.Client(headers=_headers(self.token), timeout=timeout)

    def __enter__(self) -> Tollgate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, op: ops.Op, *, timeout: float | None = None) -> Any:
        """Sends one operation and reads its answer (or raises the gateway's error)."""
        args = _request_args(self.url, op)
        if timeout is not None:
            args["timeout"] = timeout
        try:
            response = self._http.request(**args)
        except httpx.HTTPError as e:
            raise errors.ConnectionFailed(
                f"cannot reach the gateway at {self.url}: {e}", method=op.spec.method, path=op.path
            ) from e
        return _read(op, response)

    # ---- runs ----

    def open_run(
        self,
        agent: str,
        task: str,
        scope: str,
        *,
        id: str | None = None,
        clearance: m.Level | None = None,
        envelopes: list[str] | None = None,
        parent_run: str | None = None,
        handoff: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Run:
        """Opens a run; use it as a context manager to finish it (``failed`` on an exception)."""
        op = ops.open_run(
            agent,
            task,
            scope,
            id=id,
            clearance=clearance,
            envelopes=envelopes,
            parent_run=parent_run,
            handoff=handoff,
            metadata=metadata,
        )
        return Run(self, self.send(op))

    def run(self, run_id: str) -> Run:
        """A handle on an existing run."""
        return Run(self, self.get_run(run_id))

    def get_run(self, run_id: str) -> m.RunView:
        return self.send(ops.get_run(run_id))

    def list_runs(self, **query: Any) -> dict[str, Any]:
        """Runs, newest first: ``agent``, ``status``, ``limit``, ``after``, ``after_started_at``."""
        return self.send(ops.list_runs(**query))

    def add_step(self, run_id: str, name: str, agent: str | None = None) -> int:
        return self.send(ops.add_step(run_id, m.StepBody(name=name, agent=agent))).step

    def append_events(self, run_id: str, events: list[m.EventInput]) -> list[m.Appended]:
        return self.send(ops.append_events(run_id, m.EventsBody(events=events))).appended

    def compile(self, run_id: str, items: list[m.CandidateItem], **settings: Any) -> m.CompileAnswer:
        """Compiles context from candidate items: every item decided by policy, recorded."""
        return self.send(ops.compile_context(run_id, items, settings))

    def finish_run(self, run_id: str, status: m.FinalStatus = "succeeded") -> m.RunView:
        return self.send(ops.finish_run(run_id, m.FinishBody(status=status)))

    # ---- tool calls, approvals, decisions ----

    def tool_call(
        self,
        run_id: str,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        approval_id: str | None = None,
        step: int | None = None,
    ) -> m.ToolCallAnswer:
        """Asks whether a tool call may run (one question; see :meth:`Run.authorize`)."""
        return self.send(ops.tool_call(run_id, tool, arguments, call_id=call_id, approval_id=approval_id, step=step))

    def get_approval(self, approval_id: str, wait: int | None = None) -> m.Approval:
        extra = float(wait or 0) + self.timeout
        return self.send(ops.get_approval(approval_id, wait), timeout=extra)

    def wait_for_approval(self, approval_id: str, timeout: float) -> m.Approval:
        """Blocks until a human decides the approval, or raises ``ApprovalTimeout``."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            approval = self.get_approval(approval_id, wait=max(0, min(60, int(left))))
            if approval.state != "pending":
                return approval
            if time.monotonic() >= deadline:
                raise errors.ApprovalTimeout(
                    f"approval {approval_id} still pending after {timeout:g} s",
                    code="approval_timeout",
                    details={"approval": approval.id},
                )

    def list_approvals(self, run: str | None = None, state: m.ApprovalState | None = None) -> list[m.Approval]:
        return self.send(ops.list_approvals(run, state)).approvals

    def approve(self, approval_id: str, reason: str = "") -> m.Approval:
        """Approves a gated call (an approver's or admin's credential; never the agent's)."""
        return self.send(ops.decide_approval(approval_id, m.ApprovalBody(decision="approve", reason=reason)))

    def reject(self, approval_id: str, reason: str = "") -> m.Approval:
        return self.send(ops.decide_approval(approval_id, m.ApprovalBody(decision="reject", reason=reason)))

    def decisions(
        self, run_id: str, *, effect: m.Effect | None = None, kind: m.DecisionKind | None = None
    ) -> list[m.RecordedDecision]:
        """Every decision of a run with its receipt, in event order."""
        return self.send(ops.decisions(run_id, effect, kind)).decisions

    # ---- memory ----

    def search_memory(self, scope: str, **query: Any) -> m.SearchAnswer:
        """Memories a run at ``scope`` could retrieve: ``agent``, ``clearance``, ``task``,
        ``user``, ``repo``, ``class_``, ``q``, ``limit``."""
        return self.send(ops.search_memory(scope=scope, **query))

    def get_memory(self, memory_id: str) -> dict[str, Any]:
        return self.send(ops.get_memory(memory_id))

    def memory_feedback(
        self, memory_id: str, verdict: m.Verdict, note: str = "", run: str | None = None
    ) -> dict[str, Any]:
        return self.send(ops.memory_feedback(memory_id, m.FeedbackBody(verdict=verdict, note=note, run=run)))

    def distill_run(self, run_id: str) -> dict[str, Any]:
        return self.send(ops.distill_run(run_id))

    # ---- handoff contracts ----

    def create_contract(self, contract: m.HandoffContract) -> m.Posted:
        """Posts a handoff contract; the handoff pack judges it (403 ``contract_rejected``)."""
        return self.send(ops.create_contract(contract))

    def get_contract(self, contract_id: str, version: int | None = None) -> dict[str, Any]:
        return self.send(ops.get_contract(contract_id, version))

    def list_contracts(self, limit: int | None = None) -> dict[str, Any]:
        return self.send(ops.list_contracts(limit))

    # ---- cases ----

    def list_cases(self, pack: str | None = None, limit: int | None = None) -> dict[str, Any]:
        return self.send(ops.list_cases(pack, limit))

    def open_case(
        self, engine_id: str, engine_version: str, input: dict[str, Any], title: str | None = None
    ) -> m.Moved:
        body = m.OpenCaseBody(engine_id=engine_id, engine_version=engine_version, input=input, title=title)
        return self.send(ops.open_case(body))

    def get_case(self, case_id: str) -> dict[str, Any]:
        return self.send(ops.get_case(case_id))

    def append_evidence(self, case_id: str, expected_version: int, worker: str, evidence: dict[str, Any]) -> m.Moved:
        body = m.EvidenceAppend(expected_version=expected_version, worker=worker, evidence=evidence)
        return self.send(ops.append_evidence(case_id, body))

    def propose(self, case_id: str, capability: str) -> m.Moved:
        return self.send(ops.propose(case_id, m.ProposeBody(capability=capability)))

    def preview(self, case_id: str, proposal_id: str) -> m.Moved:
        return self.send(ops.preview(case_id, proposal_id))

    def check_policy(self, case_id: str, proposal_id: str) -> m.Moved:
        return self.send(ops.check_policy(case_id, proposal_id))

    def decide_case_approval(self, case_id: str, proposal_id: str, approve: bool, reason: str = "") -> m.Moved:
        body = m.CaseApprovalBody(approve=approve, reason=reason)
        return self.send(ops.decide_case_approval(case_id, proposal_id, body))

    def commit(self, case_id: str, proposal_id: str, mode: m.CommitMode | None = None) -> m.Moved:
        return self.send(ops.commit(case_id, proposal_id, m.CommitBody(mode=mode)))


class AsyncTollgate:
    """The same client for asyncio: every method of :class:`Tollgate`, awaited."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = resolve_url(url)
        self.token = resolve_token(token)
        self.timeout = timeout
        self._http = http or httpx.AsyncClient(headers=_headers(self.token), timeout=timeout)

    async def __aenter__(self) -> AsyncTollgate:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(self, op: ops.Op, *, timeout: float | None = None) -> Any:
        args = _request_args(self.url, op)
        if timeout is not None:
            args["timeout"] = timeout
        try:
            response = await self._http.request(**args)
        except httpx.HTTPError as e:
            raise errors.ConnectionFailed(
                f"cannot reach the gateway at {self.url}: {e}", method=op.spec.method, path=op.path
            ) from e
        return _read(op, response)

    async def open_run(
        self,
        agent: str,
        task: str,
        scope: str,
        *,
        id: str | None = None,
        clearance: m.Level | None = None,
        envelopes: list[str] | None = None,
        parent_run: str | None = None,
        handoff: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> AsyncRun:
        op = ops.open_run(
            agent,
            task,
            scope,
            id=id,
            clearance=clearance,
            envelopes=envelopes,
            parent_run=parent_run,
            handoff=handoff,
            metadata=metadata,
        )
        return AsyncRun(self, await self.send(op))

    async def run(self, run_id: str) -> AsyncRun:
        return AsyncRun(self, await self.get_run(run_id))

    async def get_run(self, run_id: str) -> m.RunView:
        return await self.send(ops.get_run(run_id))

    async def list_runs(self, **query: Any) -> dict[str, Any]:
        return await self.send(ops.list_runs(**query))

    async def add_step(self, run_id: str, name: str, agent: str | None = None) -> int:
        return (await self.send(ops.add_step(run_id, m.StepBody(name=name, agent=agent)))).step

    async def append_events(self, run_id: str, events: list[m.EventInput]) -> list[m.Appended]:
        return (await self.send(ops.append_events(run_id, m.EventsBody(events=events)))).appended

    async def compile(self, run_id: str, items: list[m.CandidateItem], **settings: Any) -> m.CompileAnswer:
        return await self.send(ops.compile_context(run_id, items, settings))

    async def finish_run(self, run_id: str, status: m.FinalStatus = "succeeded") -> m.RunView:
        return await self.send(ops.finish_run(run_id, m.FinishBody(status=status)))

    async def tool_call(
        self,
        run_id: str,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        approval_id: str | None = None,
        step: int | None = None,
    ) -> m.ToolCallAnswer:
        return await self.send(
            ops.tool_call(run_id, tool, arguments, call_id=call_id, approval_id=approval_id, step=step)
        )

    async def get_approval(self, approval_id: str, wait: int | None = None) -> m.Approval:
        extra = float(wait or 0) + self.timeout
        return await self.send(ops.get_approval(approval_id, wait), timeout=extra)

    async def wait_for_approval(self, approval_id: str, timeout: float) -> m.Approval:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = deadline - loop.time()
            approval = await self.get_approval(approval_id, wait=max(0, min(60, int(left))))
            if approval.state != "pending":
                return approval
            if loop.time() >= deadline:
                raise errors.ApprovalTimeout(
                    f"approval {approval_id} still pending after {timeout:g} s",
                    code="approval_timeout",
                    details={"approval": approval.id},
                )

    async def list_approvals(self, run: str | None = None, state: m.ApprovalState | None = None) -> list[m.Approval]:
        return (await self.send(ops.list_approvals(run, state))).approvals

    async def approve(self, approval_id: str, reason: str = "") -> m.Approval:
        return await self.send(ops.decide_approval(approval_id, m.ApprovalBody(decision="approve", reason=reason)))

    async def reject(self, approval_id: str, reason: str = "") -> m.Approval:
        return await self.send(ops.decide_approval(approval_id, m.ApprovalBody(decision="reject", reason=reason)))

    async def decisions(
        self, run_id: str, *, effect: m.Effect | None = None, kind: m.DecisionKind | None = None
    ) -> list[m.RecordedDecision]:
        return (await self.send(ops.decisions(run_id, effect, kind))).decisions

    async def search_memory(self, scope: str, **query: Any) -> m.SearchAnswer:
        return await self.send(ops.search_memory(scope=scope, **query))

    async def get_memory(self, memory_id: str) -> dict[str, Any]:
        return await self.send(ops.get_memory(memory_id))

    async def memory_feedback(
        self, memory_id: str, verdict: m.Verdict, note: str = "", run: str | None = None
    ) -> dict[str, Any]:
        return await self.send(ops.memory_feedback(memory_id, m.FeedbackBody(verdict=verdict, note=note, run=run)))

    async def distill_run(self, run_id: str) -> dict[str, Any]:
        return await self.send(ops.distill_run(run_id))

    async def create_contract(self, contract: m.HandoffContract) -> m.Posted:
        return await self.send(ops.create_contract(contract))

    async def get_contract(self, contract_id: str, version: int | None = None) -> dict[str, Any]:
        return await self.send(ops.get_contract(contract_id, version))

    async def list_contracts(self, limit: int | None = None) -> dict[str, Any]:
        return await self.send(ops.list_contracts(limit))

    async def list_cases(self, pack: str | None = None, limit: int | None = None) -> dict[str, Any]:
        return await self.send(ops.list_cases(pack, limit))

    async def open_case(
        self, engine_id: str, engine_version: str, input: dict[str, Any], title: str | None = None
    ) -> m.Moved:
        body = m.OpenCaseBody(engine_id=engine_id, engine_version=engine_version, input=input, title=title)
        return await self.send(ops.open_case(body))

    async def get_case(self, case_id: str) -> dict[str, Any]:
        return await self.send(ops.get_case(case_id))

    async def append_evidence(
        self, case_id: str, expected_version: int, worker: str, evidence: dict[str, Any]
    ) -> m.Moved:
        body = m.EvidenceAppend(expected_version=expected_version, worker=worker, evidence=evidence)
        return await self.send(ops.append_evidence(case_id, body))

    async def propose(self, case_id: str, capability: str) -> m.Moved:
        return await self.send(ops.propose(case_id, m.ProposeBody(capability=capability)))

    async def preview(self, case_id: str, proposal_id: str) -> m.Moved:
        return await self.send(ops.preview(case_id, proposal_id))

    async def check_policy(self, case_id: str, proposal_id: str) -> m.Moved:
        return await self.send(ops.check_policy(case_id, proposal_id))

    async def decide_case_approval(self, case_id: str, proposal_id: str, approve: bool, reason: str = "") -> m.Moved:
        body = m.CaseApprovalBody(approve=approve, reason=reason)
        return await self.send(ops.decide_case_approval(case_id, proposal_id, body))

    async def commit(self, case_id: str, proposal_id: str, mode: m.CommitMode | None = None) -> m.Moved:
        return await self.send(ops.commit(case_id, proposal_id, m.CommitBody(mode=mode)))
