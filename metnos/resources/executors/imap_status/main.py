"""imap_status: messages and unread messages per folder of the mail account (Metnos executor).

Protocol: stdin is {"args": {"folders": [...]?}, "action_id": ..., "account": {...}} (the
account block is written by the host from `metnos mail add`); stdout is one JSON object,
{"ok": true, "result": ...} or {"ok": false, "error": {"key": ..., "vars": ...}}; exit 0.

STATUS only (MESSAGES UNSEEN UIDNEXT UIDVALIDITY): no folder is opened, no message is
downloaded, nothing changes (no \\Seen is set). The IMAP session code is the host's
`metnos.features.mail.imap`, bound read-only under /home/metnos/pylib.
"""

import sys

PYLIB = "/home/metnos/pylib"
ARGS = frozenset({"folders"})
MAX_FOLDERS = 100

if PYLIB not in sys.path:
    sys.path.append(PYLIB)

import metnos_features_mail_imap as imap  # noqa: E402


def run(args, account):
    asked = args.get("folders")
    if asked is not None and (not isinstance(asked, list) or len(asked) > MAX_FOLDERS):
        raise imap.MailError("ERR_EXECUTOR_ARG_INVALID", arg="folders")
    asked = [imap.check_folder(name) for name in asked or []]
    conn = imap.open_session(account)
    try:
        listed = imap.list_folders(conn)
        selectable = [name for name, flags in listed if "\\noselect" not in flags
                      and "\\nonexistent" not in flags]
        if asked:
            known = {name.casefold(): name for name in selectable}
            missing = [name for name in asked if name.casefold() not in known
                       and name.upper() != "INBOX"]
            if missing:
                raise imap.MailError("ERR_MAIL_FOLDER_NOT_FOUND", folder=missing[0])
            names = [known.get(name.casefold(), name) for name in asked]
        else:
            names = selectable
        folders = [{"name": name, **imap.status(conn, name)} for name in names]
    finally:
        imap.close(conn)
    unseen = sum(f["unseen"] for f in folders)
    lines = [f"{f['name']}: {f['unseen']}/{f['messages']}" for f in folders]
    return {"folders": folders, "unseen": unseen, "lines": lines}


if __name__ == "__main__":
    imap.main(run, ARGS)
