"""What the features add to the core, listed once, above every ring.

The core knows no feature: the database ring declares its own tables (`metnos.db.models`), the
policy ring its own host checks, the embedded planner its own sentences. Each feature declares
its tables, checks and planners in its own modules; importing this module registers them all
(the tables in `SQLModel.metadata`, the checks with `metnos.policy.host_checks`, a reminder's
timed sentences with `metnos.llm.embedded`), and `create_tables` creates the missing tables.
The places that create tables or run turns (`metnos init`, the turn service, the digest, tests)
import it.
"""

from __future__ import annotations

from sqlalchemy import Engine

from metnos.approvals import models as _approvals  # noqa: F401 - each import registers tables
from metnos.archiving import archive_destination
from metnos.db import models as _core  # noqa: F401
from metnos.db.engine import create_registered_tables
from metnos.lists_merge import check_list_name
from metnos.llm.embedded import add_first_planner
from metnos.mnestoma import models as _mnestoma  # noqa: F401
from metnos.pairing import models as _pairing  # noqa: F401
from metnos.policy import usage_models as _usage  # noqa: F401
from metnos.policy.host_checks import register_host_check
from metnos.proposals import models as _proposals  # noqa: F401
from metnos.reminders import outbox as _outbox  # noqa: F401
from metnos.schedules import models as _schedules  # noqa: F401
from metnos.schedules.cadence import check_cadence
from metnos.schedules.planning import plan_timed
from metnos.tutor import confirm_models as _tutor_confirm  # noqa: F401
from metnos.tutor import feedback_models as _tutor_feedback  # noqa: F401
from metnos.web import models as _web  # noqa: F401

register_host_check("list_name", check_list_name)
register_host_check("archive_destination", archive_destination)
register_host_check("cadence", check_cadence)
add_first_planner(plan_timed)


def create_tables(engine: Engine) -> None:
    """Create the missing tables of every module above, then bring older ones up to date."""
    create_registered_tables(engine)
