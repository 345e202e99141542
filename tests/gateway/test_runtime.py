"""The runtime is built once, with every feature's hooks, whatever wraps the app: a bare
`create_app` carries out `notify` as the served gateway does (issue 28)."""

from __future__ import annotations

import dataclasses

import httpx
import pytest
from asgi_lifespan import LifespanManager

from metnos.faces.gateway.app import create_app
from metnos.faces.wiring import build_runtime
from metnos.features.mail.summary import EFFECT as SUMMARIZE
from metnos.features.notify.effect import EFFECT as NOTIFY
from metnos.features.reminders.effect import EFFECT as REMINDER
from metnos.features.schedules.effect import EFFECT as SCHEDULE
from metnos.features.schedules.planning import plan_timed
from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, parse_manifest
from metnos.mechanisms.policy.host_checks import BUILTIN_CHECKS
from metnos.turns.service import TurnService
from tests.gateway.test_turns import wait_closed
from tests.support.home import GATEWAY_BASE, MakeHome


async def test_a_bare_app_carries_out_notify(make_home: MakeHome) -> None:
    """No lifespan wrapper: the message is queued, not ERR_EXECUTOR_EFFECT_UNAVAILABLE."""
    home = make_home(lang="en", METNOS_NOTIFY_QUIET_HOURS="", METNOS_NOTIFY_CHANNEL="auto")
    app = create_app(home.settings)
    async with (LifespanManager(app, startup_timeout=60, shutdown_timeout=60) as manager,
                httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app),
                                  base_url=GATEWAY_BASE, headers=home.auth(),
                                  timeout=120) as client):
        resp = await client.post("/api/turns",
                                 json={"text": "notify me that the power bill is filed"})
        assert resp.status_code == 200, resp.text
        turn = await wait_closed(client, resp.json()["turn_id"])
    [item] = [a for a in turn["activity"] if a["executor"] == "notify"]
    assert item["status"] == "done", turn
    assert "command line" in turn["reply"], turn["reply"]


async def test_the_served_gateway_builds_one_frozen_runtime(make_home: MakeHome,
                                                            prefect_api: str) -> None:
    """`flows.gateway.app()`: one runtime, held by every part that uses it, every hook
    registered before the first request, and nothing can be added to it afterwards."""
    from flows.gateway import app as served

    make_home(lang="en")
    gateway = served()
    async with LifespanManager(gateway, startup_timeout=60, shutdown_timeout=60):
        service: TurnService = gateway.state.gateway.service
        assert service.checker.runtime is service and service.runner.runtime is service
        assert gateway.state.gateway.delivery.service is service  # the outbox loop: the same one
        assert {NOTIFY, SUMMARIZE, SCHEDULE, REMINDER} <= set(service.hooks.effects)
        assert service.hooks.remote is not None and service.hooks.watchers
        assert set(service.hooks.undoers) == {SCHEDULE, REMINDER}
        # the files asked last by an undo: every action has their record
        assert list(service.hooks.reversals) == ["effect", "mailbox", "remote", "files"]
        assert set(service.hooks.host_tools) == {"wish", "undo_last"}
        assert set(service.hooks.accounts) == {"imap"}
        with pytest.raises(dataclasses.FrozenInstanceError):
            service.engine = None  # type: ignore[misc]
        with pytest.raises(TypeError):
            service.hooks.effects[NOTIFY] = service.hooks.effects[SUMMARIZE]  # type: ignore[index]
        with pytest.raises(TypeError):
            del service.hooks.reversals["files"]  # type: ignore[attr-defined]
        assert service.record.events is service.events


async def test_what_the_features_add_to_a_turn_is_the_runtimes(make_home: MakeHome) -> None:
    """Every host check a manifest names is the policy's own or one a feature registered
    with the runtime (`metnos.faces.wiring`), as the embedded planner's first readings are: none of
    it lives in a module's registry."""
    home = make_home(lang="en")
    service = await build_runtime(home.settings, tutor=False)
    try:
        named = {check for path in resources_path("executors").glob(f"*/{MANIFEST_FILE}")
                 for check in parse_manifest(path).host_checks().values()}
        assert named == set(BUILTIN_CHECKS) | set(service.hooks.host_checks)
        assert set(service.hooks.host_checks) == {"list_name", "cadence", "archive_destination"}
        assert service.hooks.planners == (plan_timed,) and len(service.hooks.claims) == 2
        assert None not in (service.hooks.route, service.hooks.hints, service.hooks.archived)
    finally:
        service.engine.dispose()
