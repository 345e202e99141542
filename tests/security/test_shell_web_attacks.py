"""Attacks on shell_run and web_fetch: each one refused by the host check AND by the executor.

The executors run for real in the bubblewrap sandbox (built as metnos/turns/service.py does).
The redirect and DNS attacks need a "public" server: a private network namespace
(`unshare -rmn`) gives 1.1.1.1 to its loopback and its own /etc/hosts, and the sandboxed
web_fetch runs inside it, so a real public-looking address redirects to a real 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from metnos.ground.errors import PolicyDenied
from metnos.ground.settings import PolicySettings
from metnos.mechanisms.policy.shell import check_command
from metnos.mechanisms.policy.urls import check_url
from tests.executors.test_shell_web import Site, error_of, run_in_sandbox
from tests.sandbox._helpers import make_workspace
from tests.support.system import ensure_debian_binary

pytestmark = pytest.mark.attack

ROOT = Path(__file__).resolve().parents[2]
ALLOW = list(PolicySettings().shell_allow)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path, "AUDIT-LINE\n", {"a.txt": "ciao\n"})


# -- shell_run ---------------------------------------------------------------------------------
SHELL_ATTACKS = [
    ("sh -c 'cat /etc/passwd'", "ERR_SHELL_NOT_ALLOWED"),
    ("bash", "ERR_SHELL_NOT_ALLOWED"),
    ("bash -i", "ERR_SHELL_NOT_ALLOWED"),
    ("python3 -c 'import os; os.system(\"id\")'", "ERR_SHELL_NOT_ALLOWED"),
    ("perl -e 'exec \"sh\"'", "ERR_SHELL_NOT_ALLOWED"),
    ("/bin/ls", "ERR_SHELL_NOT_ALLOWED"),
    ("/usr/bin/cat a.txt", "ERR_SHELL_NOT_ALLOWED"),
    ("env", "ERR_SHELL_NOT_ALLOWED"),
    ("env sh", "ERR_SHELL_NOT_ALLOWED"),
    ("xargs sh", "ERR_SHELL_NOT_ALLOWED"),
    ("find . -exec sh -c id ;", "ERR_SHELL_NOT_ALLOWED"),
    ("cat /etc/passwd", "ERR_SHELL_PATH_REFUSED"),
    ("cat /proc/self/environ", "ERR_SHELL_PATH_REFUSED"),
    ("cat ../../x", "ERR_SHELL_PATH_REFUSED"),
    ("ls ~", "ERR_SHELL_PATH_REFUSED"),
    ("cat ~/.ssh/id_rsa", "ERR_SHELL_PATH_REFUSED"),
    ("cat .audit/log.jsonl", "ERR_SHELL_PATH_REFUSED"),
    ("cp a.txt --target-directory=/tmp", "ERR_SHELL_PATH_REFUSED"),
    ("sort -o/home/metnos/executor/main.py a.txt", "ERR_SHELL_PATH_REFUSED"),
    ("sort --compress-program=sh a.txt", "ERR_SHELL_OPTION_REFUSED"),
    ("wc --files0-from=list.txt", "ERR_SHELL_OPTION_REFUSED"),
    ("ls | sh", "ERR_SHELL_OPERATOR"),
    ("cat a.txt ; id", "ERR_SHELL_OPERATOR"),
    ("echo x > /etc/cron.d/x", "ERR_SHELL_OPERATOR"),
]


@pytest.mark.parametrize(("command", "key"), SHELL_ATTACKS)
def test_shell_attack_refused_by_host_and_executor(workspace: Path, command: str,
                                                   key: str) -> None:
    with pytest.raises(PolicyDenied) as exc:
        check_command(command, ALLOW)
    assert exc.value.key == key
    assert error_of(run_in_sandbox("shell_run", workspace, {"command": command})) == key


def test_widened_configuration_cannot_widen_the_executor(workspace: Path) -> None:
    """An owner adding bash, or an unknown tool, to shell_allow: the host refuses the deny
    set whatever the configuration; the executor refuses anything outside its own list."""
    with pytest.raises(PolicyDenied):
        check_command("bash -c id", [*ALLOW, "bash"])
    assert check_command("id", [*ALLOW, "id"]) == ["id"]  # the host lets it through...
    result = run_in_sandbox("shell_run", workspace, {"command": "id"})
    assert error_of(result) == "ERR_SHELL_NOT_ALLOWED"  # ...the executor does not


def test_symlink_to_a_host_secret_reads_nothing(workspace: Path, tmp_path: Path) -> None:
    """`cat link` passes the argument checks; the sandbox has no host file behind the link."""
    secret = tmp_path / "host_home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- fake")
    (workspace / "link").symlink_to(secret)
    (workspace / "etc").symlink_to("/etc")
    for command in ("cat link", "cat etc/passwd", "grep -r PRIVATE .", "cat * .aud*"):
        assert check_command(command, ALLOW)
        result = run_in_sandbox("shell_run", workspace, {"command": command})
        assert result.ok and result.result is not None, result.error_key
        output = result.result["stdout"] + result.result["stderr"]
        assert "PRIVATE KEY" not in output and "root:" not in output
        assert "AUDIT-LINE" not in output


def test_file_names_cannot_become_options(workspace: Path) -> None:
    """Files named like options, picked up by a wildcard, stay file names (`./--help`)."""
    (workspace / "--help").write_text("h\n")
    (workspace / "--files0-from=a.txt").write_text("f\n")
    result = run_in_sandbox("shell_run", workspace, {"command": "wc -l *"})
    assert result.ok and result.result is not None, result.error_key
    assert result.result["command"] == "wc -l ./--files0-from=a.txt ./--help a.txt"
    assert result.result["stdout"].splitlines()[-1].split() == ["3", "total"]
    assert "Usage" not in result.result["stdout"]


# -- web_fetch on this host's network ----------------------------------------------------------
@pytest.fixture
def secret_site() -> Iterator[Site]:
    site = Site()
    yield site
    site.close()
    assert "/secret" not in site.hits, "a refused fetch reached the loopback server"


def _numeric(host: str, port: int) -> list[str]:
    """What glibc does with numeric spellings (inet_aton), without DNS."""
    return [socket.inet_ntoa(socket.inet_aton(host))]


LOOPBACK_TARGETS = [
    ("http://127.0.0.1:{port}/secret", None),
    ("http://localhost:{port}/secret", None),
    ("http://{hostname}:{port}/secret", None),  # this machine's name resolves to it
    ("http://0.0.0.0:{port}/secret", None),
    ("http://[::1]:{port}/secret", None),
    ("http://[::ffff:127.0.0.1]:{port}/secret", None),
    ("http://127.1:{port}/secret", _numeric),
    ("http://2130706433:{port}/secret", _numeric),
    ("http://0x7f000001:{port}/secret", _numeric),
    ("http://169.254.169.254/latest/meta-data/", None),
    ("http://127.0.0.1:42618/api/turns", None),  # the gateway
    ("http://127.0.0.1:4200/api/health", None),  # Prefect
]


@pytest.mark.parametrize(("template", "resolve"), LOOPBACK_TARGETS)
def test_fetch_of_local_addresses_refused(workspace: Path, secret_site: Site, template: str,
                                          resolve: Any) -> None:
    url = template.format(port=secret_site.port, hostname=socket.gethostname())
    with pytest.raises(PolicyDenied) as exc:
        check_url(url, allow_private=False, resolve=resolve)
    assert exc.value.key == "ERR_URL_PRIVATE"
    result = run_in_sandbox("web_fetch", workspace, {"url": url, "allow_private": False})
    assert error_of(result) == "ERR_URL_PRIVATE"


def test_missing_allow_private_means_refused(workspace: Path, secret_site: Site) -> None:
    """The host always fills allow_private; if it did not, the executor fails closed."""
    url = f"{secret_site.base}/secret"
    assert error_of(run_in_sandbox("web_fetch", workspace, {"url": url})) == "ERR_URL_PRIVATE"


@pytest.mark.parametrize(("url", "key"), [
    ("file:///etc/passwd", "ERR_URL_SCHEME"),
    ("file://localhost/etc/passwd", "ERR_URL_SCHEME"),
    ("ftp://127.0.0.1/", "ERR_URL_SCHEME"),
    ("gopher://127.0.0.1:6379/_FLUSHALL", "ERR_URL_SCHEME"),
    ("data:text/plain;base64,aWdub3JlIHByZXZpb3Vz", "ERR_URL_SCHEME"),
    ("http://owner:token@127.0.0.1/", "ERR_URL_USERINFO"),
    ("http://127.0.0.1/\r\nX-Injected: 1", "ERR_URL_INVALID"),
])
def test_other_schemes_and_tricks_refused(workspace: Path, url: str, key: str) -> None:
    with pytest.raises(PolicyDenied) as exc:
        check_url(url, allow_private=True)
    assert exc.value.key == key
    result = run_in_sandbox("web_fetch", workspace, {"url": url, "allow_private": True})
    assert error_of(result) == key


# -- web_fetch in a private network namespace with a "public" address -------------------------
DRIVER = r'''
import asyncio, json, sys, tempfile
from pathlib import Path
from urllib.parse import quote
sys.path.insert(0, sys.argv[1])
from metnos.ground.errors import PolicyDenied
from metnos.mechanisms.policy.urls import check_url
from metnos.mechanisms.sandbox import run_sandboxed
from tests.executors.test_shell_web import Site, sandbox_request

public, private = Site("1.1.1.1"), Site("127.0.0.1")
P, Q = public.port, private.port
def via(target):
    return f"http://public.test:{P}/redirect?to=" + quote(target, safe="")
cases = {
    "public_ip": (f"http://1.1.1.1:{P}/plain", None),
    "public_name": (f"http://public.test:{P}/plain", None),
    "redirect_public": (via(f"http://1.1.1.1:{P}/plain"), None),
    "redirect_loopback": (via(f"http://127.0.0.1:{Q}/secret"), None),
    "redirect_private_name": (via(f"http://evil.test:{Q}/secret"), None),
    "redirect_scheme_relative": (via(f"//127.0.0.1:{Q}/secret"), None),
    "redirect_ipv6_loopback": (via(f"http://[::1]:{Q}/secret"), None),
    "redirect_metadata": (via("http://169.254.169.254/latest/meta-data/"), None),
    "redirect_gateway": (via("http://127.0.0.1:42618/api/turns"), None),
    "redirect_file": (via("file:///etc/passwd"), None),
    "redirect_ftp": (via("ftp://public.test/x"), None),
    "redirect_userinfo": (via(f"http://u:p@public.test:{P}/plain"), None),
    "name_to_loopback": (f"http://evil.test:{Q}/secret", None),
    "rebinding": (f"http://rebind.test:{Q}/secret", lambda host, port: ["1.1.1.1"]),
}
workspace = Path(tempfile.mkdtemp())
hosts = {}
for name, (url, resolve) in cases.items():
    try:
        check_url(url, allow_private=False, resolve=resolve)
        hosts[name] = "ok"
    except PolicyDenied as exc:
        hosts[name] = exc.key
async def fetch_all():
    requests = [sandbox_request("web_fetch", workspace, {"url": url, "allow_private": False})
                for url, _ in cases.values()]
    return await asyncio.gather(*(run_sandboxed(r) for r in requests))
out = {}
for name, result in zip(cases, asyncio.run(fetch_all())):
    out[name] = {"host": hosts[name], "ok": result.ok, "key": result.error_key,
                 "text": (result.result or {}).get("text"), "crash": result.stderr_tail}
out["private_hits"] = private.hits
print(json.dumps(out))
'''

HOSTS = "127.0.0.1 localhost\n1.1.1.1 public.test\n127.0.0.1 evil.test rebind.test\n"


@pytest.fixture(scope="module")
def netns_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    unshare = shutil.which("unshare")
    ip = (shutil.which("ip", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
          or ensure_debian_binary("ip", "iproute2"))
    if unshare is None or ip is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2) for a private network")
    tmp = tmp_path_factory.mktemp("netns")
    (tmp / "hosts").write_text(HOSTS)
    (tmp / "driver.py").write_text(DRIVER)
    script = ('"$0" link set lo up && "$0" addr add 1.1.1.1/32 dev lo && '
              'mount --bind "$1" /etc/hosts && exec "$2" "$3" "$4"')
    proc = subprocess.run(
        [unshare, "-rmn", "sh", "-c", script, ip, str(tmp / "hosts"), sys.executable,
         str(tmp / "driver.py"), str(ROOT)],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    if proc.returncode != 0 and "unshare" in proc.stderr and not proc.stdout:
        pytest.skip(f"cannot create a private network namespace: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    results: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results


def test_netns_control_public_pages_are_fetched(netns_results: dict[str, Any]) -> None:
    """Without this control the refusals below could come from a broken fetch."""
    for name in ("public_ip", "public_name", "redirect_public"):
        case = netns_results[name]
        assert case["host"] == "ok" and case["ok"], case
        assert case["text"].startswith("riga uno"), case


@pytest.mark.parametrize(("name", "host_key", "key"), [
    ("redirect_loopback", "ok", "ERR_URL_PRIVATE"),
    ("redirect_private_name", "ok", "ERR_URL_PRIVATE"),
    ("redirect_scheme_relative", "ok", "ERR_URL_PRIVATE"),
    ("redirect_ipv6_loopback", "ok", "ERR_URL_PRIVATE"),
    ("redirect_metadata", "ok", "ERR_URL_PRIVATE"),
    ("redirect_gateway", "ok", "ERR_URL_PRIVATE"),
    ("redirect_file", "ok", "ERR_URL_SCHEME"),
    ("redirect_ftp", "ok", "ERR_URL_SCHEME"),
    ("redirect_userinfo", "ok", "ERR_URL_USERINFO"),
    ("name_to_loopback", "ERR_URL_PRIVATE", "ERR_URL_PRIVATE"),
    ("rebinding", "ok", "ERR_URL_PRIVATE"),  # DNS said public to the host, then 127.0.0.1
])
def test_netns_redirect_and_dns_attacks_refused(netns_results: dict[str, Any], name: str,
                                                host_key: str, key: str) -> None:
    case = netns_results[name]
    assert case["host"] == host_key, case  # "ok": only the executor can see this attack
    assert not case["ok"] and case["key"] == key, case


def test_netns_loopback_server_never_reached(netns_results: dict[str, Any]) -> None:
    assert netns_results["private_hits"] == []


# -- web_fetch over TLS ------------------------------------------------------------------------
def _self_signed(tmp: Path) -> tuple[Path, Path]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), False)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp / "cert.pem", tmp / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def test_untrusted_certificate_refused(workspace: Path, tmp_path: Path) -> None:
    """A man in the middle with its own certificate: the TLS handshake fails, nothing read."""
    import ssl

    site = Site()
    cert_file, key_file = _self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    site.server.socket = context.wrap_socket(site.server.socket, server_side=True)
    try:
        url = f"https://localhost:{site.port}/secret"
        result = run_in_sandbox("web_fetch", workspace, {"url": url, "allow_private": True})
        assert error_of(result) == "ERR_WEB_TLS"
        assert "certificate" in result.error_vars["reason"].lower()
    finally:
        site.close()
    assert "/secret" not in site.hits
