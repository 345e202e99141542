"""A page of another origin cannot move Metnos's pool or answer its proposals through the
owner's web session (CSRF): archiving an executor, undoing a move, signing a candidate,
accepting a proposal — each is refused with 403 and nothing changes."""

from __future__ import annotations

import pytest

from metnos.faces.registry import create_tables
from metnos.features.mnestoma import moves
from metnos.ground.db.engine import database_url, make_engine
from tests.support.home import MakeHome
from tests.web.support import ORIGIN, browser, log_in

pytestmark = pytest.mark.attack

CHANGES = [
    ("/api/evolution/executors/fs_read/archive", {"why": "a page asked"}),
    ("/api/evolution/moves/x/undo", {}),
    ("/api/synt/candidates/ocr_image/sign", {}),
    ("/synt/ocr_image/sign", None),
    ("/api/proposals/x/accept", {}),
]


@pytest.mark.parametrize(("path", "body"), CHANGES, ids=[p for p, _ in CHANGES])
@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:9999", "null"])
async def test_a_foreign_page_cannot_change_the_pool(make_home: MakeHome, path: str,
                                                     body: dict[str, str] | None,
                                                     origin: str) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        await log_in(client, home)
        resp = await client.post(path, json=body, headers={"Origin": origin})
        assert resp.status_code == 403, resp.text
        assert resp.json()["error"]["key"] == "ERR_ORIGIN_FORBIDDEN"
        same = await client.post("/api/evolution/executors/fs_read/quarantine",
                                 json={"why": "the owner's own page"},
                                 headers={"Origin": ORIGIN})
        assert same.status_code == 200, same.text  # the same session, from our own page
    engine = make_engine(database_url(home.settings))
    create_tables(engine)
    assert moves.states(engine).get("fs_read") == "quarantined"  # never archived
    engine.dispose()
