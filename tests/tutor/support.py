"""What the Tutor's database tests share: a home on the real database, and numbered turns."""

from __future__ import annotations

from sqlalchemy import Engine

from metnos.audit import AuditLog, open_audit_log
from metnos.db.engine import database_url, make_engine
from metnos.settings import Settings
from metnos.turns.context import TurnContext


class Turns:
    """A home's settings, engine and audit log, and `ctx()`: the next turn of a web chat."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine: Engine = make_engine(database_url(settings))
        self.audit: AuditLog = open_audit_log(settings)
        self.turns = 0

    def ctx(self, text: str, user: str = "owner", session_id: str = "s-1") -> TurnContext:
        self.turns += 1
        return TurnContext(turn_id=f"turn-{self.turns}", session_id=session_id, user_id=user,
                           channel="web", sender=user, lang="en", autonomy="Supervised",
                           text=text)
