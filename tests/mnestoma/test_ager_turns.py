"""The ager on the use clock that real turns advance (the embedded planner, the real sandbox,
the turn's recording): first seen, then quarantined, then proposed for archiving, each after
exactly `ager_every` invocations; the core is never quarantined."""

from __future__ import annotations

from sqlmodel import select

from metnos.features.mnestoma import ager, moves
from metnos.features.proposals.models import Proposal
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from tests.mnestoma.test_record import notes_home, turn
from tests.support.home import MakeHome, gateway_client


async def test_turns_age_the_pool_exactly_every_n_invocations(make_home: MakeHome) -> None:
    home = notes_home(make_home, None, METNOS_EVOLUTION_AGER_EVERY="3",
                      METNOS_EVOLUTION_QUARANTINE_AFTER="3", METNOS_EVOLUTION_ARCHIVE_AFTER="3",
                      METNOS_EVOLUTION_ROUTE_CORE='["fs_find"]')
    engine = make_engine(database_url(home.settings))
    reports = []
    async with gateway_client(home, prefect=False) as client:
        pool = set(client.app.state.gateway.service.registry.names())  # type: ignore[attr-defined]
        for _ in range(3):
            for _ in range(2):
                await turn(client, "find the markdown files")
            assert not ager.due(engine, home.settings)  # N-1 invocations: nothing
            await turn(client, "find the markdown files")
            reports.append(ager.cycle_instance(home.settings))
    first, second, third = reports
    assert [r.clock for r in reports] == [3, 6, 9] and all(r.ran for r in reports)
    assert first.quarantined == [] and first.proposed == []  # the pool is first seen at 3
    idle = sorted(pool - {"fs_find"})
    assert second.quarantined == idle and second.proposed == []
    assert third.quarantined == [] and len(third.proposed) == len(idle)
    states = moves.states(engine)
    assert states["fs_find"] == "active"
    assert {states[name] for name in idle} == {"quarantined"}  # proposed, never archived
    with db_session(engine) as db:
        targets = sorted(p.payload["executor"] for p in db.exec(select(Proposal)))
    assert targets == idle
    engine.dispose()
