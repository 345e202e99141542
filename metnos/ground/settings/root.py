"""The root `Settings`, composed of one `BaseSettings` per group (the modules beside this one).

Sources, highest priority first: explicit init arguments, environment variables
(`METNOS_<GROUP>_<FIELD>`; the root fields are `METNOS_HOME`, `METNOS_LANG`, ...),
then `METNOS_HOME/metnos.toml` (tables named after the groups: `[gateway]`, `[llm]`...),
then the defaults below.

Use `get_settings()`; it is cached, and `get_settings.cache_clear()` makes tests pick up
a changed environment.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from metnos.ground.errors import ConfigError
from metnos.ground.settings.agent import AgentSettings
from metnos.ground.settings.attachments import AttachmentSettings
from metnos.ground.settings.channels import TelegramSettings, WebSettings
from metnos.ground.settings.database import DatabaseSettings, PrefectSettings
from metnos.ground.settings.errors import config_error
from metnos.ground.settings.evolution import EvolutionSettings, NotifySettings
from metnos.ground.settings.gateway import GatewaySettings
from metnos.ground.settings.i18n import I18nSettings
from metnos.ground.settings.intents import bcp47
from metnos.ground.settings.llm import LLMSettings
from metnos.ground.settings.mail import MailSettings
from metnos.ground.settings.policy import PolicySettings
from metnos.ground.settings.reminders import ReminderSettings
from metnos.ground.settings.remote import RemoteSettings
from metnos.ground.settings.sandbox import SandboxSettings
from metnos.ground.settings.schedules import ScheduleSettings
from metnos.ground.settings.trash import TrashSettings
from metnos.ground.settings.tutor import TutorSettings
from metnos.ground.settings.voice import VoiceSettings
from metnos.ground.system_lang import Lang, lang_code, system_lang
from metnos.ground.timezone import known_zone, system_timezone


def default_home() -> Path:
    """`METNOS_HOME` when set, else `~/.local/share/metnos`."""
    env = os.environ.get("METNOS_HOME")
    if env:
        return Path(env).expanduser()
    return Path("~/.local/share/metnos").expanduser()


class Settings(BaseSettings):
    """The root settings. Environment names: METNOS_HOME, METNOS_LANG, METNOS_<GROUP>_*."""

    model_config = SettingsConfigDict(env_prefix="METNOS_", extra="forbid")

    home: Path = Field(default_factory=default_home, description="Everything the instance owns.")
    lang: str = Field(default_factory=system_lang, description="Process language (BCP-47), "
                      "fixed at boot; default: the machine's locale when Metnos speaks it.")
    timezone: str = Field(
        default_factory=system_timezone,
        description="The household's IANA time zone (the time of day, reminders, local times "
        "in lists); default: the machine's.")
    gateway: GatewaySettings = Field(default_factory=lambda: GatewaySettings())
    database: DatabaseSettings = Field(default_factory=lambda: DatabaseSettings())
    prefect: PrefectSettings = Field(default_factory=lambda: PrefectSettings())
    llm: LLMSettings = Field(default_factory=lambda: LLMSettings())
    sandbox: SandboxSettings = Field(default_factory=lambda: SandboxSettings())
    policy: PolicySettings = Field(default_factory=lambda: PolicySettings())
    i18n: I18nSettings = Field(default_factory=lambda: I18nSettings())
    telegram: TelegramSettings = Field(default_factory=lambda: TelegramSettings())
    web: WebSettings = Field(default_factory=lambda: WebSettings())
    agent: AgentSettings = Field(default_factory=lambda: AgentSettings())
    reminders: ReminderSettings = Field(default_factory=lambda: ReminderSettings())
    notify: NotifySettings = Field(default_factory=lambda: NotifySettings())
    evolution: EvolutionSettings = Field(default_factory=lambda: EvolutionSettings())
    tutor: TutorSettings = Field(default_factory=lambda: TutorSettings())
    trash: TrashSettings = Field(default_factory=lambda: TrashSettings())
    mail: MailSettings = Field(default_factory=lambda: MailSettings())
    schedules: ScheduleSettings = Field(default_factory=lambda: ScheduleSettings())
    remote: RemoteSettings = Field(default_factory=lambda: RemoteSettings())
    attachments: AttachmentSettings = Field(default_factory=lambda: AttachmentSettings())
    voice: VoiceSettings = Field(default_factory=lambda: VoiceSettings())

    @field_validator("lang")
    @classmethod
    def _lang_tag(cls, value: str) -> str:
        return bcp47(value)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        if not known_zone(value):
            raise ValueError(f"unknown time zone {value!r} (an IANA name, e.g. Europe/Rome)")
        return value

    @property
    def tz(self) -> ZoneInfo:
        """The household's time zone."""
        return ZoneInfo(self.timezone)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls))

    # -- derived paths (the layout of SPEC §1) --------------------------------------------
    @property
    def workspace(self) -> Path:
        return self.home / "workspace"

    @property
    def audit_dir(self) -> Path:
        return self.workspace / ".audit"

    @property
    def keys_dir(self) -> Path:
        return self.home / "keys"

    @property
    def secrets_dir(self) -> Path:
        return self.home / "secrets"

    @property
    def pg_dir(self) -> Path:
        return self.home / "pg"

    @property
    def prefect_home(self) -> Path:
        return self.home / "prefect"

    @property
    def state_dir(self) -> Path:
        """Host-only state no executor can reach: audit checkpoints, before manifests."""
        return self.home / "state"

    @property
    def resources_root(self) -> Path:
        """The folder holding `prompts/`, `i18n/` and `executors/` (SPEC §9)."""
        from metnos.ground.paths import resources_path

        return self.i18n.resources_dir or resources_path()

    @property
    def i18n_db_path(self) -> Path:
        """Layer-3 messages (SPEC §1, §9.3), seeded from the files under `i18n/`."""
        return self.home / "i18n.sqlite"

    @property
    def active_languages(self) -> tuple[Lang, ...]:
        """Languages sessions may use: the process language first, then `i18n.languages`
        (each tag checked when the settings loaded, here as its `Lang`)."""
        return tuple(dict.fromkeys(lang_code(tag) for tag in (self.lang, *self.i18n.languages)))

    @property
    def workspace_language(self) -> str:
        return self.i18n.workspace_language or self.lang

    @property
    def owner_token_path(self) -> Path:
        return self.secrets_dir / "owner.token"

    def owner_token(self) -> str:
        return self.owner_token_path.read_text(encoding="utf-8").strip()


