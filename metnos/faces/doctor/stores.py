"""What the instance keeps on disk: the Tutor's catalog, the trash and the before-records
(what `metnos undo` needs), the free space, and the audit chain."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from metnos.faces.doctor.finding import Finding, size, text
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import audit_log_path, verify_instance
from metnos.mechanisms.audit.log import checkpoint_path

KEPT_LIMIT = 10 * 1000**3  # trash + before-records above this: worth a look
FREE_MIN = 1000**3  # less free space than this, or than FREE_MIN_SHARE of the disk: a problem
FREE_MIN_SHARE = 0.05
WALK_S = 5.0  # a size summed for longer than this is shown as "at least"
TRASH = ".trash"


def check_tutor(settings: Settings, lang: str | None) -> Finding:
    from metnos.features.tutor.catalog import CatalogUnavailable, open_catalog

    if not settings.tutor.enabled:
        return Finding("tutor", None, text("DOCTOR_TUTOR_OFF", lang))
    try:
        catalog = open_catalog(settings.home)
    except CatalogUnavailable as exc:
        if exc.reason == "missing":
            return Finding("tutor", None, text("DOCTOR_TUTOR_MISSING", lang),
                           text("DOCTOR_FIX_TUTOR", lang))
        return Finding("tutor", False, text("DOCTOR_TUTOR_REFUSED", lang, reason=exc.reason),
                       text("DOCTOR_FIX_TUTOR", lang))
    return Finding("tutor", True, text("DOCTOR_TUTOR_OK", lang, sections=len(catalog.sections),
                                       version=catalog.version[:12]))


def check_disk(settings: Settings, lang: str | None) -> Finding:
    deadline = time.monotonic() + WALK_S
    trash = settings.workspace / TRASH
    before = settings.state_dir / "before"
    kept_trash, whole_trash = _size(trash, deadline)
    kept_before, whole_before = _size(before, deadline)
    vars = {"trash": size(kept_trash), "before": size(kept_before)}
    key = "DOCTOR_DISK_KEPT" if whole_trash and whole_before else "DOCTOR_DISK_KEPT_AT_LEAST"
    usage = shutil.disk_usage(settings.home)
    kept = text(key, lang, **vars, free=size(usage.free))
    if usage.free < FREE_MIN or usage.free < usage.total * FREE_MIN_SHARE:
        return Finding("disk", False, text("DOCTOR_DISK_LOW", lang, kept=kept),
                       text("DOCTOR_FIX_DISK_LOW", lang, home=str(settings.home),
                            trash=str(trash), before=str(before)))
    if kept_trash + kept_before > KEPT_LIMIT:
        return Finding("disk", False, text("DOCTOR_DISK_LARGE", lang, kept=kept),
                       text("DOCTOR_FIX_DISK_LARGE", lang, trash=str(trash),
                            before=str(before)))
    return Finding("disk", True, kept)


def _size(root: Path, deadline: float) -> tuple[int, bool]:
    """The bytes of the files under `root` (links not followed), and whether the walk ended
    before `deadline`."""
    total, stack = 0, [root]
    while stack:
        if time.monotonic() > deadline:
            return total, False
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    else:
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
        except OSError:  # gone meanwhile, not a folder, not ours to read
            continue
    return total, True


def check_audit(settings: Settings, lang: str | None) -> Finding:
    report = verify_instance(settings)
    if report.ok:
        return Finding("audit", True, report.message(lang))
    fix = ("DOCTOR_FIX_AUDIT_TORN" if report.reason_key == "ERR_AUDIT_TORN_TAIL"
           else "DOCTOR_FIX_AUDIT")
    return Finding("audit", False, report.message(lang),
                   text(fix, lang, log=str(audit_log_path(settings)),
                        checkpoint=str(checkpoint_path(settings))))
