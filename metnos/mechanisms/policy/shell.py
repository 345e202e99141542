"""Host-side check of a `shell_run` command line (SPEC §4, §5: allow-listed commands only).

`check_command(command, allow)` parses the text with `shlex.split` (no shell is ever used: no
pipes, redirections, variables or globbing by a shell) and returns the argv, or raises
`PolicyDenied` with an i18n key and a `reason` code for the audit line:

- `ERR_SHELL_EMPTY`, `ERR_SHELL_TOO_LONG`, `ERR_SHELL_PARSE`, `ERR_SHELL_ARG_INVALID` (NUL),
  `ERR_SHELL_TOO_MANY_ARGS`: the text itself;
- `ERR_SHELL_NOT_ALLOWED`: argv[0] is a path, an interpreter or launcher (a hard-coded deny set
  that configuration cannot lift), or not in `allow` (`settings.policy.shell_allow`);
- `ERR_SHELL_OPERATOR`: a bare shell operator (`|`, `;`, `>`...), which would not work;
- `ERR_SHELL_PATH_REFUSED`: an argument names an absolute path, `..`, `~`, or the audit log or
  trash (commands work on workspace-relative files only);
- `ERR_SHELL_OPTION_REFUSED`: an option that runs a program or reads a file list
  (`sort --compress-program`, `--files0-from`, `tail -f`).

The `shell_run` executor repeats the same checks inside the sandbox against its own embedded
copy of the default allow list (`executors/shell_run/main.py`; a test keeps them equal).
"""

from __future__ import annotations

import re
import shlex

from metnos.ground.errors import PolicyDenied
from metnos.mechanisms.policy.paths import printable

MAX_COMMAND_CHARS = 4096
MAX_ARGS = 64
HIDDEN_NAMES = frozenset({".audit", ".trash"})

# Programs that run other programs, reach the network, change privileges or destroy data
# beyond undo: never run, even when the owner lists them in `policy.shell_allow`.
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

# Options that run a program or read file names from a file, per command:
# (long options, short option letters). Long options match GNU abbreviations too.
DENIED_OPTIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "sort": (frozenset({"--compress-program", "--files0-from", "--temporary-directory"}),
             frozenset({"T"})),
    "wc": (frozenset({"--files0-from"}), frozenset()),
    "du": (frozenset({"--files0-from"}), frozenset()),
    "tail": (frozenset({"--follow", "--pid", "--retry"}), frozenset({"f", "F"})),
}
OPERATORS = frozenset({"|", "||", "&", "&&", ";", ";;", ">", ">>", "<", "<<", "<<<", "2>",
                       "2>>", "&>", "&>>", "2>&1", ">&", "|&", "$(", "`"})
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


def check_command(command: str, allow: list[str]) -> list[str]:
    """The argv of `command` when every check passes; else `PolicyDenied` (see module doc)."""
    argv = _parse(command)
    name = argv[0]
    if not is_allowed_name(name, allow):
        shown = sorted(n for n in allow if is_allowed_name(n, allow))
        raise PolicyDenied("ERR_SHELL_NOT_ALLOWED", command=printable(name, 80),
                           allowed=", ".join(shown), reason="not_allowed")
    if len(argv) - 1 > MAX_ARGS:
        raise PolicyDenied("ERR_SHELL_TOO_MANY_ARGS", limit=MAX_ARGS, reason="too_many_args")
    _check_args(name, argv[1:])
    return argv


def is_allowed_name(name: str, allow: list[str]) -> bool:
    """Whether argv[0] `name` is a bare program name in `allow` and not a denied one."""
    if not _NAME_RE.match(name) or name in NEVER_ALLOWED:
        return False
    if name.lower().startswith(NEVER_ALLOWED_PREFIXES):
        return False
    return name in allow


def _parse(command: str) -> list[str]:
    if not isinstance(command, str) or not command.strip():
        raise PolicyDenied("ERR_SHELL_EMPTY", reason="empty")
    if len(command) > MAX_COMMAND_CHARS:
        raise PolicyDenied("ERR_SHELL_TOO_LONG", limit=MAX_COMMAND_CHARS, reason="too_long")
    if "\x00" in command:
        raise PolicyDenied("ERR_SHELL_ARG_INVALID", arg=printable(command, 80),
                           reason="nul_byte")
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise PolicyDenied("ERR_SHELL_PARSE", detail=str(exc), reason="parse") from None
    if not argv or not argv[0]:
        raise PolicyDenied("ERR_SHELL_EMPTY", reason="empty")
    return argv


def _check_args(name: str, args: list[str]) -> None:
    options_done = False
    for arg in args:
        if arg in OPERATORS:
            raise PolicyDenied("ERR_SHELL_OPERATOR", token=arg, reason="operator")
        if path_refused(arg):
            raise PolicyDenied("ERR_SHELL_PATH_REFUSED", arg=printable(arg, 120),
                               reason="path")
        if arg == "--":
            options_done = True
        elif not options_done and option_refused(name, arg):
            raise PolicyDenied("ERR_SHELL_OPTION_REFUSED", option=printable(arg, 80),
                               command=name, reason="option")


def path_refused(arg: str) -> bool:
    """Whether `arg` (or the value attached to an option) names a path outside the workspace.

    A lone `/` is refused as an argument (the root) but allowed as an attached option value
    (`cut -d/`, `--field-separator=/`), where it is a delimiter.
    """
    if arg == "/" or _bad_path(arg):
        return True
    if arg.startswith("--") and "=" in arg:
        value = arg.split("=", 1)[1]
    elif arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
        value = arg[2:]
    else:
        return False
    return value != "/" and _bad_path(value)


def _bad_path(value: str) -> bool:
    if value.startswith(("/", "~")):
        return True
    parts = value.replace("\\", "/").split("/")
    return any(part == ".." or part in HIDDEN_NAMES for part in parts)


def option_refused(name: str, arg: str) -> bool:
    """Whether `arg` is a denied option of command `name` (GNU long-option prefixes count)."""
    longs, shorts = DENIED_OPTIONS.get(name, (frozenset(), frozenset()))
    if arg.startswith("--") and len(arg) > 2:
        given = arg.split("=", 1)[0]
        return any(option.startswith(given) for option in longs)
    if arg.startswith("-") and len(arg) > 1:
        return any(letter in shorts for letter in arg[1:])
    return False
