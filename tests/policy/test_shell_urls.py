"""Host-side checks of shell_run commands and web_fetch URLs (metnos/mechanisms/policy/shell.py,
urls.py)."""

from __future__ import annotations

import socket

import pytest

from metnos.ground import i18n
from metnos.ground.errors import PolicyDenied
from metnos.ground.settings import PolicySettings
from metnos.mechanisms.policy.shell import MAX_ARGS, NEVER_ALLOWED, check_command, is_allowed_name
from metnos.mechanisms.policy.urls import check_url, refused_address

ALLOW = list(PolicySettings().shell_allow)


def _denied(exc: pytest.ExceptionInfo[PolicyDenied]) -> str:
    for lang in ("it", "en"):  # every refusal renders in both languages, all vars filled
        text = i18n.get(exc.value.key, lang, **exc.value.vars)
        assert text != exc.value.key and "{" not in text, text
    assert exc.value.vars.get("reason"), exc.value.vars
    return exc.value.key


# -- shell_run -------------------------------------------------------------------------------
@pytest.mark.parametrize(("command", "argv"), [
    ("ls", ["ls"]),
    ("wc -l notes/a.md", ["wc", "-l", "notes/a.md"]),
    ("grep -rn 'latte fresco' note", ["grep", "-rn", "latte fresco", "note"]),
    ('cat "file con spazi.txt"', ["cat", "file con spazi.txt"]),
    ("cut -d/ -f2 paths.txt", ["cut", "-d/", "-f2", "paths.txt"]),
    ("sort --field-separator=/ -k2 x", ["sort", "--field-separator=/", "-k2", "x"]),
    ("cat ./a.txt sub/./b", ["cat", "./a.txt", "sub/./b"]),
    ("ls *.md", ["ls", "*.md"]),
    ("grep 'a|b' x", ["grep", "a|b", "x"]),
    ("echo $HOME", ["echo", "$HOME"]),  # no shell: a literal, expanded by nobody
    ("tail -n 5 log.txt", ["tail", "-n", "5", "log.txt"]),
])
def test_allowed_commands_parse_to_argv(command: str, argv: list[str]) -> None:
    assert check_command(command, ALLOW) == argv


