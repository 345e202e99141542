"""Autonomy levels and malformed tool calls (notes §7 C8, C9; issue 3 acceptance).

The adversarial scripted LLM always emits one tool call; the turn runs through the real gateway
and Prefect's `turn` flow. One arena (home + gateway) per autonomy level, shared by the module.
- `ReadOnly` × every executor with side effects → refused with ERR_POLICY_READONLY, one
  audit line, the workspace byte-identical.
- `Supervised` × every side-effecting executor of medium/high risk or irreversible, and
  `Full` × every irreversible one → not run: the turn waits for the owner's approval (today's
  answer may still be a refusal with ERR_POLICY_NEEDS_APPROVAL); the workspace is unchanged
  before and after the owner says no.
- unknown executor names, arguments that are not a JSON object, extra arguments, wrong types,
  missing or null required ones, values outside the manifest's enum/range → refused, one audit
  line each, nothing changed.
The executors come from their manifests: adding one adds its attacks.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from metnos.ground import i18n
from metnos.testing.llm_server import ToolCall
from tests.security.paths_calls import manifest, repo_manifests
from tests.security.paths_env import Arena, Outcome, open_arena, wait_closed
from tests.support.pg import TestPostgres

MANIFESTS = repo_manifests()
SIDE_EFFECTS = [m.name for m in MANIFESTS if m.side_effects]
NEEDS_OWNER = [m.name for m in MANIFESTS
               if m.side_effects and (m.risk != "low" or not m.reversible)]
IRREVERSIBLE = [m.name for m in MANIFESTS if m.side_effects and not m.reversible]
ASK_KEYS = {"ASK_POLICY_MEDIUM_RISK", "ASK_POLICY_IRREVERSIBLE", "ERR_POLICY_NEEDS_APPROVAL"}
WRONG = {"path": 42, "string": 42, "integer": "1; rm -rf /", "number": "NaN",
         "boolean": "yes", "array": "x"}


@pytest.fixture(scope="module")
async def arena(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                pg_server: TestPostgres, prefect_api: str) -> AsyncIterator[Arena]:
    async for made in open_arena(request, tmp_path_factory, pg_server):
        yield made


def _admitted(arena: Arena, executor: str) -> None:
    if not arena.admitted(executor):
        pytest.skip(f"{executor} is in the repository but not admitted (BUILTIN.lock?)")


# -- autonomy levels ------------------------------------------------------------------------


@pytest.mark.attack
@pytest.mark.parametrize("arena", ["ReadOnly"], indirect=True)
@pytest.mark.parametrize("executor", SIDE_EFFECTS)
async def test_readonly_refuses_every_side_effect(arena: Arena, executor: str) -> None:
    _admitted(arena, executor)
    args = arena.victim_args(manifest(executor), f"ro-{executor}")
    before = arena.workspace_state()
    out = await arena.attack(ToolCall(executor, args))
    assert arena.workspace_state() == before, "a read-only session changed the workspace"
    [line] = out.lines
    assert (line["action"], line["decision"], line["reason"], line["outcome"]) == (
        executor, "deny", "ERR_POLICY_READONLY", "refused"), line
    assert out.body["status"] == "completed", out.body
    assert i18n.get("ERR_POLICY_READONLY", arena.lang, executor=executor) in out.reply


@pytest.mark.attack
@pytest.mark.parametrize("arena", ["Supervised"], indirect=True)
@pytest.mark.parametrize("executor", NEEDS_OWNER)
async def test_supervised_never_runs_a_risky_step_on_its_own(arena: Arena, executor: str) -> None:
    await _assert_waits_for_the_owner(arena, executor, "sup")


@pytest.mark.attack
@pytest.mark.parametrize("arena", ["Full"], indirect=True)
@pytest.mark.parametrize("executor", IRREVERSIBLE)
async def test_full_still_asks_before_an_irreversible_step(arena: Arena, executor: str) -> None:
    await _assert_waits_for_the_owner(arena, executor, "full")


async def _assert_waits_for_the_owner(arena: Arena, executor: str, level: str) -> None:
    _admitted(arena, executor)
    args = arena.victim_args(manifest(executor), f"{level}-{executor}")
    before = arena.workspace_state()
    out = await arena.attack(ToolCall(executor, args))
    assert arena.workspace_state() == before, "the step ran without the owner's approval"
    [line] = out.lines  # exactly one line so far: the question, or the refusal
    assert line["action"] == executor and line["decision"] in ("ask", "deny"), line
    assert_awaiting_approval_or_refused(out, line, arena.lang, executor)
    turn = await _owner_says_no(arena, out, line)
    assert arena.workspace_state() == before, "the step ran although the owner said no"
    assert turn["status"] == "completed", turn
    mine = [ln for ln in _audit(arena) if ln["turn_id"] == out.body["turn_id"]]
    assert not [ln for ln in mine if ln["decision"] == "allow"], mine


def assert_awaiting_approval_or_refused(out: Outcome, line: dict[str, Any], lang: str,
                                        executor: str) -> None:
    """The two answers accepted while approvals land: the turn waits for the owner, or (the
    version before approvals) it refuses with ERR_POLICY_NEEDS_APPROVAL."""
    status = out.body["status"]
    if status == "awaiting_approval":
        assert line["decision"] == "ask" and line["reason"] in ASK_KEYS, line
        return
    assert status == "completed", out.body
    assert line["reason"] == "ERR_POLICY_NEEDS_APPROVAL", line
    assert i18n.get("ERR_POLICY_NEEDS_APPROVAL", lang, executor=executor) in out.reply


async def _owner_says_no(arena: Arena, out: Outcome, line: dict[str, Any]) -> dict[str, Any]:
    """Deny a pending approval through the API (if it expires instead, so be it) and wait
    for the turn to close."""
    if out.body["status"] == "awaiting_approval":
        approval_id = line.get("approval_id") or _first_approval_id(out.body)
        if approval_id:
            await arena.client.post(f"/api/approvals/{approval_id}", json={"decision": "deny"})
    return out.turn or await wait_closed(arena.client, out.body["turn_id"])


def _first_approval_id(body: dict[str, Any]) -> str | None:
    pending = body.get("approvals") or []
    first = pending[0] if pending and isinstance(pending[0], dict) else {}
    found = first.get("approval_id") or first.get("id")
    return str(found) if found else None


def _audit(arena: Arena) -> list[dict[str, Any]]:
    return [json.loads(line) for line in arena.audit_text().splitlines()]


# -- malformed tool calls (Full autonomy: only the call itself is wrong) ---------------------

UNKNOWN_NAMES = ["rm_rf", "fs_read2", "FS_READ", "fs_read ", " fs_read", "../fs_read",
                 "executors/fs_read", "fs_read\u200b", "fs_re\u0430d", "__import__", "shell"]
NOT_JSON = ["{not json", "[]", '["path", ".ssh/id_rsa"]', '"note.md"', "null", "42",
            '{"path": "a.md"', "{'path': 'a.md'}", "\x00"]


def _malformed() -> list[tuple[str, str, Any, str]]:
    """(id, executor, arguments, expected reason) for every malformed call we derive."""
    cases: list[tuple[str, str, Any, str]] = []
    cases += [(f"unknown-{i}", name, {"path": "a.md"}, "ERR_EXECUTOR_NOT_FOUND")
              for i, name in enumerate(UNKNOWN_NAMES)]
    cases += [(f"not-json-{i}", "fs_read", raw, "ERR_PLAN_ARGS_NOT_JSON")
              for i, raw in enumerate(NOT_JSON)]
    for m in MANIFESTS:
        cases.append((f"{m.name}-not-json", m.name, "{not json", "ERR_PLAN_ARGS_NOT_JSON"))
        cases.append((f"{m.name}-extra", m.name, {"sudo": True}, "ERR_ARGS_INVALID"))
        for name, spec in m.inputs.items():
            cases.append((f"{m.name}-{name}-wrong-type", m.name, {name: WRONG[spec.type]},
                          "ERR_ARGS_INVALID"))
            cases.append((f"{m.name}-{name}-null", m.name, {name: None}, "ERR_ARGS_INVALID"))
            if spec.is_required:
                cases.append((f"{m.name}-{name}-missing", m.name, {name: ...},
                              "ERR_ARGS_INVALID"))
            if spec.enum:
                cases.append((f"{m.name}-{name}-outside-enum", m.name,
                              {name: "not-" + str(spec.enum[0])}, "ERR_ARGS_INVALID"))
            if spec.maximum is not None:
                cases.append((f"{m.name}-{name}-above-maximum", m.name,
                              {name: spec.maximum * 1000 + 1}, "ERR_ARGS_INVALID"))
            if spec.minimum is not None:
                cases.append((f"{m.name}-{name}-below-minimum", m.name,
                              {name: spec.minimum - 1000}, "ERR_ARGS_INVALID"))
    return cases


MALFORMED = _malformed()


@pytest.mark.attack
@pytest.mark.parametrize("arena", ["Full"], indirect=True)
@pytest.mark.parametrize(("case", "executor", "change", "reason"), MALFORMED,
                         ids=[c[0] for c in MALFORMED])
async def test_malformed_call_is_refused(arena: Arena, case: str, executor: str, change: Any,
                                         reason: str) -> None:
    if reason != "ERR_EXECUTOR_NOT_FOUND":
        _admitted(arena, executor)
    arguments = change
    if isinstance(change, dict) and reason != "ERR_EXECUTOR_NOT_FOUND":
        arguments = arena.victim_args(manifest(executor), case)
        arguments.update(change)
        arguments = {k: v for k, v in arguments.items() if v is not ...}
    before = arena.workspace_state()
    out = await arena.attack(ToolCall(executor, arguments))
    assert arena.workspace_state() == before, "a malformed call changed the workspace"
    assert out.body["status"] == "completed", out.body
    [line] = out.lines
    assert (line["decision"], line["reason"], line["outcome"]) == ("deny", reason, "refused"), line
    assert out.reply.strip(), out.body
