"""The shapes the client sends and reads, as pydantic models.

Answers are read leniently (``extra="allow"``: a newer gateway may add fields, and an older
client keeps working); requests are strict (``extra="forbid"``: a misspelt field is an error
here, not a 422 there). ``tests/test_openapi_contract.py`` holds every model to the gateway's
``/openapi.json``: each field the client sends or reads is a field there, of a compatible type.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Effect = Literal["allow", "deny", "redact", "require_approval", "rate_limited"]
ApprovalState = Literal["pending", "approved", "rejected", "used", "expired"]
Level = Literal["public", "internal", "confidential", "secret"]
RunStatus = Literal["running", "succeeded", "failed", "cancelled"]
FinalStatus = Literal["succeeded", "failed", "cancelled"]
ItemKind = Literal["file", "doc", "message", "tool_result", "memory", "summary"]
DecisionKind = Literal["tool", "context", "model", "memory", "handoff"]
Verdict = Literal["helpful", "unhelpful", "wrong"]
CommitMode = Literal["dry_run", "real"]
HandoffTemplate = Literal["lightweight", "code_patch_review", "research_to_implementation", "planner_to_executor"]


class Answer(BaseModel):
    """A model read from the gateway: unknown fields are kept, not refused."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Body(BaseModel):
    """A model sent to the gateway: unknown fields are refused here."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# ---- runs ----


class OpenRunBody(Body):
    agent: str
    task: str
    scope: str
    id: str | None = None
    clearance: Level | None = None
    envelopes: list[str] = Field(default_factory=list)
    parent_run: str | None = None
    handoff: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class RunHeader(Answer):
    id: str
    agent: str
    task: str
    scope: str
    clearance: Level
    status: RunStatus
    started_at: str
    finished_at: str | None = None
    parent_run: str | None = None
    envelopes: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class DecisionCounts(Answer):
    allow: int
    redact: int
    require_approval: int
    rate_limited: int
    deny: int


class RunSummary(Answer):
    id: str
    agent: str
    task: str
    status: RunStatus
    started_at: str
    steps: int
    events: int
    decisions: DecisionCounts


class RunView(Answer):
    """A run: its header, its summary, and the envelope versions governing it."""

    run: RunHeader
    summary: RunSummary
    governing: list[str]


class StepBody(Body):
    name: str
    agent: str | None = None


class StepAdded(Answer):
    step: int


class EventInput(Body):
    kind: Literal["note", "tool_result", "output", "error", "handoff", "context_offered"]
    payload: dict[str, Any] = Field(default_factory=dict)
    step: int | None = None


class EventsBody(Body):
    events: list[EventInput]


class Appended(Answer):
    seq: int
    hash: str


class EventsAppended(Answer):
    appended: list[Appended]


class FinishBody(Body):
    status: FinalStatus


# ---- tool calls and approvals ----


class ToolCallBody(Body):
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    approval_id: str | None = None
    step: int | None = None


class ApprovalView(Answer):
    id: str
    state: ApprovalState
    expires_at: str
    approvers: list[str]
    decided_by: str | None = None
    reason: str | None = None


class Receipt(Answer):
    """Where a decision is recorded: the run, its event's sequence number and hash."""

    run: str
    seq: int
    hash: str
    input_hash: str
    envelopes: list[str]

    def __str__(self) -> str:
        return f"{self.run}#{self.seq}"


class ToolCallAnswer(Answer):
    """The gateway's answer to a tool call: what to do, why, and the receipt."""

    call_id: str
    effect: Effect
    execute: bool
    tool: str
    arguments: dict[str, Any] | None
    reason: str
    rules: list[str]
    receipt: Receipt
    decision: dict[str, Any]
    retry_after: int | None = None
    approval: ApprovalView | None = None
    data_decision: dict[str, Any] | None = None


class Approval(Answer):
    id: str
    run: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    call_hash: str
    envelopes: list[str]
    rules: list[str]
    approvers: list[str]
    state: ApprovalState
    requested_at: int
    expires_at: int
    decided_by: str | None = None
    reason: str | None = None
    decided_at: int | None = None
    used_at: int | None = None


class ApprovalList(Answer):
    approvals: list[Approval]


class ApprovalBody(Body):
    decision: Literal["approve", "reject"]
    reason: str = ""


class RecordedDecision(Answer):
    """A recorded decision with its receipt (``event_hash`` in the run's chain)."""

    seq: int
    step: int
    at: str
    event_hash: str
    kind: DecisionKind
    effect: Effect
    rules: list[str]
    decision: dict[str, Any]
    subject: str | None = None
    reason: str | None = None


class RunDecisions(Answer):
    run: str
    decisions: list[RecordedDecision]


