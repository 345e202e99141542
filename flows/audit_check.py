"""Nightly flow: verify the audit chain and its signed checkpoint; a failure shows in the UI."""

from __future__ import annotations

from prefect import flow, get_run_logger

from tasks.audit import verify_audit_task


@flow(name="audit-check", persist_result=False)
async def audit_check() -> dict[str, object]:
    report = await verify_audit_task()
    logger = get_run_logger()
    if not report["ok"]:
        logger.error("audit chain broken at line %s: %s",
                     report["first_bad_line"], report["reason_key"])
        raise RuntimeError(f"audit chain broken at line {report['first_bad_line']}")
    logger.info("audit chain verified: %s lines", report["lines"])
    return report
