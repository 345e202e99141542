"""The tables of every feature, listed once, above every ring.

The database ring declares its own tables (`metnos.db.models`) and knows no feature's: each
feature declares its tables in its own models module; importing this module registers them all
in `SQLModel.metadata`, and `create_tables` creates the missing ones. The places that create
tables (`metnos init`, the runtime, the digest, tests) import it. What a feature adds to a turn
(effects, undoers, host checks, the embedded planner's first readings...) is registered with
the runtime by `metnos.wiring`.
"""

from __future__ import annotations

from sqlalchemy import Engine

from metnos.approvals import models as _approvals  # noqa: F401 - each import registers tables
from metnos.db import models as _core  # noqa: F401
from metnos.db.engine import create_registered_tables
from metnos.mnestoma import models as _mnestoma  # noqa: F401
from metnos.pairing import models as _pairing  # noqa: F401
from metnos.policy import usage_models as _usage  # noqa: F401
from metnos.proposals import models as _proposals  # noqa: F401
from metnos.reminders import outbox as _outbox  # noqa: F401
from metnos.schedules import models as _schedules  # noqa: F401
from metnos.tutor import confirm_models as _tutor_confirm  # noqa: F401
from metnos.tutor import feedback_models as _tutor_feedback  # noqa: F401
from metnos.web import models as _web  # noqa: F401


def create_tables(engine: Engine) -> None:
    """Create the missing tables of every module above, then bring older ones up to date."""
    create_registered_tables(engine)
