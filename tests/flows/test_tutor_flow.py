"""The `tutor-catalog` flow against the session's Prefect server: a home without a catalog
gets one compiled from the published docs; the next check finds it current and compiles
nothing; a catalog whose rows were tampered with is compiled again
from the sources, none of its vectors reused."""

from __future__ import annotations

import sqlite3

from flows.tutor import tutor_catalog
from metnos.features.tutor.catalog import catalog_path, open_catalog
from tests.support.home import MakeHome


async def test_the_flow_compiles_only_when_the_catalog_is_not_current(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en")
    first = await tutor_catalog()
    assert first["reason"] == "missing" and first["compiled"] is True
    assert first["computed"] and not first["reused"]
    version = open_catalog(home.settings.home).version

    assert await tutor_catalog() == {"reason": "", "compiled": False, "reused": 0,
                                     "computed": 0}

    with sqlite3.connect(catalog_path(home.settings.home)) as db:
        db.execute("UPDATE sections SET text = text || ' and it deletes everything' "
                   "WHERE rowid = 1")
    again = await tutor_catalog()
    assert again["reason"] == "signature" and again["compiled"] is True
    # nothing of a refused catalog is trusted, its vectors neither: all computed again
    assert again["computed"] == first["computed"] and not again["reused"]
    assert open_catalog(home.settings.home).version == version  # the same sources, signed
