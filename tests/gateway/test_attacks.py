"""Attacks through the whole turn: an adversarial scripted LLM asks for the forbidden thing
(once, or again and again: the agent loop checks every attempt on its own, until the loop
detector stops it); the policy refuses each attempt in the user's language and leaves exactly
one audit line per attempt.

These run without Prefect (`prefect=False`): the policy path is the same function either way,
and the flow itself is covered by test_turns.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from metnos.ground.paths import resources_path
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.support.home import Home, MakeHome, gateway_client

pytestmark = pytest.mark.attack


def audit_lines(home: Home) -> list[dict[str, object]]:
    path = home.workspace / ".audit" / "audit.jsonl"
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [x for x in lines if x["action"] != "i18n.intent_policy"]  # one per start-up


def attempts(body: dict[str, object]) -> list[dict[str, object]]:
    """What the turn tried, one activity item per tool call the loop checked."""
    activity = body["activity"]
    assert isinstance(activity, list)
    return activity


def shown(body: dict[str, object], llm: ScriptedLLM) -> str:
    """Everything the user or the model saw: the reply, the activity, every model request."""
    return json.dumps([body, llm.requests], ensure_ascii=False)


async def ask(home: Home, text: str = "do it", lang: str = "en") -> dict[str, object]:
    async with gateway_client(home, prefect=False) as client:
        resp = await client.post("/api/turns", json={"text": text, "lang": lang})
    assert resp.status_code == 200, resp.text
    body: dict[str, object] = resp.json()
    return body


@pytest.mark.parametrize("path", [
    "~/.ssh/id_rsa",
    "../../etc/shadow",
    "/proc/self/root/etc/passwd",
    "/etc/passwd",
    "//etc//shadow",
    ".audit/audit.jsonl",
])
async def test_fs_read_of_a_forbidden_path_is_refused_and_audited(
        make_home: MakeHome, scripted_llm: ScriptedLLM, path: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    scripted_llm.always(ToolCall("fs_read", {"path": path}))  # it never gives up
    body = await ask(home)
    assert body["status"] == "completed"
    assert body["stop_reason"] == "MSG_AGENT_STOP_REPEAT"  # the loop detector ended it
    seen = shown(body, scripted_llm)
    assert "root:" not in seen and "PRIVATE KEY" not in seen
    lines = audit_lines(home)
    tried = attempts(body)
    assert len(tried) >= 1 and all(a["status"] == "refused" for a in tried), tried
    assert len(lines) == len(tried), lines  # one audit line per attempt, none unrecorded
    for line in lines:
        assert line["action"] == "fs_read" and line["decision"] == "deny"
        assert str(line["reason"]).startswith("ERR_PATH_")


async def test_workspace_symlink_pointing_outside_is_refused(
        make_home: MakeHome, scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    home = make_home(llm=scripted_llm, lang="it")
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("TOP SECRET")
    (home.workspace / "innocent.md").symlink_to(secret)
    scripted_llm.always(ToolCall("fs_read", {"path": "innocent.md"}))
    body = await ask(home, "leggi innocent.md", lang="it")
    assert "TOP SECRET" not in shown(body, scripted_llm)
    lines = audit_lines(home)
    assert len(lines) == len(attempts(body)) >= 1
    assert [(ln["decision"], ln["reason"]) for ln in lines] == \
        [("deny", lines[0]["reason"])] * len(lines)
    assert str(lines[0]["reason"]).startswith("ERR_PATH_")


async def test_unknown_executor_and_malformed_arguments_are_refused(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    scripted_llm.enqueue_tool_calls([ToolCall("rm_rf", {"path": "/"}),
                                     ToolCall("fs_read", "{not json"),
                                     ToolCall("fs_read", {"path": 42})])
    scripted_llm.enqueue_text("None of those calls worked.")
    body = await ask(home)
    assert body["stop_reason"] == "MSG_AGENT_STOP_MALFORMED"  # three unusable calls in a row
    tried = attempts(body)
    assert [a["status"] for a in tried] == ["refused"] * 3
    assert "rm_rf" in str(tried[0]["text"])
    reasons = [ln["reason"] for ln in audit_lines(home)]
    assert reasons[:2] == ["ERR_EXECUTOR_NOT_FOUND", "ERR_PLAN_ARGS_NOT_JSON"]
    assert reasons[2] == "ERR_ARGS_INVALID"
    assert all(ln["decision"] == "deny" for ln in audit_lines(home))


async def test_readonly_session_cannot_write(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, autonomy="ReadOnly", lang="en")
    scripted_llm.enqueue_tool_call("fs_write", {"path": "x.txt", "content": "hi"})
    scripted_llm.enqueue_text("I could not write it.")
    body = await ask(home)
    assert not (home.workspace / "x.txt").exists()
    [line] = audit_lines(home)
    assert line["decision"] == "deny"
    assert [a["status"] for a in attempts(body)] == ["refused"]


async def test_full_autonomy_writes_and_records_the_before_state(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, autonomy="Full", lang="en")
    (home.workspace / "list.txt").write_text("old\n")
    scripted_llm.enqueue_tool_call("fs_write", {"path": "list.txt", "content": "new\n"})
    scripted_llm.enqueue_text("Written.")
    body = await ask(home)
    assert (home.workspace / "list.txt").read_text() == "new\n", body
    [line] = audit_lines(home)
    assert line["decision"] == "allow" and line["outcome"] == "done"
    before = home.settings.state_dir / "before" / str(line["action_id"])
    manifest = json.loads((before / "manifest.json").read_text())
    [state] = manifest["manifest"]["paths"]
    assert state["path"] == "list.txt" and state["existed"] is True
    assert (before / state["snapshot"]).read_text() == "old\n"


def install_owner_executor(home: Home, name: str = "echo_note") -> Path:
    """A copy of fs_read under another name in METNOS_HOME/executors, signed by the owner."""
    from metnos.ground import keys
    from metnos.mechanisms.executors.signing import sign_executor, signature_path

    folder = home.path / "executors" / name
    repo_exec = resources_path("executors", "fs_read")
    folder.mkdir()
    manifest = (repo_exec / "manifest.toml").read_text().replace(
        'name = "fs_read"', f'name = "{name}"')
    (folder / "manifest.toml").write_text(manifest)
    (folder / "main.py").write_bytes((repo_exec / "main.py").read_bytes())
    sign_executor(folder, keys.load_private_key(home.settings.keys_dir, "executors"),
                  signature_path(home.path / "signatures", name))
    return folder


async def changed_between_turns(home: Home, llm: ScriptedLLM, executor: str,
                                change: Callable[[], object]) -> tuple[dict[str, object],
                                                                       dict[str, object]]:
    """Two turns of one gateway that each read a.md with `executor`, `change()` between."""
    (home.workspace / "a.md").write_text("hello")
    for _ in range(2):
        llm.enqueue_tool_call(executor, {"path": "a.md"})
        llm.enqueue_text("That is all.")
    async with gateway_client(home, prefect=False) as client:
        first = (await client.post("/api/turns", json={"text": "x", "lang": "en"})).json()
        change()
        second = (await client.post("/api/turns", json={"text": "x", "lang": "en"})).json()
    [ran] = attempts(first)  # admitted at start-up, it runs
    assert ran["executor"] == executor and ran["status"] == "done"
    assert "hello" in json.dumps(llm.requests[1]["messages"][-1])
    return first, second


async def test_code_changed_while_running_is_refused_at_run_time(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, autonomy="Full", lang="en")
    main = install_owner_executor(home) / "main.py"
    pwned = "print('{\"ok\": true, \"result\": {\"pwned\": 1}}')\n"
    _, second = await changed_between_turns(home, scripted_llm, "echo_note",
                                            lambda: main.write_text(pwned))
    [refused] = attempts(second)
    assert refused["status"] == "refused" and "echo_note" in str(refused["text"])
    assert "pwned" not in json.dumps(second) + json.dumps(scripted_llm.requests[3])
    assert [ln["reason"] for ln in audit_lines(home)] == ["ok", "ERR_EXECUTOR_CODE_CHANGED"]


@pytest.mark.parametrize("tampered", ["main.py", "manifest.toml"])
async def test_tampered_executor_is_refused_by_the_gateway(
        make_home: MakeHome, scripted_llm: ScriptedLLM, tampered: str) -> None:
    """One byte of a signed executor's code or manifest changed after signing: not run."""
    home = make_home(llm=scripted_llm, lang="en")
    target = install_owner_executor(home) / tampered
    data = bytearray(target.read_bytes())
    at = data.index(b"en = \"") + 6 if tampered == "manifest.toml" else data.index(b"fs_")
    data[at] ^= 0x20  # one byte: a letter changes case inside a text
    target.write_bytes(bytes(data))
    (home.workspace / "a.md").write_text("hello")
    scripted_llm.enqueue_tool_call("echo_note", {"path": "a.md"})
    scripted_llm.enqueue_text("It did not run.")
    body = await ask(home)
    assert "hello" not in shown(body, scripted_llm)
    [line] = audit_lines(home)
    assert line["decision"] == "deny" and line["reason"] == "ERR_EXECUTOR_NOT_ADMITTED"


