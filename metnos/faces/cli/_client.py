"""The CLI as a client of the running gateway: one authenticated JSON call, clear errors.

`metnos chat`, `metnos approvals` and `metnos pair` talk to `metnos serve` through its HTTP API
with the owner token (SPEC §11): the state and the rules live in the running instance.
`follow_events` reads a turn's server-sent events (`GET /api/turns/{id}/events`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from metnos.faces.cli._lang import cli_lang
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings

if TYPE_CHECKING:  # httpx is loaded by the first call, not by `metnos --help`
    import httpx

TIMEOUT_S = 180.0
STREAM_READ_S = 60.0  # the gateway sends a keep-alive every 15 s: silence this long = gone


@dataclass(frozen=True)
class ServerEvent:
    """One server-sent event: `seq` (its `id:`), `kind` (its `event:`), `data` (JSON)."""

    seq: int
    kind: str
    data: dict[str, Any]


def api_call(settings: Settings, method: str, path: str, *, body: dict[str, Any] | None = None,
             params: dict[str, Any] | None = None, timeout_s: float = TIMEOUT_S,
             lang: str | None = None) -> dict[str, Any]:
    """`method path` on the gateway; the decoded JSON object, or MetnosError for the user."""
    import httpx

    url, headers = _target(settings, path, lang)
    try:
        resp = httpx.request(method, url, json=body, params=params, headers=headers,
                             timeout=timeout_s)
        data = resp.json()
    except httpx.ConnectError as exc:
        raise MetnosError("ERR_CHAT_NOT_RUNNING", url=url) from exc
    except httpx.TimeoutException as exc:
        raise MetnosError("ERR_CHAT_TIMEOUT", url=url) from exc
    except (httpx.HTTPError, ValueError) as exc:  # a broken connection or a non-JSON answer
        raise MetnosError("ERR_CHAT_REFUSED", status="-", detail=str(exc)[:200]) from exc
    if resp.status_code >= 400 or not isinstance(data, dict):
        raise _refusal(resp.status_code, data, resp.text)
    return data


class GatewayRefusal(MetnosError):
    """The gateway said no, in words: its own key and message (already in the language the
    CLI asked for), shown as they are — "Action 513e… has already been undone", not "Metnos
    refused the message (409)"."""

    def __init__(self, status: int, key: str, text: str) -> None:
        super().__init__(key)
        self.status, self.text = status, text


def _refusal(status: int, data: Any, raw: str) -> MetnosError:
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("key"), str) \
            and isinstance(error.get("message"), str) and error["message"]:
        return GatewayRefusal(status, error["key"], error["message"])
    return MetnosError("ERR_CHAT_REFUSED", status=status, detail=raw[:200])


def follow_events(settings: Settings, turn_id: str, *, after: int = 0,
                  lang: str | None = None) -> Iterator[ServerEvent | None]:
    """The turn's events with `seq > after` as they come (None for each keep-alive, so the
    caller can keep its own deadline); ends with the stream. Leaving the loop closes it."""
    import httpx

    url, headers = _target(settings, f"/api/turns/{turn_id}/events", lang)
    headers["Accept"] = "text/event-stream"
    if after:
        headers["Last-Event-ID"] = str(after)
    timeout = httpx.Timeout(TIMEOUT_S, read=STREAM_READ_S)
    try:
        with httpx.stream("GET", url, headers=headers, timeout=timeout) as resp:
            if resp.status_code >= 400:
                resp.read()
                raise _refusal(resp.status_code, _json(resp), resp.text)
            yield from _parse_sse(resp.iter_lines())
    except httpx.ConnectError as exc:
        raise MetnosError("ERR_CHAT_NOT_RUNNING", url=url) from exc
    except httpx.TimeoutException as exc:
        raise MetnosError("ERR_CHAT_TIMEOUT", url=url) from exc
    except httpx.HTTPError as exc:  # the connection broke mid-stream
        raise MetnosError("ERR_CHAT_REFUSED", status="-", detail=str(exc)[:200]) from exc


def _parse_sse(lines: Iterator[str]) -> Iterator[ServerEvent | None]:
    """The SSE wire format: `field: value` lines, a blank line ends an event."""
    fields: dict[str, str] = {}
    for line in lines:
        if line.startswith(":"):
            yield None  # a keep-alive comment
        elif line:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data" and "data" in fields:
                fields["data"] += "\n" + value
            else:
                fields[name] = value
        else:
            event = _event(fields)
            fields = {}
            if event is not None:
                yield event


def _event(fields: dict[str, str]) -> ServerEvent | None:
    try:
        data = json.loads(fields.get("data", ""))
    except ValueError:  # a frame without JSON data (e.g. `retry:`): not an event of ours
        return None
    seq = fields.get("id", "0")
    return ServerEvent(int(seq) if seq.isdigit() else 0, fields.get("event", "message"),
                       data if isinstance(data, dict) else {"value": data})


def _target(settings: Settings, path: str, lang: str | None) -> tuple[str, dict[str, str]]:
    url = f"http://{settings.gateway.host}:{settings.gateway.port}{path}"
    try:
        token = settings.owner_token()
    except OSError as exc:
        raise MetnosError("ERR_HOME_NOT_INITIALISED", home=str(settings.home)) from exc
    # the gateway answers (errors, undo reports) in the CLI's language unless told another
    headers = {"Authorization": f"Bearer {token}", "Accept-Language": lang or cli_lang()}
    return url, headers


def _json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None
