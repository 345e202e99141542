"""Law 2 on everything outbound (issue 25, finding 6): no secret reaches the model provider,
and none of the model's words carries one to a surface or the record.

- An identity file that is a hard link (or a symlink) to a private key outside the workspace
  is left out of the system prompt, with an audit line; the turn goes on.
- The owner token pasted by the user goes to the provider redacted.
- The model echoing the owner token: the HTTP reply, the WebSocket deltas and reply, the
  Telegram message (tests/telegram/test_secret_echo.py) and the turn record carry the
  marker, never the token.
Real gateway, real Prefect turn flow, the scripted LLM recording what it received."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from hypothesis import given, settings
from hypothesis import strategies as st

from metnos.mechanisms.llm.outbound import Outbound
from metnos.mechanisms.policy.laws import REDACTED
from metnos.mechanisms.policy.secret_scan import SecretScanner
from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import audit_lines, wait_closed
from tests.support.home import Home, MakeHome, gateway_client, served_gateway
from tests.support.pg import free_port
from tests.webchat.test_chat_socket import frames_until

pytestmark = pytest.mark.attack

KEY_BODY = ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
            "QyNTUxOQAAACBfakeFAKEfakeFAKEfakeFAKEfakeFAKEfakeFAKEfakeAAAAJjfakefake\n")
FAKE_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + KEY_BODY
            + "-----END OPENSSH PRIVATE KEY-----\n")


def _outside_key(home: Home) -> Path:
    """A private key beside the home, outside the workspace (as `~/.ssh/id_rsa` is)."""
    key = home.path.parent / "outside" / "id_rsa"
    key.parent.mkdir(exist_ok=True)
    key.write_text(FAKE_KEY)
    key.chmod(0o600)
    return key


async def _closed(client: httpx.AsyncClient, text: str,
                  **fields: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A turn of `text` (in English) once it is closed: the reply's body, and the turn."""
    body = (await client.post("/api/turns", json={"text": text, "lang": "en", **fields})).json()
    return body, await wait_closed(client, body["turn_id"])


def _sent(llm: ScriptedLLM) -> str:
    return json.dumps(llm.requests)