class _TomlSource(PydanticBaseSettingsSource):
    """Reads `METNOS_HOME/metnos.toml`; group tables override nothing set in the environment."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        self._data = _read_toml(default_home() / "metnos.toml")

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        data = dict(self._data)
        data.pop("home", None)  # the file lives inside METNOS_HOME; it cannot move it
        # a group in the file is merged under whatever the environment sets for that group
        for group in _groups():
            if group in data:
                data[group] = _group_from_toml(group, data[group])
        return data


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError("ERR_CONFIG_TOML_INVALID", path=str(path), detail=str(exc)) from exc


def _groups() -> dict[str, type[BaseSettings]]:
    """The root's settings groups by table name, from its fields: a new group is never
    forgotten here (`[reminders]` was)."""
    return {name: kind for name, field in Settings.model_fields.items()
            if isinstance(kind := field.annotation, type) and issubclass(kind, BaseSettings)}


def _group_from_toml(group: str, table: Any) -> BaseModel:
    """Build a group from its TOML table; its own environment variables still win."""
    if not isinstance(table, dict):
        raise ConfigError("ERR_CONFIG_TOML_INVALID", path="metnos.toml",
                          detail=f"[{group}] is not a table")
    cls = _groups()[group]
    try:
        env_values = cls().model_dump(exclude_unset=True)
        return cls(**{**table, **env_values})
    except ValidationError as exc:  # name the table: "gateway.port", not just "port"
        raise config_error(exc, cls, default_home() / "metnos.toml", f"{group}.") from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The instance settings, read once; raises ConfigError with a readable reason."""
    try:
        return Settings()
    except ValidationError as exc:  # an unknown key at the top can only come from the file
        raise config_error(exc, Settings, default_home() / "metnos.toml") from exc
