"""The owner empties the trash from the web chat (issue 27 point 5): beside the activity log,
how much the copies kept for undo take, a button, a confirmation; then the change can no
longer be undone, and the clearing is in the audit log. Headless Chromium, the real gateway."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from metnos.faces.web.link import create_login_link
from metnos.ground import i18n
from tests.support.home import MakeHome, served_gateway
from tests.support.pg import free_port
from tests.undo.support import Actor


async def test_the_owner_empties_the_trash_from_the_activity_panel(
        make_home: MakeHome, browser: Any, tmp_path: Path) -> None:
    from playwright.async_api import expect

    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    (home.workspace / "poem.md").write_text("roses\n")
    actor = Actor(home.workspace, home.settings.state_dir, home.settings.keys_dir)
    action_id, _ = await actor.aact("fs_write", {"path": "poem.md", "content": "violets"})
    blobs = home.settings.state_dir / "before" / action_id / "blobs"
    assert blobs.is_dir()
    with served_gateway(home):
        context = await browser.new_context(locale="en")
        page = await context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        await page.goto(create_login_link(home.settings).url)
        await expect(page.locator("body[data-ready]")).to_have_count(1)
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_AUDIT", "en")).click()
        await expect(page.locator("#trash-size")).to_contain_text("One change kept")
        page.once("dialog", lambda d: d.accept())
        await page.get_by_role("button", name=i18n.get("WEB_CHAT_EMPTY_TRASH", "en")).click()
        await expect(page.locator("#trash-result")).to_have_text(
            "Cleared the copies of one change (6 byte); it can no longer be undone.")
        await page.screenshot(path=str(tmp_path / "trash.png"))
        await context.close()
    assert not blobs.exists() and not errors, errors
    lines = [json.loads(ln) for ln in
             (home.settings.audit_dir / "audit.jsonl").read_text().splitlines()]
    [purge] = [ln for ln in lines if ln["action"] == "trash.purge"]
    assert (purge["action_id"], purge["channel"], purge["reason"]) == (action_id, "web", "owner")
