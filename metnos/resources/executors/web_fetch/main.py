"""web_fetch: fetch one web page as text (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`;
the arguments are {"url": "...", "allow_private": false}.

The host checked the URL already (metnos/mechanisms/policy/urls.py). DNS can change after that check,
so every connection this executor opens (the first and each redirect) resolves the host
itself, refuses the whole host if ANY of its addresses is loopback, private, link-local,
multicast, reserved or unspecified (unless the host set `allow_private`, which it always
fills from its settings: a missing value means false), and connects only to an address it
checked. Only http and https, no credentials in URLs, at most 5 redirects, a capped body and
a deadline. The text is DATA from outside: the result says so (`"untrusted": true`).
"""

import codecs
import functools
import html.parser
import http.client
import ipaddress
import socket
import ssl
import sys
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import Refused, serve  # noqa: E402

MAX_STDIN = 1 << 20
MAX_URL_CHARS = 2048
MAX_BODY = 512 * 1024
MAX_TEXT_BYTES = 256 * 1024
SOCKET_TIMEOUT_S = 10.0
DEADLINE_S = 15.0
MAX_REDIRECTS = 5
ARGS = {"url", "allow_private"}
SCHEMES = ("http", "https")
HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-_")
USER_AGENT = "Metnos-web_fetch/0.1"
TEXT_SUBTYPES = {"json", "xml", "javascript", "ecmascript", "csv", "yaml", "x-yaml",
                 "x-www-form-urlencoded", "markdown"}
HTML_TYPES = {"text/html", "application/xhtml+xml"}
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# Format characters that reorder or hide text (bidi overrides and isolates, BOM).
HIDDEN_FORMAT = {0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067,
                 0x2068, 0x2069, 0xFEFF}


def shown(text, limit=200):
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c
                   for c in text[:limit])


# -- the same URL and address checks as the host's ---------------------------------------
def parse_url(url):
    """(split URL, ASCII host) after the syntax checks; Refused otherwise."""
    if not isinstance(url, str) or not url.strip():
        raise Refused("ERR_URL_INVALID", url="")
    if len(url) > MAX_URL_CHARS:
        raise Refused("ERR_URL_TOO_LONG", limit=MAX_URL_CHARS)
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 or c == "\\" for c in url):
        raise Refused("ERR_URL_INVALID", url=shown(url))
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        raise Refused("ERR_URL_INVALID", url=shown(url)) from None
    if parts.scheme.lower() not in SCHEMES:
        raise Refused("ERR_URL_SCHEME", url=shown(url), scheme=shown(parts.scheme, 20))
    if "@" in parts.netloc:
        raise Refused("ERR_URL_USERINFO", url=shown(url))
    host = ascii_host(parts.hostname or "")
    if host is None or port == 0:
        raise Refused("ERR_URL_INVALID", url=shown(url))
    return parts, host


def ascii_host(hostname):
    if not hostname:
        return None
    if ":" in hostname:
        try:
            return ipaddress.IPv6Address(hostname.split("%", 1)[0]).compressed
        except ValueError:
            return None
    try:
        host = hostname.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    if not host or not set(host) <= HOST_CHARS or len(host) > 253:
        return None
    return host


def refused_address(address):
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True
    candidates = [ip]
    if ip.version == 6:
        candidates += [a for a in (ip.ipv4_mapped, ip.sixtofour) if a is not None]
        if ip.teredo is not None:
            candidates += list(ip.teredo)
        if ip in NAT64:
            candidates.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return any(not a.is_global or a.is_private or a.is_loopback or a.is_link_local
               or a.is_multicast or a.is_reserved or a.is_unspecified for a in candidates)


def guarded_connect(allow_private):
    """A `socket.create_connection` that resolves, checks every address, then connects."""

    def connect(address, timeout=None, source_address=None):
        host, port = address
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise Refused("ERR_URL_UNRESOLVABLE", url=shown(str(host)), host=str(host)) from None
        if not allow_private:
            for info in infos:
                if refused_address(str(info[4][0])):
                    raise Refused("ERR_URL_PRIVATE", url=shown(str(host)), host=str(host),
                                  address=str(info[4][0]))
        seconds = timeout if isinstance(timeout, int | float) else SOCKET_TIMEOUT_S
        error = OSError("no address")
        for family, kind, proto, _, sockaddr in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(seconds)
                sock.connect(sockaddr)
                return sock
            except OSError as exc:
                sock.close()
                error = exc
        raise error

    return connect


class GuardedHTTP(http.client.HTTPConnection):
    def __init__(self, *args, allow_private, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = guarded_connect(allow_private)


class GuardedHTTPS(http.client.HTTPSConnection):
    def __init__(self, *args, allow_private, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = guarded_connect(allow_private)


class HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, allow_private):
        super().__init__()
        self.allow_private = allow_private

    def http_open(self, req):
        return self.do_open(functools.partial(GuardedHTTP, allow_private=self.allow_private),
                            req)


class HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, allow_private):
        super().__init__(context=ssl.create_default_context())
        self.allow_private = allow_private

    def https_open(self, req):
        conn = functools.partial(GuardedHTTPS, allow_private=self.allow_private,
                                 context=self._context)
        return self.do_open(conn, req)


