"""What a failed model call means: a configuration error to fix, or a passing failure.

litellm 1.x reports nearly everything on an OpenAI-compatible base as `InternalServerError`
status 500: a missing key ("Missing credentials"), a refused connection and a host that does
not resolve ("Connection error.") alike. Its exception class says little; the cause chain
(`__cause__`/`__context__`: the openai SDK's error, httpx's, the socket's) and the message say
what happened. A configuration error (a refused or missing key, an unknown model, a bad or
unknown address) never heals by itself: it is not retried, and its key names the setting to
fix. A passing failure (refused connection, 5xx, rate limit) is retried and then
`ERR_LLM_UNAVAILABLE`; a timeout is passing too but not retried (`timed_out`: a server that
never answers would make the family wait `max_attempts` times the timeout).

`settings_problem` checks the settings before any call (an `api_base` that is no http(s) URL
with a host).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from metnos.ground.settings import LLMSettings

API_KEY = "[llm] api_key"
API_BASE = "[llm] api_base"
MODEL = "[llm] model"

UNAVAILABLE = "ERR_LLM_UNAVAILABLE"
AUTH_FAILED = "ERR_LLM_AUTH_FAILED"
KEY_MISSING = "ERR_LLM_KEY_MISSING"
MODEL_NOT_FOUND = "ERR_LLM_MODEL_NOT_FOUND"
ADDRESS_INVALID = "ERR_LLM_ADDRESS_INVALID"
ADDRESS_UNKNOWN = "ERR_LLM_ADDRESS_UNKNOWN"
REJECTED = "ERR_LLM_REQUEST_REJECTED"

# a configuration error's key → the setting to fix
SETTING_OF: dict[str, str] = {
    AUTH_FAILED: API_KEY,
    KEY_MISSING: API_KEY,
    MODEL_NOT_FOUND: MODEL,
    ADDRESS_INVALID: API_BASE,
    ADDRESS_UNKNOWN: API_BASE,
}

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_AUTH_STATUS = frozenset({401, 403})
_MISSING_KEY_WORDS = ("missing credentials", "api_key client option must be set",
                      "no api key", "api key not found", "missing api key")
_DNS_TEMPORARY = {getattr(socket, "EAI_AGAIN", -3)}


@dataclass(frozen=True)
class Failure:
    """One failed call, classified: its i18n key, the setting to fix (configuration errors
    only) and whether trying again may help."""

    key: str
    setting: str | None = None
    transient: bool = False
    vars: tuple[tuple[str, str], ...] = ()

    @property
    def config(self) -> bool:
        return self.setting is not None


def is_config_key(key: str) -> bool:
    return key in SETTING_OF


def settings_problem(settings: LLMSettings) -> Failure | None:
    """A configuration error visible before any call, or None."""
    base = settings.api_base
    if base is None:
        return None
    try:
        parts = urlsplit(base.strip())
        host = parts.hostname
    except ValueError:
        host, parts = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        return Failure(ADDRESS_INVALID, API_BASE, vars=(("address", base),))
    return None


def host_of(address: str | None) -> str:
    """The host an address names ("-" when it names none)."""
    try:
        return urlsplit((address or "").strip()).hostname or "-"
    except ValueError:
        return "-"


def chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and every exception it was raised from or while handling, once each."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def classify(exc: BaseException) -> Failure:
    """What the failure of one call means (see the module)."""
    links = list(chain(exc))
    names = {_qualname(link) for link in links}
    for link in links:
        if isinstance(link, socket.gaierror):
            if link.errno in _DNS_TEMPORARY:
                return Failure(UNAVAILABLE, transient=True)
            return Failure(ADDRESS_UNKNOWN, API_BASE)  # the host: the settings' api_base
    if names & {"httpx.InvalidURL", "httpx.UnsupportedProtocol", "aiohttp.InvalidURL",
                "aiohttp.InvalidUrlClientError", "aiohttp.NonHttpUrlClientError"}:
        return Failure(ADDRESS_INVALID, API_BASE)
    statuses = [s for s in (_status(link) for link in links) if s is not None]
    if names & {"openai.AuthenticationError", "openai.PermissionDeniedError",
                "litellm.AuthenticationError", "litellm.PermissionDeniedError"} or (
            statuses and statuses[-1] in _AUTH_STATUS):
        return Failure(AUTH_FAILED, API_KEY)
    if any(word in str(link).lower() for link in links for word in _MISSING_KEY_WORDS):
        return Failure(KEY_MISSING, API_KEY)
    if names & {"openai.NotFoundError", "litellm.NotFoundError"} or (
            statuses and statuses[-1] == 404):
        return Failure(MODEL_NOT_FOUND, MODEL)
    if _connection_level(links) or (statuses and statuses[-1] in _TRANSIENT_STATUS):
        return Failure(UNAVAILABLE, transient=True)
    if statuses:
        return Failure(REJECTED)
    return Failure(UNAVAILABLE, transient=True)


def timed_out(exc: BaseException) -> bool:
    """The call waited its whole timeout (a server that accepts and never answers): passing,
    yet never tried again, since a second wait would double what the family waits."""
    names = {_qualname(link) for link in chain(exc)}
    return bool(names & {"openai.APITimeoutError", "litellm.Timeout",
                         "httpx.TimeoutException", "httpx.ReadTimeout", "httpx.WriteTimeout",
                         "httpx.PoolTimeout"}) or any(
        isinstance(link, TimeoutError) for link in chain(exc))


def _connection_level(links: list[BaseException]) -> bool:
    """The request never got an HTTP answer: refused, reset, timed out, rate limited."""
    transient = {"openai.APIConnectionError", "openai.APITimeoutError", "openai.RateLimitError",
                 "openai.InternalServerError", "litellm.APIConnectionError", "litellm.Timeout",
                 "litellm.RateLimitError", "litellm.ServiceUnavailableError",
                 "litellm.BadGatewayError", "httpx.ConnectError", "httpx.TimeoutException",
                 "httpx.ReadError", "httpx.RemoteProtocolError"}
    return any(isinstance(link, (ConnectionError, TimeoutError)) for link in links) or bool(
        {_qualname(link) for link in links} & transient)


def _qualname(exc: BaseException) -> str:
    """`package.ClassName` of the exception (the top-level package only)."""
    module = type(exc).__module__.split(".")[0]
    return f"{module}.{type(exc).__name__}"


def _status(exc: BaseException) -> int | None:
    """The HTTP status an error really carries: the server's answer, not litellm's 500."""
    response = getattr(exc, "response", None)
    value: Any = getattr(response, "status_code", None)
    if value is None and _qualname(exc) == "openai.APIStatusError":
        value = getattr(exc, "status_code", None)
    if value is None and _qualname(exc).startswith("openai.") and hasattr(exc, "status_code"):
        value = exc.status_code
    return value if isinstance(value, int) else None
