"""i18n_lint: is a user-facing text in the expected language? (Metnos executor, read-only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The work is `metnos.ground.i18n.lint.i18n_lint_text`, which the sandbox binds read-only, with the
`lingua` package, under /home/metnos/pylib (manifest `[sandbox] python_packages`).
An `invalid` verdict (too large, bad tag or limit) comes back as an error with its own key.
"""

import sys

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the helper and the linter
from metnos_sandbox_protocol import Refused, serve  # noqa: E402

MAX_STDIN = 4 << 20
ARGS = {"text", "expected_language", "max_text_chars"}
DEFAULT_MAX_TEXT_CHARS = 12000
INVALID_KEYS = {
    "too_large": "ERR_LINT_TEXT_TOO_LARGE",
    "language_invalid": "ERR_LINT_LANGUAGE_INVALID",
    "limit_invalid": "ERR_LINT_LIMIT_INVALID",
}


def checked_args(args):
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
    try:
        import metnos_ground_i18n_lint
    except ImportError as exc:
        raise Refused("ERR_LINT_UNAVAILABLE", reason=str(exc)[:200]) from None
    return metnos_ground_i18n_lint


def excerpt_lines(spans):
    return [
        "[{}-{}] {} {:.0%}: {}".format(
            s["start"], s["end"], s["language"], s["confidence"], s["text"]
        )
        for s in spans
    ]


def run(args):
    text, expected, limit = checked_args(args)
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


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN)
