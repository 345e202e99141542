from __future__ import annotations

from collections.abc import Iterator

import pytest

from metnos.testing.telegram_server import FakeTelegram


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server
