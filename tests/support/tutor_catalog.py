"""One compiled Tutor catalog for the whole test session (a cold compile takes 6-8 s), and
how a test's home gets it: the catalog and the key that signed it are copied in, so the
home's own verification (`keys/tutor.pub`) admits it as it would its own compile. Import
`compiled_catalog` into a test module (or a conftest) to use the fixture.

Under pytest-xdist the workers share it: the first to need it compiles it in the session's
common temp dir (the parent of every worker's basetemp) under a lock, the others read it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metnos.features.tutor.compile import compile_catalog
from tests.support.system import machine_lock


@pytest.fixture(scope="session")
def compiled_catalog(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not hasattr(request.config, "workerinput"):  # not a pytest-xdist worker
        home = tmp_path_factory.mktemp("tutor_catalog")
        compile_catalog(home)
        return home
    # every worker's basetemp is <session root>/popen-gwN: the root is the session's own
    home = tmp_path_factory.getbasetemp().parent / "tutor_catalog"
    with machine_lock(f"tutor-catalog-{home.parent.name}"):
        if not (home / "compiled").exists():
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir()
            compile_catalog(home)
            (home / "compiled").touch()
    return home


def install_catalog(compiled: Path, home: Path) -> None:
    """The session's compiled catalog in `home`, with the key that signed it."""
    shutil.copytree(compiled / "tutor", home / "tutor", dirs_exist_ok=True)
    (home / "keys").mkdir(parents=True, exist_ok=True)
    for name in ("tutor.key", "tutor.pub"):
        shutil.copy2(compiled / "keys" / name, home / "keys" / name)
