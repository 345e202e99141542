"""The ager's flow (SPEC §7.5, §12): "triggered by use counters, checked on a schedule".

The deployment `ager/check` runs it every few minutes: checking is one query, and a cycle
runs only when `ager_every` invocations passed since the last one (a sleeping system does not
age). The domain work is `metnos.features.mnestoma.ager`.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from tasks.evolution import ager_cycle_task, ager_due_task


@flow(name="ager", persist_result=False)
async def ager() -> dict[str, Any]:
    if not await ager_due_task():
        return {"ran": False}
    report = await ager_cycle_task()
    get_run_logger().info(
        "ager cycle at use clock %s: %s mnests decayed, quarantined %s, released %s, "
        "%s archiving proposals", report["clock"], report["decayed"], report["quarantined"],
        report["released"], len(report["proposed"]))
    return report
