"""👍/👎 on a real Tutor answer over HTTP, as the web chat sends them: the session cookie with
our own Origin, or the owner token; a rating counts once, for the asker only; someone else's
answer reads as unknown and leaves an audit line; without credentials, or with the cookie
from another origin, nothing is recorded."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select

from metnos.features.tutor.feedback import PENDING_TTL
from metnos.features.tutor.feedback_models import TutorAnswer, TutorAssociation, TutorGap
from metnos.ground.db.engine import database_url, make_engine, session
from metnos.ground.db.models import utcnow
from metnos.mechanisms.audit import read_tail
from tests.gateway.test_turns import wait_closed
from tests.support.home import MakeHome
from tests.support.tutor_catalog import install_catalog
from tests.web.support import ORIGIN, browser, log_in

SAME = {"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"}


def _feedback_lines(home: Any) -> list[dict[str, Any]]:
    return [r for r in read_tail(home.settings.audit_dir / "audit.jsonl", 300)
            if r.get("action") == "tutor.feedback"]


@pytest.mark.attack
async def test_feedback_over_http_is_the_askers_own(make_home: MakeHome,
                                                    compiled_catalog: Any) -> None:
    home = make_home(lang="en")
    install_catalog(compiled_catalog, home.settings.home)
    engine = make_engine(database_url(home.settings))
    with session(engine) as db:  # another person's answer (a Telegram member's)
        db.add(TutorAnswer(turn_id="turn-of-another", user_id="member-7", session_id="tg-7",
                           channel="telegram", lang="en", sections=[["x", "en", "0" * 64]],
                           catalog_version="v", expires_at=utcnow() + PENDING_TTL))
    async with browser(home) as client:
        await log_in(client, home)
        page = await client.get("/")
        assert "feedbackCauses" in page.text and "It cites the wrong page" in page.text
        resp = await client.post("/api/turns", json={"text": "What does quick-tour.md contain?"},
                                 headers=SAME)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert "](/docs/en/quick-tour#" in body["reply"]
        turn_id = body["turn_id"]
        assert [a["feedback"] for a in body["activity"] if a.get("feedback")] == [turn_id]
        await wait_closed(client, turn_id)
        path = f"/api/tutor/answers/{turn_id}/feedback"

        cross = await client.post(path, json={"rating": "up"})  # the cookie, no Origin
        assert cross.status_code == 403 and cross.json()["error"]["key"] == "ERR_ORIGIN_FORBIDDEN"
        foreign = await client.post(path, json={"rating": "up"},
                                    headers={"Origin": "http://evil.example"})
        assert foreign.status_code == 403
        client.cookies.clear()
        anonymous = await client.post(path, json={"rating": "up"}, headers=SAME)
        assert anonymous.status_code == 401
        await log_in(client, home)

        causeless = await client.post(path, json={"rating": "down"}, headers=SAME)
        assert causeless.status_code == 422
        odd = await client.post(path, json={"rating": "down", "cause": "rude"}, headers=SAME)
        assert odd.status_code == 422
        theirs = await client.post("/api/tutor/answers/turn-of-another/feedback",
                                   json={"rating": "up"}, headers=SAME)
        assert theirs.status_code == 404
        assert theirs.json()["error"]["key"] == "ERR_TUTOR_FEEDBACK_UNKNOWN"
        done = await client.post(path, json={"rating": "down", "cause": "insufficient"},
                                 headers=SAME)
        assert done.status_code == 200, done.text
        assert done.json() == {"rating": "down", "cause": "insufficient", "message":
                               "Thank you: the gap is noted, without your question's text."}
        again = await client.post(path, json={"rating": "up"}, headers=SAME)
        assert again.status_code == 409
        assert again.json()["error"]["message"] == "This answer has already been rated."

        # the stored conversation keeps the buttons' item on the answer (after a reload)
        stored = await client.get(f"/api/sessions/{body['session_id']}/messages")
        items = [a for m in stored.json()["messages"] for a in (m.get("activity") or [])]
        assert {"feedback": turn_id}.items() <= next(a for a in items if "feedback" in a).items()

    lines = _feedback_lines(home)
    assert [(r["decision"], r.get("reason"), r.get("turn_id")) for r in lines] == [
        ("deny", "ERR_TUTOR_FEEDBACK_INVALID", turn_id),
        ("deny", "ERR_TUTOR_FEEDBACK_NOT_YOURS", "turn-of-another"),
        ("info", "insufficient", turn_id),
        ("deny", "ERR_TUTOR_FEEDBACK_ALREADY", turn_id)]
    assert {r["channel"] for r in lines} == {"web"} and lines[1]["sender"] == "owner"
    with session(engine) as db:
        gaps = db.exec(select(TutorGap)).all()
        assert [g.cause for g in gaps] == ["insufficient"] and gaps[0].user_id == "owner"
        assert db.exec(select(TutorAssociation)).all() == []
        theirs_row = db.get(TutorAnswer, "turn-of-another")
        assert theirs_row is not None and theirs_row.rating is None
    engine.dispose()
