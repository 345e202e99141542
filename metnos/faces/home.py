"""`metnos init`: lay out METNOS_HOME (SPEC §1) — idempotently.

Creates what is missing and leaves alone what exists, reporting each thing it created: the
folders (secrets, keys and state private to the owner), the six workspace files in the
instance language, the key pairs, the owner token, the databases (embedded PostgreSQL unless
external URLs are set) and the signatures of the built-in executors.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from metnos.faces.registry import create_tables
from metnos.faces.serve.prefect_access import CREDENTIAL_FILE, ensure_prefect_credential
from metnos.features.languages.instance import open_instance_store
from metnos.ground import durable, keys
from metnos.ground.db.engine import (
    PREFECT_URL_ENV,
    database_url,
    embedded_postgres,
    make_engine,
    uses_embedded,
)
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.builtin import sign_builtins
from metnos.mechanisms.executors.registry import signatures_dir

WORKSPACE_FILES = ("IDENTITY.md", "SOUL.md", "USER.md", "TELOS.md", "RULES.md", "MEMORY.md")
DEFAULT_TOML = """\
# Metnos settings. Environment variables (METNOS_<GROUP>_<FIELD>) override this file.
# lang = "it"

[gateway]
# port = 42618

[llm]
# With no model, the embedded planner serves (templates of the executors' manifests).
# model = "ollama/qwen3:8b"
# api_base = "http://127.0.0.1:11434"

[policy]
# autonomy = "Supervised"   # ReadOnly | Supervised | Full
# reversible_without_asking = true   # Supervised: a reversible change runs, with Undo
"""


@dataclass
class InitReport:
    home: Path
    created: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created)


def initialise(settings: Settings) -> InitReport:
    """Make METNOS_HOME ready to serve; running it again changes nothing."""
    report = InitReport(settings.home)
    _layout(settings, report)
    _workspace_files(settings, report)
    for purpose in ("executors", "audit"):
        if keys.ensure_keypair(settings.keys_dir, purpose):
            report.created.append(f"keys/{purpose}")
    if not settings.owner_token_path.exists():
        durable.write_secret(settings.owner_token_path, secrets.token_urlsafe(32))
        report.created.append("secrets/owner.token")
    if ensure_prefect_credential(settings):
        report.created.append(f"secrets/{CREDENTIAL_FILE}")
    _database(settings, report)
    if not settings.i18n_db_path.exists():
        open_instance_store(settings).close()
        report.created.append(settings.i18n_db_path.name)
    builtins = settings.resources_root / "executors"
    for name in sign_builtins(builtins, settings.keys_dir, signatures_dir(settings)):
        report.created.append(f"signatures/{name}")
    return report


def _layout(settings: Settings, report: InitReport) -> None:
    private = {settings.home, settings.keys_dir, settings.secrets_dir, settings.state_dir}
    folders = [settings.home, settings.workspace, settings.audit_dir, settings.keys_dir,
               settings.secrets_dir, settings.state_dir, signatures_dir(settings),
               settings.home / "executors", settings.prefect_home]
    for folder in folders:
        if durable.make_dir(folder, 0o700 if folder in private else 0o755):
            report.created.append(str(folder.relative_to(settings.home)) + "/"
                                  if folder != settings.home else str(folder))
    for folder in (settings.keys_dir, settings.secrets_dir, settings.state_dir):
        folder.chmod(0o700)
    toml = settings.home / "metnos.toml"
    if durable.write_atomic(toml, DEFAULT_TOML.encode("utf-8"), mode=0o644, replace=False):
        report.created.append("metnos.toml")


def _workspace_files(settings: Settings, report: InitReport) -> None:
    lang = settings.active_languages[0]  # METNOS_LANG's, checked when the settings loaded
    folders = [settings.resources_root / "i18n" / code / "workspace" for code in (lang, "en")]
    for name in WORKSPACE_FILES:
        target = settings.workspace / name
        if os.path.lexists(target):  # the household's own file: never read the template again
            continue
        # the language's reviewed document, else the English one (a language being added)
        source = next((f / name for f in folders if (f / name).is_file()), folders[-1] / name)
        if durable.write_atomic(target, source.read_bytes(), mode=0o644, replace=False):
            report.created.append(f"workspace/{name}")


def _database(settings: Settings, report: InitReport) -> None:
    if uses_embedded(settings):
        pg = embedded_postgres(settings)
        if pg.initialise():
            report.created.append("pg/")
        was_running = pg.is_running()
        pg.start()
        try:
            for name, needed in ((settings.database.name, settings.database.url is None),
                                 (settings.database.prefect_name,
                                  not os.environ.get(PREFECT_URL_ENV))):
                if needed and pg.ensure_database(name):
                    report.created.append(f"database {name}")
            _tables(settings)
        finally:
            if not was_running:
                pg.stop()
    else:
        _tables(settings)


def _tables(settings: Settings) -> None:
    engine = make_engine(database_url(settings))
    try:
        create_tables(engine)
    finally:
        engine.dispose()
