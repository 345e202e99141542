"""A phone on the overlay, as a person uses it (issue 30, acceptance).

A network namespace made by the test is the phone; a veth pair stands for the overlay. The
gateway is the real process (`python -m flows.gateway`) with `[gateway] expose` set to this
machine's end of the veth. Chromium runs inside the phone's namespace. What must hold:
- the gateway listens on loopback and on that one address, nowhere else (`ss`);
- the phone's browser reaches nothing but the ceremony until the owner approves its code
  from the CLI; then it chats as the family member it belongs to and sees only its own
  conversations (not the owner's);
- revoked from the CLI, it is refused at its very next request, and sent back to the
  ceremony.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from metnos.faces.cli.devices import app as devices_cli
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.support.gateway_process import GatewayProcess
from tests.support.home import MakeHome
from tests.support.overlay import Phone, listening, phone
from tests.support.pg import free_port
from tests.webchat.conftest import FLAGS

NAME = "metnos.family.test"


@pytest.fixture
def the_phone(tmp_path: Path, chromium_path: str) -> Iterator[Phone]:
    with phone(tmp_path) as made:
        yield made


@pytest.fixture
def gateway(make_home: MakeHome, scripted_llm: ScriptedLLM, the_phone: Phone,
            tmp_path: Path) -> Iterator[GatewayProcess]:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_GATEWAY_EXPOSE=the_phone.server,
                     METNOS_GATEWAY_EXPOSE_NAME=NAME)
    process = GatewayProcess(home, dict(os.environ), tmp_path / "gateway.log")
    process.start()
    yield process
    process.close()


def cli(*args: str) -> str:
    result = CliRunner().invoke(devices_cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


async def status_of(page: object, path: str) -> int:
    found: int = await page.evaluate(  # type: ignore[attr-defined]
        "(path) => fetch(path, {credentials: 'same-origin'}).then(r => r.status)", path)
    return found


async def test_a_phone_is_admitted_chats_as_its_member_and_is_revoked(
        gateway: GatewayProcess, the_phone: Phone, scripted_llm: ScriptedLLM) -> None:
    from playwright.async_api import async_playwright

    port = gateway.env["METNOS_GATEWAY_PORT"]
    assert gateway.proc is not None
    assert listening(gateway.proc.pid) == {f"127.0.0.1:{port}", f"{the_phone.server}:{port}"}
    # the owner has a conversation of their own on the server
    scripted_llm.enqueue_text("Noted, owner.")
    owner_turn = httpx.post(f"{gateway.base}/api/turns", headers=gateway.home.auth(),
                            json={"text": "the owner's secret plans", "lang": "en"},
                            timeout=120).json()
    base = f"http://{NAME}:{port}"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(the_phone.chromium),
            args=[*FLAGS, f"--host-resolver-rules=MAP {NAME} {the_phone.server}"])
        try:
            page = await browser.new_page(locale="en-US")
            await page.goto(base + "/")
            assert page.url == base + "/device"  # nothing but the ceremony
            assert await status_of(page, "/api/sessions") == 401
            assert await status_of(page, "/static/chat.js") == 401
            await page.fill("#label", "Anna's phone")
            await page.click("#ask")
            await page.wait_for_selector("#asked:not([hidden])")
            code = (await page.text_content("#code") or "").strip()
            assert len(code) == 8
            assert await status_of(page, "/api/sessions") == 401  # asked is not admitted

            cli("approve", code)
            await page.wait_for_url(base + "/", timeout=30_000)
            await page.wait_for_selector("body[data-ready='true']")
            assert await page.locator("#member").is_visible()
            assert await page.locator("#show-pairing").count() == 0
            assert await page.locator("#show-audit").count() == 0
            scripted_llm.enqueue_text("Hello Anna, noted.")
            await page.fill("#text", "remember the school trip")
            await page.click("#send")
            await page.wait_for_selector("text=Hello Anna, noted.", timeout=60_000)
            sessions = await page.evaluate(
                "fetch('/api/sessions').then(r => r.json())")
            texts = json.dumps(sessions)
            assert "school trip" in texts and "secret plans" not in texts
            assert await status_of(
                page, f"/api/sessions/{owner_turn['session_id']}/messages") == 404

            # a change to the household's files is the owner's to approve, not Anna's
            scripted_llm.route("tok-anna", ToolCall("fs_write", {"path": "anna.txt",
                                                                 "content": "trip\n"}),
                               final_text="Written for Anna.")
            await page.fill("#text", "write tok-anna")
            await page.click("#send")
            card = page.locator("#messages li.card").last
            await card.wait_for(timeout=60_000)
            assert await card.locator("button").count() == 0
            assert "owner" in (await card.text_content() or "")
            waiting = httpx.get(f"{gateway.base}/api/approvals", headers=gateway.home.auth(),
                                timeout=30).json()["approvals"]
            [hers] = [a for a in waiting if a["executor"] == "fs_write"]
            assert hers["asker"].startswith("device:")
            decided = httpx.post(f"{gateway.base}/api/approvals/{hers['approval_id']}",
                                 headers=gateway.home.auth(), json={"decision": "approve"},
                                 timeout=60)
            assert decided.status_code == 200, decided.text
            await page.wait_for_selector("text=Written for Anna.", timeout=60_000)
            assert (gateway.home.workspace / "anna.txt").read_text() == "trip\n"

            listed = json.loads(cli("list", "--json"))["devices"]
            [device] = [d for d in listed if d["label"] == "Anna's phone"]
            assert device["state"] == "admitted" and device["role"] == "member"
            assert device["address"] == the_phone.address
            cli("revoke", device["device_id"])
            assert await status_of(page, "/api/sessions") == 401  # at once
            await page.reload()
            assert page.url == base + "/device"
        finally:
            await browser.close()
