"""Telling the owner that `metnos serve` restarted one of its parts.

One outbox row for the owner, on the chat they last wrote from (the path of the members'
notices: `metnos.features.notify.members.owner_destination`), in the instance's language and plain
words, delivered by the gateway's outbox loop (Telegram message, web chat notice, or `metnos chat`'s
notices). Written by the supervisor after the part is healthy again (the database too, when
it was the database that stopped).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from sqlalchemy.exc import SQLAlchemyError

from metnos.features.notify.members import owner_destination
from metnos.features.reminders import outbox
from metnos.features.reminders.outbox import Outbox
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings
from metnos.mechanisms.policy.approver import OWNER_USER_ID

log = logging.getLogger(__name__)

KIND = "service"  # the outbox rows' kind


def restart_text(settings: Settings, name: str, died_at: datetime) -> str:
    lang = settings.lang
    when = died_at.astimezone(settings.tz).strftime("%H:%M")
    part = i18n.get(f"MSG_SERVE_PART_{name.replace('-', '_').upper()}", lang)
    return i18n.get("MSG_SERVE_RESTARTED_NOTICE", lang, part=part, time=when)


def tell_owner_restarted(settings: Settings, name: str, died_at: datetime) -> bool:
    """The owner's notice that `name` stopped at `died_at` and was restarted; False (and a
    log line) when the database could not take it."""
    text = restart_text(settings, name, died_at)
    try:
        engine = make_engine(database_url(settings))
    except MetnosError:
        log.exception("serve.notice_failed name=%s", name)
        return False
    try:
        with db_session(engine) as db:
            where = owner_destination(db, settings)
            outbox.add(db, Outbox(kind=KIND, user_id=OWNER_USER_ID, channel=where.channel,
                                  address=where.address, text=text, lang=settings.lang,
                                  due_at=datetime.now(UTC)))
        return True
    except SQLAlchemyError:
        log.exception("serve.notice_failed name=%s", name)
        return False
    finally:
        engine.dispose()
