"""photo_rename: rename a batch of photos in one folder (Metnos executor, runs on the laptop).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace; paths are workspace-relative. Two phases, set by the worker:
- "plan" (default) changes nothing: the images directly in `folder` (regular files, not
  hidden, in name order) and the name each would get, `<prefix><NNNN><.ext>`; a name already
  taken by a file outside the batch stops it (ERR_FILE_EXISTS), never overwritten;
- "apply" renames `sources[i]` to `targets[i]`, every one inside `folder`, never over an
  existing target (checked just before each rename: no other step changes files meanwhile,
  and the sandbox makes no hard links, so link + unlink is not an option). It stops at the
  first failure and says how many were done, so the server's record still undoes them.
Stdlib only.
"""

import os
import sys

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import Refused, io_failed, safe_path, serve  # noqa: E402

MAX_STDIN = 4 << 20
MAX_FILES = 10_000
ARGS = {"folder", "prefix", "phase", "sources", "targets"}
IMAGES = {".jpg", ".jpeg", ".png", ".heic", ".heif", ".gif", ".webp", ".tif", ".tiff",
          ".dng", ".cr2", ".nef", ".arw", ".raw"}


def safe_prefix(value):
    if not isinstance(value, str) or not 0 < len(value) <= 80:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="prefix")
    if value.startswith(".") or any(c in value for c in "/\\\0") or not value.isprintable():
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="prefix")
    return value


def plan(folder, prefix):
    if not os.path.isdir(folder) or os.path.islink(folder):
        raise Refused("ERR_FILE_NOT_DIRECTORY", path=folder)
    names = sorted(
        e.name for e in os.scandir(folder)
        if not e.name.startswith(".") and e.is_file(follow_symlinks=False)
        and os.path.splitext(e.name)[1].lower() in IMAGES)
    if len(names) > MAX_FILES:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="folder")
    width = max(4, len(str(len(names))))
    pairs = []
    for number, name in enumerate(names, start=1):
        new = f"{prefix}{number:0{width}d}{os.path.splitext(name)[1].lower()}"
        if new != name:
            pairs.append((name, new))
    for _, new in pairs:  # a name already taken (by a file that stays or moves later): refused
        if os.path.lexists(os.path.join(folder, new)):
            raise Refused("ERR_FILE_EXISTS", path=os.path.join(folder, new))
    return {"renames": [[os.path.join(folder, a), os.path.join(folder, b)] for a, b in pairs],
            "renamed": 0}


def inside(folder, value, arg):
    path = safe_path(value, arg)
    if os.path.dirname(path) != folder or os.path.basename(path) in ("", "."):
        raise Refused("ERR_FILE_PATH_REFUSED", path=value)
    return path


def apply(folder, sources, targets):
    if not isinstance(sources, list) or not isinstance(targets, list) \
            or len(sources) != len(targets) or len(sources) > MAX_FILES:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="sources")
    pairs = [(inside(folder, s, "sources"), inside(folder, t, "targets"))
             for s, t in zip(sources, targets)]
    done = 0
    for src, dst in pairs:
        if not os.path.isfile(src) or os.path.islink(src):
            raise Refused("ERR_REMOTE_BATCH_STOPPED", path=src, done=done)
        if os.path.lexists(dst):
            raise Refused("ERR_REMOTE_BATCH_STOPPED", path=dst, done=done)
        os.rename(src, dst)
        done += 1
    return {"renames": [[s, t] for s, t in pairs], "renamed": done}


def run(args):
    folder = safe_path(args.get("folder"), "folder")
    if folder == ".":
        raise Refused("ERR_FILE_PATH_REFUSED", path=folder)
    phase = args.get("phase", "plan")
    if phase == "plan":
        return plan(folder, safe_prefix(args.get("prefix")))
    if phase == "apply":
        return apply(folder, args.get("sources"), args.get("targets"))
    raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="phase")


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors={OSError: io_failed})
