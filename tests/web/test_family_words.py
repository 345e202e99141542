"""Family words on family surfaces (issue 27, point 6), over real HTTP through the FastAPI app:
a "no" is answered in plain words (with and without a model), the activity log says what
happened to the person's things, and "What I remember" opens with what Metnos learned. No
tool name and no `name(arg=...)` syntax outside the details a click away."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import httpx

from metnos.ground.paths import resources_path
from metnos.testing.llm_server import ScriptedLLM
from tests.approvals.test_approval_flow import answer
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, gateway_client
from tests.web.support import ORIGIN, browser, log_in

TOOLS = sorted(p.parent.name for p in resources_path("executors").glob("*/manifest.toml"))
CALL_SYNTAX = re.compile(r"\b\w+\(\w+=")


def developer_words(text: str) -> list[str]:
    """Tool names, call syntax and internal event names found in `text`."""
    found = [name for name in TOOLS if re.search(rf"\b{name}\b", text)]
    found += CALL_SYNTAX.findall(text)
    found += [w for w in ("web.login", "session_opened", "awaiting_approval") if w in text]
    return found


class _Visible(HTMLParser):
    """The text a page shows before any click: no markup, no attribute, nothing inside a
    closed `<details>`, a script or a style."""

    HIDDEN = ("details", "script", "style", "template")

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.HIDDEN:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN and self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.depth:
            self.parts.append(data)


def default_view(html: str) -> str:
    parser = _Visible()
    parser.feed(html)
    return " ".join(" ".join(parser.parts).split())


async def deny_pending(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    await answer(client, body, "deny")
    return await wait_closed(client, body["turn_id"])


async def test_a_no_without_a_model_is_answered_in_plain_words(make_home: MakeHome) -> None:
    home = make_home()  # Italian, no model: the embedded planner
    (home.workspace / "compiti.md").write_text("matematica\n")
    async with gateway_client(home, prefect=False) as client:
        resp = await client.post("/api/turns", json={"text": "elimina compiti.md"})
        assert resp.status_code == 200, resp.text
        turn = await deny_pending(client, resp.json())
    plain = "Hai detto di no: non ho eliminato compiti.md. Non è cambiato nulla."
    assert plain in turn["reply"], turn["reply"]
    assert not developer_words(turn["reply"]) and 'path="' not in turn["reply"]
    assert [a["text"] for a in turn["activity"]] == [plain]
    assert (home.workspace / "compiti.md").exists()


def look_then_read(llm: ScriptedLLM) -> None:
    """A look for files handed to a read: a hand-off Metnos learns."""
    llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    llm.enqueue_tool_call("fs_read", {"path": "notes.md"})
    llm.enqueue_text("Your notes say: milk.")


async def test_the_activity_log_and_what_i_remember_speak_plainly(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home: Home = make_home(llm=scripted_llm, lang="en")
    (home.workspace / "notes.md").write_text("milk\n")
    (home.workspace / "compiti.md").write_text("maths\n")
    async with browser(home, headers={"Origin": ORIGIN, "Accept-Language": "en"}) as client:
        await log_in(client, home)
        look_then_read(scripted_llm)
        resp = await client.post("/api/turns", json={"text": "find my notes and open one",
                                                     "lang": "en"})
        assert resp.status_code == 200, resp.text
        await wait_closed(client, resp.json()["turn_id"])
        scripted_llm.enqueue_tool_call("fs_delete", {"path": "compiti.md"})
        scripted_llm.enqueue_text("As you wish.")
        resp = await client.post("/api/turns", json={"text": "delete compiti.md", "lang": "en"})
        turn = await deny_pending(client, resp.json())
        [denied] = turn["activity"]
        assert denied["text"] == "You said no: I did not delete compiti.md. Nothing changed."

        lines = (await client.get("/api/audit?limit=100")).json()
        remember = await client.get("/mnestoma")
        chat = await client.get("/")
    texts = [line["text"] for line in lines]
    assert all(isinstance(t, str) and t.strip() for t in texts)
    assert not developer_words("\n".join(texts)), texts
    assert "You signed in on the web." in texts
    assert "I read notes.md." in texts and "I looked for your files." in texts
    assert "You said no: I did not delete compiti.md. Nothing changed." in texts
    assert any(line["action"] == "fs_delete" for line in lines)  # the raw detail stays

    assert remember.status_code == 200
    shown = default_view(remember.text)
    assert "When you ask me to look for files, you often ask me next to open a file." in shown
    assert not developer_words(shown), developer_words(shown)
    graph = remember.text.index('<details id="mnestoma-graph">')
    assert remember.text.index('id="mnestoma-picture"') > graph  # the graph: a click further
    assert chat.status_code == 200 and not developer_words(default_view(chat.text))
