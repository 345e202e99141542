"""The trash has a bottom (issue 27 point 5): "conferma" clears what the last change kept,
`metnos trash purge` and `/api/trash/purge` clear it for the owner, the retention policy
clears the oldest first; each clearing has its audit line, the chain stays whole, and an
undo of a cleared change is refused in plain words. Real gateway, real sandbox, real DB."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer import Typer
from typer.testing import CliRunner

from metnos.faces.cli.trash import app as trash_app
from metnos.faces.cli.undo import undo as undo_command
from metnos.mechanisms.audit.log import open_audit_log
from metnos.mechanisms.audit.verify import verify_instance
from metnos.turns import trash
from tests.support.home import Home, MakeHome, gateway_client, served_gateway
from tests.support.pg import free_port
from tests.undo.support import Actor
from tests.undo.test_said import HEX_ID, audit, turn


def purge_lines(home: Home) -> list[dict[str, Any]]:
    return [ln for ln in audit(home) if ln["action"] == "trash.purge"]


def backdate(home: Home, action_id: str, days: float) -> None:
    """Make a before-record `days` old (re-signed: the record stays valid)."""
    from metnos.ground import keys
    from metnos.ground.reversibility import canonical

    path = home.settings.state_dir / "before" / action_id / "manifest.json"
    doc = json.loads(path.read_text())
    then = datetime.now(UTC) - timedelta(days=days)
    doc["manifest"]["created_at"] = then.isoformat()
    key = keys.load_private_key(home.settings.keys_dir, "audit")
    import base64
    doc["signature"] = base64.b64encode(key.sign(canonical(doc["manifest"]))).decode()
    path.write_text(json.dumps(doc))


async def test_conferma_clears_the_copy_and_then_annulla_is_refused_plainly(
        make_home: MakeHome) -> None:
    home = make_home(autonomy="Full", lang="it")
    (home.workspace / "tema.md").write_text("la mia estate\n" * 50)
    async with gateway_client(home, prefect=False) as client:
        first = await turn(client, "scrivi finito nel file tema.md")
        sid = first["session_id"]
        [step] = [a for a in first["activity"] if a.get("undo")]
        blobs = home.settings.state_dir / "before" / step["action_id"] / "blobs"
        assert blobs.is_dir() and os.listdir(blobs)
        confirmed = await turn(client, "conferma", sid)
        assert "annullare" in confirmed["reply"] and not HEX_ID.search(confirmed["reply"])
        assert not blobs.exists()
        again = await turn(client, "annulla", sid)  # nothing left that can be undone here
        assert "niente" in again["reply"]
        resp = await client.post(f"/api/actions/{step['action_id'][:8]}/undo")
        assert resp.status_code == 410, resp.text
        message = resp.json()["error"]["message"]
        assert message.startswith("Non conservo più la copia di prima di quella modifica")
        assert not re.search(r"\d{4}-\d{2}-\d{2}", message)  # a date in words, not ISO
    assert (home.workspace / "tema.md").read_text().startswith("finito")
    [line] = purge_lines(home)
    assert (line["action_id"], line["reason"], line["sender"]) == (
        step["action_id"], "confirmed", "owner")
    refused = [ln for ln in audit(home) if ln["action"] == "undo"]
    assert [(ln["reason"], ln["outcome"]) for ln in refused] == [("ERR_UNDO_PURGED", "refused")]
    assert verify_instance(home.settings).ok


@pytest.mark.parametrize(("lang", "change", "keep"), [
    ("en", "write done in the file essay.md", "confirm"),
    ("it", "scrivi finito nel file tema.md", "conferma"),
])
async def test_confirm_with_the_tutors_catalog_in_place_clears_the_copy(
        make_home: MakeHome, compiled_catalog: Path, lang: str, change: str,
        keep: str) -> None:
    """The Tutor answers questions about Metnos from the first turn, so "confirm" must not
    be read as one: with no confirmation of the Tutor's pending, it keeps the last change."""
    from tests.support.tutor_catalog import install_catalog

    home = make_home(autonomy="Full", lang=lang)
    install_catalog(compiled_catalog, home.settings.home)
    name = change.rsplit(" ", 1)[-1]
    (home.workspace / name).write_text("summer\n" * 50)
    async with gateway_client(home, prefect=False) as client:
        first = await turn(client, change, lang=lang)
        [step] = [a for a in first["activity"] if a.get("undo")]
        blobs = home.settings.state_dir / "before" / step["action_id"] / "blobs"
        assert blobs.is_dir()
        confirmed = await turn(client, keep, first["session_id"], lang=lang)
        assert not blobs.exists(), confirmed["reply"]
    assert [ln["reason"] for ln in purge_lines(home)] == ["confirmed"]
    assert not [ln for ln in audit(home) if ln["action"] == "tutor.answered"]


async def test_an_undo_said_after_the_owner_emptied_the_trash_is_refused_with_the_date(
        make_home: MakeHome) -> None:
    home = make_home(autonomy="Full", lang="en")
    (home.workspace / "recipe.md").write_text("flour\n")
    async with gateway_client(home, prefect=False) as client:
        first = await turn(client, "rename recipe.md to cake.md", lang="en")
        listed = (await client.get("/api/trash")).json()
        assert listed["total_bytes"] >= 0 and len(listed["items"]) == 1
        assert listed["max_age_days"] == 30 and listed["max_bytes"] == 1 << 30
        resp = await client.post("/api/trash/purge", json={})
        assert resp.status_code == 200 and resp.json()["cleared"] == 1, resp.text
        assert (await client.get("/api/trash")).json()["items"] == []
        said = await turn(client, "undo that", first["session_id"], lang="en")
        # a cleared change is no longer "left to undo": the person is told so, with no id
        assert said["reply"] == "There is nothing left that I can undo in this conversation."
        resp = await client.post(f"/api/actions/{listed['items'][0]['action_id']}/undo")
        assert resp.status_code == 410
        text = resp.json()["error"]["message"]
        assert text.startswith("I no longer keep the copy from before that change: it was "
                               "cleared on ") and not HEX_ID.search(text)
    assert (home.workspace / "cake.md").is_file()
    assert [ln["reason"] for ln in purge_lines(home)] == ["owner"]
    assert verify_instance(home.settings).ok


