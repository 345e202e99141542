"""The model's health: one probe (`check_model`) and the gateway's live view (`ModelHealth`).

`check_model` asks the configured model once, bounded to ~10 s, and never raises: nothing
configured is "embedded" (the built-in planner serves); settings that cannot work (an
`api_base` that is no http(s) URL) are "misconfigured" before any request. With an
`api_base` (an OpenAI-compatible server) it asks `GET {api_base}/models` with the key as
bearer: 200 is "ok", 401/403 a wrong key, a refused connection or a timeout "unreachable", a
name that does not resolve a wrong address; any other answer (a server without that route)
and a hosted provider (no `api_base`) get a one-token completion through the LLM port.

`ModelHealth` is the gateway's live view, told of every call of the turns' model port. It is
a breaker: after a passing failure, turns skip the model for a cool-down (30 s, doubling to
5 min) and the embedded planner serves at once (a family must not wait for a dead server on
every message); after the cool-down the next turn tries again. A configuration error keeps
turns on the planner and is tried again every few minutes (a fixed file needs a restart
anyway, but a key the provider re-enabled heals by itself).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from metnos.ground import i18n
from metnos.ground.errors import LLMError
from metnos.ground.settings import LLMSettings, Settings
from metnos.mechanisms.llm import failure
from metnos.mechanisms.llm.port import LLMPort, configured

log = logging.getLogger(__name__)

ModelState = Literal["ok", "unreachable", "misconfigured", "embedded", "unknown"]

CHECK_TIMEOUT_S = 10.0
_FIX_OF_SETTING = {
    failure.API_KEY: "MSG_MODEL_FIX_API_KEY",
    failure.API_BASE: "MSG_MODEL_FIX_API_BASE",
    failure.MODEL: "MSG_MODEL_FIX_MODEL",
}


@dataclass(frozen=True)
class ModelCheck:
    """The model's state, and what to say about it."""

    state: ModelState
    key: str | None = None  # i18n key of the problem (None when ok/embedded)
    setting: str | None = None  # the setting to fix, e.g. "[llm] api_key"
    vars: dict[str, Any] = field(default_factory=dict)

    def line(self, lang: str | None) -> str:
        """One plain sentence in the person's language."""
        if self.state == "ok":
            return i18n.get("MSG_MODEL_OK", lang, model=self.vars.get("model", "-"))
        if self.state == "embedded":
            return i18n.get("MSG_MODEL_EMBEDDED", lang)
        if self.key is None:
            return i18n.get("MSG_MODEL_UNKNOWN", lang, model=self.vars.get("model", "-"))
        return i18n.get(self.key, lang, **_filled(self.vars))

    def fix(self, lang: str | None) -> str | None:
        """What to change (for the owner); None when nothing is wrong."""
        if self.state == "misconfigured" and self.setting in _FIX_OF_SETTING:
            return i18n.get(_FIX_OF_SETTING[self.setting], lang)
        if self.state == "unreachable":
            hosted = self.vars.get("address") in (None, "-")
            key = "MSG_MODEL_FIX_UNREACHABLE_HOSTED" if hosted else "MSG_MODEL_FIX_UNREACHABLE"
            return i18n.get(key, lang, **_filled(self.vars))
        return None

    @classmethod
    def of_error(cls, exc: LLMError, llm: LLMSettings) -> ModelCheck:
        """The check a failed call amounts to."""
        base = _base_vars(llm)
        if failure.is_config_key(exc.key):
            return cls("misconfigured", exc.key, failure.SETTING_OF[exc.key],
                       {**base, **exc.vars})
        return _unreachable(llm)


def _filled(vars: dict[str, Any]) -> dict[str, Any]:
    """The variables every model message may name, "-" where unknown."""
    return {"model": "-", "address": "-", "host": "-", "status": "-", "detail": "-", **vars}


def _base_vars(llm: LLMSettings) -> dict[str, Any]:
    return {"model": llm.model or llm.model_fast or "-", "address": llm.api_base or "-",
            "host": failure.host_of(llm.api_base)}


def _unreachable(llm: LLMSettings) -> ModelCheck:
    key = "MSG_MODEL_UNREACHABLE" if llm.api_base else "MSG_MODEL_UNREACHABLE_HOSTED"
    return ModelCheck("unreachable", key, None, _base_vars(llm))


def _misconfigured(found: failure.Failure, llm: LLMSettings) -> ModelCheck:
    vars = {**_base_vars(llm), **{name: value for name, value in found.vars if value}}
    return ModelCheck("misconfigured", found.key, found.setting, vars)


# -- one probe ----------------------------------------------------------------------------------
async def check_model(settings: Settings) -> ModelCheck:
    """Ask the configured model once (see the module); never raises, ≤ ~10 s."""
    llm = settings.llm
    if not configured(llm):
        return ModelCheck("embedded")
    problem = failure.settings_problem(llm)
    if problem is not None:
        return _misconfigured(problem, llm)
    try:
        return await asyncio.wait_for(_probe(settings), timeout=CHECK_TIMEOUT_S)
    except TimeoutError:
        return _unreachable(llm)
    except Exception:  # the outermost boundary of a check: it reports, it never raises
        log.exception("llm.check failed unexpectedly")
        return ModelCheck("unknown", None, None, _base_vars(llm))


