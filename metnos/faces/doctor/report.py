"""Run every check at once, each within its bound, and keep the order a person reads them in.

Plain checks run in daemon threads (a check stuck on a hung disk must not keep the command
from ending); the two live probes and the Prefect request are coroutines. A check that does
not end within its bound, or fails unexpectedly, becomes a finding that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from metnos.faces.doctor.credential import check_credential
from metnos.faces.doctor.finding import Finding, text
from metnos.faces.doctor.gateway import check_gateway
from metnos.faces.doctor.instance import check_overlay, check_ports, check_processes
from metnos.faces.doctor.probes import check_model, check_ocr, check_sandbox
from metnos.faces.doctor.stores import check_audit, check_disk, check_tutor
from metnos.ground import keys
from metnos.ground.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

BOUND_S = 12.0  # each check; they run together, so the command ends within ~15 s
MODEL_BOUND_S = 13.0  # check_model bounds itself to ~10 s


def diagnose(settings: Settings, lang: str | None) -> list[Finding]:
    """Every finding about the instance at `settings.home`, in `lang`."""
    return asyncio.run(_diagnose(settings, lang))


async def _diagnose(settings: Settings, lang: str | None) -> list[Finding]:
    ready = keys.is_initialised(settings)
    jobs: list[tuple[str, Awaitable[list[Finding]]]] = [
        ("ports", _bounded(_thread(lambda: check_ports(settings, lang)))),
        ("sandbox", _one(check_sandbox(settings, lang))),
        ("model", _one(check_model(settings, lang), MODEL_BOUND_S)),
    ]
    if ready:
        jobs[1:1] = [("processes", _one(_thread(lambda: check_processes(settings, lang)))),
                     ("gateway", _one(check_gateway(settings, lang)))]
        jobs += [
            ("prefect-credential", _one(check_credential(settings, lang))),
            ("tutor", _one(_thread(lambda: check_tutor(settings, lang)))),
            ("disk", _one(_thread(lambda: check_disk(settings, lang)))),
            ("audit", _one(_thread(lambda: check_audit(settings, lang)))),
            ("ocr", _one(_thread(lambda: check_ocr(settings, lang)))),
            ("overlay", _one(_thread(lambda: check_overlay(settings, lang)))),
        ]
    results = await asyncio.gather(*(job for _, job in jobs), return_exceptions=True)
    found: list[Finding] = []
    if not ready:
        found.append(Finding("home", False, text("DOCTOR_NOT_INITIALISED", lang,
                                                 home=str(settings.home)),
                             text("DOCTOR_FIX_INIT", lang)))
    for (name, _), result in zip(jobs, results, strict=True):
        found += _outcome(name, result, lang)
    return found


def _outcome(name: str, result: list[Finding] | BaseException, lang: str | None
             ) -> list[Finding]:
    if isinstance(result, TimeoutError):
        return [Finding(name, None, text("DOCTOR_CHECK_TIMEOUT", lang, check=name,
                                         seconds=int(BOUND_S)))]
    if isinstance(result, BaseException):
        log.warning("doctor.check_failed check=%s error=%r", name, result)
        return [Finding(name, None, text("DOCTOR_CHECK_FAILED", lang, check=name,
                                         error=f"{type(result).__name__}: {result}"[:200]))]
    return result


async def _one(check: Awaitable[Finding | None], bound_s: float = BOUND_S) -> list[Finding]:
    """The finding of `check` (none when it did not apply), within `bound_s`."""
    found = await asyncio.wait_for(check, bound_s)
    return [] if found is None else [found]


async def _bounded(check: Awaitable[list[Finding]]) -> list[Finding]:
    return await asyncio.wait_for(check, BOUND_S)


def _thread(fn: Callable[[], T]) -> asyncio.Future[T]:
    """`fn()` in a daemon thread: the command may end while it is still stuck."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(set_it: Callable[[], None]) -> None:
        if not future.done():
            set_it()

    def run() -> None:
        try:
            value = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
            error = exc
            _post(loop, lambda: settle(lambda: future.set_exception(error)))
            return
        _post(loop, lambda: settle(lambda: future.set_result(value)))

    threading.Thread(target=run, name="doctor-check", daemon=True).start()
    return future


def _post(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    with contextlib.suppress(RuntimeError):  # a closed loop: the command ended without it
        loop.call_soon_threadsafe(callback)
