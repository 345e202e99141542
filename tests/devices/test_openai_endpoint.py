"""The OpenAI-compatible endpoint (issue 31, part 4), spoken to by OpenAI's own client over
real HTTP: the owner's token on loopback, a device's token over the overlay.

What must hold: a two-turn conversation with streaming, both turns in one Metnos conversation
(the model sees the first message when answering the second); a step that waits for an
approval comes back as text naming where to answer it (outside text escaped); a wrong token
gets 401; a foreign Origin is refused; a device's token works from that device only, as the
person it belongs to.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from metnos.faces.gateway.app import create_app
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.devices.support import Served, served
from tests.support.home import Home, MakeHome, served_app
from tests.support.overlay import Addresses
from tests.support.pg import free_port

pytestmark = pytest.mark.attack


def said(stream: openai.Stream) -> str:  # type: ignore[type-arg]
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


@pytest.fixture
def home(make_home: MakeHome, scripted_llm: ScriptedLLM) -> Home:
    return make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))


@pytest.fixture
def base(home: Home) -> Iterator[str]:
    with served_app(create_app(home.settings), home.settings.gateway.port) as url:
        yield url


def test_a_two_turn_conversation_with_streaming(home: Home, base: str,
                                                scripted_llm: ScriptedLLM) -> None:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=home.token)
    assert [m.id for m in client.models.list()] == ["metnos"]
    scripted_llm.enqueue_text("Nice to meet you, Marta.")
    first = [{"role": "user", "content": "My name is Marta."}]
    answer = said(client.chat.completions.create(model="metnos", messages=first,
                                                 stream=True, user="kitchen"))
    assert "Nice to meet you, Marta." in answer
    scripted_llm.enqueue_text("You are Marta.")
    second = [*first, {"role": "assistant", "content": answer},
              {"role": "user", "content": [{"type": "text", "text": "Who am I?"}]}]
    again = said(client.chat.completions.create(model="metnos", messages=second, stream=True,
                                                user="kitchen"))
    assert "You are Marta." in again
    history = str(scripted_llm.requests[-1]["messages"])
    assert "My name is Marta." in history and "Nice to meet you" in history  # one conversation
    scripted_llm.enqueue_text("A fresh start.")
    other = client.chat.completions.create(model="metnos", messages=[
        {"role": "user", "content": "Hello"}], user="garage")
    assert other.choices[0].message.content == "A fresh start."
    assert "Marta" not in str(scripted_llm.requests[-1]["messages"])  # another conversation


def test_an_approval_comes_back_as_text_and_is_answered_in_metnos(
        home: Home, base: str, scripted_llm: ScriptedLLM) -> None:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=home.token)
    scripted_llm.route("tok-note", ToolCall("fs_write", {"path": "**bold** note.md",
                                                         "content": "milk\n"}),
                       final_text="Noted.")
    answer = said(client.chat.completions.create(model="metnos", stream=True, messages=[
        {"role": "user", "content": "write tok-note"}]))
    waiting = httpx.get(f"{base}/api/approvals", headers=home.auth()).json()["approvals"]
    [approval] = waiting
    assert f"metnos approvals approve {approval['approval_id']}" in answer
    assert "**bold**" not in answer and "\\*\\*bold\\*\\*" in answer  # a name is not markup
    assert not (home.workspace / "**bold** note.md").exists()
    plain = client.chat.completions.create(model="metnos", messages=[  # the same, not streamed
        {"role": "user", "content": "write tok-note"}]).choices[0].message.content or ""
    assert "metnos approvals approve" in plain and "**bold**" not in plain


def test_a_wrong_token_and_a_foreign_page_are_refused(home: Home, base: str) -> None:
    wrong = openai.OpenAI(base_url=f"{base}/v1", api_key="not-the-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model="metnos", messages=[{"role": "user",
                                                                 "content": "hi"}])
    foreign = openai.OpenAI(base_url=f"{base}/v1", api_key=home.token, max_retries=0,
                            default_headers={"Origin": "http://evil.example"})
    with pytest.raises(openai.PermissionDeniedError):
        foreign.chat.completions.create(model="metnos", messages=[{"role": "user",
                                                                   "content": "hi"}])


@pytest.fixture
def exposed(make_home: MakeHome, scripted_llm: ScriptedLLM,
            overlay: Addresses) -> Iterator[Served]:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_GATEWAY_EXPOSE=overlay.server)
    with served(home, overlay.server) as found:
        yield found


def test_a_devices_token_speaks_as_its_person_from_that_device_only(
        exposed: Served, overlay: Addresses, scripted_llm: ScriptedLLM) -> None:
    laptop, other = overlay.devices
    with exposed.owner() as owner:
        added = owner.post("/api/devices", json={"label": "Open WebUI", "address": laptop})
        assert added.status_code == 200, added.text
        token = added.json()["token"]
        assert added.json()["base_url"] == f"{exposed.overlay}/v1"
        assert owner.get(f"/api/devices/{added.json()['device_id']}/token").json()[
            "token"] == token
    app = openai.OpenAI(base_url=f"{exposed.overlay}/v1", api_key=token, max_retries=0,
                        http_client=httpx.Client(transport=httpx.HTTPTransport(
                            local_address=laptop)))
    scripted_llm.enqueue_text("Hello from Metnos.")
    reply = app.chat.completions.create(model="metnos", messages=[
        {"role": "user", "content": "hello"}])
    assert reply.choices[0].message.content == "Hello from Metnos."
    with exposed.owner() as owner:
        sessions = owner.get("/api/sessions").json()["sessions"]
    assert sessions == []  # the member's conversation, not the owner's
    stolen = openai.OpenAI(base_url=f"{exposed.overlay}/v1", api_key=token, max_retries=0,
                           http_client=httpx.Client(transport=httpx.HTTPTransport(
                               local_address=other)))
    with pytest.raises(openai.AuthenticationError):
        stolen.chat.completions.create(model="metnos", messages=[{"role": "user",
                                                                  "content": "hi"}])
    with pytest.raises(openai.AuthenticationError):  # the owner's token is loopback's
        openai.OpenAI(base_url=f"{exposed.overlay}/v1", api_key=exposed.home.token,
                      max_retries=0, http_client=httpx.Client(transport=httpx.HTTPTransport(
                          local_address=laptop))).models.list()
