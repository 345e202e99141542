"""move_messages: move messages (by UID) from one folder to another, reversibly (Metnos
executor).

Protocol: stdin is {"args": {...}, "action_id", "account"} (the account block is the host's);
stdout is one JSON object, {"ok": true, "result": ...} or {"ok": false, "error": {...}}.

Three modes; the host sets `mode` (a planner never can) and runs them in this order:
- "snapshot" (read-only, EXAMINE): the UIDs' flags and Message-IDs and the folder's
  UIDVALIDITY, which the host signs into the before-record under state/before/<action_id>/
  before anything moves (Law 1: no undo record, no action);
- "move": checks UIDVALIDITY is still the snapshot's (so a UID names the same message), then
  UID MOVE (else UID COPY + \\Deleted + UID EXPUNGE) and returns the COPYUID mapping (source
  UID → new UID; without COPYUID, found again in the destination by Message-ID);
- "restore" (the undo): finds the messages in `folder` by their recorded new UID, checked
  against the Message-ID (else by Message-ID alone), moves them back to `to_folder` and sets
  their flags to exactly the recorded ones.
"""

import re
import sys

PYLIB = "/home/metnos/pylib"
ARGS = frozenset({"folder", "to_folder", "uids", "mode", "uidvalidity", "message_ids", "flags"})
MODES = ("move", "snapshot", "restore")
MAX_UIDS = 200
MAX_ID_CHARS = 300
MID_FETCH = "(UID FLAGS BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])"

if PYLIB not in sys.path:
    sys.path.append(PYLIB)

import metnos_features_mail_imap as imap  # noqa: E402


def arg_list(args, name, kind, required=True):
    value = args.get(name)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not value and required or len(value) > MAX_UIDS:
        raise imap.MailError("ERR_EXECUTOR_ARG_INVALID", arg=name)
    for item in value:
        if kind is int and (isinstance(item, bool) or not isinstance(item, int)
                            or not 0 <= item < 2**32):
            raise imap.MailError("ERR_EXECUTOR_ARG_INVALID", arg=name)
        if kind is str and (not isinstance(item, str) or len(item) > MAX_ID_CHARS
                            or any(ord(c) < 32 for c in item)):
            raise imap.MailError("ERR_EXECUTOR_ARG_INVALID", arg=name)
    return value


def message_id(row):
    raw = next(iter(row["sections"].values()), b"")
    found = re.search(rb"(?im)^message-id:\s*(<[^>\r\n]{1,298}>)", raw or b"")
    return found.group(1).decode("ascii", "replace") if found else ""


