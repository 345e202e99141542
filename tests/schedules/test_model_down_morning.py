"""A morning the model does not answer (its server stopped), through the gateway's real
firing loop: a task the embedded planner reads runs without the model and its reply reaches
the chat; one it cannot read (accepted because a model is configured) is not answered "I
didn't understand": its run fails, for Prefect to retry and then report once."""

from __future__ import annotations

import asyncio

import pytest
from sqlmodel import select

from metnos.features.reminders.outbox import Outbox
from metnos.features.schedules import store
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.db.engine import session as db_session
from tests.schedules.support import composed_api
from tests.support.home import MakeHome
from tests.support.pg import free_port


@pytest.mark.timeout(300)
async def test_a_model_down_morning_runs_what_the_planner_reads_and_fails_the_rest(
        make_home: MakeHome, stopped_base: str, prefect_api: str) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_LLM_MODEL="openai/scripted", METNOS_LLM_API_BASE=stopped_base,
                     METNOS_LLM_API_KEY="sk-test", METNOS_SCHEDULES_POLL_S="0.3")
    (home.workspace / "lists").mkdir(parents=True, exist_ok=True)
    (home.workspace / "lists" / "shopping.md").write_text("# Shopping\n\n- milk\n- eggs\n")
    engine = make_engine(database_url(home.settings))
    async with composed_api(home) as api:
        ids = []
        for when, text in (("every day at 8", "water the plants"),
                           ("every morning", "tell me what's on the shopping list")):
            resp = await api.post("/api/schedules", json={"when": when, "text": text,
                                                          "channel": "cli"})
            assert resp.status_code == 201, resp.text  # a model is configured
            ids.append(resp.json()["schedule"]["id"])
        runs = [in_session(engine, store.make_due, task_id, f"flow-run-{n}", 1)
                for n, task_id in enumerate(ids)]
        for _ in range(240):
            ended = [in_session(engine, store.run, str(r)) for r in runs]
            if all(e is not None and e.status in ("done", "failed") for e in ended):
                break
            await asyncio.sleep(0.5)
    plants, shopping = ended
    assert plants is not None and (plants.status, plants.error, plants.outbox_id) == (
        "failed", "ERR_SCHEDULE_RUN_NOT_UNDERSTOOD", None)
    assert shopping is not None and shopping.status == "done", shopping
    with db_session(engine) as db:
        rows = list(db.exec(select(Outbox).where(Outbox.kind == "schedule")))
    engine.dispose()
    assert [row.id for row in rows] == [shopping.outbox_id]
    assert "milk" in rows[0].text and "eggs" in rows[0].text, rows[0].text
    assert "didn't understand" not in rows[0].text
