"""What a closed turn leaves in the mnestoma: hand-offs, the use clock, each executor's use;
through the real loop (scripted model on loopback), the policy and the sandbox."""

from __future__ import annotations

from typing import Any

import httpx

from metnos.features.mnestoma.record import Memory, handoffs
from metnos.ground.db.models import TurnStep
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.approvals.test_approval_flow import answer
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, gateway_client


def step(seq: int, executor: str, think: int, seen: list[int],
         outcome: str = "done") -> TurnStep:
    return TurnStep(turn_id="t", seq=seq, executor=executor, args_digest="", decision="allow",
                    outcome=outcome, think=think, seen=seen)


def test_handoffs_come_from_the_latest_earlier_model_call_only() -> None:
    steps = [step(1, "fs_find", 1, []), step(2, "fs_read", 2, [1]),
             step(3, "fs_write", 3, [1, 2])]
    # fs_write had seen fs_find too, but two model calls earlier: only fs_read handed over
    assert handoffs(steps) == [("fs_find", "fs_read"), ("fs_read", "fs_write")]


def test_calls_of_one_message_are_not_hand_offs_of_each_other() -> None:
    steps = [step(1, "fs_find", 1, []), step(2, "fs_read", 1, []),
             step(3, "fs_write", 2, [1, 2]), step(4, "fs_write", 2, [1, 2])]
    assert handoffs(steps) == [("fs_find", "fs_write"), ("fs_read", "fs_write")] * 2


def test_refusals_wishes_and_the_embedded_planner_make_no_hand_offs() -> None:
    steps = [step(1, "fs_read", 1, []), step(2, "fs_write", 2, [1], outcome="refused"),
             step(3, "wish", 2, [1]), step(4, "fs_write", 3, [1, 2, 3])]
    assert handoffs(steps) == [("fs_read", "fs_write")]  # think 2 ran nothing: think 1 is it
    assert handoffs([step(1, "fs_find", 0, []), step(2, "fs_read", 0, [])]) == []
    assert handoffs([step(1, "fs_read", 1, []), step(2, "fs_read", 2, [1])]) == []  # itself