@pytest.mark.parametrize("link", ["hardlink", "symlink"])
async def test_an_identity_file_linked_to_a_key_never_reaches_the_prompt(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str, link: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    key = _outside_key(home)
    memory = home.workspace / "MEMORY.md"
    memory.unlink(missing_ok=True)
    if link == "hardlink":
        os.link(key, memory)
    else:
        memory.symlink_to(key)
    (home.workspace / "RULES.md").write_text("Always answer briefly.\n")
    scripted_llm.enqueue_text("Hello.")
    async with gateway_client(home) as client:
        body, _ = await _closed(client, "hi")
    assert body["status"] == "completed" and body["reply"] == "Hello."
    sent = _sent(scripted_llm)
    assert "Always answer briefly." in sent  # the other files still shape the prompt
    assert "OPENSSH PRIVATE KEY" not in sent and "b3BlbnNzaC1rZXktdjE" not in sent
    refused = [ln for ln in audit_lines(home.path) if ln["action"] == "workspace/MEMORY.md"]
    assert [(ln["decision"], ln["reason"]) for ln in refused] == [
        ("deny", f"ERR_WORKSPACE_IDENTITY_{link.upper()}")]


async def test_a_private_key_block_in_the_users_text_goes_out_redacted(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    scripted_llm.enqueue_text("I will not keep that.")
    async with gateway_client(home) as client:
        await _closed(client, f"keep this for me:\n{FAKE_KEY}")
    sent = _sent(scripted_llm)
    assert "BEGIN OPENSSH PRIVATE KEY" not in sent and REDACTED in sent
    lines = [ln for ln in audit_lines(home.path) if ln["action"] == "llm.request"]
    assert lines and lines[0]["reason"] == "MSG_LAW_PROMPT_REDACTED"
    assert "openssh_private_key" in lines[0]["outcome"]


async def test_the_owner_token_pasted_goes_to_the_provider_redacted(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    scripted_llm.enqueue_text("Noted.")
    async with gateway_client(home) as client:
        body, _ = await _closed(client, f"my token is {home.token} remember it")
        scripted_llm.enqueue_text("Still noted.")
        await _closed(client, "what was it?", session_id=body["session_id"])
    assert len(scripted_llm.requests) == 2  # the second carries the first in its history
    assert home.token not in _sent(scripted_llm)
    user = scripted_llm.requests[0]["messages"][-1]
    assert user["role"] == "user" and f"my token is {REDACTED} remember it" in user["content"]
    lines = [ln for ln in audit_lines(home.path) if ln["action"] == "llm.request"]
    assert lines and all("owner_token" in ln["outcome"] for ln in lines)
    assert all(home.token not in json.dumps(ln) for ln in audit_lines(home.path))


def _echo(token: str) -> str:
    return f"Sure, your token is {token} as you asked."


def _no_token(home: Home, *surfaces: Any) -> None:
    for surface in surfaces:
        assert home.token not in json.dumps(surface, default=str)


async def test_the_model_echoing_the_owner_token_reaches_the_api_and_record_redacted(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    scripted_llm.enqueue_text(_echo(home.token))
    async with gateway_client(home) as client:
        body, turn = await _closed(client, "say my token")
        history = (await client.get(f"/api/sessions/{body['session_id']}/messages")).json()
    assert body["reply"] == _echo(REDACTED)
    _no_token(home, body, turn, history)
    assert home.token not in (home.workspace / ".audit" / "audit.jsonl").read_text()
    lines = [ln for ln in audit_lines(home.path) if ln["action"] == "llm.reply"]
    [line] = lines
    assert line["reason"] == "MSG_LAW_REPLY_REDACTED" and "owner_token" in line["outcome"]


async def test_the_model_echoing_the_owner_token_streams_redacted_on_the_websocket(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.chunk_delay_s = 0.01
    scripted_llm.enqueue_text(_echo(home.token))
    with served_gateway(home):
        async with websockets.connect(f"ws://127.0.0.1:{home.settings.gateway.port}/api/chat",
                                      additional_headers=home.auth()) as socket:
            await socket.send(json.dumps({"type": "message", "text": "say my token"}))
            frames = await frames_until(socket, "end")
    _no_token(home, frames)
    streamed = "".join(f["text"] for f in frames if f["type"] == "delta")
    [reply] = [f for f in frames if f["type"] == "reply"]
    assert streamed == _echo(REDACTED) == reply["text"]


@pytest.mark.parametrize("cut", [1, 5, 17, 30])
def test_a_secret_split_across_deltas_never_leaves_in_pieces(cut: int) -> None:
    secret = "s3cr3t-OWNER-token-0123456789abcdef"
    out: list[str] = []
    held = Outbound(SecretScanner([("owner_token", secret)])).stream(out.append)
    text = f"Here: {secret}. Bye"
    pieces = [text[:6 + cut], text[6 + cut:6 + cut + 3], text[6 + cut + 3:]]
    for piece in pieces:
        held(piece)
        assert secret[:cut] not in "".join(out)  # not even its start, before it is whole
    held.flush()
    assert "".join(out) == f"Here: {REDACTED}. Bye" and held.names == {"owner_token"}


def test_ordinary_text_streams_without_being_held() -> None:
    out: list[str] = []
    held = Outbound(SecretScanner([("owner_token", "s3cr3t-OWNER-token-0123")])).stream(
        out.append)
    for piece in ("Buongiorno, ", "come ", "stai?"):
        held(piece)
    assert out == ["Buongiorno, ", "come ", "stai?"]


@settings(max_examples=200, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=8),
       case=st.sampled_from([str.lower, str.upper, lambda s: s]))
def test_any_split_streams_only_what_the_whole_reply_keeps(cuts: list[int], case: Any) -> None:
    """Whatever the split (and the case the model wrote the secret in): what has left is at
    every moment the start of the redacted whole, so nothing leaves that is taken back."""
    secret = "s3cr3t-OWNER-token-0123456789abcdef"
    text = f"Se: {case(secret)} and s3cr3t again {secret[:10]}!"
    whole = f"Se: {REDACTED} and s3cr3t again {secret[:10]}!"
    out: list[str] = []
    held = Outbound(SecretScanner([("owner_token", secret)])).stream(out.append)
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    for a, b in zip(points, points[1:], strict=False):
        held(text[a:b])
        assert whole.startswith("".join(out))
    held.flush()
    assert "".join(out) == whole
