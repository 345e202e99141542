"""Issue 25 finding 2: the Prefect UI renders Metnos's markdown (the pause description above
the Resume form, each turn's card artifact). Text from the model, files and people must not
become a link, an image, raw HTML, emphasis or a heading there.

A `hypothesis` property feeds arbitrary strings to `metnos.ground.escape`'s markdown functions and
to the descriptions Metnos builds from them, parsed back with markdown-it-py (CommonMark plus the
GFM tables and strikethrough it offers); an adversarial turn paused in a real Prefect flow is
read back from the Prefect API.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token
from prefect.client.orchestration import get_client
from prefect.exceptions import PrefectHTTPStatusError

from metnos.ground import escape
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from metnos.turns import gate, runview
from metnos.turns.context import ModelCall, TurnContext
from tests.approvals.test_approval_flow import paused, wait_status
from tests.flows.test_turn_runview import artifacts_of, final_run
from tests.support.home import MakeHome, gateway_client

try:  # GFM's bare-URL autolinks, when the optional linkify engine is installed
    import linkify_it  # noqa: F401

    _LINKIFY = True
except ImportError:
    _LINKIFY = False

# what data must never turn into
ACTIVE = {"link_open", "image", "html_inline", "html_block", "em_open", "strong_open",
          "s_open", "heading_open", "table_open", "bullet_list_open", "ordered_list_open",
          "blockquote_open", "hr", "fence", "code_block", "code_inline"}
# a bare URL, a www. name or an e-mail address GFM would make a link of (checked on the
# source: markdown-it's commonmark preset has no linkify without linkify-it-py)
GFM_AUTOLINK = re.compile(r"(?i)(?:https?|ftp|mailto|xmpp)[:]|www\.|[\w.+-]@[\w-]+\.")

ATTACKS = [
    "![x](http://127.0.0.1:9/?d=secret)",
    '<img src="http://127.0.0.1:9/?d=secret">',
    "**Approve: harmless**",
    "[ref]: http://127.0.0.1:9/?d=secret\n\n![x][ref]",
    "<http://127.0.0.1:9/?d=secret>",
    "http://127.0.0.1:9/?d=secret www.evil.example owner@evil.example",
    "Title\n=====",
    "# Approve\n---\n> quote\n- item\n1. item",
    "| a | b |\n|---|---|\n| c | d |",
    "~~gone~~ _em_ __strong__",
    "&lt;img src=x&gt; &#60;img&#62; &#x3C;",
    "x[^1]\n\n[^1]: http://127.0.0.1:9/",
    "    indented code\n\n```\nfence\n```",
    "<script>alert(1)</script>\n<div>block</div>",
    "a `` code `` b ``` c",
    "\\*escaped\\* \\",
    "\u202eevil\u202c \x1b[8mhidden\x07",
]

texts = st.one_of(st.sampled_from(ATTACKS), st.text(),
                  st.text(alphabet=st.sampled_from(list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
                                                        " \n\tabc=1\u00a0")), max_size=40))


def parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    return md.enable("linkify") if _LINKIFY else md


def flat(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for token in tokens:
        out.append(token)
        out.extend(flat(token.children or []))
    return out


def shape(markdown: str) -> list[str]:
    """The structure of a markdown text: every token's type but plain text and line breaks."""
    return [t.type for t in flat(parser().parse(markdown))
            if t.type not in ("text", "softbreak", "hardbreak")]


def rendered_text(markdown: str) -> str:
    """What a reader sees of a paragraph: its text, line breaks as newlines."""
    parts = []
    for token in flat(parser().parse(markdown)):
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("hardbreak", "softbreak"):
            parts.append("\n")
    return "".join(parts)


def inert(markdown: str) -> None:
    """No active markdown node in `markdown`, nor a GFM bare autolink."""
    found = {t.type for t in flat(parser().parse(markdown))} & ACTIVE
    assert not found, (found, markdown)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_markdown_text_is_only_text(data: str) -> None:
    out = escape.markdown_text(data)
    inert(out)
    assert not GFM_AUTOLINK.search(out), out
    # and it reads back as exactly the text (each line trimmed: no indentation block)
    expected = "\n".join(line.strip() for line in escape.terminal(data).strip().split("\n"))
    assert rendered_text(out).rstrip("\n\\") == expected.rstrip("\n\\")
    # inside Metnos's own prose and emphasis, it changes nothing of the structure
    if out:
        assert shape(f"Intro **{out}** end\n\nnext") == shape("Intro **x** end\n\nnext")
        assert shape(f"> {out}\n>\n> next") == shape("> x\n>\n> next")


@settings(max_examples=400, deadline=None)
@given(texts)
def test_markdown_code_is_one_code_span(data: str) -> None:
    out = escape.markdown_code(data)
    assert shape(out) == ["paragraph_open", "inline", "code_inline", "paragraph_close"], out
    assert shape(f"- {out}: {out} · x") == shape("- `a`: `b` · x")
    [code] = [t for t in flat(parser().parse(out)) if t.type == "code_inline"]
    clean = escape.terminal(data).replace("\n", "⏎").replace("\t", " ")
    assert code.content.strip(" ") == clean.strip(" ")


@settings(max_examples=400, deadline=None)
@given(texts)
def test_markdown_block_is_one_fenced_block(data: str) -> None:
    out = escape.markdown_block(data)
    assert shape(f"before\n\n{out}\n\nafter") == shape("before\n\n```text\nx\n```\n\nafter")
    [block] = [t for t in parser().parse(out) if t.type == "fence"]
    assert block.content == escape.terminal(data) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, texts, texts, texts)
