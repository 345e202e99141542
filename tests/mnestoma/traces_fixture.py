"""Planting a mnestoma for the traces, routing and introvert tests: rows written straight
into the real tables (what `metnos.features.mnestoma.record` writes after real turns)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Engine

from metnos.features.mnestoma.models import ExecutorUse, Mnest
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.settings import Settings

INVOICES = {("fs_read", "pdf_ext"): 10.0, ("pdf_ext", "archive"): 10.0,
            ("archive", "notify"): 9.0, ("fs_read", "archive"): 3.0,
            ("pdf_ext", "pdf_ext"): 2.0}
PHOTOS = {("fs_find", "fs_move"): 8.0, ("fs_move", "fs_find"): 4.0, ("fs_move", "fs_move"): 2.0}
BRIDGE = {("notify", "fs_find"): 1.0}  # one weak hand-off between the two habits
ZERO = {("fs_move", "archive"): 0.0}  # decayed to nothing: left out of the graph


@contextmanager
def engine_of(settings: Settings) -> Iterator[Engine]:
    engine = make_engine(database_url(settings))
    try:
        yield engine
    finally:
        engine.dispose()


def plant(engine: Engine, mnests: dict[tuple[str, str], float],
          used: Iterable[str] = ()) -> None:
    """Store `mnests` (A, B) → weight, and an `ExecutorUse` row for every executor named."""
    names = {n for pair in mnests for n in pair} | set(used)
    with db_session(engine) as db:
        for (src, dst), weight in mnests.items():
            db.add(Mnest(src=src, dst=dst, weight=weight))
        for name in sorted(names):
            if db.get(ExecutorUse, name) is None:
                db.add(ExecutorUse(name=name, invocations=1))
