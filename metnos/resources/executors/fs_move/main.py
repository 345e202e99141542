"""fs_move: move or rename a workspace file or folder, never overwriting (Metnos executor).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace; paths are workspace-relative. An existing destination is refused:
a file is moved with link + unlink, which fails atomically when the destination exists.
Missing parent folders of the destination are created. Stdlib only.
"""

import os
import sys

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import FILE_ERRORS, Refused, make_parent, move_file, safe_path, serve  # noqa: E402

MAX_STDIN = 1 << 20
ARGS = {"src", "dst"}


def run(args):
    src = safe_path(args.get("src"), "src")
    dst = safe_path(args.get("dst"), "dst")
    for path in (src, dst):
        if path == ".":
            raise Refused("ERR_FILE_PATH_REFUSED", path=path)
    if not os.path.lexists(src):
        raise Refused("ERR_FILE_NOT_FOUND", path=src)
    if os.path.lexists(dst):
        raise Refused("ERR_FILE_EXISTS", path=dst)
    if (dst + os.sep).startswith(src + os.sep):
        raise Refused("ERR_FILE_PATH_REFUSED", path=dst)
    make_parent(dst)
    if os.path.isdir(src) and not os.path.islink(src):
        os.rename(src, dst)
    else:
        move_file(src, dst)
    return {"src": src, "dst": dst}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors=FILE_ERRORS)