async def test_retention_clears_what_is_too_old_then_the_oldest_beyond_the_size(
        make_home: MakeHome) -> None:
    home = make_home(autonomy="Full", lang="en", METNOS_TRASH_MAX_AGE_DAYS="30",
                     METNOS_TRASH_MAX_BYTES="9000")
    for name in ("a", "b", "c", "d"):
        (home.workspace / f"{name}.md").write_text(name * 4000)
    async with gateway_client(home, prefect=False) as client:
        ids = []
        for name in ("a", "b", "c", "d"):
            body = await turn(client, f"write new text in the file {name}.md", lang="en")
            ids += [a["action_id"] for a in body["activity"] if a.get("undo")]
    assert len(ids) == 4
    backdate(home, ids[0], 40)  # older than 30 days
    backdate(home, ids[1], 10)
    backdate(home, ids[2], 5)
    backdate(home, ids[3], 1)
    audit_log = open_audit_log(home.settings)
    try:
        done = trash.apply_retention(home.settings, audit=audit_log)
    finally:
        audit_log.close()
    # the 40-day one for its age; then 3 × 4000 bytes > 9000: the oldest (b) goes, c and d fit
    assert [a for a, _ in done] == [ids[0], ids[1]]
    left = [k.action_id for k in trash.kept(home.settings) if k.purged_at is None]
    assert left == [ids[2], ids[3]]
    assert [(ln["action_id"], ln["reason"], ln["channel"]) for ln in purge_lines(home)] == [
        (ids[0], "retention_age", "system"), (ids[1], "retention_size", "system")]
    assert verify_instance(home.settings).ok


def test_the_gateway_applies_retention_at_start(make_home: MakeHome) -> None:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_TRASH_MAX_AGE_DAYS="1")
    home.workspace.joinpath("old.md").write_text("old")
    actor = Actor(home.workspace, home.settings.state_dir, home.settings.keys_dir)
    old, _ = actor.act("fs_write", {"path": "old.md", "content": "new"})
    backdate(home, old, 3)
    with served_gateway(home):
        for _ in range(100):
            if trash.purged_at(home.settings.state_dir, old) is not None:
                break
            import time
            time.sleep(0.1)
    assert trash.purged_at(home.settings.state_dir, old) is not None
    assert [ln["reason"] for ln in purge_lines(home)] == ["retention_age"]


# -- the CLI -------------------------------------------------------------------------------
def cli() -> Typer:
    app = Typer()
    app.command(name="undo")(undo_command)
    app.add_typer(trash_app, name="trash")
    return app


def test_metnos_undo_takes_a_short_handle_lists_and_undoes_the_newest(served: Home) -> None:
    ws = served.workspace
    for name in ("one.md", "two.md", "three.md"):
        (ws / name).write_text(name)
    actor = Actor(ws, served.settings.state_dir, served.settings.keys_dir)
    first, _ = actor.act("fs_move", {"src": "one.md", "dst": "uno.md"})
    runner = CliRunner()
    result = runner.invoke(cli(), ["undo", first[:6]])  # a unique start of the id is enough
    assert result.exit_code == 0, result.output
    assert (ws / "one.md").is_file() and not (ws / "uno.md").exists()
    result = runner.invoke(cli(), ["undo", "--list"])  # actions made outside any turn
    assert result.exit_code == 0 and "There is no change left" in result.stdout
    result = runner.invoke(cli(), ["undo", "zz"])  # too short to stand for anything
    assert result.exit_code == 1 and "Traceback" not in result.output


async def test_metnos_undo_without_a_handle_asks_then_undoes_the_newest_turn_change(
        make_home: MakeHome) -> None:
    home = make_home(autonomy="Full", lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    (home.workspace / "list.md").write_text("eggs\n")
    async with gateway_client(home, prefect=False) as client:
        await turn(client, "rename list.md to groceries.md", lang="en")
    runner = CliRunner()
    with served_gateway(home):
        listed = runner.invoke(cli(), ["undo", "--list"])
        assert listed.exit_code == 0, listed.output
        assert "list.md" in listed.stdout and not HEX_ID.search(listed.stdout)
        handle = listed.stdout.split()[0]
        assert len(handle) == 8
        declined = runner.invoke(cli(), ["undo"], input="n\n")
        assert declined.exit_code == 0 and "Nothing was undone." in declined.stdout
        assert handle in declined.stdout and "list.md" in declined.stdout
        assert (home.workspace / "groceries.md").is_file()
        done = runner.invoke(cli(), ["undo"], input="y\n")
        assert done.exit_code == 0, done.output
        assert (home.workspace / "list.md").is_file()
        empty = runner.invoke(cli(), ["undo", "--yes"])
        assert empty.exit_code == 1 and "There is no change left" in empty.stdout
        shown = runner.invoke(cli(), ["trash"])
        assert shown.exit_code == 0 and "in all (limits: 30" in shown.stdout, shown.output
        purged = runner.invoke(cli(), ["trash", "purge", "--older-than", "0"])
        assert purged.exit_code == 0 and "Cleared the copies of" in purged.stdout
        again = runner.invoke(cli(), ["trash", "purge", handle])
        assert again.exit_code == 1 and "I keep nothing for" in again.stderr
    assert verify_instance(home.settings).ok
