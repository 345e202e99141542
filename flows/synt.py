"""The synt cascade (SPEC §7.3): compose first, then generate, never admitted unsigned.

Each run (`synt/check`, on an interval) proposes a composition or a generation for every
due proto-mnest, then runs the generations the owner accepted since the last run. A
candidate lands in METNOS_HOME/executors/ and stays refused until `metnos synt sign`.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from tasks.synt import synt_check_task, synt_generate_task, synt_pending_task


@flow(name="synt", persist_result=False)
async def synt() -> dict[str, Any]:
    logger = get_run_logger()
    proposed = await synt_check_task()
    logger.info("proposals: %s", proposed)
    generated = []
    for job_id in await synt_pending_task():
        outcome = await synt_generate_task(job_id)
        logger.info("generation %s: %s", job_id, outcome)
        generated.append(outcome)
    return {"proposed": proposed, "generated": generated}
