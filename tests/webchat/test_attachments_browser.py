"""Photos and documents in the web chat, in headless Chromium as a person uses it: 📎, a file
chosen, it shows by name (as text) and can be taken out; the message goes with it and the model
is told of it as data; a file whose bytes lie is refused in the person's language and what
they wrote stays in the box. In Italian and English; no console errors."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from metnos.faces.web.link import create_login_link
from metnos.features.attachments.store import clean_name
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, served_gateway
from tests.support.pdfs import text_pdf
from tests.support.pg import free_port

NAME = '<img src=x onerror=alert(1)>scontrino.jpg'


def receipt(path: Path) -> Path:
    Image.new("RGB", (320, 240), "white").save(path, "JPEG")
    return path


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_a_photo_goes_with_a_message_and_a_liar_is_refused(
        make_home: MakeHome, scripted_llm: ScriptedLLM, browser: Any, tmp_path: Path,
        lang: str) -> None:
    from playwright.async_api import expect

    home = make_home(llm=scripted_llm, lang=lang, METNOS_GATEWAY_PORT=str(free_port()))
    scripted_llm.enqueue_text("Ok!")
    photo = receipt(tmp_path / NAME)
    text_pdf(tmp_path / "bill.pdf", ["Bill"])
    liar = tmp_path / "bolletta.jpg"
    liar.write_bytes((tmp_path / "bill.pdf").read_bytes())
    with served_gateway(home):
        context = await browser.new_context(locale=lang)
        page = await context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" and
                "415" not in m.text else None)  # the refused upload's own status line
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: errors.append("dialog " + d.message))
        await page.goto(create_login_link(home.settings).url)
        await expect(page.locator("#text")).to_be_visible()

        await page.set_input_files("#files", [str(photo), str(liar)])
        chips = page.locator("#attached li")
        await expect(chips).to_have_count(2)
        await expect(chips.first).to_contain_text(photo.name)  # the name as text, not markup
        await chips.nth(1).get_by_role("button").click()  # the liar taken out...
        await expect(chips).to_have_count(1)
        await page.fill("#text", "archivia questo")
        await page.keyboard.press("Enter")
        mine = page.locator(".msg.me").last
        await expect(mine).to_contain_text("📎 " + photo.name)
        await expect(page.locator(".msg.metnos").last).to_contain_text("Ok!", timeout=60_000)
        await expect(page.locator("#attached")).to_be_hidden()

        await page.set_input_files("#files", str(liar))  # ...and sent alone: refused
        await page.fill("#text", "e questa bolletta")
        await page.keyboard.press("Enter")
        refusal = i18n.get("ERR_ATTACHMENT_TYPE_MISMATCH", lang, name="bolletta.jpg",
                           claimed="jpeg", actual="pdf")
        await expect(page.locator(".msg.error .text").last).to_have_text(refusal)
        await expect(page.locator("#text")).to_have_value("e questa bolletta")
        await expect(page.locator("#attached li")).to_have_count(1)  # still there to change
        assert await page.locator("img").count() == 0
        await page.screenshot(path=str(tmp_path / f"attach-{lang}.png"), full_page=True)
        await context.close()
    assert errors == []
    day = datetime.now(home.settings.tz).date().isoformat()
    kept = clean_name(photo.name)
    assert kept == "_img src=x onerror=alert(1)_scontrino.jpg"
    assert (home.workspace / "inbox" / day / kept).read_bytes() == photo.read_bytes()
    [request] = scripted_llm.requests
    user = request["messages"][-1]["content"]
    assert user.startswith("archivia questo")
    facts = json.loads(user.split('source="attachment"', 1)[1].split(">", 1)[1]
                       .split("</untrusted-data", 1)[0])
    assert facts["path"] == f"inbox/{day}/{kept}" and facts["kind"] == "jpeg"
    assert not list((home.workspace / "inbox" / day).glob("bolletta*"))
