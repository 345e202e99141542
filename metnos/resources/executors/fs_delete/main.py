"""fs_delete: move a workspace file or folder to the trash, so it can be undone (Metnos executor).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`;
the request's `action_id` names the trash folder. The cwd is the workspace; paths are
workspace-relative. Nothing is deleted: the file or folder is renamed (atomically, on the
same filesystem) to `.trash/<action_id>/<its relative path>`, where `metnos undo
<action_id>` finds it. The action id comes from the host, never from the arguments.
Stdlib only.
"""

import os
import re
import sys

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import FILE_ERRORS, Refused, safe_path, serve  # noqa: E402

MAX_STDIN = 1 << 20
ARGS = {"path"}
TRASH = ".trash"
ACTION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def run(args, request):
    action_id = request.get("action_id")
    if not isinstance(action_id, str) or not ACTION_ID.match(action_id):
        raise Refused("ERR_TRASH_ACTION_ID_MISSING")
    path = safe_path(args.get("path"), "path", parent=True)
    if path == ".":
        raise Refused("ERR_FILE_PATH_REFUSED", path=path)
    if not os.path.lexists(path):
        raise Refused("ERR_FILE_NOT_FOUND", path=path)
    target = os.path.join(TRASH, action_id, path)
    if os.path.lexists(target):
        raise Refused("ERR_FILE_EXISTS", path=target)
    for folder in (TRASH, os.path.join(TRASH, action_id)):
        if os.path.islink(folder):
            raise Refused("ERR_FILE_PATH_REFUSED", path=folder)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.rename(path, target)  # the link itself when `path` is a link: never followed
    return {"path": path, "trashed": True}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors=FILE_ERRORS, envelope=True)
