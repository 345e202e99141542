"""The CLI as a client of the running gateway: one authenticated JSON call, clear errors.

`metnos chat`, `metnos approvals` and `metnos pair` talk to `metnos serve` through its HTTP API
with the owner token (SPEC §11): the state and the rules live in the running instance.
`follow_events` reads a turn's server-sent events (`GET /api/turns/{id}/events`).

The standard library's `http.client` carries them: one request to a known gateway needs no
connection pool, and importing httpx cost a command a sixth of a second before it said
anything (issue 29).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from metnos.faces.cli._lang import cli_lang
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings

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
    url, headers = _target(settings, path, lang)
    answer = fetch(method, url, headers=headers, body=body, params=params, timeout_s=timeout_s)
    data = answer.json()
    if answer.status >= 400 or not isinstance(data, dict):
        raise _refusal(answer.status, data, answer.text)
    return data


@dataclass(frozen=True)
class Answer:
    """A whole HTTP answer: its status and its body."""

    status: int
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON; None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def fetch(method: str, url: str, *, headers: dict[str, str] | None = None,
          body: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
          timeout_s: float = TIMEOUT_S) -> Answer:
    """One request (`body` sent as JSON); MetnosError when the gateway cannot be reached or
    the connection fails, in the words `metnos chat` uses."""
    with _exchange(method, url, headers or {}, body, params, timeout_s) as resp:
        return Answer(resp.status, resp.read())


@contextmanager
def _exchange(method: str, url: str, headers: dict[str, str], body: dict[str, Any] | None,
              params: dict[str, Any] | None, timeout_s: float,
              read_s: float | None = None) -> Iterator[http.client.HTTPResponse]:
    """An open response to `method url`; every failure of the connection is a MetnosError
    (not running, timed out, broken), and the connection is closed on the way out."""
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname or "", parts.port, timeout=timeout_s)
    target = (parts.path or "/") + (f"?{urlencode(params)}" if params else "")
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
        headers = {**headers, "Content-Type": "application/json"}
    resp: http.client.HTTPResponse | None = None
    try:
        try:
            conn.connect()
        except TimeoutError as exc:
            raise MetnosError("ERR_CHAT_TIMEOUT", url=url) from exc
        except OSError as exc:  # refused, unreachable, no such name
            raise MetnosError("ERR_CHAT_NOT_RUNNING", url=url) from exc
        try:
            conn.request(method, target, body=data, headers=headers)
            if read_s is not None and conn.sock is not None:  # before the answer: a
                conn.sock.settimeout(read_s)  # stream's answer keeps the socket, not `conn`
            resp = conn.getresponse()
            yield resp
        except TimeoutError as exc:
            raise MetnosError("ERR_CHAT_TIMEOUT", url=url) from exc
        except (OSError, http.client.HTTPException) as exc:  # broken mid-way
            raise MetnosError("ERR_CHAT_REFUSED", status="-", detail=str(exc)[:200]) from exc
    finally:
        if resp is not None:
            resp.close()
        conn.close()


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


def follow_events(settings: Settings, turn_id: str, *, after: int = 0, lang: str | None = None,
                  read_s: float = STREAM_READ_S) -> Iterator[ServerEvent | None]:
    """The turn's events with `seq > after` as they come (None for each keep-alive, so the
    caller can keep its own deadline); ends with the stream, or with ERR_CHAT_TIMEOUT after
    `read_s` of silence. Leaving the loop closes it."""
    url, headers = _target(settings, f"/api/turns/{turn_id}/events", lang)
    headers["Accept"] = "text/event-stream"
    if after:
        headers["Last-Event-ID"] = str(after)
    with _exchange("GET", url, headers, None, None, TIMEOUT_S, read_s=read_s) as resp:
        if resp.status >= 400:
            answer = Answer(resp.status, resp.read())
            raise _refusal(resp.status, answer.json(), answer.text)
        yield from _parse_sse(_lines(resp))


def _lines(resp: http.client.HTTPResponse) -> Iterator[str]:
    """The stream's lines as they arrive, without their line ends."""
    while line := resp.readline():
        yield line.decode("utf-8", "replace").rstrip("\r\n")


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
