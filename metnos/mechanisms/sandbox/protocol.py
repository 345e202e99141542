"""The executor's side of the stdin/stdout protocol: one copy for every executor.

This file runs INSIDE the sandbox, never on the host: `metnos.mechanisms.sandbox.runner` binds it
read-only at `/home/metnos/pylib/metnos_sandbox_protocol.py` into every executor's run, and
its bytes are part of every executor's signed code hash (`metnos.mechanisms.executors.signing`), so
an executor whose helper changed is refused. Standard library only (a test parses its imports).

The protocol, as `metnos.mechanisms.sandbox.runner` reads it: stdin is one JSON object
`{"args": {...}, "action_id": "...", "account": {...}}` (`account` only for a mail executor)
of at most `max_stdin` bytes; stdout is one JSON object, `{"ok": true, "result": {...}}` or
`{"ok": false, "error": {"key": "ERR_...", "vars": {...}}}`; the exit code is 0 in both
cases (anything else is a crash). An executor is

    import sys

    sys.path.append("/home/metnos/pylib")
    from metnos_sandbox_protocol import Refused, serve  # noqa: E402

    def run(args):
        ...  # the result dict, or raise Refused("ERR_...", name=value)

    if __name__ == "__main__":
        serve(run, {"path"})

The cwd is the workspace: `safe_path` checks a workspace-relative path argument.
"""

from __future__ import annotations

import errno
import os
import sys

# Every executor run imports this module afresh: what it imports is paid on every run. typing
# and tempfile cost more than the rest together, so the types are for the type checker only
# and `tempfile` is imported by the one function that writes a file. `json` imports `re`
# (with `enum`: a third of a run's start), so the request and the reply go through json's own
# C scanner and encoder, made as `json.loads` and `json.dumps` make them (the same bytes);
# where `_json` is missing, `json` itself.
try:
    import _json
except ImportError:  # pragma: no cover - an interpreter without json's C accelerator
    _json = None  # type: ignore[assignment]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping
    from typing import Any

    Result = dict[str, Any]
    ErrorMap = Mapping[type[Exception] | tuple[type[Exception], ...], Callable[[Any], "Refused"]]

MAX_STDIN = 1 << 20
_JSON_SPACE = " \t\n\r"


class Refused(Exception):
    """A run that stops: the error reply's i18n key and its variables."""

    def __init__(self, key: str, **vars: Any) -> None:
        super().__init__(key)
        self.key = key
        self.vars = vars


def serve(run: Callable[..., Result], allowed: Collection[str], *, max_stdin: int = MAX_STDIN,
          errors: ErrorMap | None = None, envelope: bool = False,
          scrub: Callable[[str], str] = str) -> None:
    """Read the request, call `run(args)` (`run(args, request)` with `envelope`: the whole
    request, `action_id` and `account` included) and write its reply through `scrub`. A
    Refused, or an exception `errors` maps to one (the first matching type), is the error
    reply; an argument outside `allowed` is refused before `run`."""
    try:
        request = _read_request(max_stdin)
        args = request["args"]
        for name in sorted(set(args) - set(allowed)):
            raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
        reply: Result = {"ok": True, "result": run(args, request) if envelope else run(args)}
    except Exception as exc:
        refusal = exc if isinstance(exc, Refused) else _mapped(exc, errors or {})
        if refusal is None:
            raise
        reply = {"ok": False, "error": {"key": refusal.key, "vars": refusal.vars}}
    _write_reply(reply, scrub)


def _read_request(max_stdin: int = MAX_STDIN) -> Result:
    """The request on stdin, its `args` an object; Refused(ERR_EXECUTOR_INPUT_INVALID)."""
    raw = sys.stdin.buffer.read(max_stdin + 1)
    if len(raw) > max_stdin:
        raise Refused("ERR_EXECUTOR_INPUT_INVALID")
    try:
        request = loads(raw.decode("utf-8"))
    except ValueError:
        raise Refused("ERR_EXECUTOR_INPUT_INVALID") from None
    if not isinstance(request, dict) or not isinstance(request.get("args"), dict):
        raise Refused("ERR_EXECUTOR_INPUT_INVALID")
    return request


