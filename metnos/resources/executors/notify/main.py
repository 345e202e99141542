"""notify: check a message for the person and give it an id (Metnos executor, stdlib only).

Protocol: stdin is {"args": {...}}; stdout is one JSON object, {"ok": true, "result": ...}
or {"ok": false, "error": {"key": ..., "vars": ...}}; exit code 0 in both cases.
Nothing is sent here (no network, no files): the gateway turns this validated result into
a message on the person's preferred channel (`metnos.notify.effect`), after the quiet
hours when it falls inside them; an undo cancels it until it is delivered.
"""

import json
import sys
import uuid

MAX_STDIN = 64 << 10
MAX_TEXT = 1500
MAX_TITLE = 120
ARGS = {"text", "title"}


class Refused(Exception):
    def __init__(self, key, **vars):
        super().__init__(key)
        self.key = key
        self.vars = vars


def check_text(value, arg, limit, key):
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=arg)
    lines = [" ".join(line.split()) for line in value.strip().splitlines()]
    text = "\n".join(lines)
    if len(text) > limit:
        raise Refused(key, max=limit)
    return text


def run(args):
    for name in sorted(set(args) - ARGS):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
    text = check_text(args.get("text"), "text", MAX_TEXT, "ERR_NOTIFY_TEXT_TOO_LONG")
    title = args.get("title")
    if title is not None:
        title = " ".join(check_text(title, "title", MAX_TITLE,
                                    "ERR_NOTIFY_TITLE_TOO_LONG").split())
    return {"notification": {"id": uuid.uuid4().hex, "text": text, "title": title}}


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
