"""The client against a real gateway (examples/support.yaml): what an agent sees."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from conftest import SCOPE

from tollgate import AsyncTollgate, Forbidden, NotFound, Tollgate, ToolDenied, errors

SECRET = "AKIAPYDATUTGFKRXITKP"


def test_a_run_opens_decides_records_and_finishes(agent: Tollgate, task: str) -> None:
    with agent.open_run("support", task, SCOPE, clearance="confidential", metadata={"t": 1}) as run:
        assert run.governing == ["support-desk@1"]
        assert run.view.run.status == "running"
        allowed = run.authorize("orders.lookup", {"order_id": 7})
        assert allowed.allowed and allowed.effect == "allow"
        assert allowed.receipt == f"{run.id}#{allowed.answer.receipt.seq}"
        run.record_result(allowed.call_id, {"total_cents": 1999})
        denied = run.authorize("crm.delete_customer", {"customer_id": 42})
        assert not denied.allowed and denied.effect == "deny"
        assert "no-deleting-customers" in denied.reason and denied.receipt in denied.reason
        assert denied.arguments == {}
        step = run.step("second", agent="support")
        assert step >= 1
        assert run.note("a note").seq > 0
    assert run.view.run.status == "succeeded"
    decisions = agent.decisions(run.id, kind="tool")
    assert [(d.subject, d.effect) for d in decisions] == [
        (allowed.call_id, "allow"),
        (denied.call_id, "deny"),
    ]
    assert all(len(d.event_hash) == 64 for d in decisions)
    assert [d.effect for d in agent.decisions(run.id, effect="deny")] == ["deny"]


def test_a_failing_block_finishes_the_run_failed(agent: Tollgate, task: str) -> None:
    with pytest.raises(RuntimeError):
        with agent.open_run("support", task, SCOPE) as run:
            raise RuntimeError("the agent crashed")
    assert agent.get_run(run.id).run.status == "failed"


def test_secrets_in_arguments_are_redacted_before_the_tool_runs(agent: Tollgate, task: str) -> None:
    with agent.open_run("support", task, SCOPE, clearance="confidential") as run:
        seen = {}

        def add_note(customer_id: int, text: str) -> str:
            seen["text"] = text
            return "noted"

        assert run.call("crm.add_note", add_note, {"customer_id": 42, "text": f"key {SECRET}"}) == "noted"
        assert SECRET not in seen["text"] and "REDACTED" in seen["text"]
    tool = agent.decisions(run.id, kind="tool")
    assert tool[-1].effect == "redact"


def test_call_raises_tool_denied_and_never_runs_the_function(agent: Tollgate, task: str) -> None:
    ran = []
    with agent.open_run("support", task, SCOPE) as run:
        with pytest.raises(ToolDenied) as denied:
            run.call("crm.delete_customer", lambda customer_id: ran.append(customer_id), {"customer_id": 1})
    assert ran == []
    assert denied.value.code == "deny" and denied.value.receipt.startswith(run.id + "#")


def test_an_approval_wait_is_released_by_an_approver(agent: Tollgate, approver: Tollgate, task: str) -> None:
    with agent.open_run("support", task, SCOPE) as run:
        decided = []

        def approve_when_asked() -> None:
            for _ in range(200):
                pending = approver.list_approvals(run=run.id, state="pending")
                if pending:
                    decided.append(approver.approve(pending[0].id, reason="refund checked"))
                    return
                time.sleep(0.05)

        helper = threading.Thread(target=approve_when_asked)
        helper.start()
        auth = run.authorize("payments.issue_refund", {"order_id": 7, "amount_cents": 100}, approval_timeout=20)
        helper.join()
        assert decided and decided[0].decided_by == "team-lead"
        assert auth.allowed and auth.effect == "allow"
        assert auth.approval is not None and auth.approval.state == "approved"
        assert auth.call_id.endswith(".approved")
        assert agent.get_approval(auth.approval.id).state == "used"


def test_an_unanswered_approval_times_out_and_a_rejection_says_who(
    agent: Tollgate, approver: Tollgate, task: str
) -> None:
    with agent.open_run("support", task, SCOPE) as run:
        auth = run.authorize("payments.issue_refund", {"order_id": 8, "amount_cents": 1}, approval_timeout=1)
        assert not auth.allowed and auth.timed_out
        assert "not decided in time" in auth.reason
        with pytest.raises(errors.ApprovalTimeout):
            agent.wait_for_approval(auth.approval.id, timeout=1)
        approver.reject(auth.approval.id, reason="not this one")
        rejected = agent.wait_for_approval(auth.approval.id, timeout=5)
        assert rejected.state == "rejected" and rejected.reason == "not this one"


def test_an_agent_cannot_approve_its_own_call(agent: Tollgate, task: str) -> None:
    with agent.open_run("support", task, SCOPE) as run:
        auth = run.authorize("payments.issue_refund", {"order_id": 9, "amount_cents": 1}, approval_timeout=0)
        with pytest.raises(Forbidden) as refused:
            agent.approve(auth.approval.id)
        assert refused.value.code == "kind_not_admitted"
        assert refused.value.status == 403


def test_errors_carry_code_message_details_and_the_receipt(agent: Tollgate, task: str) -> None:
    with pytest.raises(NotFound) as missing:
        agent.get_run("no-such-run")
    assert missing.value.code == "not_found" and "no-such-run" in missing.value.message
    # An id is one path segment whatever it holds: no route is reached through it.
    with pytest.raises(NotFound):
        agent.get_run("../../v1/tokens")
    with pytest.raises(Forbidden) as other:
        agent.open_run("someone-else", task, SCOPE)
    assert other.value.code == "other_agent"
    with agent.open_run("support", task, SCOPE) as run:
        import openai

        with pytest.raises(openai.PermissionDeniedError) as denied:
            run.openai().chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "hi"}])
        parsed = errors.from_response(403, denied.value.response.json(), "POST", "/v1/chat/completions")
        assert parsed.code == "policy_denied"
        assert parsed.receipt is not None and parsed.receipt.startswith(run.id + "#")
        assert parsed.details["effect"] == "deny"


def test_model_calls_go_through_the_gateway_in_the_run(agent: Tollgate, task: str) -> None:
    with agent.open_run("support", task, SCOPE, clearance="confidential") as run:
        reply = run.openai().chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": f"my key is {SECRET}"}]
        )
        text = reply.choices[0].message.content
        assert text.startswith("[fake gpt-4.1-mini") and SECRET not in text
        kinds = {(d.kind, d.effect) for d in run.decisions()}
        assert ("model", "allow") in kinds and ("context", "redact") in kinds


def test_the_async_client_does_the_same(url: str, task: str) -> None:
    import os

    async def scenario() -> None:
        async with AsyncTollgate(url, os.environ["TOLLGATE_TOKEN"]) as client:
            async with await client.open_run("support", task, SCOPE, clearance="confidential") as run:
                auth = await run.authorize("orders.lookup", {"order_id": 1})
                assert auth.allowed
                out = await run.call("orders.lookup", _async_lookup, {"order_id": 2})
                assert out == {"order_id": 2}
                denied = await run.authorize("crm.delete_customer", {"customer_id": 1})
                assert denied.effect == "deny"
                reply = await run.async_openai().chat.completions.create(
                    model="gpt-4.1-mini", messages=[{"role": "user", "content": "hello"}]
                )
                assert "hello" in reply.choices[0].message.content
            assert run.view.run.status == "succeeded"
            effects = [d.effect for d in await client.decisions(run.id, kind="tool")]
            assert effects == ["allow", "allow", "deny"]
            with pytest.raises(NotFound):
                await client.get_approval("apr-missing")

    asyncio.run(scenario())


async def _async_lookup(order_id: int) -> dict:
    await asyncio.sleep(0)
    return {"order_id": order_id}


def test_no_credential_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("TOLLGATE_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="TOLLGATE_TOKEN"):
        Tollgate("http://127.0.0.1:9")


def test_an_unreachable_gateway_is_a_connection_error() -> None:
    with Tollgate("http://127.0.0.1:9", "tg_x", timeout=2) as client:
        with pytest.raises(errors.ConnectionFailed, match="cannot reach the gateway"):
            client.get_run("r")


def test_memory_search_answers_typed_hits_and_what_policy_withheld(admin: Tollgate) -> None:
    found = admin.search_memory(SCOPE, clearance="confidential", class_="fact", q="refund", limit=5)
    assert found.eligible >= 0 and len(found.hits) <= 5
    assert all(count >= 0 for count in found.withheld.values())
    with pytest.raises(errors.Invalid) as bad:
        admin.search_memory(SCOPE, class_="gossip")
    assert "gossip" in bad.value.message


def test_a_compile_is_decided_item_by_item_and_recorded(agent: Tollgate, task: str) -> None:
    from tollgate.models import CandidateItem

    with agent.open_run("support", task, SCOPE, clearance="confidential") as run:
        answer = run.compile(
            [
                CandidateItem(
                    id="ticket", kind="doc", content="Order 7: two mugs", scope=SCOPE, sensitivity="internal"
                ),
                CandidateItem(
                    id="key",
                    kind="doc",
                    content=f"key {SECRET}",
                    scope=SCOPE,
                    sensitivity="internal",
                    labels=["secret"],
                ),
                CandidateItem(id="elsewhere", kind="doc", content="other org", scope="org:other", sensitivity="public"),
            ],
            budget=500,
        )
    by_id = {o.id: o for o in answer.compiled.outcomes}
    assert by_id["ticket"].status == "included"
    assert by_id["key"].status in ("redacted", "excluded") and SECRET not in answer.compiled.text
    assert by_id["elsewhere"].status == "excluded"
    assert answer.seq > 0 and len(answer.hash) == 64 and "Order 7" in answer.compiled.text


def test_a_case_moves_through_proposal_preview_policy_approval_and_commit(admin: Tollgate) -> None:
    import os

    if not os.environ.get("TOLLGATE_TEST_PACKS"):
        pytest.skip("tests/python_client.rs serves the intake_review pack and sets TOLLGATE_TEST_PACKS")
    opened = admin.open_case(
        "intake_review",
        "0.1.0",
        {
            "title": "Vendor contract renewal",
            "body": "Please review the NDA.",
            "requester": "procurement",
            "amount": 4800,
        },
        title="from the Python client",
    )
    case = opened.case_id
    assert opened.version >= 1 and opened.state
    added = admin.append_evidence(case, opened.version, "triage", {"queue": "legal", "urgency": "high"})
    assert added.version == opened.version + 1 and not added.duplicate
    with pytest.raises(errors.Conflict) as stale:
        admin.append_evidence(case, opened.version, "triage", {"queue": "legal"})
    assert stale.value.code == "version_conflict"
    proposed = admin.propose(case, "route_to_queue")
    proposal = proposed.proposal_id
    assert proposal is not None
    previewed = admin.preview(case, proposal)
    assert previewed.proposal_id == proposal
    decided = admin.check_policy(case, proposal)
    assert decided.detail, decided
    assert admin.get_case(case)["case"]["case_id"] == case
    assert any(c["case_id"] == case for c in admin.list_cases(pack="intake_review")["cases"])
