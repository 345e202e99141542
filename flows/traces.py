"""The traces flow (SPEC §7.4, §12 "weekly traces"): community detection on the mnestoma.

Its deployment `traces/weekly` checks once a day and detects only when
`[evolution] traces_every_days` (7) have passed since the newest traces (checking is one
query), so the rhythm follows the setting; `force=True` detects now. The domain work is
`metnos.features.mnestoma.traces`.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from tasks.evolution import traces_detect_task, traces_due_task


@flow(name="traces", persist_result=False)
async def traces(force: bool = False, seed: int = 0) -> dict[str, Any]:
    if not force and not await traces_due_task():
        return {"ran": False}
    report = await traces_detect_task(seed)
    get_run_logger().info("traces generation %s: %s traces, modularity %.3f",
                          report["generation"], len(report["traces"]), report["modularity"])
    return {"ran": True, **report}
