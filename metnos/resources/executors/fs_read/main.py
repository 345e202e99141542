"""fs_read: read a UTF-8 text file of the workspace (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace; paths are workspace-relative.
"""

import os
import stat
import sys

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import FILE_ERRORS, Refused, get_arg, safe_path, serve  # noqa: E402

MAX_STDIN = 1 << 20
MAX_BYTES = 256 * 1024
ARGS = {"path", "max_bytes"}


def decode_text(data, truncated, path):
    """The text of `data`, allowing a multi-byte character cut by the size limit."""
    if b"\0" in data:
        raise Refused("ERR_FILE_NOT_TEXT", path=path)
    for cut in range(4 if truncated else 1):
        try:
            return data[: len(data) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    raise Refused("ERR_FILE_NOT_TEXT", path=path)


def run(args):
    path = safe_path(args.get("path"), "path")
    max_bytes = max(1, min(get_arg(args, "max_bytes", int, 65536), MAX_BYTES))
    if not os.path.lexists(path):
        raise Refused("ERR_FILE_NOT_FOUND", path=path)
    if os.path.isdir(path):
        raise Refused("ERR_FILE_IS_DIRECTORY", path=path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused("ERR_FILE_NOT_TEXT", path=path)
        data = fh.read(max_bytes + 1)
    truncated = len(data) > max_bytes
    content = decode_text(data[:max_bytes], truncated, path)
    return {"path": path, "content": content, "truncated": truncated, "size": info.st_size}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors=FILE_ERRORS)
