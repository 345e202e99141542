"""schedule_set: check a recurring task and give it an id (Metnos executor, stdlib only).

Protocol: stdin is {"args": {...}}; stdout is one JSON object, {"ok": true, "result": ...}
or {"ok": false, "error": {"key": ..., "vars": ...}}; exit code 0 in both cases.
Nothing is scheduled here (no network, no files): the host read `when` as a cadence before
the owner was asked (it set `cron`), and after this validated result it writes the task and
its Prefect schedule; an undo removes both.
"""

import json
import re
import sys
import uuid

MAX_STDIN = 64 << 10
MAX_TEXT = 500  # [schedules] max_text's default; the host applies the configured one too
MAX_WHEN = 200
ARGS = {"when", "text", "cron"}
CRON_FIELD = re.compile(r"^[\w*/,\-]+$")


class Refused(Exception):
    def __init__(self, key, **vars):
        super().__init__(key)
        self.key = key
        self.vars = vars


def tidy(value, name, limit, too_long_key):
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
    text = " ".join(value.split())
    if len(text) > limit:
        raise Refused(too_long_key, limit=limit)
    return text


def check_cron(value):
    fields = value.split() if isinstance(value, str) else []
    if len(fields) != 5 or not all(CRON_FIELD.match(f) for f in fields):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="cron")
    return " ".join(fields)


def run(args):
    for name in sorted(set(args) - ARGS):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
    return {"when": tidy(args.get("when"), "when", MAX_WHEN, "ERR_SCHEDULE_TEXT_INVALID"),
            "text": tidy(args.get("text"), "text", MAX_TEXT, "ERR_SCHEDULE_TEXT_INVALID"),
            "cron": check_cron(args.get("cron")), "task_id": uuid.uuid4().hex[:10]}


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
