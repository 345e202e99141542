"""The CLI as a client of the running gateway: one authenticated JSON call, clear errors.

`metnos chat`, `metnos approvals` and `metnos pair` talk to `metnos serve` through its HTTP API
with the owner token (SPEC §11): the state and the rules live in the running instance.
"""

from __future__ import annotations

from typing import Any

import httpx

from metnos.errors import MetnosError
from metnos.settings import Settings

TIMEOUT_S = 180.0


def api_call(settings: Settings, method: str, path: str, *, body: dict[str, Any] | None = None,
             params: dict[str, Any] | None = None, timeout_s: float = TIMEOUT_S,
             lang: str | None = None) -> dict[str, Any]:
    """`method path` on the gateway; the decoded JSON object, or MetnosError for the user."""
    url = f"http://{settings.gateway.host}:{settings.gateway.port}{path}"
    try:
        token = settings.owner_token()
    except OSError as exc:
        raise MetnosError("ERR_HOME_NOT_INITIALISED", home=str(settings.home)) from exc
    headers = {"Authorization": f"Bearer {token}"}
    if lang:
        headers["Accept-Language"] = lang
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
        error = data.get("error", {}) if isinstance(data, dict) else {}
        raise MetnosError("ERR_CHAT_REFUSED", status=resp.status_code,
                          detail=error.get("message", resp.text[:200]))
    return data
