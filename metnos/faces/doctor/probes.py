"""The two live probes: the model (one request, through the degrade helper's check) and the
sandbox canary (the very probe the gateway runs at start-up, run here on the workspace); and
whether the system has what `ocr` reads photos with (Debian's tesseract and its languages)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from metnos.faces.doctor.finding import Finding, text
from metnos.ground.settings import Settings
from metnos.mechanisms.sandbox import run_canary
from metnos.mechanisms.sandbox.bwrap import find_bwrap

BWRAP_SAYS = re.compile(r"bwrap: [^'\"\\\n;]+")
DETAIL_CHARS = 160
TESSDATA = Path("/usr/share/tesseract-ocr")  # <version>/tessdata/<lang>.traineddata
OCR_LANGS = ("ita", "eng")


async def check_model(settings: Settings, lang: str | None) -> Finding:
    from metnos.mechanisms.llm.health import check_model as probe

    check = await probe(settings)
    ok = {"ok": True, "embedded": True, "unknown": None}.get(check.state, False)
    return Finding("model", ok, check.line(lang), check.fix(lang) if ok is not True else None)


async def check_sandbox(settings: Settings, lang: str | None) -> Finding:
    binary = find_bwrap()
    if not os.access(binary, os.X_OK):
        return Finding("sandbox", False, text("DOCTOR_SANDBOX_NO_BWRAP", lang, path=str(binary)),
                       text("DOCTOR_FIX_SANDBOX_BWRAP", lang))
    workspace = settings.workspace if settings.workspace.is_dir() else None
    report = await run_canary(workspace)
    if report.ok:
        return Finding("sandbox", True, text("DOCTOR_SANDBOX_OK", lang, checks=len(report.checks)))
    if not report.checks.get("started", False):
        return Finding("sandbox", False,
                       text("DOCTOR_SANDBOX_NOT_STARTED", lang, detail=_detail(report.detail)),
                       text("DOCTOR_FIX_SANDBOX_USERNS", lang))
    return Finding("sandbox", False, text("DOCTOR_SANDBOX_LEAKS", lang, failed=report.detail),
                   text("DOCTOR_FIX_SANDBOX_LEAKS", lang))


def _detail(detail: str) -> str:
    """What bubblewrap said when it has spoken, else the end of the error (outside text: the
    CLI escapes it for the terminal)."""
    said = BWRAP_SAYS.findall(detail)
    shown = said[-1] if said else detail
    return shown if len(shown) <= DETAIL_CHARS else "…" + shown[-DETAIL_CHARS:]


def check_ocr(settings: Settings, lang: str | None) -> Finding:
    """Photos are always kept; reading their text needs tesseract and its Italian and English
    data in the system's /usr (what the sandbox sees)."""
    binary = shutil.which("tesseract", path="/usr/bin:/bin")
    found = {p.name.split(".")[0] for p in TESSDATA.glob("*/tessdata/*.traineddata")}
    missing = [code for code in OCR_LANGS if code not in found]
    if binary is None or missing:
        return Finding("ocr", None, text("DOCTOR_OCR_MISSING", lang),
                       text("DOCTOR_FIX_OCR", lang))
    return Finding("ocr", True, text("DOCTOR_OCR_OK", lang))
