"""The web chat in headless Chromium: proposals Metnos makes on its own arrive on the page
(the gateway's delivery loop runs the Vaglio and puts them in the outbox), an introvert batch
as one card with a line each, Accept / Dismiss per line, in the page's language; the text is
data, never markup."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy.engine import Engine

from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.outbox_delivery import with_reminders
from metnos.faces.wiring import build_runtime
from metnos.features.proposals import store
from metnos.features.proposals.models import Proposal
from metnos.ground import i18n
from tests.proposals.support import draft, fresh, submit
from tests.support.home import MakeHome, served_app
from tests.support.pg import free_port
from tests.webchat.conftest import browser, chromium_path  # noqa: F401 - the fixtures
from tests.webchat.test_history_browser import assert_nothing_ran, open_chat

ran: list[str] = []
ATTACK = '<img src=x onerror="window.__pwned=1">'


def record(engine: Engine, proposal: Proposal) -> None:
    ran.append(proposal.id)


store.on_accept("routine_web", record)


async def test_a_batch_card_with_accept_and_dismiss_per_line(
        make_home: MakeHome, browser: Any) -> None:  # noqa: F811 - the fixture
    from playwright.async_api import expect

    home = make_home(lang="it", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_NOTIFY_CHANNEL="web", METNOS_NOTIFY_QUIET_HOURS="",
                     METNOS_EVOLUTION_THRESHOLD="0.1", METNOS_REMINDERS_DELIVERY_POLL_S="0.5")
    app = with_reminders(create_app(home.settings))
    service = await build_runtime(home.settings)
    with served_app(app, home.settings.gateway.port):
        context, page, errors = await open_chat(browser, home, "it")
        await page.locator("body[data-ready]").wait_for(state="attached")
        first, second = submit(
            service, draft("le foto di stasera", kind="routine_web", origin="introvert",
                           batch="n1"),
            draft(f"le scansioni {ATTACK}", kind="routine_web", origin="introvert",
                  batch="n1"))
        card = page.locator("li.msg.proposal")
        await expect(card).to_have_count(1, timeout=30_000)
        lines = card.locator(".proposal-line")
        await expect(lines).to_have_count(2)
        await expect(card).to_contain_text(i18n.get("MSG_PROPOSAL_BATCH", "it", count=2))
        await expect(lines.nth(0)).to_contain_text(
            "1. Me ne occupo io, come fai di solito: le foto di stasera?")
        await expect(lines.nth(1)).to_contain_text(ATTACK)  # shown as text
        await assert_nothing_ran(page)
        accept = lines.nth(0).get_by_role("button", name=i18n.get(
            "MSG_PROPOSAL_BUTTON_ACCEPT", "it"))
        await accept.click()
        await expect(lines.nth(0)).to_contain_text(i18n.get("MSG_PROPOSAL_ACCEPTED", "it"))
        await expect(lines.nth(0).locator("button")).to_have_count(0)
        assert ran == [first.id]
        await lines.nth(1).get_by_role("button", name=i18n.get(
            "MSG_PROPOSAL_BUTTON_DISMISS", "it")).click()
        await expect(lines.nth(1)).to_contain_text(i18n.get("MSG_PROPOSAL_DISMISSED", "it"))
        assert ran == [first.id]
        assert (fresh(service, first).status, fresh(service, second).status) == (
            "accepted", "dismissed")
        await page.reload()  # delivered once: the card does not come back as a new one
        await page.locator("body[data-ready]").wait_for(state="attached")
        await asyncio.sleep(1.5)
        await expect(page.locator("li.msg.proposal")).to_have_count(0)
        assert errors == []
        await context.close()
    service.engine.dispose()
