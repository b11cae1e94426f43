"""Every gateway operation the client calls, as data: method, path, query, body, answer.

The sync and async clients send these the same way; ``REGISTRY`` lists them for the test that
holds the client to ``/openapi.json`` (``tests/test_openapi_contract.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from . import models as m


@dataclass(frozen=True)
class Spec:
    """What an operation is, for the contract test: the route and the shapes."""

    operation_id: str
    method: str
    path: str
    query: tuple[str, ...] = ()
    body: type[m.Body] | None = None
    answer: type[m.Answer] | None = None
    status: int = 200
    also: tuple[int, ...] = ()

    @property
    def statuses(self) -> tuple[int, ...]:
        return (self.status, *self.also)


@dataclass(frozen=True)
class Op:
    """One request to send, and how to read its answer."""

    spec: Spec
    path: str
    query: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None

    def read(self, status: int, payload: Any) -> Any:
        if self.spec.answer is None:
            return payload
        return self.spec.answer.model_validate(payload)


REGISTRY: dict[str, Spec] = {}


def _spec(spec: Spec) -> Spec:
    REGISTRY[spec.operation_id] = spec
    return spec


def _path(template: str, **ids: str) -> str:
    # Every id is one path segment, whatever it holds: `../` or `?` cannot change the route.
    return template.format(**{k: quote(str(v), safe="") for k, v in ids.items()})


def _query(**values: Any) -> dict[str, Any]:
    return {k.rstrip("_"): v for k, v in values.items() if v is not None}


def _body(model: m.Body | None) -> dict[str, Any] | None:
    if model is None:
        return None
    return model.model_dump(mode="json", exclude_none=True, by_alias=True)


# ---- runs ----

OPEN_RUN = _spec(Spec("open_run", "POST", "/v1/runs", body=m.OpenRunBody, answer=m.RunView, status=201))
GET_RUN = _spec(Spec("get_run", "GET", "/v1/runs/{run_id}", answer=m.RunView))
LIST_RUNS = _spec(Spec("list_runs", "GET", "/v1/runs", query=("agent", "status", "limit", "after", "after_started_at")))
ADD_STEP = _spec(Spec("add_step", "POST", "/v1/runs/{run_id}/steps", body=m.StepBody, answer=m.StepAdded, status=201))
APPEND_EVENTS = _spec(
    Spec(
        "append_events",
        "POST",
        "/v1/runs/{run_id}/events",
        body=m.EventsBody,
        answer=m.EventsAppended,
        status=201,
    )
)
COMPILE = _spec(Spec("compile", "POST", "/v1/runs/{run_id}/compile", body=m.CompileBody, answer=m.CompileAnswer))
FINISH_RUN = _spec(Spec("finish_run", "POST", "/v1/runs/{run_id}/finish", body=m.FinishBody, answer=m.RunView))


def open_run(agent: str, task: str, scope: str, **optional: Any) -> Op:
    """Opens a run; optional fields left as None are not sent."""
    given = {k: v for k, v in optional.items() if v is not None}
    return Op(OPEN_RUN, OPEN_RUN.path, body=_body(m.OpenRunBody(agent=agent, task=task, scope=scope, **given)))


def get_run(run_id: str) -> Op:
    return Op(GET_RUN, _path(GET_RUN.path, run_id=run_id))


def list_runs(**query: Any) -> Op:
    return Op(LIST_RUNS, LIST_RUNS.path, query=_query(**query))


def add_step(run_id: str, body: m.StepBody) -> Op:
    return Op(ADD_STEP, _path(ADD_STEP.path, run_id=run_id), body=_body(body))


def append_events(run_id: str, body: m.EventsBody) -> Op:
    return Op(APPEND_EVENTS, _path(APPEND_EVENTS.path, run_id=run_id), body=_body(body))


def compile_context(run_id: str, items: list[m.CandidateItem], settings: dict[str, Any]) -> Op:
    """A compile of ``items``; ``settings`` may hold ``step`` beside the compile settings."""
    settings = dict(settings)
    step = settings.pop("step", None)
    body = m.CompileBody(items=items, settings=settings or None, step=step)
    return Op(COMPILE, _path(COMPILE.path, run_id=run_id), body=_body(body))


def finish_run(run_id: str, body: m.FinishBody) -> Op:
    return Op(FINISH_RUN, _path(FINISH_RUN.path, run_id=run_id), body=_body(body))


# ---- tool calls, approvals, decisions ----

TOOL_CALL = _spec(
    Spec("tool_call", "POST", "/v1/runs/{run_id}/tool-calls", body=m.ToolCallBody, answer=m.ToolCallAnswer)
)
GET_APPROVAL = _spec(Spec("get_approval", "GET", "/v1/approvals/{id}", query=("wait",), answer=m.Approval))
LIST_APPROVALS = _spec(Spec("list_approvals", "GET", "/v1/approvals", query=("run", "state"), answer=m.ApprovalList))
DECIDE_APPROVAL = _spec(
    Spec("decide_approval", "POST", "/v2/policies/approvals/{id}", body=m.ApprovalBody, answer=m.Approval)
)
DECISIONS = _spec(
    Spec("decisions", "GET", "/v2/policies/decisions/{run_id}", query=("effect", "kind"), answer=m.RunDecisions)
)


def tool_call(run_id: str, tool: str, arguments: dict[str, Any] | None, **optional: Any) -> Op:
    body = m.ToolCallBody(tool=tool, arguments=arguments or {}, **optional)
    return Op(TOOL_CALL, _path(TOOL_CALL.path, run_id=run_id), body=_body(body))


def get_approval(approval_id: str, wait: int | None = None) -> Op:
    return Op(GET_APPROVAL, _path(GET_APPROVAL.path, id=approval_id), query=_query(wait=wait))


def list_approvals(run: str | None = None, state: str | None = None) -> Op:
    return Op(LIST_APPROVALS, LIST_APPROVALS.path, query=_query(run=run, state=state))


def decide_approval(approval_id: str, body: m.ApprovalBody) -> Op:
    return Op(DECIDE_APPROVAL, _path(DECIDE_APPROVAL.path, id=approval_id), body=_body(body))


def decisions(run_id: str, effect: str | None = None, kind: str | None = None) -> Op:
    return Op(DECISIONS, _path(DECISIONS.path, run_id=run_id), query=_query(effect=effect, kind=kind))


# ---- memory ----

SEARCH_MEMORY = _spec(
    Spec(
        "search_memories",
        "GET",
        "/v2/memory/search",
        query=("scope", "clearance", "agent", "task", "user", "repo", "class", "q", "limit"),
        answer=m.SearchAnswer,
    )
)
GET_MEMORY = _spec(Spec("get_memory", "GET", "/v2/memory/{id}"))
MEMORY_FEEDBACK = _spec(Spec("feedback", "POST", "/v2/memory/{id}/feedback", body=m.FeedbackBody))
DISTILL_RUN = _spec(Spec("distill", "POST", "/v2/memory/distill/run/{run_id}", status=202))


def search_memory(**query: Any) -> Op:
    return Op(SEARCH_MEMORY, SEARCH_MEMORY.path, query=_query(**query))


def get_memory(memory_id: str) -> Op:
    return Op(GET_MEMORY, _path(GET_MEMORY.path, id=memory_id))


def memory_feedback(memory_id: str, body: m.FeedbackBody) -> Op:
    return Op(MEMORY_FEEDBACK, _path(MEMORY_FEEDBACK.path, id=memory_id), body=_body(body))


def distill_run(run_id: str) -> Op:
    return Op(DISTILL_RUN, _path(DISTILL_RUN.path, run_id=run_id))


# ---- handoff contracts ----

CREATE_CONTRACT = _spec(
    Spec(
        "create_contract",
        "POST",
        "/v2/handoffs/contracts",
        body=m.HandoffContract,
        answer=m.Posted,
        status=201,
        also=(200,),
    )
)
GET_CONTRACT = _spec(Spec("get_contract", "GET", "/v2/handoffs/contracts/{id}", query=("version",)))
LIST_CONTRACTS = _spec(Spec("list_contracts", "GET", "/v2/handoffs/contracts", query=("limit",)))


def create_contract(body: m.HandoffContract) -> Op:
    return Op(CREATE_CONTRACT, CREATE_CONTRACT.path, body=_body(body))


def get_contract(contract_id: str, version: int | None = None) -> Op:
    return Op(GET_CONTRACT, _path(GET_CONTRACT.path, id=contract_id), query=_query(version=version))


def list_contracts(limit: int | None = None) -> Op:
    return Op(LIST_CONTRACTS, LIST_CONTRACTS.path, query=_query(limit=limit))


# ---- cases ----

LIST_CASES = _spec(Spec("list_cases", "GET", "/cases", query=("pack", "limit")))
OPEN_CASE = _spec(Spec("open_case", "POST", "/cases", body=m.OpenCaseBody, answer=m.Moved, status=201))
GET_CASE = _spec(Spec("get_case", "GET", "/cases/{case_id}"))
APPEND_EVIDENCE = _spec(
    Spec(
        "record_evidence",
        "POST",
        "/cases/{case_id}/evidence",
        body=m.EvidenceAppend,
        answer=m.Moved,
        status=201,
        also=(200,),
    )
)
PROPOSE = _spec(Spec("propose", "POST", "/cases/{case_id}/proposals", body=m.ProposeBody, answer=m.Moved, status=201))
PREVIEW = _spec(Spec("preview", "POST", "/cases/{case_id}/proposals/{proposal_id}/preview", answer=m.Moved, status=201))
CHECK_POLICY = _spec(
    Spec("policy", "POST", "/cases/{case_id}/proposals/{proposal_id}/policy", answer=m.Moved, status=201)
)
DECIDE_CASE_APPROVAL = _spec(
    Spec(
        "approval",
        "POST",
        "/cases/{case_id}/proposals/{proposal_id}/approval",
        body=m.CaseApprovalBody,
        answer=m.Moved,
        status=201,
    )
)
COMMIT = _spec(
    Spec(
        "commit",
        "POST",
        "/cases/{case_id}/proposals/{proposal_id}/commit",
        body=m.CommitBody,
        answer=m.Moved,
        status=201,
    )
)


def list_cases(pack: str | None = None, limit: int | None = None) -> Op:
    return Op(LIST_CASES, LIST_CASES.path, query=_query(pack=pack, limit=limit))


def open_case(body: m.OpenCaseBody) -> Op:
    return Op(OPEN_CASE, OPEN_CASE.path, body=_body(body))


def get_case(case_id: str) -> Op:
    return Op(GET_CASE, _path(GET_CASE.path, case_id=case_id))


def append_evidence(case_id: str, body: m.EvidenceAppend) -> Op:
    return Op(APPEND_EVIDENCE, _path(APPEND_EVIDENCE.path, case_id=case_id), body=_body(body))


def propose(case_id: str, body: m.ProposeBody) -> Op:
    return Op(PROPOSE, _path(PROPOSE.path, case_id=case_id), body=_body(body))


def preview(case_id: str, proposal_id: str) -> Op:
    return Op(PREVIEW, _path(PREVIEW.path, case_id=case_id, proposal_id=proposal_id))


def check_policy(case_id: str, proposal_id: str) -> Op:
    return Op(CHECK_POLICY, _path(CHECK_POLICY.path, case_id=case_id, proposal_id=proposal_id))


def decide_case_approval(case_id: str, proposal_id: str, body: m.CaseApprovalBody) -> Op:
    return Op(
        DECIDE_CASE_APPROVAL,
        _path(DECIDE_CASE_APPROVAL.path, case_id=case_id, proposal_id=proposal_id),
        body=_body(body),
    )


def commit(case_id: str, proposal_id: str, body: m.CommitBody) -> Op:
    return Op(COMMIT, _path(COMMIT.path, case_id=case_id, proposal_id=proposal_id), body=_body(body))
