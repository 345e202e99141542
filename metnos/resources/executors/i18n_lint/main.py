"""i18n_lint: is a user-facing text in the expected language? (Metnos executor, read-only).

Protocol: stdin is {"args": {...}}; stdout is one JSON object, {"ok": true, "result": ...}
or {"ok": false, "error": {"key": ..., "vars": ...}}; exit code 0 in both cases.
The work is `metnos.i18n.lint.i18n_lint_text`, which the sandbox binds read-only, with the
`lingua` package, under /home/metnos/pylib (manifest `[sandbox] python_packages`).
An `invalid` verdict (too large, bad tag or limit) comes back as an error with its own key.
"""

import json
import sys

PYLIB = "/home/metnos/pylib"
MAX_STDIN = 4 << 20
ARGS = {"text", "expected_language", "max_text_chars"}
DEFAULT_MAX_TEXT_CHARS = 12000
INVALID_KEYS = {
    "too_large": "ERR_LINT_TEXT_TOO_LARGE",
    "language_invalid": "ERR_LINT_LANGUAGE_INVALID",
    "limit_invalid": "ERR_LINT_LIMIT_INVALID",
}


class Refused(Exception):
    def __init__(self, key, **vars):
        super().__init__(key)
        self.key = key
        self.vars = vars


def read_args():
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
    for name in sorted(set(args) - ARGS):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
    for name in ("text", "expected_language"):
        if not isinstance(args.get(name), str):
            raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
    limit = args.get("max_text_chars", DEFAULT_MAX_TEXT_CHARS)
    if limit is None:
        limit = DEFAULT_MAX_TEXT_CHARS
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="max_text_chars")
    return args["text"], args["expected_language"], limit


def load_lint():
    if PYLIB not in sys.path:
        sys.path.append(PYLIB)
    try:
        import metnos_i18n_lint
    except ImportError as exc:
        raise Refused("ERR_LINT_UNAVAILABLE", reason=str(exc)[:200]) from None
    return metnos_i18n_lint


def excerpt_lines(spans):
    return [
        "[{}-{}] {} {:.0%}: {}".format(
            s["start"], s["end"], s["language"], s["confidence"], s["text"]
        )
        for s in spans
    ]


def run(text, expected, limit):
    lint = load_lint()
    verdict = lint.i18n_lint_text(text, expected, limit)
    if verdict.decision == "invalid":
        key = INVALID_KEYS.get(verdict.reason, "ERR_EXECUTOR_ARG_INVALID")
        vars = {"decision": "invalid", "reason": verdict.reason}
        if verdict.reason == "too_large":
            vars.update(chars=len(text), limit=limit)
        elif verdict.reason == "language_invalid":
            vars.update(language=expected[:35])
        elif verdict.reason == "limit_invalid":
            vars.update(limit=limit, maximum=lint.HARD_MAX_TEXT_CHARS)
        else:
            vars.update(arg="text")
        raise Refused(key, **vars)
    result = verdict.to_json()
    share = result["share"]
    result["share_percent"] = 100 if share is None else round(share * 100)
    result["excerpts"] = excerpt_lines(result["spans"])
    return result


def main():
    try:
        reply = {"ok": True, "result": run(*read_args())}
    except Refused as exc:
        reply = {"ok": False, "error": {"key": exc.key, "vars": exc.vars}}
    sys.stdout.buffer.write(json.dumps(reply).encode("ascii"))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
