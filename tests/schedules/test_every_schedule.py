"""The owner sees and removes every scheduled task of the household, a paired member's too,
with who owns each (`metnos schedule list --all`, `metnos schedule remove <id>`, over real
HTTP to the composed gateway); `metnos schedule list` alone stays the owner's own. Without a
model, a task the embedded planner could not run is refused when it is added, with the forms
it reads, and the refusal leaves an audit line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.main import app
from metnos.features.schedules import owner, store
from metnos.ground.db.engine import database_url, in_session, make_engine
from tests.schedules.support import composed_gateway
from tests.schedules.test_owner_tasks import audit_actions
from tests.support.home import MakeHome
from tests.support.pg import free_port

cli = CliRunner()
MEMBER = "telegram:4242"


@pytest.mark.timeout(300)
async def test_the_owner_lists_and_removes_a_members_task(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    engine = make_engine(database_url(home.settings))
    with composed_gateway(home):
        mine = cli.invoke(app, ["schedule", "add", "every day at 8",
                                "tell me what's on the shopping list", "--json"])
        assert mine.exit_code == 0, mine.output
        own_id = json.loads(mine.stdout)["schedule"]["id"]
        theirs = owner.new_task(engine, home.settings, when="every Monday at 7",
                                text="show me the shopping list", user_id=MEMBER, lang="en",
                                channel="telegram", address="tg-session")
        listed = cli.invoke(app, ["schedule", "list", "--json"])
        assert [r["id"] for r in json.loads(listed.stdout)["schedules"]] == [own_id]
        every = cli.invoke(app, ["schedule", "list", "--all", "--json"])
        assert every.exit_code == 0, every.output
        rows = {r["id"]: r for r in json.loads(every.stdout)["schedules"]}
        assert set(rows) == {own_id, theirs.id}
        assert (rows[own_id]["user_id"], rows[theirs.id]["user_id"]) == ("owner", MEMBER)
        table = cli.invoke(app, ["schedule", "list", "--all"])
        assert table.exit_code == 0 and MEMBER in table.stdout, table.output
        assert "every Monday at 7" in table.stdout and "every day at 8" in table.stdout
        removed = cli.invoke(app, ["schedule", "remove", theirs.id])
        assert removed.exit_code == 0 and theirs.id in removed.stdout, removed.output
        assert [t.id for t in in_session(engine, store.active)] == [own_id]
        refused = cli.invoke(app, ["schedule", "add", "every day at 8", "water the plants"])
        assert refused.exit_code != 0
        assert "water the plants" in refused.output and "every day at 8" in refused.output
        assert "“" in refused.output and "schedule_set" not in refused.output
    assert [t.id for t in in_session(engine, store.active)] == [own_id]
    engine.dispose()
    lines = [(a["action"], a["decision"], a.get("reason")) for a in audit_actions(home.path)
             if str(a.get("action", "")).startswith("schedule.")]
    assert lines == [("schedule.add", "allow", "ok"), ("schedule.remove", "allow", "ok"),
                     ("schedule.add", "deny", "ERR_SCHEDULE_TEXT_NOT_UNDERSTOOD")], lines
