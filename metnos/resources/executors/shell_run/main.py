"""shell_run: run ONE allow-listed command on workspace files (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace.

No shell is ever used: the command is split with `shlex.split` and started with an argv.
The host checked it already (metnos/mechanisms/policy/shell.py); these checks repeat it (defence in
depth) against this file's OWN allow list: a command outside it is refused whatever the host
configuration says. Wildcards (`*`, `?`, `[..]`) in arguments are expanded here on workspace
files (hidden files never match), as a shell would; nothing else of a shell exists.
"""

import glob
import re
import shlex
import subprocess
import sys
import threading

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import Refused, serve  # noqa: E402

MAX_STDIN = 1 << 20
MAX_COMMAND_CHARS = 4096
MAX_ARGS = 64
MAX_EXPANDED_ARGS = 1024
MAX_OUTPUT = 64 * 1024
RUN_TIMEOUT_S = 15
ARGS = {"command"}
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
HIDDEN_NAMES = frozenset({".audit", ".trash"})

# Keep equal to settings.policy.shell_allow's default and metnos/mechanisms/policy/shell.py (a test does).
ALLOWED = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "sort", "uniq", "cut", "tr", "du", "stat",
    "file", "date", "echo", "mkdir", "touch", "cp",
})
NEVER_ALLOWED = frozenset({
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "ash", "busybox",
    "toybox", "env", "xargs", "find", "awk", "gawk", "mawk", "nawk", "sed", "ed", "ex", "vi",
    "vim", "nvim", "emacs", "nano", "less", "more", "man", "sudo", "su", "doas", "pkexec",
    "chroot", "unshare", "nsenter", "setsid", "nohup", "nice", "ionice", "timeout", "stdbuf",
    "taskset", "chrt", "flock", "watch", "script", "expect", "time", "command", "exec", "eval",
    "source", "strace", "ltrace", "gdb", "make", "git", "tar", "zip", "unzip", "rsync", "scp",
    "ssh", "sftp", "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "openssl",
    "dd", "ln", "rm", "shred", "truncate", "chmod", "chown", "chgrp", "mount", "umount", "kill",
    "pkill", "killall", "bwrap", "docker", "podman", "systemctl", "crontab", "at", "parallel",
    "npm", "npx", "uv", "uvx", "cc", "gcc", "clang", "osascript", "pwsh", "Rscript",
})
NEVER_ALLOWED_PREFIXES = ("python", "pypy", "perl", "ruby", "php", "lua", "node", "pip",
                          "java", "tclsh", "wish", "guile", "julia", "deno", "bun")
DENIED_OPTIONS = {
    "sort": (frozenset({"--compress-program", "--files0-from", "--temporary-directory"}),
             frozenset({"T"})),
    "wc": (frozenset({"--files0-from"}), frozenset()),
    "du": (frozenset({"--files0-from"}), frozenset()),
    "tail": (frozenset({"--follow", "--pid", "--retry"}), frozenset({"f", "F"})),
}
OPERATORS = frozenset({"|", "||", "&", "&&", ";", ";;", ">", ">>", "<", "<<", "<<<", "2>",
                       "2>>", "&>", "&>>", "2>&1", ">&", "|&", "$(", "`"})
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


def shown(text, limit=120):
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c
                   for c in text[:limit])


def allowed_name(name):
    if not NAME_RE.match(name) or name in NEVER_ALLOWED:
        return False
    if name.lower().startswith(NEVER_ALLOWED_PREFIXES):
        return False
    return name in ALLOWED


def bad_path(value):
    if value.startswith(("/", "~")):
        return True
    parts = value.replace("\\", "/").split("/")
    return any(part == ".." or part in HIDDEN_NAMES for part in parts)


def path_refused(arg):
    if arg == "/" or bad_path(arg):
        return True
    if arg.startswith("--") and "=" in arg:
        value = arg.split("=", 1)[1]
    elif arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
        value = arg[2:]
    else:
        return False
    return value != "/" and bad_path(value)


def option_refused(name, arg):
    longs, shorts = DENIED_OPTIONS.get(name, (frozenset(), frozenset()))
    if arg.startswith("--") and len(arg) > 2:
        given = arg.split("=", 1)[0]
        return any(option.startswith(given) for option in longs)
    if arg.startswith("-") and len(arg) > 1:
        return any(letter in shorts for letter in arg[1:])
    return False


