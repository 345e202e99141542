"""The attack tally: every test marked `@pytest.mark.attack`, wherever it lives, is counted.

An attack is *tried* when its test body ran, *successful* when that body failed (target: 0),
and *skipped* when it never ran (a tool not admitted, a missing system feature). A skipped
attack proves nothing, so it is reported apart, and under CI (`CI` set) the session fails
with the list of skipped attacks: CI must run every attack.

Loaded for the whole session from tests/conftest.py (`pytest_plugins`), so attacks outside
tests/security (tests/web, tests/webchat, tests/gateway) are counted too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.system import in_ci


@dataclass
class Tally:
    tried: list[str] = field(default_factory=list)
    succeeded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def record(self, report: pytest.TestReport) -> None:
        if hasattr(report, "wasxfail"):  # ran, and its expected failure is a documented risk
            if report.when == "call":
                self.tried.append(report.nodeid)
        elif report.skipped:
            self.skipped[report.nodeid] = _skip_reason(report)
        elif report.when == "call":
            self.tried.append(report.nodeid)
            if report.failed:
                self.succeeded.append(report.nodeid)
        elif report.failed and report.when == "setup":
            self.errors.append(report.nodeid)

    def line(self) -> str:
        text = (f"attacks tried: {len(self.tried)}; skipped: {len(self.skipped)}; "
                f"successful attacks: {len(self.succeeded)}")
        return text + (f"; errors: {len(self.errors)}" if self.errors else "")


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


_TALLY = Tally()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "attack: one attack, counted by tests/support/attacks.py")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "attack" in report.keywords:
        _TALLY.record(report)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if in_ci() and _TALLY.skipped and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    tally = _TALLY
    if not (tally.tried or tally.skipped or tally.errors):
        return
    terminalreporter.write_sep("-", "security attack suite")
    terminalreporter.write_line(tally.line())
    for nodeid in tally.succeeded:
        terminalreporter.write_line(f"  SUCCEEDED: {nodeid}")
    for nodeid, reason in tally.skipped.items():
        terminalreporter.write_line(f"  SKIPPED: {nodeid} ({reason})")
    for nodeid in tally.errors:
        terminalreporter.write_line(f"  NOT RUN (setup error): {nodeid}")
    if in_ci() and tally.skipped:
        terminalreporter.write_line(
            f"CI=1: {len(tally.skipped)} attack(s) skipped; the session fails", red=True)