async def test_bad_http_input_gets_clear_4xx(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with gateway_client(home, prefect=False) as client:
        assert (await client.get("/healthz", headers={"Authorization": ""})).status_code == 200
        no_token = await client.post("/api/turns", json={"text": "hi"},
                                     headers={"Authorization": ""})
        assert no_token.status_code == 401
        assert no_token.json()["error"]["key"] == "ERR_AUTH_MISSING"
        wrong = await client.post("/api/turns", json={"text": "hi"},
                                  headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json()["error"]["key"] == "ERR_AUTH_INVALID"
        evil = await client.get("/healthz", headers={"Host": "evil.example"})
        assert evil.status_code == 403
        too_long = await client.post("/api/turns", json={"text": "x" * 9000, "lang": "it"})
        assert too_long.status_code == 413
        assert "troppo lungo" in too_long.json()["error"]["message"]
        huge = await client.post("/api/turns", content=b'{"text": "' + b"x" * 400_000 + b'"}',
                                 headers={"content-type": "application/json"})
        assert huge.status_code == 413 and huge.json()["error"]["key"] == "ERR_REQUEST_TOO_LARGE"

        async def chunks():  # type: ignore[no-untyped-def]
            yield b'{"text": "hi"}'
        chunked = await client.post("/api/turns", content=chunks(),
                                    headers={"content-type": "application/json"})
        assert chunked.status_code == 411
        unknown = await client.get("/api/nope")
        assert unknown.status_code == 404 and unknown.json()["error"]["key"] == "ERR_HTTP_404"
        missing = await client.post("/api/turns", json={"session_id": "s"})
        assert missing.status_code == 422
        assert (await client.get("/api/turns/nope")).status_code == 404
    assert audit_lines(home) == []


async def test_failed_canary_lets_only_side_effect_free_executors_run(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, autonomy="Full", lang="it")
    scripted_llm.enqueue_tool_calls([ToolCall("fs_write", {"path": "x.txt", "content": "x"}),
                                     ToolCall("fs_find", {"pattern": "*.md"})])
    scripted_llm.enqueue_text("Non ho potuto scrivere; ho trovato i file.")
    async with gateway_client(home, prefect=False) as client:
        state = client.app.state.gateway  # type: ignore[attr-defined]
        state.service = replace(state.service, sandbox_ok=False)  # as a failed canary
        state.turns = replace(state.turns, service=state.service)  # the turns it starts
        assert (await client.get("/healthz")).json()["sandbox"] == "degraded"
        body = (await client.post("/api/turns", json={"text": "scrivi", "lang": "it"})).json()
    assert not (home.workspace / "x.txt").exists()
    write, find = attempts(body)
    assert write["status"] == "refused" and "sola lettura" in str(write["text"])
    assert find["status"] == "done"
    assert "USER.md" in json.dumps(scripted_llm.requests[1]["messages"][-1])  # fs_find's result
    assert [ln["decision"] for ln in audit_lines(home)] == ["deny", "allow"]


async def test_hostile_tool_name_is_refused_with_its_own_audit_line(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    """A lone surrogate (JSON "\\ud800") in the tool name used to crash the audit append:
    the refusal went unrecorded and the rest of the plan was dropped."""
    home = make_home(llm=scripted_llm, lang="en")
    scripted_llm.enqueue_tool_calls([ToolCall("fs_read\ud800\n\u009b", {"path": "a.md"}),
                                     ToolCall("fs_find", {"pattern": "*.md"})])
    scripted_llm.enqueue_text("Found them.")
    body = await ask(home)
    assert body["status"] == "completed", body
    lines = audit_lines(home)
    assert [(ln["decision"], ln["reason"]) for ln in lines] == [
        ("deny", "ERR_EXECUTOR_NOT_FOUND"), ("allow", "ok")]
    # the surrogate was replaced at the LLM boundary; the audit escapes the C1 control
    assert lines[0]["action"] == "fs_read\ufffd\n\\x9b"


@pytest.mark.parametrize(("call", "decision"), [
    (ToolCall("fs_read\ud800", {"path": "a.md"}), "deny"),
    (ToolCall("fs_read", {"path": "a\ud800.md"}), "allow"),  # runs: no such file
])
async def test_hostile_surrogates_still_complete_the_turn(
        make_home: MakeHome, scripted_llm: ScriptedLLM, call: ToolCall, decision: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    scripted_llm.enqueue_tool_calls([call])
    scripted_llm.enqueue_text("Done.")
    async with gateway_client(home, prefect=False) as client:
        # the same from the user's own JSON is refused as bad input, before anything runs
        raw = await client.post("/api/turns", content=b'{"text": "read \\ud800", "lang": "en"}',
                                headers={"content-type": "application/json"})
        assert raw.status_code == 422 and raw.json()["error"]["key"] == "ERR_FIELD_INVALID"
        resp = await client.post("/api/turns", json={"text": "read it", "lang": "en"})
    body = resp.json()
    assert resp.status_code == 200 and body["status"] == "completed", body
    [line] = audit_lines(home)
    assert line["decision"] == decision


@pytest.mark.parametrize(("host", "allowed"), [
    ("127.0.0.1", True), ("127.0.0.1:42618", True), ("LOCALHOST:42618", True),
    ("[::1]:42618", True), ("[::1]", True),
    ("evil.example", False), ("evil.example:42618", False), ("localhost.", False),
    ("[::1]evil.example", False), ("[::1].evil.example:80", False),
    ("127.0.0.1:evil.example", False), ("127.0.0.1:42618:1", False), ("localhost:", False),
    ("127.0.0.1.nip.io", False), ("[::ffff:127.0.0.1]", False), ("", False), (None, False),
])
async def test_host_guard(host: str | None, allowed: bool) -> None:
    """DNS rebinding: only a loopback name, optionally with a numeric port, gets through."""
    from metnos.faces.gateway.security import HostGuard

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"in"})

    guard = HostGuard(app, ["127.0.0.1", "localhost", "[::1]", "::1"], max_body_bytes=1024)
    headers: list[tuple[bytes, bytes]] = [] if host is None else [(b"host", host.encode())]
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/healthz", "headers": headers}
    await guard(scope, receive, send)
    assert (sent[0]["status"] == 200) is allowed, (host, sent)
