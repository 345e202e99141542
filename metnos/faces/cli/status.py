"""`metnos status`: is Metnos running, and how are its parts (one short screen).

It asks the running gateway: `/healthz` (anyone's: the sandbox, the model's state and, when
the gateway reports them, the database, Prefect and the runner) and `GET /api/status` (the
owner's: the model's state in words with its fix; the CLI is the owner). Metnos not running
is said with how to start it.
"""

from __future__ import annotations

from typing import Any

import typer

from metnos.faces.cli._client import api_call, fetch
from metnos.faces.cli._common import JsonFlag, exit_with, settings_or_exit
from metnos.faces.cli._lang import cli_lang, msg
from metnos.faces.cli._out import echo, echo_json
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings

HEALTH_TIMEOUT_S = 10.0
MODEL_TIMEOUT_S = 20.0  # the gateway may ask the model once (≤ ~10 s)
_PARTS = (("database", "MSG_STATUS_DATABASE"), ("prefect", "MSG_STATUS_PREFECT"),
          ("runner", "MSG_STATUS_RUNNER"))


def status(as_json: JsonFlag = False) -> None:
    """Exit code 0 when Metnos is running, 1 when it is not (or cannot be asked)."""
    settings = settings_or_exit()
    lang = cli_lang()
    url = _base(settings)
    try:
        health = _health(settings)
        model = api_call(settings, "GET", "/api/status", timeout_s=MODEL_TIMEOUT_S, lang=lang)
    except MetnosError as exc:
        if as_json and exc.key == "ERR_CHAT_NOT_RUNNING":
            echo_json({"gateway": "down", "url": url})
            raise typer.Exit(1) from exc
        exit_with(exc, lang)
    if as_json:
        echo_json({"gateway": "up", "url": url, "health": health, "model": model})
        return
    for line in _lines(url, health, model):
        echo(line)


def _lines(url: str, health: dict[str, Any], model: dict[str, Any]) -> list[str]:
    key = "MSG_STATUS_DRAINING" if health.get("status") == "draining" else "MSG_STATUS_UP"
    lines = [msg(key, url=url, version=str(health.get("version", "-"))),
             msg("MSG_STATUS_MODEL", line=str(model.get("line", "")))]
    if model.get("fix"):
        lines.append(msg("MSG_STATUS_FIX", fix=str(model["fix"])))
    sandbox = "ok" if health.get("sandbox") == "ok" else "degraded"
    lines.append(msg(f"MSG_STATUS_SANDBOX_{sandbox.upper()}"))
    for part, part_key in _PARTS:  # present when the gateway reports them
        if part in health:
            lines.append(msg(part_key, state=_state(health[part])))
    return lines


def _state(value: Any) -> str:
    known = {"ok": "CLI_STATUS_STATE_OK", "alive": "CLI_STATUS_STATE_OK",
             "down": "CLI_STATUS_STATE_DOWN", "unreachable": "CLI_STATUS_STATE_UNREACHABLE"}
    return msg(known.get(str(value), "CLI_STATUS_STATE_UNKNOWN"))


def _base(settings: Settings) -> str:
    return f"http://{settings.gateway.host}:{settings.gateway.port}"


def _health(settings: Settings) -> dict[str, Any]:
    """`/healthz` as the gateway answers it, a draining one's 503 included."""
    url = _base(settings) + "/healthz"
    try:
        answer = fetch("GET", url, timeout_s=HEALTH_TIMEOUT_S)
    except MetnosError as exc:  # not running: said of the instance, not of one page
        if exc.key != "ERR_CHAT_NOT_RUNNING":
            raise
        raise MetnosError("ERR_CHAT_NOT_RUNNING", url=_base(settings)) from exc
    data = answer.json()
    if answer.status not in (200, 503) or not isinstance(data, dict):
        raise MetnosError("ERR_CHAT_REFUSED", status=answer.status, detail=answer.text[:200])
    return data
