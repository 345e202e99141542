"""The IMAP side of the mail executors, shared by `imap_status`, `imap_fetch_headers` and
`move_messages`: the account from the request, one logged-in session, mailbox names, FETCH
parsing and the mail errors' keys; the protocol itself is the executors' one helper's
(`metnos_sandbox_protocol`, which `main` imports).

This module imports only the standard library and that helper: the sandbox binds it
read-only as `metnos_features_mail_imap`
(`[sandbox] python_packages = ["metnos.features.mail.imap"]`; a test parses its imports). It runs
inside the sandbox, never on the host: the host never speaks IMAP.

The account comes only from the envelope the host wrote (`{"args", "action_id", "account"}`):
no argument names a host, and the sandbox has no network of its own (`egress = "account"`):
its one way out is the host's socket in `account["egress"]`, forwarded to the configured
server and nowhere else. TLS
is verified (system CA store, host name checked) for `tls` and `starttls`; `plain` is refused
unless the host is loopback. The password never leaves: it is not in an error's variables,
and the reply is scrubbed of it before it is written (a server echoing it back included).
"""

from __future__ import annotations

import base64
import contextlib
import imaplib
import json
import re
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_STDIN = 1 << 20
MAX_FOLDER_CHARS = 200
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
SECURITY = frozenset({"tls", "starttls", "plain"})
SESSION_FLAGS = frozenset({"\\recent"})  # the server's per-session flag: never stored
REDACTED = "[REDACTED]"
_FETCH_START = re.compile(rb"^\d+ \(")
_UID = re.compile(rb"\bUID (\d+)")
_FLAGS = re.compile(rb"\bFLAGS \(([^)]*)\)")
_SECTION = re.compile(rb"(BODY\[[^\]]*\](?:<\d+>)?) \{\d+\}$")
_LIST = re.compile(rb'^\((?P<flags>[^)]*)\) (?P<delim>NIL|"(?:[^"\\]|\\.)*") (?P<name>.*)$')
_STATUS_ITEM = re.compile(rb"(MESSAGES|UNSEEN|UIDNEXT|UIDVALIDITY) (\d+)")
_COPYUID = re.compile(rb"^(\d+) ([0-9:,]+) ([0-9:,]+)")
_FLAG = re.compile(r"^\\?[A-Za-z0-9$_.\-]{1,64}$")


class MailError(Exception):
    """A run that cannot go on: an i18n key and its variables (never a credential)."""

    def __init__(self, key: str, **vars: Any) -> None:
        super().__init__(key)
        self.key = key
        self.vars = vars


@dataclass(frozen=True)
class Account:
    host: str
    port: int
    security: str
    username: str
    password: str = field(repr=False)
    timeout_s: float = 20.0
    egress: str | None = None  # the host's forwarding socket: the sandbox's only way out

    @classmethod
    def from_envelope(cls, block: object) -> Account:
        if not isinstance(block, dict):
            raise MailError("ERR_MAIL_ACCOUNT_MISSING")
        try:
            account = cls(str(block["host"]), int(block["port"]), str(block["security"]),
                          str(block["username"]), str(block["password"]),
                          float(block.get("timeout_s", 20.0)),
                          str(block["egress"]) if block.get("egress") else None)
        except (KeyError, TypeError, ValueError):
            raise MailError("ERR_MAIL_ACCOUNT_MISSING") from None
        if account.security not in SECURITY or not 0 < account.port < 65536:
            raise MailError("ERR_MAIL_ACCOUNT_MISSING")
        if account.security == "plain" and account.host.lower() not in LOOPBACK:
            raise MailError("ERR_MAIL_PLAIN_REFUSED", host=account.host)
        return account


def open_session(account: Account) -> imaplib.IMAP4:
    """A logged-in session with the account's server. Raises MailError."""
    host, timeout = account.host, account.timeout_s
    context = ssl.create_default_context()  # CERT_REQUIRED, host name checked
    plain_class, tls_class = (imaplib.IMAP4, imaplib.IMAP4_SSL) if account.egress is None \
        else _through(account.egress)
    try:
        if account.security == "tls":
            conn: imaplib.IMAP4 = tls_class(host, account.port, ssl_context=context,
                                            timeout=timeout)
        else:
            conn = plain_class(host, account.port, timeout=timeout)
            if account.security == "starttls":
                conn.starttls(ssl_context=context)
    except ssl.SSLError as exc:
        raise MailError("ERR_MAIL_TLS", host=host, reason=_reason(exc)) from None
    except TimeoutError:
        raise MailError("ERR_MAIL_TIMEOUT", host=host, seconds=timeout) from None
    except (OSError, imaplib.IMAP4.error) as exc:
        raise MailError("ERR_MAIL_UNREACHABLE", host=host, reason=_reason(exc)) from None
    try:
        conn.login(account.username, account.password)
    except imaplib.IMAP4.error:
        close(conn)
        raise MailError("ERR_MAIL_LOGIN_FAILED", host=host) from None
    return conn


