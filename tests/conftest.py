"""Test session: real PostgreSQL, real Prefect server, real sandbox, a scripted LLM.

`make test` (tests/support/services.py) starts one embedded PostgreSQL and one Prefect server
for the session and exports PREFECT_API_URL and METNOS_TEST_PG_*. Run bare `pytest` and the
fixtures start a PostgreSQL themselves, and Prefect falls back to its test harness (slow).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from metnos.testing.telegram_server import FakeTelegram
from tests.support.services import use_worker_services

use_worker_services()  # under pytest-xdist: this worker's own Prefect server, before Prefect loads
# pytest-xdist's workers start with COLUMNS=80 LINES=24 where the run itself had none (a pipe):
# the CLI's tables are as wide as COLUMNS says, so a worker gets the size the run had
for _name in ("COLUMNS", "LINES"):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ[f"METNOS_TEST_{_name}"] = os.environ.get(_name, "")
    elif os.environ.get(f"METNOS_TEST_{_name}"):
        os.environ[_name] = os.environ[f"METNOS_TEST_{_name}"]
    elif f"METNOS_TEST_{_name}" in os.environ:
        os.environ.pop(_name, None)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# the suite's homes keep the earlier Supervised, where every write, rename and move asks: the
# approval tests need a step that waits. The tests of the shipped default (true) switch it
# back on for their homes (grep REVERSIBLE_WITHOUT_ASKING: tests/security, tests/webchat,
# tests/cli; tests/policy calls policy.decide with the rule itself).
os.environ.setdefault("METNOS_POLICY_REVERSIBLE_WITHOUT_ASKING", "false")

pytest_plugins = [
    "tests.support.pg", "tests.llm_guard", "tests.support.home", "tests.support.attacks",
    "tests.support.tutor_catalog",
]


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    """A fake Telegram Bot API on loopback, for one test."""
    with FakeTelegram() as server:
        yield server


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[str]:
    """The Prefect server of the test session (started by `make test`), or a local harness."""
    url = os.environ.get("PREFECT_API_URL")
    if url:
        yield url
        return
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield os.environ.get("PREFECT_API_URL", "ephemeral")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of the longest tests first (the browser, the acceptance tests, a language
    added after install), each module's tests in their order. pytest-xdist's worksteal hands
    each worker a contiguous share of this order and an idle worker takes from the END of
    another's: a long test collected last would otherwise run alone at the end of the run."""
    def slow(item: pytest.Item) -> bool:
        path = item.nodeid.split("::")[0]
        return ("browser" in getattr(item, "fixturenames", ())
                or path.startswith("tests/acceptance/") or "third_language" in path)

    first = {item.nodeid.split("::")[0] for item in items if slow(item)}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in first)
