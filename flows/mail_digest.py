"""The morning mail digest (SPEC §12; deployment `mail-digest/morning`, served by
deployments/serve.py on `[mail] digest_cron` in the instance's time zone).

imap_status → only if something is new → imap_fetch_headers → classify → summarize →
notify, silent when nothing is worth saying; the chain's logic is `metnos.features.mail.digest`. The
status read is retried on its own; a run that fails is retried once from the top (a new
turn: the folders' state advances only after a run that went through), and a run that fails
for good leaves the owner a notice (an outbox row on the preferred channel) and an audit line.
"""

from __future__ import annotations

import asyncio
from typing import Any

from prefect import flow
from prefect.client.schemas.objects import State
from prefect.states import Completed

from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.settings import get_settings
from tasks.mail import (
    check_mail_task,
    close_digest_task,
    digest_task,
    open_digest_task,
    report_failure_task,
)


async def _report(flow: Any, flow_run: Any, state: State) -> None:
    """on_failure (after the last retry): tell the owner the digest failed, and why."""
    exc = await state.aresult(raise_on_failure=False)
    reason = (i18n.message(exc, get_settings().lang) if isinstance(exc, MetnosError)
              else type(exc).__name__)
    await asyncio.to_thread(report_failure_task.fn, reason)


@flow(name="mail-digest", persist_result=False, log_prints=False, retries=1,
      retry_delay_seconds=60, on_failure=[_report])
async def mail_digest() -> State:
    run = await open_digest_task()
    try:
        new = await check_mail_task(run)
        result = await digest_task(run)
    except BaseException as exc:
        await close_digest_task(run, None, exc)
        raise
    await close_digest_task(run, result)
    said = f"{result.outcome}: {result.new_messages} new, {result.worth} worth saying"
    return Completed(message=said if new else "nothing new: nothing read, nothing said",
                     name="Sent" if result.outcome == "sent" else "Silent")


__all__ = ["mail_digest"]
