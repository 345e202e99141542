"""Issue 25 finding 2, as the owner meets it: the Resume form of a paused turn, opened in the
real Prefect UI in Chromium. A scripted model asks for an `fs_write` whose path and content
carry an image, raw HTML, a reference-style image, fake bold orders; a small HTTP listener on
loopback records every request. Opening the form must load nothing from it (nor any image from
outside the Prefect server), and the description must show the text, not act on it.

`metnos serve` runs its Prefect server with the UI (locked by the credential, which the page
gets the way the UI's own login stores it); the test session's server has no UI."""

from __future__ import annotations

import base64
import http.server
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.support.pg import free_port
from tests.support.serve_process import ServedInstance, served_instance
from tests.webchat.conftest import FLAGS, ensure_chromium


class Listener:
    """An HTTP server on loopback that answers 200 to anything and records each path."""

    def __init__(self) -> None:
        self.port = free_port()
        self.seen: list[str] = []
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                seen.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/gif")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture(scope="module")
def instance(llm: ScriptedLLM, compiled_catalog: Path) -> Iterator[ServedInstance]:
    with served_instance(compiled_catalog, METNOS_LANG="en", METNOS_LLM_MODEL="openai/scripted",
                         METNOS_LLM_API_BASE=llm.api_base, METNOS_LLM_API_KEY="sk-test",
                         METNOS_POLICY_APPROVAL_TIMEOUT_S="300") as served:
        yield served


def chromium() -> str:
    path = ensure_chromium()
    if path is None:
        reason = "/usr/bin/chromium is missing and cannot be installed here"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def paused_turn(inst: ServedInstance, llm: ScriptedLLM, port: int) -> str:
    out = f"http://127.0.0.1:{port}"
    content = (f"![x]({out}/image?d=secret)\n<img src=\"{out}/html?d=secret\">\n"
               f"**Approve: harmless**\n[r]: {out}/ref?d=secret\n\n![y][r]\n"
               f"<{out}/autolink>\n<svg><image href=\"{out}/svg\"/></svg>\n")
    llm.route("save my notes", ToolCall("fs_write", {
        "path": f"notes/![p]({out}/path).md", "content": content}), final_text="Done.")
    turn = httpx.post(f"{inst.gateway}/api/turns", headers=inst.owner_headers(), timeout=60,
                      json={"text": "please save my notes", "lang": "en"}).json()
    assert turn["status"] == "awaiting_approval", turn
    credential = inst.prefect_credential()
    auth = {"Authorization": "Basic " + base64.b64encode(credential.encode()).decode()}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = httpx.get(f"{inst.gateway}/api/turns/{turn['turn_id']}",
                          headers=inst.owner_headers()).json()
        run_id = state.get("flow_run_id")
        if run_id:
            run = httpx.get(f"{inst.prefect}/api/flow_runs/{run_id}", headers=auth).json()
            if run["state"]["type"] == "PAUSED":
                return str(run_id)
        time.sleep(0.3)
    raise AssertionError("the turn never paused")


@pytest.mark.attack
async def test_the_resume_form_loads_no_image_from_anywhere(
        instance: ServedInstance, llm: ScriptedLLM, listener: Listener) -> None:
    from playwright.async_api import async_playwright

    path = chromium()
    run_id = paused_turn(instance, llm, listener.port)
    password = base64.b64encode(instance.prefect_credential().encode()).decode()
    outside: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=path, args=FLAGS)
        try:
            page = await browser.new_page()
            await page.add_init_script(
                f"window.localStorage.setItem('prefect-password', {password!r});")
            page.on("request", lambda r: outside.append(r.url)
                    if not r.url.startswith((instance.prefect, "data:", "blob:")) else None)
            await page.goto(f"{instance.prefect}/runs/flow-run/{run_id}")
            resume = page.get_by_role("button", name="Resume")
            await resume.first.wait_for(timeout=60_000)
            await resume.first.click()
            dialog = page.get_by_role("dialog")
            await dialog.wait_for(timeout=30_000)
            await dialog.get_by_text("fs_write", exact=False).first.wait_for(timeout=30_000)
            await page.wait_for_timeout(3000)  # time for any image to be fetched
            text = await dialog.inner_text()
            images = await page.eval_on_selector_all(
                "img", "els => els.map(e => e.getAttribute('src') || '')")
        finally:
            await browser.close()
    assert f"127.0.0.1:{listener.port}" in text  # the arguments are shown, as text
    assert listener.seen == [], listener.seen
    assert outside == [], outside
    assert not [src for src in images if str(listener.port) in src or src.startswith("http")
                and not src.startswith(instance.prefect)], images