async def mnestoma(client: httpx.AsyncClient) -> dict[str, Any]:
    resp = await client.get("/api/mnestoma")
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def pairs(view: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {(m["src"], m["dst"]): m["weight"] for m in view["mnests"]}


def uses(view: dict[str, Any]) -> dict[str, int]:
    return {e["name"]: e["invocations"] for e in view["executors"] if e["invocations"]}


def chain(llm: ScriptedLLM, n: int) -> None:
    llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    llm.enqueue_tool_call("fs_read", {"path": "notes.md"})
    llm.enqueue_tool_call("fs_write", {"path": f"copy{n}.md", "content": "milk"})
    llm.enqueue_text("Copied.")


def notes_home(make_home: MakeHome, llm: ScriptedLLM | None, **env: str) -> Home:
    home = make_home(llm=llm, lang="en", autonomy="Full", **env)
    (home.workspace / "notes.md").write_text("milk\n")
    return home


async def turn(client: httpx.AsyncClient, text: str = "copy my notes") -> dict[str, Any]:
    """One turn, closed; the owner approves what it asks (a write after a read asks once)."""
    resp = await client.post("/api/turns", json={"text": text})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    if body["status"] == "awaiting_approval":
        await answer(client, body, "approve")
    return await wait_closed(client, body["turn_id"])


async def test_a_chain_makes_mnests_and_twice_doubles_them(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = notes_home(make_home, scripted_llm)
    chain(scripted_llm, 1)
    chain(scripted_llm, 2)
    async with gateway_client(home, prefect=False) as client:
        empty = await mnestoma(client)
        first = await turn(client)
        once = await mnestoma(client)
        await turn(client)
        twice = await mnestoma(client)
    assert empty["clock"] == 0 and empty["mnests"] == []
    assert [s["outcome"] for s in first["steps"]] == ["done"] * 3
    assert pairs(once) == {("fs_find", "fs_read"): 1.0, ("fs_read", "fs_write"): 1.0}
    assert once["clock"] == 3 and uses(once) == {"fs_find": 1, "fs_read": 1, "fs_write": 1}
    assert pairs(twice) == {("fs_find", "fs_read"): 2.0, ("fs_read", "fs_write"): 2.0}
    assert twice["clock"] == 6 and uses(twice) == {"fs_find": 2, "fs_read": 2, "fs_write": 2}
    assert {m["clock"] for m in twice["mnests"]} == {6}  # the clock at the last reinforcement


async def test_the_turn_flow_records_its_hand_offs(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = notes_home(make_home, scripted_llm)
    scripted_llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    scripted_llm.enqueue_tool_call("fs_read", {"path": "notes.md"})
    scripted_llm.enqueue_text("Milk.")
    async with gateway_client(home) as client:
        closed = await turn(client, "what is in my notes?")
        view = await mnestoma(client)  # recorded before the turn shows as finished
    assert closed["flow_run_id"] and [s["executor"] for s in closed["steps"]] == [
        "fs_find", "fs_read"]
    assert pairs(view) == {("fs_find", "fs_read"): 1.0} and view["clock"] == 2


async def test_parallel_reads_are_not_hand_offs_and_refusals_do_not_tick(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = notes_home(make_home, scripted_llm)
    scripted_llm.enqueue_tool_calls([ToolCall("fs_find", {"pattern": "*.md"}),
                                     ToolCall("fs_read", {"path": "notes.md"})])
    scripted_llm.enqueue_tool_call("fs_read", {"path": "../outside.md"})  # refused
    scripted_llm.enqueue_tool_call("no_such_tool", {})  # refused: not an executor
    scripted_llm.enqueue_tool_call("fs_write", {"path": "out.md", "content": "x"})
    scripted_llm.enqueue_text("Done.")
    hooks: list[Memory] = []
    async with gateway_client(home, prefect=False) as client:
        client.app.state.gateway.service.record.remember.hooks.append(hooks.append)  # type: ignore[attr-defined]
        closed = await turn(client)
        view = await mnestoma(client)
    assert [(s["executor"], s["outcome"]) for s in closed["steps"]] == [
        ("fs_find", "done"), ("fs_read", "done"), ("fs_read", "refused"),
        ("no_such_tool", "refused"), ("fs_write", "done")]
    assert pairs(view) == {("fs_find", "fs_write"): 1.0, ("fs_read", "fs_write"): 1.0}
    assert view["clock"] == 3 and uses(view) == {"fs_find": 1, "fs_read": 1, "fs_write": 1}
    [memory] = hooks
    assert memory.invocations == 3 and memory.sequence == ("fs_find", "fs_read", "fs_write")
    assert memory.due == () and not memory.ager_due


async def test_the_embedded_planner_ticks_the_clock_and_the_ager_comes_due(
        make_home: MakeHome) -> None:
    home = notes_home(make_home, None, METNOS_EVOLUTION_AGER_EVERY="2")
    hooks: list[Memory] = []
    async with gateway_client(home, prefect=False) as client:
        client.app.state.gateway.service.record.remember.hooks.append(hooks.append)  # type: ignore[attr-defined]
        for _ in range(2):
            closed = await turn(client, "find the markdown files")
            assert [s["executor"] for s in closed["steps"]] == ["fs_find"]
        view = await mnestoma(client)
    assert view["clock"] == 2 and uses(view) == {"fs_find": 2} and view["mnests"] == []
    assert [(m.clock, m.ager_due) for m in hooks] == [(1, False), (2, True)]


async def test_nothing_is_recorded_when_evolution_is_off(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = notes_home(make_home, scripted_llm, METNOS_EVOLUTION_ENABLED="false")
    chain(scripted_llm, 1)
    async with gateway_client(home, prefect=False) as client:
        await turn(client)
        view = await mnestoma(client)
    assert view["clock"] == 0 and view["mnests"] == [] and uses(view) == {}
