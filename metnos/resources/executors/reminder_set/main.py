"""reminder_set: check a reminder and give it an id (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
Nothing is scheduled here (no network, no files): the gateway schedules the reminder from
this validated result, and an undo cancels it.
"""

import sys
import uuid
from datetime import UTC, datetime, timedelta

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import Refused, serve  # noqa: E402

MAX_STDIN = 64 << 10
MAX_TEXT = 200
MAX_AHEAD = timedelta(days=366)
ARGS = {"text", "at"}


def check_text(value):
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="text")
    text = " ".join(value.split())
    if len(text) > MAX_TEXT:
        raise Refused("ERR_REMINDER_TEXT_TOO_LONG", max=MAX_TEXT)
    return text


def check_at(value, now):
    if not isinstance(value, str):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="at")
    try:
        at = datetime.fromisoformat(value.strip())
    except ValueError:
        raise Refused("ERR_REMINDER_TIME_INVALID", at=value[:40]) from None
    if at.tzinfo is None or at.utcoffset() is None:
        raise Refused("ERR_REMINDER_TIME_INVALID", at=value[:40])
    if at <= now:
        raise Refused("ERR_REMINDER_TIME_PAST", at=value[:40])
    if at - now > MAX_AHEAD:
        raise Refused("ERR_REMINDER_TIME_TOO_FAR", at=value[:40])
    return at


def run(args):
    text = check_text(args.get("text"))
    at = check_at(args.get("at"), datetime.now(UTC))
    return {"text": text, "at": at.isoformat(timespec="seconds"),
            "reminder_id": uuid.uuid4().hex}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN)
