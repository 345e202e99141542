"""The `turn` flow (SPEC §2): one user message, end to end, visible in the Prefect UI.

Run in-process by the gateway. The runtime objects (database, registry, audit log, LLM port)
are not flow parameters — Prefect stores parameters as JSON — but reach the flow through a
context variable set by `run_turn`. How the run reads in the UI: `flows/_runview.py`.
Off the path to the first token (`bench/turn_latency.py`): shared clients (`flows/_clients.py`),
the head start, the link and the name beside the pipeline. Approvals: `flows/approval.py`.
"""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from uuid import UUID

from prefect import State, flow, get_client, tags
from prefect.context import get_run_context
from prefect.settings import get_current_settings
from prefect.states import Crashed

from flows._clients import shared_clients
from flows._runview import describe_run, name_run
from flows.approval import resume_approval, wait_for_owner
from metnos.ground import i18n
from metnos.turns import recovery, runview
from metnos.turns.pipeline import HeadStart, discard, head_start, run_pipeline
from metnos.turns.service import TurnContext, TurnService
from tasks.turn import execute_step

log = logging.getLogger(__name__)

# Each turn runs in its own asyncio task, so concurrent turns each see their own value.
_Turn = tuple[TurnService, TurnContext, asyncio.Task[HeadStart | None]]
_TURN: ContextVar[_Turn] = ContextVar("metnos_turn")


async def run_turn(service: TurnService, ctx: TurnContext) -> None:
    """Entry point for the gateway: run the flow for a turn already opened by `service`.
    The head start (conversation, first model call) runs while Prefect creates the run."""
    head = asyncio.create_task(head_start(service, ctx))
    _TURN.set((service, ctx, head))
    try:
        async with shared_clients():
            with tags(*runview.run_tags(ctx)):  # sent with the run's creation: no request
                await turn(ctx.turn_id)
    except Exception as exc:  # e.g. the Prefect API is unreachable: the flow never ran
        if not ctx.closed:
            await service.fail_turn(ctx, exc)
    finally:
        await discard(head)


# result_storage: never written (persist_result=False), but given, Prefect does not ask the
# server for its default storage (a blocking request) at each run
@flow(name="turn", persist_result=False, log_prints=False, validate_parameters=False,
      result_storage=get_current_settings().results.local_storage_path)
async def turn(turn_id: str) -> State[str]:
    service, ctx, head = _TURN.get()
    run_id = get_run_context().flow_run.id  # type: ignore[union-attr]
    ctx.flow_run_id = str(run_id)
    # beside the pipeline, not before it: the turn's link (crash recovery) and the run's name
    books = asyncio.gather(
        asyncio.to_thread(recovery.link_flow_run, service.engine, turn_id, ctx.flow_run_id),
        name_run(service, ctx, run_id))
    try:
        reply = await run_pipeline(
            service, ctx,
            execute=execute_step,
            await_approval=wait_for_owner, via="prefect-ui", head=head,
        )
    except Exception as exc:  # the outermost boundary of a turn: tell the user, keep the turn
        await service.fail_turn(ctx, exc)
        await asyncio.gather(books, return_exceptions=True)
        raise  # the flow run shows as Failed in the Prefect UI
    await books  # a failed link or rename fails the turn, as it did before the loop began
    await service.close_turn(ctx, reply, "completed")  # plain code: the bookkeeping
    return await describe_run(service, ctx, run_id, reply)  # the state named after the outcome


async def crash_runs(flow_run_ids: list[str]) -> None:
    """At start-up: the runs of turns a dead gateway left Running or Paused end as Crashed
    (their turns are failed already), so the Prefect UI no longer offers to resume them."""
    message = i18n.get("ERR_TURN_INTERRUPTED", None)
    async with get_client() as client:
        for run_id in flow_run_ids:
            try:
                await client.set_flow_run_state(UUID(run_id), Crashed(message=message),
                                                force=True)
            except Exception:  # history only: the gateway starts even if Prefect says no
                log.warning("turn.crash_mark_failed flow_run_id=%s", run_id, exc_info=True)


__all__ = ["crash_runs", "resume_approval", "run_turn", "turn"]