def quoted(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def find_by_id(conn, mid, taken):
    if not mid or not mid.isascii():
        return 0
    found = [u for u in imap.uid_search(conn, "HEADER", "Message-ID", quoted(mid))
             if u not in taken]
    return found[-1] if found else 0


def transfer(conn, uids, to_folder):
    """Move `uids` of the selected folder to `to_folder`: (its UIDVALIDITY, mapping)."""
    conn.untagged_responses.pop("COPYUID", None)
    target, uid_set = imap.quote(to_folder), imap.uid_set(uids)
    if "MOVE" in imap.capabilities(conn):
        typ, _data = conn.uid("MOVE", uid_set, target)
        if typ != "OK":
            raise imap.MailError("ERR_MAIL_MOVE_FAILED", folder=to_folder)
        return imap.copyuid(conn)
    typ, _data = conn.uid("COPY", uid_set, target)
    if typ != "OK":
        raise imap.MailError("ERR_MAIL_MOVE_FAILED", folder=to_folder)
    mapped = imap.copyuid(conn)
    conn.uid("STORE", uid_set, "+FLAGS.SILENT", "(\\Deleted)")
    if "UIDPLUS" in imap.capabilities(conn):
        conn.uid("EXPUNGE", uid_set)
    else:  # no UID EXPUNGE: a plain one (it also expunges what was already \Deleted)
        conn.expunge()
    return mapped


def locate(conn, folder, mids, mapping, taken=None):
    """Fill the gaps of `mapping` (index → UID in `folder`) by Message-ID."""
    imap.select(conn, folder, readonly=True)
    taken = set(taken or ()) | set(mapping.values())
    for index, mid in enumerate(mids):
        if index not in mapping:
            uid = find_by_id(conn, mid, taken)
            if uid:
                mapping[index] = uid
                taken.add(uid)
    return mapping


def snapshot(args, folder, to_folder, uids, conn):
    uidvalidity = imap.select(conn, folder, readonly=True)
    rows = imap.fetch(conn, uids, MID_FETCH)
    missing = [u for u in uids if u not in rows]
    if missing:
        raise imap.MailError("ERR_MAIL_MESSAGES_NOT_FOUND", folder=folder,
                             uids=", ".join(map(str, missing[:20])))
    imap.status(conn, to_folder)  # the destination must exist: ERR_MAIL_FOLDER_NOT_FOUND
    messages = [{"uid": u, "flags": imap.clean_flags(rows[u]["flags"]),
                 "message_id": message_id(rows[u])} for u in uids]
    return {"mode": "snapshot", "folder": folder, "to_folder": to_folder,
            "uidvalidity": uidvalidity, "messages": messages}


def move(args, folder, to_folder, uids, conn):
    expected = args.get("uidvalidity")
    if isinstance(expected, bool) or not isinstance(expected, int):
        raise imap.MailError("ERR_EXECUTOR_ARG_INVALID", arg="uidvalidity")
    if imap.select(conn, folder, readonly=False) != expected:
        raise imap.MailError("ERR_MAIL_MAILBOX_CHANGED", folder=folder)
    rows = imap.fetch(conn, uids, MID_FETCH)
    missing = [u for u in uids if u not in rows]
    if missing:
        raise imap.MailError("ERR_MAIL_MESSAGES_NOT_FOUND", folder=folder,
                             uids=", ".join(map(str, missing[:20])))
    to_validity, mapped = transfer(conn, uids, to_folder)
    by_index = {i: mapped[u] for i, u in enumerate(uids) if u in mapped}
    if len(by_index) < len(uids):
        by_index = locate(conn, to_folder, [message_id(rows[u]) for u in uids], by_index)
        to_validity = to_validity or imap.select(conn, to_folder, readonly=True)
    mapping = [[u, by_index.get(i, 0)] for i, u in enumerate(uids)]
    return {"mode": "move", "reply": "moved", "folder": folder, "to_folder": to_folder,
            "moved": len(uids), "uids": uids, "mapping": mapping,
            "to_uidvalidity": to_validity}


def restore(args, folder, to_folder, uids, conn):
    mids = arg_list(args, "message_ids", str)
    flags = arg_list(args, "flags", str)
    if not len(uids) == len(mids) == len(flags):
        raise imap.MailError("ERR_EXECUTOR_ARG_INVALID", arg="message_ids")
    validity = imap.select(conn, folder, readonly=False)
    by_index = {}
    if validity == args.get("uidvalidity"):  # the recorded new UIDs still name them
        rows = imap.fetch(conn, [u for u in uids if u], MID_FETCH)
        by_index = {i: u for i, u in enumerate(uids) if u in rows
                    and (not mids[i] or message_id(rows[u]) == mids[i])}
    if len(by_index) < len(uids):
        by_index = locate(conn, folder, mids, by_index)
        imap.select(conn, folder, readonly=False)
    found = sorted(by_index)
    if not found:
        raise imap.MailError("ERR_MAIL_MESSAGES_NOT_FOUND", folder=folder,
                             uids=", ".join(map(str, uids[:20])))
    current = [by_index[i] for i in found]
    _validity, mapped = transfer(conn, current, to_folder)
    back = {i: mapped[by_index[i]] for i in found if by_index[i] in mapped}
    if len(back) < len(found):
        back = locate(conn, to_folder, [mids[i] if i in found else "" for i in range(len(mids))],
                      back)
    imap.select(conn, to_folder, readonly=False)
    for index, uid in sorted(back.items()):
        wanted = " ".join(imap.clean_flags(flags[index].split()))
        typ, _data = conn.uid("STORE", str(uid), "FLAGS.SILENT", f"({wanted})")
        if typ != "OK":
            raise imap.MailError("ERR_MAIL_MOVE_FAILED", folder=to_folder)
    missing = [mids[i] or str(uids[i]) for i in range(len(uids)) if i not in back]
    return {"mode": "restore", "folder": folder, "to_folder": to_folder,
            "restored": len(back), "missing": missing,
            "mapping": [[by_index[i], back[i]] for i in sorted(back)]}


def run(args, account):
    mode = args.get("mode", "move")
    if mode not in MODES:
        raise imap.MailError("ERR_EXECUTOR_ARG_INVALID", arg="mode")
    folder = imap.check_folder(args.get("folder"))
    to_folder = imap.check_folder(args.get("to_folder"))
    if folder == to_folder:
        raise imap.MailError("ERR_MAIL_SAME_FOLDER", folder=folder)
    uids = arg_list(args, "uids", int)
    if len(set(uids)) != len(uids) or (mode != "restore" and 0 in uids):
        raise imap.MailError("ERR_EXECUTOR_ARG_INVALID", arg="uids")
    conn = imap.open_session(account)
    try:
        return {"snapshot": snapshot, "move": move, "restore": restore}[mode](
            args, folder, to_folder, uids, conn)
    finally:
        imap.close(conn)


if __name__ == "__main__":
    imap.main(run, ARGS)
