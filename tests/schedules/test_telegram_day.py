"""A family's scheduled task on Telegram without a model, end to end: the owner writes "ogni
giorno alle 8 dimmi cosa c'è nella lista della spesa" to the bot (the fake Bot API), approves
the card, and the task keeps every word and runs at 8 in the household's zone (the real
runner's `owner-task/scheduled` on the session's Prefect server); fired through the real
firing path ("Run now" on that deployment), the list arrives in the Telegram chat. A task the
embedded planner could not run is refused when it is said, with the forms it reads."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import httpx
import pytest
from prefect import get_client

from flows.owner_task import sync
from metnos.features.schedules import cadence, store
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.testing.telegram_server import FakeTelegram
from tests.reminders.test_channels import gateway as reminders_gateway
from tests.reminders.test_delivery import deployment_runner, wait_deployment
from tests.schedules.test_owner_tasks import _final_state
from tests.support.home import Home, MakeHome
from tests.telegram.support import TOKEN, buttons, pair, said, until

ANNA = 6060601
ZONE = "Europe/Rome"
SAID = "ogni giorno alle 8 dimmi cosa c'è nella lista della spesa"
TASK = "dimmi cosa c'è nella lista della spesa"


def gateway(home: Home) -> AbstractAsyncContextManager[httpx.AsyncClient]:
    """The gateway as `flows/gateway.py` composes it (turns, reminders, scheduled tasks), the
    Telegram channel polling the fake Bot API, as the owner."""
    return reminders_gateway(home, sync(home.settings))


def _cards(tg: FakeTelegram) -> list[object]:
    return [c for c in tg.calls_of("sendMessage", ANNA)
            if any(str(b.get("callback_data", "")).endswith(":y") for b in buttons(c))]


@pytest.mark.timeout(400)
async def test_every_morning_at_8_the_shopping_list_reaches_telegram_without_a_model(
        make_home: MakeHome, prefect_api: str, telegram: FakeTelegram) -> None:
    home = make_home(lang="it", METNOS_TIMEZONE=ZONE, METNOS_TELEGRAM_BOT_TOKEN=TOKEN,
                     METNOS_TELEGRAM_API_BASE=telegram.base_url,
                     METNOS_TELEGRAM_POLL_TIMEOUT_S="1", METNOS_SCHEDULES_POLL_S="0.3",
                     METNOS_REMINDERS_DELIVERY_POLL_S="0.5")
    (home.workspace / "lists").mkdir(parents=True, exist_ok=True)
    (home.workspace / "lists" / "spesa.md").write_text("# Spesa\n\n- latte\n- pane integrale\n")
    engine = make_engine(database_url(home.settings))
    with deployment_runner(home):
        await wait_deployment("owner-task/scheduled", timeout_s=120)
        async with gateway(home) as client:
            await pair(client, telegram, ANNA, language_code="it")  # the first: the owner
            # what it cannot do on its own is refused now, with what it reads, not each day
            telegram.push_message(ANNA, "ogni mattina alle 7 prepara il caffè",
                                  language_code="it")
            await until(telegram, lambda t: any("prepara il caffè" in s
                                                for s in said(t, ANNA)), "the refusal")
            refusal = next(s for s in said(telegram, ANNA) if "prepara il caffè" in s)
            assert "ogni giorno alle 8" in refusal and "schedule_set" not in refusal, refusal
            assert not _cards(telegram) and in_session(engine, store.active) == []

            telegram.push_message(ANNA, SAID, language_code="it")
            await until(telegram, lambda t: bool(_cards(t)), "the approval card")
            [card] = _cards(telegram)
            approve = next(b for b in buttons(card)  # type: ignore[arg-type]
                           if str(b["callback_data"]).endswith(":y"))
            telegram.push_callback(ANNA, approve["callback_data"],
                                   card.result["message_id"],  # type: ignore[attr-defined]
                                   language_code="it")
            for _ in range(120):
                if in_session(engine, store.active):
                    break
                await asyncio.sleep(0.5)
            [task] = in_session(engine, store.active)
            assert (task.text, task.cron, task.timezone, task.when_text) == (
                TASK, "0 8 * * *", ZONE, "ogni giorno alle 8")
            assert (task.channel, task.address) == ("telegram", f"telegram-{ANNA}")
            nxt = cadence.next_times(task.cron, task.timezone, datetime.now(UTC))[0]
            assert (nxt.astimezone(ZoneInfo(ZONE)).hour, nxt.minute) == (8, 0)

            before = len(said(telegram, ANNA))
            async with get_client() as prefect:  # 8 o'clock: the real firing path
                deployment = await prefect.read_deployment_by_name("owner-task/scheduled")
                run = await prefect.create_flow_run_from_deployment(
                    deployment.id, parameters={"task_id": task.id})
                state = await _final_state(prefect, run.id, 200)
            assert state.name == "Done", state  # type: ignore[attr-defined]
            await until(telegram, lambda t: any("pane integrale" in s
                                                for s in said(t, ANNA)[before:]), "the list")
    delivered = [s for s in said(telegram, ANNA)[before:] if "pane integrale" in s]
    assert delivered[0].startswith("🗓 ogni giorno alle 8"), delivered
    assert "latte" in delivered[0] and "capito" not in delivered[0], delivered
    [fired] = in_session(engine, store.runs_of, task.id)
    assert fired.status == "done"
    engine.dispose()
