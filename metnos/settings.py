"""Settings: one `BaseSettings` per group, composed by a root `Settings`.

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
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from metnos.agent_settings import AgentSettings
from metnos.channel_settings import TelegramSettings, WebSettings
from metnos.errors import ConfigError
from metnos.evolution_settings import EvolutionSettings, NotifySettings
from metnos.intent_settings import (  # the [i18n] group's tables
    ArtifactsIntent,
    CommunicationIntent,
    bcp47,
)
from metnos.mail.settings import MailSettings
from metnos.reminders.settings import ReminderSettings
from metnos.remote_settings import RemoteSettings
from metnos.schedules.settings import ScheduleSettings
from metnos.settings_errors import config_error
from metnos.system_lang import system_lang
from metnos.timezone import known_zone, system_timezone
from metnos.trash_settings import TrashSettings
from metnos.tutor_settings import TutorSettings

Autonomy = Literal["ReadOnly", "Supervised", "Full"]


def default_home() -> Path:
    """`METNOS_HOME` when set, else `~/.local/share/metnos`."""
    env = os.environ.get("METNOS_HOME")
    if env:
        return Path(env).expanduser()
    return Path("~/.local/share/metnos").expanduser()


class _Group(BaseSettings):
    """A settings group: environment first, then its table in `metnos.toml`."""

    model_config = SettingsConfigDict(extra="forbid", validate_default=True)


class GatewaySettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_GATEWAY_", extra="forbid")

    host: str = Field("127.0.0.1", description="Address the gateway binds to (loopback only).")
    port: int = Field(42618, ge=1, le=65535, description="Port of the gateway.")
    max_message_chars: int = Field(
        8000, ge=1, description="Longest message a channel may send; longer ones get a 413."
    )
    allowed_hosts: list[str] = Field(
        default_factory=lambda: ["127.0.0.1", "localhost", "[::1]", "::1"],
        description="Host header values accepted (DNS-rebinding guard).",
    )
    drain_s: float = Field(
        30.0, ge=0, le=600,
        description="On a stop, how long running turns may go on finishing (new ones get "
        "503); those still running then are recorded as interrupted.",
    )
    hung_after_s: float = Field(
        60.0, ge=5, le=3600,
        description="A gateway (or Prefect server) that answers no health check for this "
        "long is hung: `metnos serve` stops it and starts it again.",
    )

    @field_validator("host")
    @classmethod
    def _loopback_only(cls, value: str) -> str:
        if value not in {"127.0.0.1", "localhost", "::1"}:
            raise ValueError("the gateway binds to loopback only (127.0.0.1, localhost or ::1)")
        return value


class DatabaseSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_DATABASE_", extra="forbid")

    url: str | None = Field(
        None,
        description="External PostgreSQL URL for Metnos's tables (METNOS_DATABASE_URL); "
        "unset means the embedded PostgreSQL under METNOS_HOME/pg.",
    )
    port: int = Field(42619, ge=1, le=65535,
                      description="Loopback port of the embedded PostgreSQL.")
    name: str = Field("metnos", description="Database name for Metnos's tables.")
    prefect_name: str = Field("prefect", description="Database name for the Prefect server.")


class PrefectSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_PREFECT_", extra="forbid")

    port: int = Field(4200, ge=1, le=65535, description="Port of the Prefect server and its UI.")
    startup_timeout_s: float = Field(120.0, gt=0,
                                     description="How long to wait for it to be healthy.")


class LLMSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_LLM_", extra="forbid")

    model: str | None = Field(
        None, description="litellm model string (e.g. ollama/qwen3:8b); unset = embedded planner."
    )
    api_base: str | None = Field(None, description="Base URL of the provider.")
    api_key: SecretStr | None = Field(None, description="API key of the provider.")
    model_fast: str | None = Field(None, description="Override for the `fast` tier.")
    model_wise: str | None = Field(None, description="Override for the `wise` tier.")
    model_frontier: str | None = Field(None, description="Model for the opt-in `frontier` tier.")
    timeout_s: float = Field(60.0, gt=0, description="Timeout of one LLM call.")
    max_attempts: int = Field(3, ge=1, le=10, description="Attempts on transient errors.")
    input_cost_per_token: float | None = Field(
        None, ge=0, description="USD per prompt token, for models litellm does not price.")
    output_cost_per_token: float | None = Field(
        None, ge=0, description="Price of a completion token in USD (see input_cost_per_token).")


class SandboxSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_SANDBOX_", extra="forbid")

    max_output_bytes: int = Field(1_000_000, ge=1024, description="Cap on an executor's stdout.")
    max_processes: int = Field(64, ge=1, description="Process limit inside the sandbox.")
    web_allow_private: bool = Field(
        False, description="Let network executors reach loopback and private addresses "
                           "(off: the gateway, Prefect and the database stay out of reach).")


class I18nSettings(_Group):
    """Languages (SPEC §9): resources, active languages, the sweep, the lint and the intents."""

    model_config = SettingsConfigDict(env_prefix="METNOS_I18N_", extra="forbid")

    resources_dir: Path | None = Field(
        None, description="Folder holding prompts/, i18n/ and executors/ (default: the "
                          "package's metnos/resources/). metnos-prompts writes translations "
                          "there.")
    languages: list[str] = Field(
        default_factory=lambda: ["it", "en"],
        description="Active languages besides METNOS_LANG; a language added with "
                    "`metnos-prompts add-language` stays inactive until named here or in "
                    "METNOS_LANG.")
    source_lang: str = Field("en", description="Source language when no edit has elected one.")
    workspace_language: str | None = Field(
        None, description="Language of the household's documents (default: METNOS_LANG).")
    sweep_quality: Literal["wise", "frontier"] = Field(
        "wise", description="LLM tier of the nightly sweep; frontier is an explicit opt-in.")
    sweep_batch: int = Field(40, ge=1, le=500, description="Messages per translation request.")
    lint_max_text_chars: int = Field(
        12000, ge=1, description="How much of the text a tool writes is read to tell its language.")
    intents_enabled: bool = Field(True, description="Apply the soft/hard language intents.")
    communication: CommunicationIntent = Field(default_factory=lambda: CommunicationIntent())
    artifacts: ArtifactsIntent = Field(default_factory=lambda: ArtifactsIntent())

    @field_validator("languages")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        return [bcp47(v) for v in value]

    @field_validator("source_lang", "workspace_language")
    @classmethod
    def _tag(cls, value: str | None) -> str | None:
        return None if value is None else bcp47(value)


class PolicySettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_POLICY_", extra="forbid")

    autonomy: Autonomy = Field("Supervised", description="Autonomy level of new sessions.")
    reversible_without_asking: bool = Field(
        True, description="In Supervised, an ordinary reversible change inside the workspace "
                          "(write, rename, move, archive, lists, reminders) asked for in a turn "
                          "that read no outside text runs at once and shows Undo, instead of "
                          "asking (false: it asks, as every such change did before).")
    approval_timeout_s: float = Field(
        3600.0, gt=0, le=7 * 86400,
        description="How long an approval waits for the owner before it expires.")
    max_actions_per_hour: int = Field(
        120, ge=1, description="Executor runs a user may start per clock hour, UTC (rate limit).")
    max_llm_cost_per_day_usd: float = Field(
        2.0, ge=0, description="Daily LLM spend cap, from litellm's cost figures (0 = no LLM).")
    llm_call_reserve_usd: float = Field(
        0.05, ge=0, allow_inf_nan=False,
        description="What one LLM call reserves from the daily cap until its real cost is "
                    "known (at most the cap): concurrent calls cannot overrun it together.")
    shell_allow: list[str] = Field(
        default_factory=lambda: ["ls", "cat", "head", "tail", "wc", "grep", "sort", "uniq",
                                 "cut", "tr", "du", "stat", "file", "date", "echo", "mkdir",
                                 "touch", "cp"],
        description="Commands shell_run may start (argv[0], no shell, no interpreters).")
    pairing_code_ttl_s: float = Field(3600.0, gt=0, description="Life of a pairing code.")
    pairing_max_pending: int = Field(3, ge=1, description="Pending pairing codes per channel.")
    pairing_max_failures: int = Field(
        5, ge=1, description="Wrong pairing codes before approvals are locked out.")
    pairing_lockout_s: float = Field(900.0, gt=0, description="Length of a pairing lock-out.")


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
        from metnos.paths import resources_path

        return self.i18n.resources_dir or resources_path()

    @property
    def i18n_db_path(self) -> Path:
        """Layer-3 messages (SPEC §1, §9.3), seeded from the files under `i18n/`."""
        return self.home / "i18n.sqlite"

    @property
    def active_languages(self) -> tuple[str, ...]:
        """Languages sessions may use: the process language first, then `i18n.languages`."""
        found: list[str] = []
        for tag in (self.lang, *self.i18n.languages):
            base = tag.split("-")[0].lower()
            if base not in found:
                found.append(base)
        return tuple(found)

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
