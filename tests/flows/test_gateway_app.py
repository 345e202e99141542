"""The composition root (`flows/gateway.py`, what `metnos serve` runs): the app it builds
carries out a reminder's schedule (the outbox effect registered at start-up)."""

from __future__ import annotations

from asgi_lifespan import LifespanManager

from flows.gateway import app
from metnos.features.reminders.effect import EFFECT
from tests.support.home import MakeHome


async def test_the_served_gateway_schedules_reminders(make_home: MakeHome,
                                                      prefect_api: str) -> None:
    make_home(lang="en")
    gateway = app()
    async with LifespanManager(gateway, startup_timeout=60, shutdown_timeout=60):
        assert EFFECT in gateway.state.gateway.service.hooks.effects
        assert gateway.state.gateway.runner.__module__ == "flows.turn"