def parse(command):
    if not isinstance(command, str) or not command.strip():
        raise Refused("ERR_SHELL_EMPTY")
    if len(command) > MAX_COMMAND_CHARS:
        raise Refused("ERR_SHELL_TOO_LONG", limit=MAX_COMMAND_CHARS)
    if "\0" in command:
        raise Refused("ERR_SHELL_ARG_INVALID", arg=shown(command, 80))
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise Refused("ERR_SHELL_PARSE", detail=str(exc)) from None
    if not argv or not argv[0]:
        raise Refused("ERR_SHELL_EMPTY")
    return argv


def check(argv):
    name = argv[0]
    if not allowed_name(name):
        raise Refused("ERR_SHELL_NOT_ALLOWED", command=shown(name, 80),
                      allowed=", ".join(sorted(ALLOWED)))
    if len(argv) - 1 > MAX_ARGS:
        raise Refused("ERR_SHELL_TOO_MANY_ARGS", limit=MAX_ARGS)
    options_done = False
    for arg in argv[1:]:
        if arg in OPERATORS:
            raise Refused("ERR_SHELL_OPERATOR", token=arg)
        if path_refused(arg):
            raise Refused("ERR_SHELL_PATH_REFUSED", arg=shown(arg))
        if arg == "--":
            options_done = True
        elif not options_done and option_refused(name, arg):
            raise Refused("ERR_SHELL_OPTION_REFUSED", option=shown(arg, 80), command=name)


def glob_flags(command):
    """Per token of `command` (as shlex.split cuts it), whether a wildcard stands outside
    quotes and escapes: only those are expanded, as a shell would ('*.md' stays literal)."""
    flags, current, in_token, quote, escaped = [], False, False, None, False
    for ch in command:
        if escaped:
            escaped = False
        elif quote is not None:
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"':
                escaped = True
        elif ch in " \t\r\n":
            if in_token:
                flags.append(current)
            current = in_token = False
            continue
        elif ch == "\\":
            escaped = True
        elif ch in "'\"":
            quote = ch
        elif ch in "*?[":
            current = True
        in_token = True
    if in_token:
        flags.append(current)
    return flags


def expand(argv, flags):
    """Unquoted wildcards expanded on workspace files (sorted; kept as typed when nothing
    matches). A match starting with `-` becomes `./-...`: a file name is never an option."""
    out = [argv[0]]
    for arg, wild in zip(argv[1:], flags[1:], strict=True):
        if wild and not arg.startswith("-"):
            matches = [m for m in sorted(glob.glob(arg)) if not path_refused(m)]
            out.extend("./" + m if m.startswith("-") else m for m in matches or [arg])
        else:
            out.append(arg)
        if len(out) - 1 > MAX_EXPANDED_ARGS:
            raise Refused("ERR_SHELL_TOO_MANY_ARGS", limit=MAX_EXPANDED_ARGS)
    return out


def drain(stream, sink):
    """Keep the first MAX_OUTPUT bytes of `stream`, read (and drop) the rest until EOF."""
    kept = []
    size = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        if size < MAX_OUTPUT:
            kept.append(chunk[: MAX_OUTPUT - size])
        size += len(chunk)
    sink["data"] = b"".join(kept)
    sink["truncated"] = size > MAX_OUTPUT


def execute(argv):
    try:
        proc = subprocess.Popen(argv, cwd=".", env=ENV, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True)
    except FileNotFoundError:
        raise Refused("ERR_SHELL_NOT_FOUND", command=argv[0]) from None
    out, err = {}, {}
    readers = [threading.Thread(target=drain, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=drain, args=(proc.stderr, err), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        code = proc.wait(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise Refused("ERR_SHELL_TIMEOUT", command=argv[0], seconds=RUN_TIMEOUT_S) from None
    for reader in readers:
        reader.join(timeout=2)
    return {
        "command": shlex.join(argv)[:MAX_COMMAND_CHARS],
        "exit_code": code,
        "stdout": out.get("data", b"").decode("utf-8", errors="replace"),
        "stderr": err.get("data", b"").decode("utf-8", errors="replace"),
        "truncated": bool(out.get("truncated") or err.get("truncated")),
    }


def shell_failed(exc):
    return Refused("ERR_SHELL_FAILED", reason=exc.strerror or type(exc).__name__)


def run(args):
    command = args.get("command")
    argv = parse(command)
    check(argv)
    flags = glob_flags(command)
    if len(flags) != len(argv):  # our reading of the quotes must agree with shlex's
        raise Refused("ERR_SHELL_PARSE", detail="quoting")
    return execute(expand(argv, flags))


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors={OSError: shell_failed})
