"""The attack suite (issue 3): every test here is one attack with its expected outcome.

Each attack test carries `@pytest.mark.attack`; the terminal summary reports how many were
tried and how many succeeded (an attack "succeeds" when its test fails). Target: 0.
"""

from __future__ import annotations

from typing import Any

import pytest

_tried: list[str] = []
_succeeded: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "attack: one attack of the security suite (tests/security)")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call" or "attack" not in report.keywords:
        return
    _tried.append(report.nodeid)
    if report.failed:
        _succeeded.append(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _tried:
        return
    terminalreporter.write_sep("-", "security attack suite")
    terminalreporter.write_line(
        f"attacks tried: {len(_tried)}; successful attacks: {len(_succeeded)}")
    for nodeid in _succeeded:
        terminalreporter.write_line(f"  SUCCEEDED: {nodeid}")
