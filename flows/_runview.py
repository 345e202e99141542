"""The turn's flow run as a person finds it in the Prefect UI: its name and tags, its Markdown
card (an artifact) and the final state named after the outcome (`metnos.turns.runview`)."""

from __future__ import annotations

import asyncio
import logging
from uuid import UUID

from prefect import State, get_client
from prefect.artifacts import acreate_markdown_artifact
from prefect.states import Completed

from metnos.turns import runview
from metnos.turns.context import TurnContext
from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)


async def name_run(service: Runtime, ctx: TurnContext, run_id: UUID) -> None:
    """The name while it runs (or waits for the owner): channel, user, time."""
    name = runview.run_name(ctx, ctx.opened_at, service.settings.tz)
    await get_client().set_flow_run_name(run_id, name)


async def describe_run(service: Runtime, ctx: TurnContext, run_id: UUID,
                       reply: str) -> State[str]:
    """After the reply: the name and tags gain the executors used, the card is written; the
    returned state ends the run. A failure here is history only: the turn is closed."""
    used = runview.executors_used(ctx)
    tz = service.settings.tz
    (question, said), _ = service.guard.redact([ctx.text, reply])  # Law 2: no known secret
    client = get_client()
    done = await asyncio.gather(
        client.update_flow_run(run_id, name=runview.run_name(ctx, ctx.opened_at, tz, used),
                               tags=runview.run_tags(ctx, used)),
        acreate_markdown_artifact(
            markdown=runview.card(ctx, question, said, ctx.opened_at, tz),
            key=runview.artifact_key(ctx), description=runview.run_name(ctx, ctx.opened_at, tz)),
        return_exceptions=True)
    for failed in (d for d in done if isinstance(d, BaseException)):
        log.warning("turn.describe_failed turn_id=%s error=%r", ctx.turn_id, failed)
    end = runview.outcome(ctx, understood=ctx.understood)
    return Completed(name=end.name, message=end.message, data=ctx.turn_id)