# ---- compile ----


class CandidateItem(Body):
    id: str
    kind: ItemKind
    content: str | None = None
    scope: str | None = None
    sensitivity: Level | None = None
    labels: list[str] = Field(default_factory=list)
    role: str | None = None
    summary: str | None = None
    reference: str | None = None
    tokens: int | None = None
    weight: float | None = None


ItemStatus = Literal["included", "redacted", "summarised", "excluded"]


class ItemOutcome(Answer):
    """What became of one candidate item, and why (with the policy decision when it was
    redacted or excluded)."""

    id: str
    kind: ItemKind
    status: ItemStatus
    reason: dict[str, Any]
    tokens: int
    spans: list[dict[str, Any]] = Field(default_factory=list)
    policy: dict[str, Any] | None = None


class CompiledContext(Answer):
    text: str
    hash: str
    tokens: int
    budget: int
    tokenizer: str
    outcomes: list[ItemOutcome]


class CompileAnswer(Answer):
    """A compile: the rendered context, each item's outcome, the memories retrieval ranked and
    withheld, the explanation, and the recorded event (``seq``, ``hash``)."""

    compiled: CompiledContext
    explanation: str
    seq: int
    hash: str
    memories: list[dict[str, Any]] = Field(default_factory=list)
    memories_withheld: list[dict[str, Any]] = Field(default_factory=list)


class CompileBody(Body):
    items: list[CandidateItem]
    settings: dict[str, Any] | None = None
    step: int | None = None


# ---- memory ----

MemoryStatus = Literal["candidate", "approved", "rejected", "quarantined", "expired"]
MemoryClass = Literal["fact", "procedure", "preference", "warning", "summary"]


class MemoryArtifact(Answer):
    """A stored memory: what it says, where it applies, and how it was reviewed."""

    id: str
    class_: MemoryClass = Field(alias="class")
    text: str
    scope: str
    sensitivity: Level
    status: MemoryStatus
    pinned: bool
    expires_at: int
    strength: int
    usage_count: int
    score: dict[str, Any]
    sources: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    edits: list[dict[str, Any]] = Field(default_factory=list)
    feedback: list[dict[str, Any]] = Field(default_factory=list)


class SearchHit(Answer):
    rank: int
    relevance: float
    memory: MemoryArtifact


class SearchAnswer(Answer):
    """What a memory search found, and how many memories policy kept back, by reason."""

    hits: list[SearchHit]
    eligible: int
    withheld: dict[str, int]


class FeedbackBody(Body):
    verdict: Verdict
    note: str = ""
    run: str | None = None


# ---- handoff contracts ----


class Producer(Body):
    run: str
    agent: str | None = None


class Consumer(Body):
    agent: str
    clearance: Level | None = None
    run: str | None = None
    scope: str | None = None


class HandoffContract(Body):
    """A typed handoff: what the producer hands the consumer (``/v2/handoffs/schema``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str
    producer: Producer
    consumer: Consumer
    goal: str | dict[str, Any]
    schema_: str | None = Field(default=None, alias="schema")
    template: HandoffTemplate | None = None
    evidence: list[Any] | None = None
    constraints: dict[str, Any] | None = None
    required_outputs: list[Any] = Field(default_factory=list)
    success_criteria: list[Any] = Field(default_factory=list)
    extensions: dict[str, Any] = Field(default_factory=dict)


class StoredContract(Answer):
    """A stored version of a handoff contract, with what the handoff pack said of it."""

    id: str
    version: int
    content_hash: str
    template: str
    producer_run: str
    producer_agent: str
    consumer_run: str
    consumer_agent: str
    state: str
    contract: dict[str, Any]
    validation: dict[str, Any]
    created_by: str
    created_at: str
    updated_at: str
    recorded_seq: int | None = None


class Posted(Answer):
    """A contract posted: the version stored, or the latest when it had this content."""

    contract: StoredContract
    created: bool


# ---- cases ----


class Moved(Answer):
    """Where a step of the case workflow left the case: its state and version now, and what the
    step produced (the evidence, the preview, the decision, the receipt)."""

    case_id: str
    version: int
    state: str
    detail: dict[str, Any]
    duplicate: bool = False
    proposal_id: str | None = None


class OpenCaseBody(Body):
    engine_id: str
    engine_version: str
    input: dict[str, Any] = Field(default_factory=dict)
    title: str | None = None


class EvidenceAppend(Body):
    expected_version: int
    worker: str
    evidence: dict[str, Any]
    event_id: str | None = None


class ProposeBody(Body):
    capability: str


class CaseApprovalBody(Body):
    approve: bool
    reason: str = ""


class CommitBody(Body):
    mode: CommitMode | None = None