def _write_reply(reply: Result, scrub: Callable[[str], str] = str) -> None:
    """The reply as UTF-8 JSON on stdout (escaped to ASCII when a string holds a lone
    surrogate: a file name that is not UTF-8), passed through `scrub` first."""
    try:
        data = scrub(dumps(reply, ensure_ascii=False)).encode("utf-8")
    except UnicodeEncodeError:
        data = scrub(dumps(reply)).encode("ascii")
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


class _Scanning:
    """What json's C scanner reads from its decoder: `json.loads`'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    array_hook = None  # read from Python 3.15 on
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name.replace("Infinity", "inf"))  # NaN, Infinity, -Infinity


def loads(text: str) -> Any:
    """`json.loads(text)` (ValueError when it is not one JSON value)."""
    if _json is None:  # pragma: no cover
        import json

        return json.loads(text)
    body = text.strip(_JSON_SPACE)
    try:
        value, end = _json.make_scanner(_Scanning)(body, 0)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError("no JSON value") from None
    if end != len(body):
        raise ValueError("more than one JSON value")
    return value


def dumps(value: object, *, ensure_ascii: bool = True) -> str:
    """`json.dumps(value, ensure_ascii=ensure_ascii)`."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii)
    quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    encode = _json.make_encoder({}, _unknown, quote, None, ": ", ", ", False, False, True)
    return "".join(encode(value, 0))


def _unknown(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _mapped(exc: Exception, errors: ErrorMap) -> Refused | None:
    for kinds, refusal in errors.items():
        if isinstance(exc, kinds):
            return refusal(exc)
    return None


# -- what the file executors share -------------------------------------------------------------
def permission_denied(exc: OSError) -> Refused:
    return Refused("ERR_FILE_PERMISSION_DENIED", path=str(exc.filename or ""))


def io_failed(exc: OSError) -> Refused:
    return Refused("ERR_FILE_IO", path=str(exc.filename or ""),
                   reason=exc.strerror or type(exc).__name__)


FILE_ERRORS: ErrorMap = {PermissionError: permission_denied, OSError: io_failed}


def safe_path(value: Any, arg: str, *, parent: bool = False) -> str:
    """A workspace-relative path, or Refused (absolute, `..`, hidden parts, escaping links).
    With `parent`, only the folder holding it must resolve inside the workspace (the path
    itself may be a link, moved as a link)."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=arg)
    parts = value.replace("\\", "/").split("/")
    if value.startswith(("/", "~")) or os.path.isabs(value) or ".." in parts:
        raise Refused("ERR_FILE_PATH_REFUSED", path=value)
    if any(part.startswith(".") and part != "." for part in parts):
        raise Refused("ERR_FILE_PATH_REFUSED", path=value)
    root = os.path.realpath(".")
    real = os.path.realpath((os.path.dirname(os.path.normpath(value)) or ".") if parent else value)
    if real != root and not real.startswith(root + os.sep):
        raise Refused("ERR_FILE_PATH_REFUSED", path=value)
    return os.path.normpath(value)


def get_arg(args: Mapping[str, Any], name: str, kind: type, default: Any) -> Any:
    """`args[name]` when it is a `kind` (a bool is no int), `default` when absent or null."""
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
    return value


def replace_file(path: str, data: bytes, file_mode: int | None, prefix: str) -> None:
    """Write `data` to `path` atomically: a temporary file `<prefix>*` in the same folder,
    flushed to disk, then renamed over it (mode `file_mode`, 0o644 for a new file), and the
    folder synced; a reader sees the old file or the new one, never half of it."""
    import tempfile

    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 if file_mode is None else file_mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def make_parent(path: str) -> None:
    """Create the folder `path` goes in; refused when a file stands where it should be."""
    folder = os.path.dirname(path)
    if folder:
        if os.path.lexists(folder) and not os.path.isdir(folder):
            raise Refused("ERR_FILE_NOT_DIRECTORY", path=folder)
        os.makedirs(folder, exist_ok=True)


def move_file(src: str, dst: str) -> None:
    """Move a file with link + unlink, which fails atomically when `dst` exists (never an
    overwrite); where the filesystem has no hard links, a rename after a last check."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        raise Refused("ERR_FILE_EXISTS", path=dst) from None
    except OSError as exc:  # no hard links here (EPERM, EXDEV, ENOTSUP...): plain rename
        if exc.errno == errno.ENOENT:
            raise
        if os.path.lexists(dst):
            raise Refused("ERR_FILE_EXISTS", path=dst) from None
        os.rename(src, dst)
        return
    os.unlink(src)
