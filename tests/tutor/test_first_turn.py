"""A fresh home answers questions about Metnos on its first turn (issue 27, point 1).

`metnos init` (the real command, as `make run` calls it) compiles the Tutor's catalog, so the
first turn through the gateway is answered from the right section, with its command: without a
model (the extractive answer) and with one (the scripted model, given the section). A home
started without a catalog compiles it in the background and meanwhile says "I'm still reading
my guide" in the asker's language, never "I did not understand"; then it answers."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from typing import Any

import pytest

from metnos.features.tutor.catalog import catalog_path
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import Home, MakeHome, gateway_client
from tests.support.serve_process import METNOS
from tests.tutor.test_tutor_turn import _ask, _tutor_lines

# each test compiles a catalog (about half a minute alone, minutes on a busy machine)
pytestmark = pytest.mark.timeout(900)

UNDO = {"en": ("how do I undo a change?", "/docs/en/security#undo"),
        "it": ("come faccio a tornare indietro dopo una modifica?", "/docs/it/sicurezza#annullare")}


def _init(home: Home) -> str:
    """`metnos init --if-needed` on the home, as `make run` does; what it printed."""
    done = subprocess.run([*METNOS, "init", "--if-needed"], env=dict(os.environ),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert catalog_path(home.settings.home).is_file(), done.stdout + done.stderr
    return done.stdout + done.stderr


def _answered(home: Home, body: dict[str, Any]) -> dict[str, Any]:
    lines = [r for r in _tutor_lines(home) if r["action"] == "tutor.answered"
             and r["turn_id"] == body["turn_id"]]
    assert lines, _tutor_lines(home)
    return lines[-1]


async def test_a_fresh_home_answers_its_first_question_without_a_model(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en")
    printed = _init(home)
    assert "+ tutor/catalog.sqlite" in printed and "Reading the guide" in printed
    assert "already set up" in _init(home)  # compiled once: the next `make run` is quick
    question, url = UNDO["en"]
    async with gateway_client(home) as client:
        body = await _ask(client, question)  # the home's very first turn
    assert body["status"] == "completed"
    reply = body["reply"]
    assert "metnos undo" in reply and f"]({url})" in reply, reply
    assert (reply[0].isupper() or reply[0] == "`") and "didn't understand" not in reply
    assert _answered(home, body)["outcome"] == "answered"


async def test_a_fresh_home_answers_its_first_question_with_a_model(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="it")
    _init(home)
    question, url = UNDO["it"]
    scripted_llm.enqueue_text("Per tornare indietro usa `metnos undo` con l'identificativo "
                              "dell'azione: rimette ogni file com'era.")
    async with gateway_client(home) as client:
        body = await _ask(client, question)
    assert body["status"] == "completed"
    assert body["reply"].startswith("Per tornare indietro usa `metnos undo`"), body["reply"]
    assert f"]({url})" in body["reply"]
    assert len(scripted_llm.requests) == 1  # the Tutor's one call, given the undo section
    sent = scripted_llm.requests[0]["messages"][-1]["content"]
    assert "metnos undo" in sent and question in sent


async def test_a_home_without_a_catalog_reads_its_guide_at_start(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="it", METNOS_TUTOR_READ_AT_START="true")
    question, url = UNDO["it"]
    async with gateway_client(home) as client:
        body = await _ask(client, question)
        assert body["reply"] == i18n.get("TUTOR_STILL_READING", "it"), body["reply"]
        assert _answered(home, body)["outcome"] == "reading"
        deadline = time.monotonic() + 400
        while not any(r["action"] == "tutor.catalog_compiled" for r in _tutor_lines(home)):
            assert time.monotonic() < deadline, _tutor_lines(home)
            await asyncio.sleep(1)
        body = await _ask(client, question)
    assert "metnos undo" in body["reply"] and f"]({url})" in body["reply"], body["reply"]
