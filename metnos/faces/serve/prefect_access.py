"""The Prefect API and UI are an approval surface, locked like the gateway (SPEC §1).

Prefect's defaults (no auth, CORS `*`, CSRF protection off) let any web page open in the
owner's browser, and any local process, list a paused turn and resume it with "approve".
Metnos closes that with Prefect's own settings, never with a proxy of its own:

- `metnos init` writes a credential `secrets/prefect.auth` (0600, `metnos:<random>`);
- the server runs with `PREFECT_SERVER_API_AUTH_STRING` (HTTP basic auth on every route but
  the health check; the UI asks for it), `PREFECT_SERVER_API_CSRF_PROTECTION_ENABLED=true`
  and `PREFECT_SERVER_API_CORS_ALLOWED_ORIGINS` set to the UI's own origin;
- every Metnos process that talks to it (the gateway and its runner, tests) gets
  `PREFECT_API_AUTH_STRING`. With an external `PREFECT_API_URL`, the owner's own
  `PREFECT_API_AUTH_STRING` is passed through untouched.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from metnos.ground import durable
from metnos.ground.settings import Settings

CREDENTIAL_FILE = "prefect.auth"
CREDENTIAL_USER = "metnos"
AUTH_ENV = "PREFECT_API_AUTH_STRING"
SERVER_AUTH_ENV = "PREFECT_SERVER_API_AUTH_STRING"


def credential_path(settings: Settings) -> Path:
    return settings.secrets_dir / CREDENTIAL_FILE


def new_credential() -> str:
    """`user:password`, the form Prefect's basic auth and its UI's login expect."""
    return f"{CREDENTIAL_USER}:{secrets.token_urlsafe(32)}"


def read_credential(settings: Settings) -> str | None:
    """The instance's Prefect credential, or None when `metnos init` has not written it."""
    try:
        value = credential_path(settings).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return value or None


def ui_origins(port: int) -> list[str]:
    """The origins the Prefect UI is served from: the server itself, by either loopback name."""
    return [f"http://127.0.0.1:{port}", f"http://localhost:{port}"]


def server_environment(*, auth_string: str, port: int) -> dict[str, str]:
    """What the Prefect server process needs to refuse anyone without the credential."""
    if not auth_string or ":" not in auth_string:
        raise ValueError("the Prefect credential must be user:password")
    return {
        SERVER_AUTH_ENV: auth_string,
        "PREFECT_SERVER_API_CSRF_PROTECTION_ENABLED": "true",
        "PREFECT_SERVER_API_CORS_ALLOWED_ORIGINS": ",".join(ui_origins(port)),
    }


def ui_url(settings: Settings, environ: Mapping[str, str] = os.environ) -> str:
    """Where the Prefect UI is: Metnos's own server, or the one `PREFECT_API_URL` names."""
    external = environ.get("PREFECT_API_URL")
    if external:
        return external.rstrip("/").removesuffix("/api")
    return f"http://127.0.0.1:{settings.prefect.port}"


def client_environment(settings: Settings,
                       environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables a Metnos process needs to talk to the Prefect API.

    Metnos's own server: its credential. An external server (`PREFECT_API_URL` set by the
    owner): nothing added, the owner's `PREFECT_API_AUTH_STRING` (if any) is theirs to give.
    """
    if environ.get("PREFECT_API_URL"):
        return {}
    credential = read_credential(settings)
    return {AUTH_ENV: credential} if credential else {}


def ensure_prefect_credential(settings: Settings) -> bool:
    """Write the Prefect API credential (`secrets/prefect.auth`) unless it exists."""
    path = credential_path(settings)
    if path.exists():
        return False
    durable.write_secret(path, new_credential())
    return True
