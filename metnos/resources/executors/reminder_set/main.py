"""reminder_set: check a reminder and give it an id (Metnos executor, stdlib only).

Protocol: stdin is {"args": {...}}; stdout is one JSON object, {"ok": true, "result": ...}
or {"ok": false, "error": {"key": ..., "vars": ...}}; exit code 0 in both cases.
Nothing is scheduled here (no network, no files): the gateway schedules the reminder from
this validated result, and an undo cancels it.
"""

import json
import sys
import uuid
from datetime import UTC, datetime, timedelta

MAX_STDIN = 64 << 10
MAX_TEXT = 200
MAX_AHEAD = timedelta(days=366)
ARGS = {"text", "at"}


class Refused(Exception):
    def __init__(self, key, **vars):
        super().__init__(key)
        self.key = key
        self.vars = vars


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
    for name in sorted(set(args) - ARGS):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
    text = check_text(args.get("text"))
    at = check_at(args.get("at"), datetime.now(UTC))
    return {"text": text, "at": at.isoformat(timespec="seconds"),
            "reminder_id": uuid.uuid4().hex}


def main():
    try:
        raw = sys.stdin.buffer.read(MAX_STDIN + 1)
        if len(raw) > MAX_STDIN:
            raise Refused("ERR_EXECUTOR_INPUT_INVALID")
        try:
            request = json.loads(raw.decode("utf-8"))
        except ValueError:
            raise Refused("ERR_EXECUTOR_INPUT_INVALID") from None
        args = request.get("args") if isinstance(request, dict) else None
        if not isinstance(args, dict):
            raise Refused("ERR_EXECUTOR_INPUT_INVALID")
        reply = {"ok": True, "result": run(args)}
    except Refused as exc:
        reply = {"ok": False, "error": {"key": exc.key, "vars": exc.vars}}
    sys.stdout.write(json.dumps(reply, ensure_ascii=False))


if __name__ == "__main__":
    main()
