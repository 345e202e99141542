from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.undo.support import Actor, make_actor


@pytest.fixture
def actor(tmp_path: Path) -> Iterator[Actor]:
    made = make_actor(tmp_path)
    yield made
    assert made.audit is not None
    made.audit.close()
