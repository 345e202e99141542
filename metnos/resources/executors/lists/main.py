"""lists: named lists (shopping, to-do, notes...) as markdown files (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace. The host sets `path` (`lists/<id>.md`) from the list's name, so
its before-record covers exactly this file, and `title`, the heading of a new list's file.
`items` are several items (one string is split on commas and new lines); `text` is one item
as said, never split (a note, a reminder).
A list is a `# Title` heading and one `- item` line per item; a file edited by hand is read
back tolerantly (`* item`, `+ item`, `1. item`, `- [ ] item`, plain lines, blank lines), and
only the lines that change are touched.
Writes are atomic (a temporary file renamed over the list).
"""

import os
import re
import stat
import sys
import unicodedata

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import FILE_ERRORS, Refused, make_parent, replace_file, serve  # noqa: E402

MAX_STDIN = 1 << 20
MAX_FILE = 1 << 20
MAX_ITEM = 200
MAX_ITEMS = 100
ARGS = {"action", "list", "items", "text", "path", "title"}
ACTIONS = ("add", "remove", "show", "clear")
PATH_RE = re.compile(r"^lists/[^/.][^/]*\.md$")
BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(.*?)\s*$")
SPLIT_RE = re.compile(r"[,;\n]")


def fold(text):
    """The form two items are compared in: no accents, no case, single spaces."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


def item_of(line):
    """The item a line holds, or None (a heading, a blank line)."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    match = BULLET_RE.match(line)
    found = (match.group(1) if match else text).strip()
    return found or None


def read_lines(path):
    """The file's lines (without line ends), [] when it does not exist."""
    if not os.path.lexists(path):
        return []
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise Refused("ERR_FILE_PATH_REFUSED", path=path)
    if info.st_size > MAX_FILE:
        raise Refused("ERR_FILE_TOO_LARGE", path=path, limit=MAX_FILE)
    with open(path, "rb") as fh:
        text = fh.read().decode("utf-8", errors="replace")
    return text.splitlines()


def write_lines(path, lines, file_mode):
    make_parent(path)
    replace_file(path, ("\n".join(lines) + "\n").encode("utf-8"), file_mode, ".metnos-list-")


def wanted_items(value):
    """The items asked for: a list of strings, or one string split on commas/new lines."""
    if value is None:
        return []
    if isinstance(value, str):
        value = SPLIT_RE.split(value)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="items")
    items = []
    for raw in value:
        text = " ".join(raw.split())
        if len(text) > MAX_ITEM:
            raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="items")
        if text and fold(text) not in {fold(i) for i in items}:
            items.append(text)
    if len(items) > MAX_ITEMS:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="items")
    return items


def add(lines, items, title):
    present = {fold(i) for i in (item_of(line) for line in lines) if i}
    added = [i for i in items if fold(i) not in present]
    already = [i for i in items if fold(i) in present]
    if added and not lines:
        lines = [f"# {title[:1].upper()}{title[1:]}", ""]
    last = max((n for n, line in enumerate(lines) if item_of(line)), default=len(lines) - 1)
    lines = lines[: last + 1] + [f"- {i}" for i in added] + lines[last + 1 :]
    return lines, {"added": added, "already": already}


def remove(lines, items):
    asked = {fold(i): i for i in items}
    removed, kept = [], []
    for line in lines:
        item = item_of(line)
        if item is not None and fold(item) in asked:
            removed.append(item)
            continue
        kept.append(line)
    gone = {fold(i) for i in removed}
    return kept, {"removed": removed, "missing": [i for f, i in asked.items() if f not in gone]}


def clear(lines):
    removed = [i for i in (item_of(line) for line in lines) if i]
    return [line for line in lines if item_of(line) is None], {"removed": removed}


def variant(action, changes, items):
    """Which reply message fits: the action, `_partly` or `_none` when some or all of the
    items could not be added/removed, `_empty` for an empty list shown or cleared."""
    if action in ("add", "remove"):
        done = changes["added" if action == "add" else "removed"]
        left = changes["already" if action == "add" else "missing"]
        return action if not left else f"{action}_partly" if done else f"{action}_none"
    if action == "show":
        return "show" if items else "show_empty"
    return "clear" if changes["removed"] else "clear_empty"


def run(args):
    action = args.get("action", "add")  # the manifest's default
    name = args.get("list")
    path = args.get("path")
    if action not in ACTIONS:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="action")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_ITEM:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="list")
    if not isinstance(path, str) or not PATH_RE.match(path) or ".." in path:
        raise Refused("ERR_FILE_PATH_REFUSED", path=str(path))
    name = " ".join(name.split())
    title = args.get("title", name)  # set by the host: a usual list's name in its language
    if not isinstance(title, str) or not title.strip() or len(title) > MAX_ITEM:
        title = name
    title = " ".join(title.split())
    items = wanted_items(args.get("items"))
    text = args.get("text")
    if text is not None:
        if not isinstance(text, str):
            raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="text")
        items = wanted_items(items + [" ".join(text.split())])
    if action in ("add", "remove") and not items:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="items")
    existed = os.path.lexists(path)
    file_mode = stat.S_IMODE(os.lstat(path).st_mode) if existed else None
    lines = read_lines(path)
    changes = {"added": [], "already": [], "removed": [], "missing": []}
    new_lines = lines
    if action == "add":
        new_lines, done = add(lines, items, title)
    elif action == "remove":
        new_lines, done = remove(lines, items)
    elif action == "clear":
        new_lines, done = clear(lines)
    else:
        done = {}
    changes.update(done)
    if new_lines != lines:
        write_lines(path, new_lines, file_mode)
    current = [i for i in (item_of(line) for line in new_lines) if i]
    count = len(changes["removed"]) if action == "clear" else len(current)
    return {"action": action, "list": name, "path": path, "items": current, **changes,
            "count": count, "reply": variant(action, changes, current)}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors=FILE_ERRORS)