async def _probe(settings: Settings) -> ModelCheck:
    llm = settings.llm
    if llm.api_base:
        listed = await _list_models(llm)
        if listed is not None:
            return listed
    return await _one_token(settings)


async def _list_models(llm: LLMSettings) -> ModelCheck | None:
    """`GET {api_base}/models`: the answer's check, or None (ask for a completion instead)."""
    url = (llm.api_base or "").rstrip("/") + "/models"
    headers = {}
    if llm.api_key is not None and llm.api_key.get_secret_value():
        headers["Authorization"] = f"Bearer {llm.api_key.get_secret_value()}"
    try:
        async with httpx.AsyncClient(timeout=min(5.0, llm.timeout_s)) as client:
            response = await client.get(url, headers=headers)
    except (httpx.TimeoutException, httpx.NetworkError) as exc:
        if any(isinstance(link, socket.gaierror) for link in failure.chain(exc)):
            found = failure.classify(exc)
            if found.config:
                return _misconfigured(found, llm)
        return _unreachable(llm)
    except httpx.HTTPError as exc:  # an address httpx cannot use
        found = failure.classify(exc)
        return _misconfigured(found, llm) if found.config else _unreachable(llm)
    if response.status_code == 200:
        return ModelCheck("ok", None, None, _base_vars(llm))
    if response.status_code in (401, 403):
        key = failure.AUTH_FAILED if headers else failure.KEY_MISSING
        found = failure.Failure(key, failure.API_KEY,
                                vars=(("status", str(response.status_code)),))
        return _misconfigured(found, llm)
    return None


async def _one_token(settings: Settings) -> ModelCheck:
    """A one-token completion through the LLM port, one attempt."""
    llm = settings.llm.model_copy(update={"max_attempts": 1,
                                          "timeout_s": min(settings.llm.timeout_s, 8.0)})
    port = LLMPort.for_instance(settings.model_copy(update={"llm": llm}))
    try:
        await port.complete([{"role": "user", "content": "ping"}], max_tokens=1)
    except LLMError as exc:
        if exc.key in failure.SETTING_OF or exc.key == failure.UNAVAILABLE:
            return ModelCheck.of_error(exc, llm)
        return ModelCheck("ok", None, None, _base_vars(llm))  # it answered, if not kindly
    return ModelCheck("ok", None, None, _base_vars(llm))


# -- the gateway's live view --------------------------------------------------------------------
class ModelHealth:
    """The last outcome of the turns' model and the breaker (see the module)."""

    def __init__(self, settings: Settings, *, cool_s: float = 30.0, max_cool_s: float = 300.0,
                 recheck_s: float = 180.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._llm = settings.llm
        self._cool_s, self._max_cool_s, self._recheck_s = cool_s, max_cool_s, recheck_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._closed_until = 0.0  # the model is skipped until then
        problem = failure.settings_problem(settings.llm)
        if not configured(settings.llm):
            self._check = ModelCheck("embedded")
        elif problem is not None:
            self._check = _misconfigured(problem, settings.llm)
            self._closed_until = float("inf")  # no call can work: a restart fixes it
        else:
            self._check = ModelCheck("unknown", None, None, _base_vars(settings.llm))

    @property
    def check(self) -> ModelCheck:
        with self._lock:
            return self._check

    @property
    def state(self) -> ModelState:
        return self.check.state

    def allows(self) -> bool:
        """Whether a turn should ask the model now (False: the embedded planner serves)."""
        with self._lock:
            return self._check.state != "embedded" and self._clock() >= self._closed_until

    def observe(self, outcome: LLMError | None) -> None:
        """One call's outcome (an `LLMPort.observe` observer)."""
        if outcome is None:
            self.succeeded()
        else:
            self.failed(outcome)

    def succeeded(self) -> None:
        with self._lock:
            self._failures = 0
            self._closed_until = 0.0
            self._check = ModelCheck("ok", None, None, _base_vars(self._llm))

    def failed(self, exc: LLMError) -> None:
        """A failed call: a configuration error or a passing failure opens the breaker; a
        rejected request (the model answered) changes nothing."""
        if not (failure.is_config_key(exc.key) or exc.key == failure.UNAVAILABLE):
            return
        with self._lock:
            now = self._clock()
            self._check = ModelCheck.of_error(exc, self._llm)
            if self._check.state == "misconfigured":
                self._closed_until = now + self._recheck_s
                return
            cool = min(self._cool_s * 2 ** self._failures, self._max_cool_s)
            self._failures += 1
            self._closed_until = now + cool
            log.warning("llm.breaker open for %.0f s after %d failure(s)", cool, self._failures)

    def record(self, check: ModelCheck) -> None:
        """A probe's result (`check_model`) counts as a call's outcome."""
        if check.state == "ok":
            self.succeeded()
        elif check.state in ("unreachable", "misconfigured") and check.key is not None:
            key = failure.UNAVAILABLE if check.state == "unreachable" else check.key
            self.failed(LLMError(key, **check.vars))