def _through(path: str) -> tuple[type[imaplib.IMAP4], type[imaplib.IMAP4_SSL]]:
    """IMAP classes that reach the server through the host's forwarding socket `path` (the
    sandbox has no network of its own: metnos.mechanisms.sandbox.egress). TLS still checks the
    server's certificate against its name: the host only copies bytes."""
    def connect(timeout: float | None) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(path)
        except OSError:
            sock.close()
            raise
        return sock

    class Plain(imaplib.IMAP4):
        def _create_socket(self, timeout: float | None) -> socket.socket:
            return connect(timeout)

    class Tls(imaplib.IMAP4_SSL):
        def _create_socket(self, timeout: float | None) -> socket.socket:
            context: ssl.SSLContext = self.ssl_context
            return context.wrap_socket(connect(timeout), server_hostname=self.host)

    return Plain, Tls


def _reason(exc: BaseException) -> str:
    """A short, credential-free reason: the exception's kind and errno-like text only."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return "certificate not trusted"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:80]
    return type(exc).__name__


def close(conn: imaplib.IMAP4) -> None:
    with contextlib.suppress(imaplib.IMAP4.error, OSError):
        conn.logout()


# -- mailbox names (RFC 3501 §5.1.3, modified UTF-7) -------------------------------------------
def encode_name(name: str) -> str:
    out, run = [], ""
    for char in name:
        if 0x20 <= ord(char) <= 0x7E:
            if run:
                out.append(_b64(run))
                run = ""
            out.append("&-" if char == "&" else char)
        else:
            run += char
    if run:
        out.append(_b64(run))
    return "".join(out)


def _b64(run: str) -> str:
    data = base64.b64encode(run.encode("utf-16-be")).decode("ascii").rstrip("=")
    return "&" + data.replace("/", ",") + "-"


def decode_name(raw: str) -> str:
    def one(found: re.Match[str]) -> str:
        body = found.group(1)
        if not body:
            return "&"
        data = body.replace(",", "/")
        return base64.b64decode(data + "=" * (-len(data) % 4)).decode("utf-16-be")
    try:
        return re.sub(r"&([A-Za-z0-9+,]*)-", one, raw)
    except (ValueError, UnicodeDecodeError):
        return raw


def check_folder(name: object) -> str:
    if (not isinstance(name, str) or not name.strip() or len(name) > MAX_FOLDER_CHARS
            or any(ord(c) < 32 or ord(c) == 127 for c in name)):
        raise MailError("ERR_MAIL_FOLDER_INVALID", folder=str(name)[:80])
    return name


def quote(name: str) -> str:
    encoded = encode_name(check_folder(name))
    return '"' + encoded.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unquote(raw: bytes) -> str:
    text = raw.decode("ascii", "replace")
    if text.startswith('"') and text.endswith('"'):
        text = re.sub(r"\\(.)", r"\1", text[1:-1])
    return decode_name(text)


def list_folders(conn: imaplib.IMAP4) -> list[tuple[str, set[str]]]:
    """(name, flags) of every folder the server lists."""
    typ, rows = conn.list()
    if typ != "OK":
        raise MailError("ERR_MAIL_PROTOCOL", host="", reason="LIST")
    out = []
    for row in rows:
        if isinstance(row, tuple):  # the name came as a literal
            found = _LIST.match(re.sub(rb" \{\d+\}$", b" X", row[0]))
            name = decode_name(row[1].decode("ascii", "replace")) if found else ""
        elif isinstance(row, bytes):
            found = _LIST.match(row)
            name = _unquote(found.group("name")) if found else ""
        else:
            continue
        if found is not None:
            flags = set(found.group("flags").decode("ascii", "replace").lower().split())
            out.append((name, flags))
    return out


def status(conn: imaplib.IMAP4, name: str) -> dict[str, int]:
    """MESSAGES, UNSEEN, UIDNEXT and UIDVALIDITY of one folder, without opening it."""
    typ, rows = conn.status(quote(name), "(MESSAGES UNSEEN UIDNEXT UIDVALIDITY)")
    if typ != "OK":
        raise MailError("ERR_MAIL_FOLDER_NOT_FOUND", folder=name)
    text = b" ".join(r for r in rows if isinstance(r, bytes))
    items = {k.decode().lower(): int(v) for k, v in _STATUS_ITEM.findall(text)}
    return {key: items.get(key, 0) for key in ("messages", "unseen", "uidnext", "uidvalidity")}


def select(conn: imaplib.IMAP4, name: str, *, readonly: bool) -> int:
    """Open `name` (EXAMINE when `readonly`: nothing can change); its UIDVALIDITY."""
    try:
        typ, _data = conn.select(quote(name), readonly=readonly)
    except imaplib.IMAP4.error:
        typ = "NO"
    if typ != "OK":
        raise MailError("ERR_MAIL_FOLDER_NOT_FOUND", folder=name)
    found = (conn.untagged_responses.get("UIDVALIDITY") or [b"0"])[-1]
    return int(found) if isinstance(found, bytes) and found.isdigit() else 0


def uid_search(conn: imaplib.IMAP4, *criteria: str) -> list[int]:
    typ, rows = conn.uid("SEARCH", *criteria)
    if typ != "OK":
        raise MailError("ERR_MAIL_PROTOCOL", host="", reason="SEARCH")
    return sorted({int(n) for row in rows if isinstance(row, bytes) for n in row.split()})


def uid_set(uids: list[int]) -> str:
    return ",".join(str(u) for u in uids)


def fetch(conn: imaplib.IMAP4, uids: list[int], items: str) -> dict[int, dict[str, Any]]:
    """UID FETCH `items` of `uids`: uid → {"flags": [...], "sections": {name: bytes}}.
    Unsolicited FETCH responses (flag changes of other sessions) and UIDs not asked for are
    left out."""
    if not uids:
        return {}
    typ, data = conn.uid("FETCH", uid_set(uids), items)
    if typ != "OK":
        raise MailError("ERR_MAIL_PROTOCOL", host="", reason="FETCH")
    wanted, out = set(uids), {}
    for text, sections in _fetch_rows(data):
        uid, flags = _UID.search(text), _FLAGS.search(text)
        if uid is None or int(uid.group(1)) not in wanted:
            continue
        listed = flags.group(1).decode("ascii", "replace").split() if flags else []
        out[int(uid.group(1))] = {"flags": [f for f in listed
                                            if f.lower() not in SESSION_FLAGS],
                                  "sections": sections, "has_flags": flags is not None}
    return out


def _fetch_rows(data: list[Any]) -> list[tuple[bytes, dict[str, bytes]]]:
    rows: list[tuple[bytes, dict[str, bytes]]] = []
    for item in data:
        head = item[0] if isinstance(item, tuple) else item
        if not isinstance(head, bytes):
            continue
        if _FETCH_START.match(head) or not rows:
            rows.append((b"", {}))
        text, sections = rows[-1]
        if isinstance(item, tuple):
            found = _SECTION.search(head)
            name = found.group(1).decode("ascii", "replace").upper() if found else "?"
            sections[name] = item[1]
        rows[-1] = (text + b" " + head, sections)
    return rows


def copyuid(conn: imaplib.IMAP4) -> tuple[int, dict[int, int]]:
    """(destination UIDVALIDITY, source UID → destination UID) from the COPYUID response code
    (RFC 4315) of the last COPY or MOVE, or (0, {}) when the server gave none. Pop
    `untagged_responses["COPYUID"]` before the command, so an old one is never read."""
    rows = [r for r in conn.untagged_responses.pop("COPYUID", []) if isinstance(r, bytes)]
    for text in reversed(rows):
        found = _COPYUID.match(text.strip())
        if found is not None:
            src, dst = _expand(found.group(2)), _expand(found.group(3))
            if len(src) == len(dst):
                return int(found.group(1)), dict(zip(src, dst, strict=True))
    return 0, {}


def _expand(spec: bytes) -> list[int]:
    out: list[int] = []
    for part in spec.decode().split(","):
        low, _, high = part.partition(":")
        first, last = int(low), int(high or low)
        step = 1 if last >= first else -1
        out.extend(range(first, last + step, step))
    return out


def clean_flags(flags: list[str]) -> list[str]:
    """The flags a STORE may set back: system flags and keywords, never \\Recent."""
    return sorted({f for f in flags if _FLAG.match(f) and f.lower() not in SESSION_FLAGS})


def capabilities(conn: imaplib.IMAP4) -> set[str]:
    try:
        typ, rows = conn.capability()
    except imaplib.IMAP4.error:
        return set()
    text = b" ".join(r for r in rows if isinstance(r, bytes)) if typ == "OK" else b""
    return set(text.decode("ascii", "replace").upper().split())


# -- the executor protocol ---------------------------------------------------------------------
Run = Callable[[dict[str, Any], Account], dict[str, Any]]


def main(run: Run, allowed_args: frozenset[str]) -> None:
    """The protocol helper's `serve` for a mail executor: `run(args, account)` with the host's
    account, mail errors as their keys, the reply scrubbed of the password."""
    import metnos_sandbox_protocol as protocol  # the sandbox binds it beside this module

    passwords: list[str] = []

    def with_account(args: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        account = Account.from_envelope(request.get("account"))
        passwords.append(account.password)
        return run(args, account)

    errors = {
        MailError: lambda exc: protocol.Refused(exc.key, **exc.vars),
        TimeoutError: lambda exc: protocol.Refused("ERR_MAIL_TIMEOUT", host="", seconds=0),
        (imaplib.IMAP4.error, OSError): lambda exc: protocol.Refused(
            "ERR_MAIL_PROTOCOL", host="", reason=type(exc).__name__),
    }
    protocol.serve(with_account, allowed_args, max_stdin=MAX_STDIN, errors=errors,
                   envelope=True, scrub=lambda text: scrub(text, "".join(passwords)))


def scrub(text: str, password: str) -> str:
    """`text` (JSON) with the password, as JSON would write it (escaped or not), replaced."""
    if len(password) < 4:
        return text
    for ascii_only in (True, False):
        text = text.replace(json.dumps(password, ensure_ascii=ascii_only)[1:-1], REDACTED)
    return text
