"""What the Tutor's tests share: a home on the real database, numbered turns, the probes'
clock and owner, and the mixed requests that the classifier and the split both take apart."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine

from metnos.features.tutor.probes import Asker
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import AuditLog, open_audit_log
from metnos.turns.context import TurnContext

NOW = datetime(2026, 12, 1, 22, 0, tzinfo=UTC)  # the probes' and the views' clock
OWNER = Asker("owner-1", is_owner=True)

# (text, lang, explained, operative): one explanation, then one operative clause kept verbatim
MIXED = [
    ("explain undo and then undo yesterday's change", "en", "explain undo",
     "undo yesterday's change"),
    ("how do I undo a change? and undo yesterday's too", "en", "how do I undo a change",
     "undo yesterday's too"),
    ("Explain the approvals and then delete old_report.pdf", "en", "Explain the approvals",
     "delete old_report.pdf"),
    ("Spiegami le approvazioni e poi cancella vecchia_relazione.pdf", "it",
     "Spiegami le approvazioni", "cancella vecchia_relazione.pdf"),
]


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