class RedirectHandler(urllib.request.HTTPRedirectHandler):
    """Follows at most MAX_REDIRECTS redirects, each target checked like the first URL."""

    max_repeats = max_redirections = MAX_REDIRECTS + 1  # our count below decides first

    def __init__(self):
        super().__init__()
        self.count = 0

    def http_error_302(self, req, fp, code, msg, headers):
        target = headers.get("location") or headers.get("uri")
        if target:
            self.count += 1
            if self.count > MAX_REDIRECTS:
                raise Refused("ERR_WEB_TOO_MANY_REDIRECTS", limit=MAX_REDIRECTS)
            parse_url(urllib.parse.urljoin(req.full_url, target))
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def build_opener(allow_private):
    opener = urllib.request.OpenerDirector()
    for handler in (HTTPHandler(allow_private), HTTPSHandler(allow_private),
                    RedirectHandler(), urllib.request.HTTPDefaultErrorHandler(),
                    urllib.request.HTTPErrorProcessor(), urllib.request.UnknownHandler()):
        opener.add_handler(handler)
    return opener


# -- fetching and turning the body into text ----------------------------------------------
def open_url(url, host, allow_private):
    request = urllib.request.Request(url, headers={
        "User-Agent": USER_AGENT, "Accept-Encoding": "identity",
        "Accept": "text/html,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.1"})
    try:
        return build_opener(allow_private).open(request, timeout=SOCKET_TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        return exc  # a 4xx/5xx page is still a page: its status is in the result
    except urllib.error.URLError as exc:
        raise failure(exc.reason, host) from None
    except (http.client.HTTPException, OSError) as exc:
        raise failure(exc, host) from None


def failure(reason, host):
    if isinstance(reason, Refused):
        return reason
    if isinstance(reason, ssl.SSLError | ssl.CertificateError):
        return Refused("ERR_WEB_TLS", host=host, reason=shown(str(reason), 200))
    if isinstance(reason, TimeoutError | socket.timeout):
        return Refused("ERR_WEB_TIMEOUT", host=host, seconds=int(SOCKET_TIMEOUT_S))
    text = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
    return Refused("ERR_WEB_UNREACHABLE", host=host, reason=shown(text, 200))


def read_body(response, deadline):
    """(body, truncated): at most MAX_BODY bytes, read until EOF, the cap or the deadline."""
    chunks, size = [], 0
    while size <= MAX_BODY:
        if time.monotonic() > deadline:
            return b"".join(chunks), True
        try:
            chunk = response.read(min(65536, MAX_BODY + 1 - size))
        except TimeoutError:
            return b"".join(chunks), True
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    body = b"".join(chunks)
    return body[:MAX_BODY], len(body) > MAX_BODY


def is_text(content_type):
    main, _, sub = content_type.partition("/")
    return main == "text" or sub in TEXT_SUBTYPES or sub.endswith(("+xml", "+json"))


class TextExtractor(html.parser.HTMLParser):
    SKIP = {"script", "style", "noscript", "template", "svg", "iframe", "object"}
    BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section",
             "article", "header", "footer", "ul", "ol", "table", "pre", "blockquote", "title",
             "hr", "dd", "dt", "main", "nav", "form"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.skipping = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in self.BLOCK:
            self.parts.append("\n- " if tag == "li" else "\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)


def html_to_text(markup):
    parser = TextExtractor()
    try:
        parser.feed(markup)
        parser.close()
    except Exception:  # a page the parser chokes on is still shown, as it came
        return markup
    return "".join(parser.parts)


def clean(text):
    """Control and hiding characters removed, whitespace tidied, blank runs folded."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kept = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in "\n\t" or not (category in ("Cc", "Cs", "Co") or ord(ch) in HIDDEN_FORMAT):
            kept.append(ch)
    lines, blank = [], False
    for line in "".join(kept).split("\n"):
        line = " ".join(line.split())
        if line or not blank:
            lines.append(line)
        blank = not line
    return "\n".join(lines).strip()


def decode(body, charset):
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:
        codec = "utf-8"
    return body.decode(codec, errors="replace")


def cap_text(text):
    data = text.encode("utf-8")
    if len(data) <= MAX_TEXT_BYTES:
        return text, False
    return data[:MAX_TEXT_BYTES].decode("utf-8", errors="ignore"), True


def unreachable(exc):
    return Refused("ERR_WEB_UNREACHABLE", host="", reason=type(exc).__name__)


def run(args):
    allow_private = args.get("allow_private", False)
    if not isinstance(allow_private, bool):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="allow_private")
    url = args.get("url")
    _, host = parse_url(url)
    deadline = time.monotonic() + DEADLINE_S
    try:
        response = open_url(url, host, allow_private)
    except Refused as exc:  # a refused connection knows its host only: name the asked URL
        if exc.key in ("ERR_URL_PRIVATE", "ERR_URL_UNRESOLVABLE"):
            exc.vars["url"] = shown(url)
        raise
    with response:
        content_type = response.headers.get_content_type()
        if not is_text(content_type):
            raise Refused("ERR_WEB_NOT_TEXT", url=shown(url), content_type=content_type)
        body, truncated = read_body(response, deadline)
        text = decode(body, response.headers.get_content_charset())
        final_url = shown(response.geturl() or url, MAX_URL_CHARS)
        status = response.status if response.status is not None else response.code
    if content_type in HTML_TYPES:
        text = html_to_text(text)
    text, cut = cap_text(clean(text))
    return {"url": final_url, "status": int(status), "content_type": content_type,
            "text": text, "truncated": truncated or cut, "untrusted": True}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN,
          errors={(http.client.HTTPException, OSError): unreachable})
