"""Every i18n key the executors' code can emit has an Italian and an English message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from metnos.ground import i18n
from metnos.ground.paths import resources_path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    *sorted(ROOT.joinpath("metnos", "mechanisms", "executors").glob("*.py")),
    ROOT.joinpath("metnos", "faces", "cli", "executors.py"),
    *sorted(resources_path("executors").glob("*/main.py")),
]
KEYS = sorted(
    {k for p in SOURCES for k in re.findall(r'"((?:ERR|MSG|CLI)_[A-Z_]+)"', p.read_text())}
)


def test_sources_found() -> None:
    assert len(KEYS) > 20


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("lang", ["it", "en"])
def test_key_has_message(key: str, lang: str) -> None:
    assert key in i18n.catalog(lang), f"{key} missing in i18n/{lang}"
