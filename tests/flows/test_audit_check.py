"""The nightly `audit-check` flow against the session's Prefect server."""

from __future__ import annotations

import pytest

from flows.audit_check import audit_check
from metnos.mechanisms.audit import open_audit_log
from tests.support.home import MakeHome


async def test_audit_check_passes_then_fails_on_an_edited_line(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en")
    log = open_audit_log(home.settings)
    for n in range(3):
        log.append(sender="owner", channel="test", action=f"step{n}", decision="info",
                   reason="ok", outcome="done")
    log.close()
    report = await audit_check()
    assert report["ok"] is True and report["lines"] == 3

    path = home.settings.audit_dir / "audit.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace("step1", "stepX")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RuntimeError, match="line 2"):
        await audit_check()
