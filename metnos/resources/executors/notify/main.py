"""notify: check a message for the person and give it an id (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
Nothing is sent here (no network, no files): the gateway turns this validated result into
a message on the person's preferred channel (`metnos.features.notify.effect`), after the quiet
hours when it falls inside them; an undo cancels it until it is delivered.
"""

import sys
import uuid

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import Refused, serve  # noqa: E402

MAX_STDIN = 64 << 10
MAX_TEXT = 1500
MAX_TITLE = 120
ARGS = {"text", "title"}


def check_text(value, arg, limit, key):
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=arg)
    lines = [" ".join(line.split()) for line in value.strip().splitlines()]
    text = "\n".join(lines)
    if len(text) > limit:
        raise Refused(key, max=limit)
    return text


def run(args):
    text = check_text(args.get("text"), "text", MAX_TEXT, "ERR_NOTIFY_TEXT_TOO_LONG")
    title = args.get("title")
    if title is not None:
        title = " ".join(check_text(title, "title", MAX_TITLE,
                                    "ERR_NOTIFY_TITLE_TOO_LONG").split())
    return {"notification": {"id": uuid.uuid4().hex, "text": text, "title": title}}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN)
