"""A remote executor (SPEC §1 scale-out, seed §4) in `make test`: a second Prefect worker in its
own process and work pool stands for the laptop, with its own METNOS_HOME.

The scripted model asks for `photo_rename` (manifest `runs_on = "laptop"`) through the real
gateway and the Prefect turn flow; the step goes to the `laptop` pool as two runs of the
`remote-step/laptop` deployment; the files are renamed in the laptop's workspace only; the
signed before-record is on the server; `POST /api/actions/{id}/undo` sends the inverse batch
back and the files are byte-identical again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from flows.remote_step import CODE_ROOT, deploy, port
from metnos.faces.wiring import Edges
from metnos.features.remote import record
from metnos.ground import i18n, keys
from metnos.ground.db.engine import database_url, uses_embedded
from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, gateway_client
from tests.support.pg import TestPostgres
from tests.support.worker import Worker, laptop_home, worker_env

POOL = "laptop"
# the database of this process's Prefect server (one per xdist worker: tests/support/services.py)
PREFECT_DB = os.environ.get("METNOS_TEST_PREFECT_DATABASE", "prefect")
PHOTOS = {"IMG_0412.JPG": b"\xff\xd8 first" * 300, "IMG_0413.jpg": b"\xff\xd8 second" * 200,
          "dsc 77.png": b"\x89PNG third" * 100, "notes.txt": b"not a photo"}


def digest_of(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


def seed_photos(laptop: Path) -> Path:
    folder = laptop / "workspace" / "photos"
    folder.mkdir(parents=True)
    for name, data in PHOTOS.items():
        (folder / name).write_bytes(data)
    return folder


def server_and_laptop(make_home: MakeHome, llm: ScriptedLLM, tmp_path: Path,
                      deadline: str = "90") -> tuple[Home, Path, Path]:
    """The server's home, the laptop's home (tmp_path/laptop) and its seeded photos folder."""
    home = make_home(llm=llm, lang="en", autonomy="Full", METNOS_REMOTE_STEP_DEADLINE_S=deadline)
    laptop = laptop_home(tmp_path / "laptop", home.settings)
    return home, laptop, seed_photos(laptop)


@asynccontextmanager
async def remote_gateway(home: Home) -> AsyncIterator[httpx.AsyncClient]:
    await deploy(POOL, CODE_ROOT)
    async with gateway_client(home, edges=Edges(remote=port(home.settings))) as client:
        yield client


async def run_turn(client: httpx.AsyncClient, text: str) -> dict[str, Any]:
    resp = await client.post("/api/turns", json={"text": text})
    assert resp.status_code == 200, resp.text
    return await wait_closed(client, resp.json()["turn_id"], timeout_s=120)


def audit_tail(home: Home) -> list[dict[str, Any]]:
    path = home.settings.audit_dir
    lines = []
    for file in sorted(path.glob("*.jsonl")):
        lines += [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
    return lines


def tool_results(llm: ScriptedLLM) -> list[str]:
    return [m["content"] for r in llm.requests for m in r["messages"] if m.get("role") == "tool"]


async def test_a_rename_batch_runs_on_the_laptop_and_its_undo_too(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str,
        tmp_path: Path) -> None:
    home, laptop, folder = server_and_laptop(make_home, scripted_llm, tmp_path)
    before = digest_of(folder)
    scripted_llm.enqueue_tool_call("photo_rename", {"folder": "photos", "prefix": "trip-"},
                                   call_id="c-rename")
    scripted_llm.enqueue_text("Renamed the three photos on the laptop.")
    with Worker(laptop, POOL):
        async with remote_gateway(home) as client:
            started = time.monotonic()
            turn = await run_turn(client, "rename the photos in photos with the prefix trip-")
            took = time.monotonic() - started
            assert turn["status"] == "completed", turn
            # renamed on the laptop, in name order, the extension kept (lower case)
            assert sorted(p.name for p in folder.iterdir()) == [
                "notes.txt", "trip-0001.jpg", "trip-0002.jpg", "trip-0003.png"]
            assert digest_of(folder)["trip-0001.jpg"] == before["IMG_0412.JPG"]
            assert not (home.workspace / "photos").exists()  # nothing on the server's side
            assert '"renamed": 3' in tool_results(scripted_llm)[0]
            # the before-record is on the server, signed with its audit key
            action_id = next(a["action_id"] for a in audit_tail(home)
                             if a.get("action") == "photo_rename")
            manifest = record.verify(record.load(home.settings.state_dir, action_id),
                                     keys.load_public_key(home.settings.keys_dir, "audit"),
                                     action_id)
            assert manifest["place"] == "laptop" and manifest["folder"] == "photos"
            assert {(i["src"], i["dst"], i["size"]) for i in manifest["items"]} == {
                ("photos/IMG_0412.JPG", "photos/trip-0001.jpg", len(PHOTOS["IMG_0412.JPG"])),
                ("photos/IMG_0413.jpg", "photos/trip-0002.jpg", len(PHOTOS["IMG_0413.jpg"])),
                ("photos/dsc 77.png", "photos/trip-0003.png", len(PHOTOS["dsc 77.png"]))}
            assert not (laptop / "state").exists()  # the laptop keeps no record
            # undo: the inverse batch goes back to the laptop's pool
            resp = await client.post(f"/api/actions/{action_id}/undo")
            assert resp.status_code == 200, resp.text
            assert resp.json()["outcome"] == "done"
            assert digest_of(folder) == before  # byte-identical, the same names
            again = await client.post(f"/api/actions/{action_id}/undo")
            assert again.status_code == 409
    lines = [a for a in audit_tail(home) if a.get("action_id") == action_id]
    assert [(a["action"], a["decision"], a["outcome"]) for a in lines][:2] == [
        ("photo_rename", "allow", "done"), ("undo", "allow", "done")]
    # the worker's Prefect credential is in no file either side wrote, nor any model request
    credential = os.environ["PREFECT_API_AUTH_STRING"].partition(":")[2].encode()
    written = [p for root in (home.path, tmp_path / "laptop") for p in root.rglob("*")
               if p.is_file() and not p.is_symlink()]
    assert len(written) > 10 and not [p for p in written if credential in p.read_bytes()]
    assert credential.decode() not in json.dumps(scripted_llm.requests)
    print(f"remote rename turn: {took:.1f}s")


async def test_a_tampered_executor_on_the_laptop_is_refused_there(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str,
        tmp_path: Path) -> None:
    home, laptop, folder = server_and_laptop(make_home, scripted_llm, tmp_path)
    before = digest_of(folder)
    entry = tmp_path / "laptop" / "laptop-resources" / "executors" / "photo_rename" / "main.py"
    entry.write_text(entry.read_text() + "\n# changed on the laptop\n")
    scripted_llm.enqueue_tool_call("photo_rename", {"folder": "photos", "prefix": "x-"})
    scripted_llm.enqueue_text("It was refused.")
    with Worker(laptop, POOL):
        async with remote_gateway(home) as client:
            turn = await run_turn(client, "rename the photos in photos with the prefix x-")
    assert digest_of(folder) == before
    told = tool_results(scripted_llm)[0]
    assert "laptop" in told and "photo_rename" in told, told
    line = next(a for a in audit_tail(home) if a.get("action") == "photo_rename")
    assert (line["decision"], line["outcome"]) == ("deny", "failed")
    assert line["reason"].startswith("ERR_EXECUTOR_"), line
    assert not (home.settings.state_dir / "before" / line["action_id"]).exists()
    assert turn["status"] == "completed"


async def test_with_the_worker_stopped_the_step_fails_within_its_deadline(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str,
        tmp_path: Path) -> None:
    home, laptop, folder = server_and_laptop(make_home, scripted_llm, tmp_path, deadline="8")
    before = digest_of(folder)
    worker = Worker(laptop, POOL, name="laptop-stopping").start()
    worker.stop()  # its last heartbeat is fresh: the server still counts it online
    for _ in range(2):
        scripted_llm.enqueue_tool_call("photo_rename", {"folder": "photos", "prefix": "y-"})
        scripted_llm.enqueue_text("The laptop did not answer.")
    async with remote_gateway(home) as client:
        started = time.monotonic()
        await run_turn(client, "rename the photos in photos with the prefix y-")
        waited = time.monotonic() - started
        told = tool_results(scripted_llm)[-1]
        assert i18n.get("ERR_REMOTE_TIMEOUT", "en", place="laptop", seconds=8,
                        executor="photo_rename") in told, told
        assert waited < 8 + 15, waited  # the deadline, and the turn's own model calls
        action_id = next(a["action_id"] for a in audit_tail(home)
                         if a.get("action") == "photo_rename")
        assert await run_states(action_id) == ["CANCELLED"]  # it can never run late
        # once its heartbeats lapse, the pool has no worker online: refused at once
        deadline = time.monotonic() + 40
        while "laptop-stopping" in online_names() and time.monotonic() < deadline:
            await asyncio.sleep(1)
        started = time.monotonic()
        await run_turn(client, "rename the photos in photos with the prefix y-")
        assert time.monotonic() - started < 8
        told = tool_results(scripted_llm)[-1]
        assert i18n.get("ERR_REMOTE_OFFLINE", "en", place="laptop", pool=POOL,
                        executor="photo_rename") in told, told
    assert digest_of(folder) == before
    reasons = [a["reason"] for a in audit_tail(home) if a.get("action") == "photo_rename"]
    assert reasons == ["ERR_REMOTE_TIMEOUT", "ERR_REMOTE_OFFLINE"]


async def run_states(action_id: str) -> list[str]:
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    async with get_client() as client:
        runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
            name=FlowRunFilterName(like_=action_id[:12])))
    return [str(r.state.type.value) for r in runs if r.state is not None]


def online_names() -> set[str]:
    from tests.support.worker import online_workers

    return online_workers(POOL)


@pytest.mark.parametrize("auth", [False])
def test_a_worker_without_the_credential_is_refused(tmp_path: Path, prefect_api: str,
                                                     auth: bool) -> None:
    home = tmp_path / "nokey"
    home.mkdir()
    worker = Worker(home, POOL, name="laptop-nokey", auth=auth).start(wait=False)
    assert worker.proc is not None
    try:
        code = worker.proc.wait(90)
    finally:
        worker.stop()
    assert code != 0
    assert "401" in worker.tail() or "Unauthorized" in worker.tail(), worker.tail()


async def test_server_and_metnos_share_one_postgresql_the_worker_none(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str, tmp_path: Path,
        pg_server: TestPostgres) -> None:
    """The scale-out topology's databases (docs/en/scale-out.md): Metnos's tables
    (METNOS_DATABASE_URL) and the Prefect server's (PREFECT_SERVER_DATABASE_CONNECTION_URL)
    on one PostgreSQL outside both processes. The session's cluster stands in for an external
    one: `make test` starts the Prefect server on it, the home's URL points at it. The
    laptop's worker has no database URL at all: it reaches only the Prefect API."""
    home, laptop, _ = server_and_laptop(make_home, scripted_llm, tmp_path)
    assert "METNOS_DATABASE_URL" not in worker_env(laptop)
    scripted_llm.enqueue_tool_call("photo_rename", {"folder": "photos", "prefix": "db-"})
    scripted_llm.enqueue_text("Done.")
    with Worker(laptop, POOL, name="laptop-db"):
        async with remote_gateway(home) as client:
            turn = await run_turn(client, "rename the photos in photos with the prefix db-")
    assert turn["status"] == "completed"
    action_id = next(a["action_id"] for a in audit_tail(home) if a.get("action") == "photo_rename")
    assert home.settings.database.url is not None  # not the embedded one under METNOS_HOME
    with pytest.MonkeyPatch.context() as env:  # both URLs set: `metnos serve` starts no cluster
        env.setenv("PREFECT_SERVER_DATABASE_CONNECTION_URL",
                   pg_server.url(PREFECT_DB, driver="asyncpg"))
        assert not uses_embedded(home.settings)
    metnos_db = create_engine(database_url(home.settings))
    try:
        with metnos_db.connect() as db:  # the record's row, in Metnos's tables
            rows = db.execute(text("select executor from before_manifest where id = :a"),
                              {"a": action_id}).all()
    finally:
        metnos_db.dispose()
    assert rows == [("photo_rename",)]
    prefect = create_engine(pg_server.url(PREFECT_DB))
    try:
        with prefect.connect() as db:  # its two runs, in the Prefect server's tables
            runs = db.execute(text(
                "select fr.name, fr.state_type from flow_run fr join deployment d"
                " on d.id = fr.deployment_id where d.name = :pool and fr.name like :name"),
                {"pool": POOL, "name": f"%-{action_id[:12]}"}).all()
    finally:
        prefect.dispose()
    assert sorted(runs) == [(f"apply-{action_id[:12]}", "COMPLETED"),
                            (f"prepare-{action_id[:12]}", "COMPLETED")]