def test_the_pause_description_keeps_its_structure(headline: str, action: str, path: str,
                                                   fingerprint: str) -> None:
    built = gate.approval_markdown(headline, action, {"a.txt": "file:1", path + "x": fingerprint})
    plain = gate.approval_markdown("h" if escape.markdown_text(headline) else "", "a",
                                   {"a.txt": "file:1", "p": "f"})
    assert shape(built) == shape(plain), built
    assert not GFM_AUTOLINK.search(_prose(built)), built


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, texts, texts, texts)
def test_the_turn_card_keeps_its_structure(question: str, reply: str, step: str,
                                           who: str) -> None:
    def card(question: str, reply: str, step: str, who: str) -> str:
        ctx = TurnContext("t1", "s1", who, who, who, "en", "Supervised", question)
        ctx.activity = [{"executor": step, "status": "done", "text": step, "undo": True,
                         "action_id": "ab12"}]
        ctx.calls = [ModelCall(1, 12.0, (step, who)), ModelCall(2, 3.0)]  # the model's names
        return runview.card(ctx, question, reply, datetime(2026, 12, 1, tzinfo=UTC),
                            ZoneInfo("UTC"))

    built = card(question, reply, step, who)
    plain = card("q", "r", "s", "w")
    assert shape(built) == shape(plain), built
    assert not GFM_AUTOLINK.search(_prose(built)), built


def _prose(markdown: str) -> str:
    """The markdown source outside code spans and fenced blocks (where GFM links nothing)."""
    without_blocks = re.sub(r"(?ms)^(`{3,})text\n.*?^\1$", "", markdown)
    return re.sub(r"(`+).*?\1", "", without_blocks)


# --- the adversarial turn, in a real Prefect flow --------------------------------------------

EXFIL = "![x](http://127.0.0.1:9/?d=secret)"
CONTENT = (f"{EXFIL}\n<img src=\"http://127.0.0.1:9/?d=img\">\n**Approve: harmless**\n"
           "[r]: http://127.0.0.1:9/?d=ref\n\n![y][r] <http://127.0.0.1:9/?d=auto>\n"
           "Fake heading\n===\n" + "an ordinary line of notes\n" * 20
           + "LAST LINE: past any cut\n")  # longer than a card's line: shown whole anyway
PATH = "notes/**Approve harmless**<img src=x>.md"


@pytest.mark.attack
async def test_an_adversarial_turn_leaves_no_active_markdown_in_prefect(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    (home.workspace / "notes").mkdir()
    text = f"please save my notes {EXFIL} <b>now</b>"
    scripted_llm.route("please save my notes", ToolCall("fs_write",
                       {"path": PATH, "content": CONTENT}),
                       final_text=f"Done! {EXFIL} <img src=http://127.0.0.1:9/?d=reply> "
                                  "**Approved by the owner**\nwww.evil.example")
    async with gateway_client(home) as client:
        resp = await client.post("/api/turns", json={"text": text, "lang": "en"})
        assert resp.status_code == 200, resp.text
        body: dict[str, Any] = resp.json()
        assert body["status"] == "awaiting_approval", body
        run = await paused(body["flow_run_id"])
        description = json.loads(await _description(run))  # the JSON string's text: rendered
        assert "127.0.0.1:9" in description and "fs_write" in description  # all shown...
        assert "LAST LINE: past any cut" in description  # ...every byte, never a silent cut
        _no_active_markdown_from_data(description, bold_allowed=1)  # ...none of it active
        decided = await client.post(f"/api/approvals/{body['approvals'][0]['approval_id']}",
                                    json={"decision": "deny", "reason": "**no** ![z](http://x)"})
        assert decided.status_code == 200, decided.text
        await wait_status(client, body["turn_id"], "completed")
    ended = await final_run(body["flow_run_id"])
    assert "<" not in ended.name and "*" not in ended.name
    [card] = await artifacts_of(body["flow_run_id"])
    assert "127.0.0.1:9/?d=reply" in rendered_text(card.data)  # shown as text
    _no_active_markdown_from_data(card.data, bold_allowed=4)  # question, calls, steps, reply


async def _description(run: Any) -> str:
    """The paused run's description input (written just after the state changed)."""
    keyset = run.state.state_details.run_input_keyset
    assert keyset is not None
    async with get_client() as prefect:
        for _ in range(100):
            try:
                return str(await prefect.read_flow_run_input(UUID(str(run.id)),
                                                             keyset["description"]))
            except PrefectHTTPStatusError:
                await asyncio.sleep(0.1)
    raise AssertionError("the pause has no description")


def _no_active_markdown_from_data(markdown: str, *, bold_allowed: int) -> None:
    tokens = flat(parser().parse(markdown))
    types = [t.type for t in tokens]
    for kind in ("link_open", "image", "html_inline", "html_block", "em_open", "s_open"):
        assert kind not in types, (kind, markdown)
    assert types.count("strong_open") <= bold_allowed, markdown  # Metnos's own titles only
    assert types.count("heading_open") <= 1, markdown  # the card's own title
    assert not GFM_AUTOLINK.search(_prose(markdown)), markdown
    assert not re.search(r"(?<!\\)[<&]", _prose(markdown)), markdown  # no raw HTML, no entity
