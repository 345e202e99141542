"""The invoice chain on a photo (issue 30): a receipt rendered from text, photographed-like
(askew, noisy, JPEG), sent in the web chat's API and on Telegram, is filed for the turn, read by
`ocr` in the sandbox with Debian's tesseract, archived and notified; the turn asks before it
acts (the photo's text is outside content). Real gateway, Prefect flows, sandbox; the scripted
model at the LLM edge decides the calls, as a model would from what it reads."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import datetime
from typing import Any

import httpx
import pytest

from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import FakeTelegram
from tests.approvals.test_approval_flow import wait_status
from tests.gateway.test_attacks import audit_lines
from tests.support.home import Home, MakeHome, gateway_client
from tests.support.receipts import WORDS, ensure_ocr, photographed, receipt
from tests.telegram.support import said, telegram_gateway, until

ANNA = 7302
CATEGORY = {"it": "ricevute", "en": "receipts"}
FINAL = {"it": "Ho archiviato lo scontrino: 7,45 EUR.", "en": "I filed the receipt: 7.45 GBP."}


@pytest.fixture(scope="module", autouse=True)
def engine() -> None:
    ensure_ocr()


def photo(lang: str) -> bytes:
    out = io.BytesIO()
    photographed(receipt(lang), angle=3.0 if lang == "it" else -2.0).save(
        out, "JPEG", quality=70)
    return out.getvalue()


def script(llm: ScriptedLLM, home: Home, lang: str, name: str) -> str:
    """The model's calls: read the photo, file it, say so; the photo's place in the inbox."""
    path = f"inbox/{datetime.now(home.settings.tz).date().isoformat()}/{name}"
    llm.enqueue_tool_call("ocr", {"path": path, "lang": lang})
    llm.enqueue_tool_call("archive", {"path": path, "category": CATEGORY[lang]})
    llm.enqueue_text(FINAL[lang])
    return path


async def approve_until_done(client: httpx.AsyncClient, turn_id: str) -> dict[str, Any]:
    """Approve what the turn waits for (the owner, from the API) until it completes."""
    for _ in range(4):
        turn = await wait_status(client, turn_id, "completed", "awaiting_approval",
                                 timeout_s=90)
        if turn["status"] == "completed":
            return turn
        for pending in turn["approvals"]:
            if pending["status"] == "pending":
                await client.post(f"/api/approvals/{pending['approval_id']}",
                                  json={"decision": "approve"})
        await asyncio.sleep(0.2)
    raise AssertionError(f"turn {turn_id} still waits")


def check_chain(llm: ScriptedLLM, home: Home, lang: str, path: str, turn: dict[str, Any]
                ) -> None:
    read = next(m for m in llm.requests[1]["messages"] if m.get("role") == "tool")
    assert '<untrusted-data source="ocr"' in read["content"]
    text = json.loads(read["content"].split(">", 1)[1].rsplit("</untrusted-data", 1)[0])
    for word in WORDS[lang]:
        assert word in text["result"]["text"], (word, text)
    assert [(s["executor"], s["outcome"]) for s in turn["steps"]] == [
        ("ocr", "done"), ("archive", "done")]
    year = datetime.now(home.settings.tz).year
    filed = home.workspace / "archive" / str(year) / CATEGORY[lang] / path.rsplit("/", 1)[1]
    assert filed.is_file() and not (home.workspace / path).exists()
    assert turn["reply"] == FINAL[lang]


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_a_receipt_photo_sent_to_the_api_is_read_and_filed(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str, lang: str) -> None:
    home = make_home(llm=scripted_llm, lang=lang)
    path = script(scripted_llm, home, lang, "scontrino.jpg")
    async with gateway_client(home) as client:
        sent = await client.post("/api/attachments", params={"name": "scontrino.jpg"},
                                 content=photo(lang), headers={"content-type": "image/jpeg"})
        assert sent.status_code == 201, sent.text
        resp = await client.post("/api/turns", params={"wait": "false"}, json={
            "text": "archivia lo scontrino" if lang == "it" else "file this receipt",
            "attachments": [sent.json()["id"]]})
        turn = await approve_until_done(client, resp.json()["turn_id"])
    check_chain(scripted_llm, home, lang, path, turn)


async def test_a_receipt_photo_sent_on_telegram_is_read_and_filed(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str,
        telegram: FakeTelegram) -> None:
    home = make_home(llm=scripted_llm, lang="it")
    path = script(scripted_llm, home, "it", "photo.jpg")
    async with telegram_gateway(home, telegram, owner=ANNA, owner_lang="it") as (client, _):
        telegram.push_message(ANNA, "archivia lo scontrino", photo=photo("it"),
                              language_code="it")
        await until(telegram, lambda t: bool(scripted_llm.requests), "the turn")
        [filed] = [x for x in audit_lines(home) if x["reason"] == "filed"]
        turn = await approve_until_done(client, str(filed["turn_id"]))
        await until(telegram, lambda t: any(FINAL["it"] in x for x in said(t, ANNA)),
                    "the reply on Telegram")
    check_chain(scripted_llm, home, "it", path, turn)


async def test_a_scanned_bill_pdf_is_read_by_ocr_after_pdf_ext_finds_no_text(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="it")
    out = io.BytesIO()
    photographed(receipt("it"), angle=1.0).convert("L").save(out, "PDF", resolution=150)
    day = datetime.now(home.settings.tz).date().isoformat()
    path = f"inbox/{day}/bolletta.pdf"
    scripted_llm.enqueue_tool_call("pdf_ext", {"path": path})
    scripted_llm.enqueue_tool_call("ocr", {"path": path, "lang": "it"})
    scripted_llm.enqueue_tool_call("archive", {"path": path, "category": "bollette"})
    scripted_llm.enqueue_text(FINAL["it"])
    async with gateway_client(home) as client:
        sent = await client.post("/api/attachments", params={"name": "bolletta.pdf"},
                                 content=out.getvalue(),
                                 headers={"content-type": "application/pdf"})
        assert sent.status_code == 201 and sent.json()["kind"] == "pdf", sent.text
        resp = await client.post("/api/turns", params={"wait": "false"}, json={
            "text": "archivia la bolletta", "attachments": [sent.json()["id"]]})
        turn = await approve_until_done(client, resp.json()["turn_id"])
    assert [(s["executor"], s["outcome"]) for s in turn["steps"]] == [
        ("pdf_ext", "done"), ("ocr", "done"), ("archive", "done")]
    first = str(scripted_llm.requests[1]["messages"][-1]["content"])
    assert '"image_only": true' in first  # pdf_ext found no text layer
    read = str(scripted_llm.requests[2]["messages"][-1]["content"])
    for word in WORDS["it"]:
        assert word in read, (word, read)
    year = datetime.now(home.settings.tz).year
    assert (home.workspace / "archive" / str(year) / "bollette" / "bolletta.pdf").is_file()
