"""The base of the groups defined in this package: environment first, then the group's table in
`metnos.toml`; unknown keys are refused and defaults validated."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict


class _Group(BaseSettings):
    """A settings group: environment first, then its table in `metnos.toml`; a group sets only
    its `env_prefix`."""

    model_config = SettingsConfigDict(extra="forbid", validate_default=True)
