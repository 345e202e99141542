"""The mnestoma shown: `metnos mnestoma show` (a table and a PNG, from the running gateway),
`GET /api/mnestoma[.png]` for the owner only, and the web page, in Italian and English."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from metnos.faces.cli.mnestoma import app
from metnos.features.mnestoma import picture
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from tests.mnestoma.test_record import turn
from tests.support.home import Home, MakeHome, gateway_client

runner = CliRunner()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def read_notes(llm: ScriptedLLM) -> None:
    llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    llm.enqueue_tool_call("fs_read", {"path": "notes.md"})
    llm.enqueue_text("Milk.")


def closed_turn(home: Home, base: str, text: str) -> None:
    """One turn over real HTTP, once its bookkeeping (the mnestoma's too) is done."""
    resp = httpx.post(f"{base}/api/turns", json={"text": text}, headers=home.auth(),
                      timeout=60)
    assert resp.json()["status"] == "completed", resp.text
    for _ in range(200):
        got = httpx.get(f"{base}/api/turns/{resp.json()['turn_id']}", headers=home.auth())
        if got.json()["finished_at"]:
            return
        time.sleep(0.05)
    raise AssertionError(f"turn never closed: {got.text}")


def test_show_prints_the_heaviest_first_and_writes_the_picture(
        served: Home, scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    empty = runner.invoke(app, ["show"])
    assert empty.exit_code == 0, empty.output
    assert i18n.get("MSG_MNESTOMA_EMPTY", "en") in empty.stdout
    assert png_size((served.path / "mnestoma.png").read_bytes()) == (1200, 900)

    (served.workspace / "notes.md").write_text("milk\n")
    base = f"http://127.0.0.1:{served.settings.gateway.port}"
    for _ in range(2):
        read_notes(scripted_llm)
        closed_turn(served, base, "my notes?")
    scripted_llm.enqueue_tool_call("fs_read", {"path": "notes.md"})
    scripted_llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    scripted_llm.enqueue_text("Found it.")
    closed_turn(served, base, "again")

    target = tmp_path / "graph.png"
    shown = runner.invoke(app, ["show", "--png", str(target)])
    assert shown.exit_code == 0, shown.output
    lines = [line.split() for line in shown.stdout.splitlines()]
    rows = [line for line in lines if line[:1] in (["fs_find"], ["fs_read"])]
    assert rows == [["fs_find", "fs_read", "2", "4"], ["fs_read", "fs_find", "1", "6"]]
    assert "From" in shown.stdout and "Weight" in shown.stdout
    assert f"Picture written to {target}." in shown.stdout.replace("\n", "")
    assert png_size(target.read_bytes()) == (picture.WIDTH_PX, picture.HEIGHT_PX)

    data = json.loads(runner.invoke(app, ["show", "--json", "--limit", "1"]).stdout)
    assert [(m["src"], m["dst"], m["weight"]) for m in data["mnests"]] == [
        ("fs_find", "fs_read", 2.0)]
    assert data["clock"] == 6 and data["mnest_count"] == 2
    assert data["png"] == str(served.path / "mnestoma.png")


async def test_the_api_and_the_page_are_the_owners_only(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with gateway_client(home, prefect=False) as client:
        for headers in ({}, {"Authorization": "Bearer wrong-token"}):
            client.headers.pop("Authorization", None)
            for path in ("/api/mnestoma", "/api/mnestoma.png"):
                resp = await client.get(path, headers=headers)
                assert resp.status_code == 401, (path, resp.text)
                assert resp.headers["content-type"].startswith("application/json")
            page = await client.get("/mnestoma", headers=headers)
            assert page.status_code == 401 and "metnos login" in page.text
            assert "mnestoma-picture" not in page.text


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_web_page_shows_the_picture_and_the_table(
        make_home: MakeHome, scripted_llm: ScriptedLLM, lang: str) -> None:
    home = make_home(llm=scripted_llm, lang=lang)
    (home.workspace / "notes.md").write_text("milk\n")
    async with gateway_client(home, prefect=False) as client:
        blank = await client.get("/api/mnestoma.png", params={"lang": lang})
        read_notes(scripted_llm)
        await turn(client, "my notes?")
        page = await client.get("/mnestoma", headers={"Accept-Language": lang})
        drawn = await client.get(f"/api/mnestoma.png?lang={lang}")
    assert blank.status_code == 200 and blank.headers["content-type"] == "image/png"
    assert png_size(blank.content) == (1200, 900)  # "nothing yet", not an error
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert f'<html lang="{lang}" dir="ltr">' in html
    for key in ("WEB_MNESTOMA_TITLE", "WEB_MNESTOMA_INTRO", "WEB_MNESTOMA_HANDOFFS",
                "WEB_MNESTOMA_BACK", "WEB_MNESTOMA_NO_WISHES"):
        assert i18n.get(key, lang).replace("'", "&#39;") in html, key
    assert f'src="/api/mnestoma.png?lang={lang}"' in html and 'href="/"' in html
    assert "<td>fs_find</td><td>fs_read</td><td>1</td><td>2</td>" in html
    assert "<script" not in html  # the CSP allows no inline script; the page needs none
    assert png_size(drawn.content) == (1200, 900) and drawn.content != blank.content
