"""Prefect tasks of the `mail-digest` flow: thin wrappers over `metnos.features.mail.digest`."""

from __future__ import annotations

import asyncio

from prefect import task
from prefect.cache_policies import NO_CACHE

from metnos.faces.wiring import build_runtime
from metnos.features.mail import digest
from metnos.features.mail.digest import DigestResult, DigestRun
from metnos.ground.settings import get_settings


@task(name="digest-open", cache_policy=NO_CACHE, persist_result=False)
async def open_digest_task() -> DigestRun:
    """The digest's turn service (as the gateway's, without the Tutor) and its turn
    (channel `schedule`)."""
    service = await build_runtime(get_settings(), tutor=False)
    return await DigestRun.open(service)


# a read (`imap_status` downloads nothing): safe to retry while the IMAP server restarts
@task(name="mail-status", cache_policy=NO_CACHE, persist_result=False,
      retries=2, retry_delay_seconds=[1, 5])
async def check_mail_task(run: DigestRun) -> bool:
    """Whether some watched folder has new mail."""
    return await run.check()


# not retried: it may have sent the message already (the flow's own retry starts over)
@task(name="mail-digest-chain", cache_policy=NO_CACHE, persist_result=False)
async def digest_task(run: DigestRun) -> DigestResult:
    """Headers, labels, the two lines, the message: or nothing, when nothing is worth it."""
    return await run.rest()


@task(name="digest-close", cache_policy=NO_CACHE, persist_result=False)
async def close_digest_task(run: DigestRun, result: DigestResult | None,
                            error: BaseException | None = None) -> None:
    """Close the digest's turn (its hand-offs reach the mnestoma), or fail it."""
    try:
        if error is None and result is not None:
            await run.close(result)
        else:
            await run.fail(error or RuntimeError("no result"))
    finally:
        await asyncio.to_thread(run.service.engine.dispose)


@task(name="digest-report-failure", cache_policy=NO_CACHE, persist_result=False)
def report_failure_task(reason: str) -> str:
    """A run that failed after its retries: the owner's notice and its audit line."""
    return digest.report_failure(get_settings(), reason)
