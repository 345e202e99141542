"""One compiled Tutor catalog for the whole test session (a cold compile takes 6-8 s), and
how a test's home gets it: the catalog and the key that signed it are copied in, so the
home's own verification (`keys/tutor.pub`) admits it as it would its own compile. Import
`compiled_catalog` into a test module (or a conftest) to use the fixture."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metnos.tutor.compile import compile_catalog


@pytest.fixture(scope="session")
def compiled_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("tutor_catalog")
    compile_catalog(home)
    return home


def install_catalog(compiled: Path, home: Path) -> None:
    """The session's compiled catalog in `home`, with the key that signed it."""
    shutil.copytree(compiled / "tutor", home / "tutor", dirs_exist_ok=True)
    (home / "keys").mkdir(parents=True, exist_ok=True)
    for name in ("tutor.key", "tutor.pub"):
        shutil.copy2(compiled / "keys" / name, home / "keys" / name)
