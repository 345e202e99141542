"""The start-up canary against the real bwrap: it passes here, and it fails closed."""

from __future__ import annotations

import stat
from pathlib import Path

from metnos.mechanisms.sandbox import run_canary
from metnos.mechanisms.sandbox.canary import CHECKS


async def test_canary_passes(bwrap: Path) -> None:
    """Its duration is a figure of bench/sandbox_limits.py, not asserted here."""
    report = await run_canary(bwrap=bwrap)
    assert report.ok, report.detail
    assert set(report.checks) == set(CHECKS) and all(report.checks.values())


async def test_canary_on_a_real_workspace_hides_its_audit(workspace: Path, bwrap: Path) -> None:
    report = await run_canary(workspace, bwrap=bwrap)
    assert report.ok, report.detail
    assert sorted(p.name for p in workspace.iterdir()) == [".audit", "hello.txt"]  # untouched


async def test_canary_fails_without_bwrap(tmp_path: Path) -> None:
    report = await run_canary(bwrap=tmp_path / "no-bwrap")
    assert not report.ok and report.checks == {"started": False}
    assert "ERR_SANDBOX" in report.detail


async def test_canary_notices_a_weakened_sandbox(tmp_path: Path, bwrap: Path) -> None:
    """A bwrap wrapper that drops --unshare-net and --clearenv must be caught."""
    weak = tmp_path / "weak-bwrap"
    weak.write_text(
        "#!/usr/bin/python3\nimport os, sys\n"
        "argv = [a for a in sys.argv[1:] if a not in ('--unshare-net', '--clearenv')]\n"
        f"os.execv({str(bwrap)!r}, [{str(bwrap)!r}, *argv])\n"
    )
    weak.chmod(weak.stat().st_mode | stat.S_IXUSR)
    report = await run_canary(bwrap=weak)
    assert not report.ok
    assert report.checks["started"] is True
    assert report.checks["network_blocked"] is False and report.checks["env_clean"] is False
    assert "network_blocked" in report.detail and "env_clean" in report.detail