@pytest.mark.parametrize(("command", "key"), [
    ("", "ERR_SHELL_EMPTY"),
    ("   ", "ERR_SHELL_EMPTY"),
    ("''", "ERR_SHELL_EMPTY"),
    ("cat 'unclosed", "ERR_SHELL_PARSE"),
    ("cat a\x00b", "ERR_SHELL_ARG_INVALID"),
    ("echo " + "x" * 4100, "ERR_SHELL_TOO_LONG"),
    ("echo" + " x" * (MAX_ARGS + 1), "ERR_SHELL_TOO_MANY_ARGS"),
    ("sh -c id", "ERR_SHELL_NOT_ALLOWED"),
    ("bash", "ERR_SHELL_NOT_ALLOWED"),
    ("python3 -c 'print(1)'", "ERR_SHELL_NOT_ALLOWED"),
    ("/bin/ls", "ERR_SHELL_NOT_ALLOWED"),
    ("./ls", "ERR_SHELL_NOT_ALLOWED"),
    ("env", "ERR_SHELL_NOT_ALLOWED"),
    ("find . -exec cat {} ;", "ERR_SHELL_NOT_ALLOWED"),
    ("rm -rf .", "ERR_SHELL_NOT_ALLOWED"),
    ("curl http://x", "ERR_SHELL_NOT_ALLOWED"),
    ("LS", "ERR_SHELL_NOT_ALLOWED"),
    ("ｌｓ", "ERR_SHELL_NOT_ALLOWED"),  # fullwidth look-alike
    ("cat /etc/passwd", "ERR_SHELL_PATH_REFUSED"),
    ("cat -- /etc/passwd", "ERR_SHELL_PATH_REFUSED"),
    ("cat ../../x", "ERR_SHELL_PATH_REFUSED"),
    ("cat a/../../x", "ERR_SHELL_PATH_REFUSED"),
    ("ls ~", "ERR_SHELL_PATH_REFUSED"),
    ("ls ~root/.ssh", "ERR_SHELL_PATH_REFUSED"),
    ("ls /", "ERR_SHELL_PATH_REFUSED"),
    ("cat .audit/log.jsonl", "ERR_SHELL_PATH_REFUSED"),
    ("ls ./.trash", "ERR_SHELL_PATH_REFUSED"),
    ("sort -o/etc/x a", "ERR_SHELL_PATH_REFUSED"),
    ("cp a --target-directory=/tmp", "ERR_SHELL_PATH_REFUSED"),
    ("cp a --target-directory=..", "ERR_SHELL_PATH_REFUSED"),
    ("grep -f~/.ssh/id_rsa x", "ERR_SHELL_PATH_REFUSED"),
    ("ls | sh", "ERR_SHELL_OPERATOR"),
    ("cat a > b", "ERR_SHELL_OPERATOR"),
    ("ls ; id", "ERR_SHELL_OPERATOR"),
    ("ls && id", "ERR_SHELL_OPERATOR"),
    ("sort --compress-program=sh a", "ERR_SHELL_OPTION_REFUSED"),
    ("sort --compress-p=sh a", "ERR_SHELL_OPTION_REFUSED"),  # GNU long-option abbreviation
    ("sort -T tmp a", "ERR_SHELL_OPTION_REFUSED"),
    ("wc --files0-from=list", "ERR_SHELL_OPTION_REFUSED"),
    ("du --files0=list", "ERR_SHELL_OPTION_REFUSED"),
    ("tail -f log", "ERR_SHELL_OPTION_REFUSED"),
    ("tail -nF log", "ERR_SHELL_OPTION_REFUSED"),
    ("tail --f log", "ERR_SHELL_OPTION_REFUSED"),
])
def test_refused_commands(command: str, key: str) -> None:
    with pytest.raises(PolicyDenied) as exc:
        check_command(command, ALLOW)
    assert _denied(exc) == key


def test_denied_programs_stay_denied_even_when_configured() -> None:
    configured = [*ALLOW, "bash", "python3.11", "perl5.36", "env", "xargs", "find", "tar"]
    for name in ("bash", "python3.11", "perl5.36", "env", "xargs", "find", "tar"):
        with pytest.raises(PolicyDenied) as exc:
            check_command(f"{name} x", configured)
        assert exc.value.key == "ERR_SHELL_NOT_ALLOWED"
        assert name not in exc.value.vars["allowed"].split(", ")
    assert {"sh", "bash", "env", "xargs", "find"} <= NEVER_ALLOWED
    assert not any(is_allowed_name(n, [n]) for n in ("perl", "python", "python3", "pypy3"))


def test_the_allow_list_narrows() -> None:
    with pytest.raises(PolicyDenied):
        check_command("cat a.txt", ["ls"])
    assert check_command("ls -l", ["ls"]) == ["ls", "-l"]
    assert check_command("tail -- -f", ALLOW) == ["tail", "--", "-f"]  # a file named -f


# -- web_fetch ---------------------------------------------------------------------------------
def _fixed(*addresses: str):  # a DNS answer (external to us) for names that do not exist here
    return lambda host, port: list(addresses)


PUBLIC = _fixed("93.184.215.14")


@pytest.mark.parametrize(("url", "normalised"), [
    ("https://example.org", "https://example.org/"),
    ("HTTP://Example.ORG:8080/a/b?q=1#frag", "http://example.org:8080/a/b?q=1"),
    ("https://bücher.example/x", "https://xn--bcher-kva.example/x"),
    ("http://[2606:4700::1111]/", "http://[2606:4700::1111]/"),
])
def test_public_urls_pass_normalised(url: str, normalised: str) -> None:
    assert check_url(url, allow_private=False, resolve=PUBLIC) == normalised


