"""The acceptance tests drive the web chat in Chromium and Telegram on its fake Bot API: the
same fixtures as tests/webchat/ and tests/telegram/. Their screenshots are kept after the run
in `test-artifacts/` at the repository's root (or `METNOS_TEST_ARTIFACTS`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.webchat.conftest import browser, chromium_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where a test leaves what a person looks at afterwards (screenshots)."""
    folder = Path(os.environ.get("METNOS_TEST_ARTIFACTS") or ROOT / "test-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


__all__ = ["artifacts", "browser", "chromium_path"]
