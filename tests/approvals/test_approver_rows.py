"""The approver on the approval row (issue 25, finding 8): the asker's turn waits and uses
it, the approver (the owner, for a member's step on the household's things) decides it, and
the owner can always see and deny a member's pending action. On the database."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text
from sqlmodel import Session

from metnos.faces.registry import create_tables
from metnos.ground.db.engine import make_engine
from metnos.mechanisms import approvals
from metnos.mechanisms.approvals import ApprovalError
from tests.security.test_approval_attacks import _pending
from tests.support.pg import TestPostgres

MEMBER, OTHER = "telegram:8202", "telegram:9303"


def _members(db: Session, approver: str) -> approvals.Approval:
    return _pending(db, user_id=MEMBER, session_id="telegram-8202", channel="telegram",
                    approver=approver, sources=("fs_read (notes.md)",))


@pytest.mark.attack
def test_a_member_cannot_decide_what_waits_for_the_owner(db_session: Session) -> None:
    row = _members(db_session, "owner")
    for who in (MEMBER, OTHER):
        with pytest.raises(ApprovalError) as caught:
            approvals.decide(db_session, row.id, "approve", user_id=who,
                             session_id=row.session_id, via="telegram")
        assert caught.value.http_status == 403
        assert caught.value.key == ("ERR_APPROVAL_OWNER_DECIDES" if who == MEMBER
                                    else "ERR_APPROVAL_WRONG_USER")
    assert approvals.get(db_session, row.id).status == "pending"
    # the owner decides from their own conversation; the member's turn uses it
    decided = approvals.decide(db_session, row.id, "approve", user_id="owner",
                               session_id="web-owner", via="api")
    assert (decided.status, decided.decided_by) == ("approved", "owner")
    with pytest.raises(ApprovalError):  # the owner's session is not the asker's turn
        approvals.consume(db_session, row.id, user_id="owner", session_id="web-owner",
                          digest=row.digest)
    used = approvals.consume(db_session, row.id, user_id=MEMBER, session_id=row.session_id,
                             digest=row.digest)
    assert used.status == "used"
    shown = approvals.public(used)
    assert (shown["asker"], shown["approver"], shown["sources"]) == (
        MEMBER, "owner", ["fs_read (notes.md)"])


def test_the_owner_can_deny_a_members_own_step(db_session: Session) -> None:
    row = _members(db_session, MEMBER)  # a member's own (a list addition): theirs to decide
    with pytest.raises(ApprovalError):
        approvals.decide(db_session, row.id, "deny", user_id=OTHER, via="telegram")
    denied = approvals.decide(db_session, row.id, "deny", user_id="owner", via="cli")
    assert (denied.status, denied.decided_by) == ("denied", "owner")


def test_the_owner_lists_everyones_a_member_their_own(db_session: Session) -> None:
    mine = _pending(db_session)
    waits = _members(db_session, "owner")
    own = _members(db_session, MEMBER)
    listed = {r.id for r in approvals.list_approvals(db_session, user_id="owner")}
    assert {mine.id, waits.id, own.id} <= listed
    members = {r.id for r in approvals.list_approvals(db_session, user_id=MEMBER)}
    assert {waits.id, own.id} <= members and mine.id not in members
    assert not {r.id for r in approvals.list_approvals(db_session, user_id=OTHER)} & listed


def test_an_older_database_gains_the_columns(pg_server: TestPostgres) -> None:
    """An instance created before the approver existed: start-up adds the columns, and its
    rows (approver NULL) are decided by their own user, as before."""
    name = pg_server.fresh_database()
    engine = make_engine(pg_server.url(name))
    try:
        create_tables(engine)
        with engine.begin() as conn:
            conn.execute(text('ALTER TABLE approval DROP COLUMN approver, DROP COLUMN sources'))
        assert "approver" not in {c["name"] for c in inspect(engine).get_columns("approval")}
        create_tables(engine)
        assert {"approver", "sources"} <= {
            c["name"] for c in inspect(engine).get_columns("approval")}
        with Session(engine) as db:
            row = _pending(db)
            db.execute(text("UPDATE approval SET approver = NULL, sources = NULL "
                            "WHERE id = :id"), {"id": row.id})
            db.commit()
            legacy = approvals.get(db, row.id)
            assert approvals.approver_of(legacy) == "owner"
            assert approvals.public(legacy)["sources"] == []
            assert approvals.decide(db, row.id, "approve", user_id="owner",
                                    via="api").status == "approved"
    finally:
        engine.dispose()
        pg_server.drop_database(name)
