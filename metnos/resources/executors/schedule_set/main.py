"""schedule_set: check a recurring task and give it an id (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
Nothing is scheduled here (no network, no files): the host read `when` as a cadence before
the owner was asked (it set `cron`), and after this validated result it writes the task and
its Prefect schedule; an undo removes both.
"""

import re
import sys
import uuid

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import Refused, serve  # noqa: E402

MAX_STDIN = 64 << 10
MAX_TEXT = 500  # [schedules] max_text's default; the host applies the configured one too
MAX_WHEN = 200
ARGS = {"when", "text", "cron"}
CRON_FIELD = re.compile(r"^[\w*/,\-]+$")


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
    return {"when": tidy(args.get("when"), "when", MAX_WHEN, "ERR_SCHEDULE_TEXT_INVALID"),
            "text": tidy(args.get("text"), "text", MAX_TEXT, "ERR_SCHEDULE_TEXT_INVALID"),
            "cron": check_cron(args.get("cron")), "task_id": uuid.uuid4().hex[:10]}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN)
