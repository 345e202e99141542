"""The executors probe on a real registry of an initialised home (lifecycle from the real
database, provenance, no paths, no refusals), and the scheduled-tasks probe on the real outbox:
the asker's own reminders only, never their text."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from metnos.features.mnestoma.models import ExecutorUse
from metnos.features.reminders import outbox
from metnos.features.reminders.outbox import Outbox
from metnos.features.tutor.probes import Asker, ProbeContext, default_probes
from metnos.ground.db.engine import database_url, in_session, make_engine, session
from metnos.ground.keys import load_private_key
from metnos.ground.paths import resources_path
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.registry import load_registry, signatures_dir
from metnos.mechanisms.executors.signing import sign_executor, signature_path
from tests.support.home import MakeHome
from tests.tutor.support import OWNER


def _home_executor(settings: Settings, name: str, *, signed: bool = True) -> Path:
    """A copy of the shipped `lists` executor under another name in METNOS_HOME."""
    folder = settings.home / "executors" / name
    shutil.copytree(resources_path("executors") / "lists", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    manifest = folder / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('name = "lists"', f'name = "{name}"'))
    if signed:
        sign_executor(folder, load_private_key(settings.keys_dir, "executors"),
                      signature_path(signatures_dir(settings), name))
    return folder


def test_executors_probe_on_a_real_registry(make_home: MakeHome) -> None:
    settings = make_home(lang="en").settings
    _home_executor(settings, "house_lists")
    _home_executor(settings, "synt_lists")
    (settings.home / "synt" / "signed").mkdir(parents=True, exist_ok=True)
    (settings.home / "synt" / "signed" / "synt_lists.json").write_text("{}")
    _home_executor(settings, "unsigned_lists", signed=False)
    registry = load_registry(settings)
    assert "unsigned_lists" not in registry and "synt_lists" in registry
    engine = make_engine(database_url(settings))
    with session(engine) as db:
        db.add(ExecutorUse(name="fs_delete", state="quarantined"))
        db.add(ExecutorUse(name="archive", state="archived"))
    ctx = ProbeContext(asker=OWNER, registry=registry, engine=engine, home=settings.home,
                       repo_executors=resources_path("executors"))
    obs = default_probes().run("executors", ctx)
    engine.dispose()
    assert obs.status == "ok", obs
    lifecycle, provenance = obs.facts["lifecycle"], obs.facts["provenance"]
    assert isinstance(lifecycle, dict) and isinstance(provenance, dict)
    assert lifecycle["fs_delete"] == "quarantined" and lifecycle["archive"] == "archived"
    assert lifecycle["fs_read"] == "active"
    assert provenance["fs_read"] == "builtin" and provenance["house_lists"] == "owner"
    assert provenance["synt_lists"] == "synt"
    assert obs.facts["count"] == len(registry.admitted) == len(lifecycle)
    facts = json.dumps(obs.facts)
    assert "unsigned_lists" not in facts  # refused executors are not listed, nor why
    assert "/" not in facts and str(settings.home) not in obs.to_json()
    without_db = default_probes().run("executors", ProbeContext(asker=OWNER, registry=registry))
    assert without_db.status == "partial" and not without_db.healthy


def test_scheduled_tasks_probe_sees_only_the_askers_own(make_home: MakeHome) -> None:
    settings = make_home(lang="en").settings
    engine = make_engine(database_url(settings))
    now = datetime.now(UTC)

    def reminder(user: str, hours: int, delivered_at: datetime | None = None,
                 cancelled_at: datetime | None = None) -> None:
        in_session(engine, outbox.add, Outbox(
            kind="reminder", user_id=user, channel="web", address="s",
            text=f"SECRET {user} {hours}", lang="en", scheduled_for=now + timedelta(hours=hours),
            delivered_at=delivered_at, cancelled_at=cancelled_at))

    reminder("alice", 5)
    reminder("alice", 2)
    reminder("alice", -1, delivered_at=now - timedelta(minutes=30))
    reminder("alice", 9, cancelled_at=now)
    reminder("bob", 1)
    in_session(engine, outbox.add, Outbox(kind="message", user_id="alice", channel="web",
                                          address="s", text="a message, no reminder", lang="en"))
    alice = Asker("alice", is_owner=False)
    obs = default_probes().run("scheduled_tasks", ProbeContext(asker=alice, engine=engine))
    bob = default_probes().run("scheduled_tasks",
                               ProbeContext(asker=Asker("bob", False), engine=engine))
    engine.dispose()
    assert obs.status == "ok"
    assert (obs.facts["pending"], obs.facts["delivered"]) == (2, 1)
    next_at = obs.facts["next_at"]
    assert isinstance(next_at, list)
    assert [datetime.fromisoformat(str(t)) for t in next_at] == [
        now + timedelta(hours=2), now + timedelta(hours=5)]
    assert "SECRET" not in obs.to_json() and "bob" not in obs.to_json()
    assert (bob.facts["pending"], bob.facts["delivered"]) == (1, 0)
