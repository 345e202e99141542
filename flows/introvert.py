"""The nightly introvert steps (SPEC §7.3): fuse, generalise, specialise — as one batch of
proposals, never across traces. The domain work is `metnos.features.mnestoma.introvert`; the owner's
answer reaches the synt through the proposals' handlers."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from tasks.evolution import introvert_task


@flow(name="introvert", persist_result=False)
async def introvert() -> dict[str, Any]:
    report = await introvert_task()
    get_run_logger().info("introvert batch %s: %s (%s already proposed before)",
                          report["batch"], report["kinds"] or "nothing", report["repeated"])
    return report
