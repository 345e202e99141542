"""The web login's tests: the attack-style ones carry `@pytest.mark.attack` and are counted
with the security suite (tests/security/conftest.py)."""

from __future__ import annotations

from typing import Any

from tests.security import conftest as security

pytest_configure = security.pytest_configure
pytest_runtest_logreport = security.pytest_runtest_logreport


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The suite's summary, once: the security conftest prints it when it is loaded too."""
    if security not in terminalreporter.config.pluginmanager.get_plugins():
        security.pytest_terminal_summary(terminalreporter)
