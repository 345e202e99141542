"""The tables of every feature, listed once, above every ring.

The database ring declares its own tables (`metnos.ground.db.models`) and knows no feature's: each
feature declares its tables in its own models module; importing this module registers them all
in `SQLModel.metadata`, and `create_tables` creates the missing ones. The places that create
tables (`metnos init`, the runtime, the digest, tests) import it. What a feature adds to a turn
(effects, undoers, host checks, the embedded planner's first readings...) is registered with
the runtime by `metnos.faces.wiring`.
"""

from __future__ import annotations

from sqlalchemy import Engine

from metnos.faces.web import models as _web  # noqa: F401
from metnos.features.attachments import models as _attachments  # noqa: F401
from metnos.features.mnestoma import models as _mnestoma  # noqa: F401
from metnos.features.pairing import models as _pairing  # noqa: F401
from metnos.features.proposals import models as _proposals  # noqa: F401
from metnos.features.reminders import outbox as _outbox  # noqa: F401
from metnos.features.schedules import models as _schedules  # noqa: F401
from metnos.features.tutor import confirm_models as _tutor_confirm  # noqa: F401
from metnos.features.tutor import feedback_models as _tutor_feedback  # noqa: F401
from metnos.ground.db import models as _core  # noqa: F401
from metnos.ground.db.engine import create_registered_tables
from metnos.mechanisms.approvals import models as _approvals  # noqa: F401 - each import registers tables
from metnos.mechanisms.policy import usage_models as _usage  # noqa: F401


def create_tables(engine: Engine) -> None:
    """Create the missing tables of every module above, then bring older ones up to date."""
    create_registered_tables(engine)
