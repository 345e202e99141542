"""What the running gateway says of itself (`/healthz`): the sandbox verdict of its own
start-up canary (the one that decides which tools run, whatever the doctor's canary finds
now), the database, the Prefect server and the deployment runner.

Asked only when the gateway of this instance's records is running and holds its port.
"""

from __future__ import annotations

from typing import Any

import httpx

from metnos.faces.doctor.finding import Finding, text
from metnos.faces.serve import instance, ports
from metnos.ground.settings import Settings

NAME = "gateway"
TIMEOUT_S = 4.0
# (healthz field, value that is a problem) → (what is wrong, its fix)
PROBLEMS = (
    ("sandbox", "degraded", "DOCTOR_GATEWAY_SANDBOX", "DOCTOR_FIX_GATEWAY_SANDBOX"),
    ("database", "down", "DOCTOR_GATEWAY_DATABASE", "DOCTOR_FIX_GATEWAY_DATABASE"),
    ("prefect", "unreachable", "DOCTOR_GATEWAY_PREFECT", "DOCTOR_FIX_GATEWAY_PREFECT"),
    ("runner", "down", "DOCTOR_GATEWAY_RUNNER", "DOCTOR_FIX_GATEWAY_RUNNER"),
)


async def check_gateway(settings: Settings, lang: str | None) -> Finding | None:
    """None when there is no running gateway of this instance to ask."""
    if not _ours(settings):
        return None
    url = f"http://127.0.0.1:{settings.gateway.port}/healthz"
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
            resp = await client.get(url)
        health: dict[str, Any] = resp.json()
    except (httpx.HTTPError, ValueError) as exc:
        return Finding(NAME, False, text("DOCTOR_GATEWAY_SILENT", lang, error=type(exc).__name__),
                       text("DOCTOR_FIX_GATEWAY_SILENT", lang))
    if health.get("status") == "draining":
        return Finding(NAME, None, text("DOCTOR_GATEWAY_DRAINING", lang))
    wrong = [(text(what, lang), text(fix, lang)) for field, bad, what, fix in PROBLEMS
             if health.get(field) == bad]
    if not wrong:
        return Finding(NAME, True, text("DOCTOR_GATEWAY_OK", lang))
    return Finding(NAME, False, text("DOCTOR_GATEWAY_PROBLEMS", lang,
                                     problems="; ".join(w for w, _ in wrong)),
                   " ".join(f for _, f in wrong))


def _ours(settings: Settings) -> bool:
    gateway = [r for r in instance.running(settings) if r.name == "gateway"]
    holder = ports.holder(settings.gateway.port, settings.gateway.host)
    return bool(gateway and holder is not None and holder.pid == gateway[0].pid)
