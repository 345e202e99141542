"""The Tutor's catalog, compiled again when the docs or the manifests changed (SPEC §10);
then the feedback's associations checked against it (the stale ones dropped)."""

from __future__ import annotations

from prefect import flow, get_run_logger

from tasks.tutor import feedback_check_task, refresh_task


@flow(name="tutor-catalog", persist_result=False)
async def tutor_catalog() -> dict[str, object]:
    upkeep = await refresh_task()
    logger = get_run_logger()
    report = upkeep.report
    if report is not None:
        logger.info("catalog compiled (%s): %s sections, %s reused, %s computed",
                    upkeep.reason, report.sections, report.reused, report.computed)
    elif upkeep.reason:
        logger.warning("catalog refused (%s): the owner compiles it by hand", upkeep.reason)
    checked = await feedback_check_task()
    if checked is not None and checked["dropped"]:
        logger.info("feedback: %s associations dropped (section gone or changed), %s kept",
                    checked["dropped"], checked["kept"])
    return {"reason": upkeep.reason, "compiled": report is not None,
            "reused": report.reused if report else 0,
            "computed": report.computed if report else 0}