@pytest.mark.parametrize(("url", "key"), [
    ("", "ERR_URL_INVALID"),
    ("example.org", "ERR_URL_SCHEME"),
    ("file:///etc/passwd", "ERR_URL_SCHEME"),
    ("ftp://example.org/x", "ERR_URL_SCHEME"),
    ("gopher://example.org/", "ERR_URL_SCHEME"),
    ("data:text/plain,hi", "ERR_URL_SCHEME"),
    ("javascript:alert(1)", "ERR_URL_SCHEME"),
    ("http://user:pw@example.org/", "ERR_URL_USERINFO"),
    ("http://example.org@127.0.0.1/", "ERR_URL_USERINFO"),
    ("http:///path", "ERR_URL_INVALID"),
    ("http://exa mple.org/", "ERR_URL_INVALID"),
    ("http://example.org/\r\nHost: x", "ERR_URL_INVALID"),
    ("http://example.org\\@127.0.0.1/", "ERR_URL_INVALID"),
    ("http://example.org:99999/", "ERR_URL_INVALID"),
    ("http://example.org:0/", "ERR_URL_INVALID"),
    ("http://exa$mple.org/", "ERR_URL_INVALID"),
    ("http://example.org/" + "a" * 2100, "ERR_URL_TOO_LONG"),
])
def test_bad_urls_refused(url: str, key: str) -> None:
    with pytest.raises(PolicyDenied) as exc:
        check_url(url, allow_private=True, resolve=PUBLIC)
    assert _denied(exc) == key


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:42618/api/turns",  # the gateway
    "http://127.0.0.1:4200/api/health",  # Prefect
    "http://localhost/",
    "http://0.0.0.0/",
    "http://[::1]/",
    "http://[::]/",
    "http://[::ffff:127.0.0.1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://192.168.1.1/",
    "http://172.16.0.1/",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://[fe80::1]/",
    "http://[fd00::1]/",
])
def test_private_addresses_refused(url: str) -> None:
    with pytest.raises(PolicyDenied) as exc:
        check_url(url, allow_private=False)
    assert _denied(exc) == "ERR_URL_PRIVATE"
    assert check_url(url, allow_private=True).startswith("http://")


@pytest.mark.parametrize("url", ["http://127.1/", "http://2130706433/", "http://0x7f000001/"])
def test_numeric_spellings_of_loopback_refused(url: str) -> None:
    """glibc reads these as IPv4 numbers (inet_aton), without DNS: so does this resolver.
    The sandboxed executor resolves them for real (tests/security/test_shell_web_attacks.py)."""
    def numeric(host: str, port: int) -> list[str]:
        return [socket.inet_ntoa(socket.inet_aton(host))]

    with pytest.raises(PolicyDenied) as exc:
        check_url(url, allow_private=False, resolve=numeric)
    assert _denied(exc) == "ERR_URL_PRIVATE"
    assert exc.value.vars["address"] == "127.0.0.1"


def test_a_name_with_any_private_address_is_refused() -> None:
    for resolve in (_fixed("127.0.0.1"), _fixed("93.184.215.14", "10.0.0.7"),
                    _fixed("64:ff9b::7f00:1"), _fixed("2002:7f00:1::1")):
        with pytest.raises(PolicyDenied) as exc:
            check_url("https://evil.example/", allow_private=False, resolve=resolve)
        assert exc.value.key == "ERR_URL_PRIVATE"
    with pytest.raises(PolicyDenied) as exc:
        check_url("https://nowhere.invalid/", allow_private=True, resolve=_fixed())
    assert _denied(exc) == "ERR_URL_UNRESOLVABLE"


@pytest.mark.parametrize(("address", "refused"), [
    ("8.8.8.8", False), ("2606:4700::1111", False), ("93.184.215.14", False),
    ("127.0.0.1", True), ("10.1.2.3", True), ("169.254.0.1", True), ("0.0.0.0", True),
    ("255.255.255.255", True), ("240.0.0.1", True), ("239.1.1.1", True), ("198.18.0.1", True),
    ("::1", True), ("::", True), ("::ffff:10.0.0.1", True), ("fe80::1%eth0", True),
    ("ff02::1", True), ("not-an-ip", True),
])
def test_address_classes(address: str, refused: bool) -> None:
    assert refused_address(address) is refused
