"""The `[i18n]` settings group (`METNOS_I18N_*`): languages (SPEC §9); its intent tables are in
`metnos.ground.settings.intents`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group
from metnos.ground.settings.intents import ArtifactsIntent, CommunicationIntent, bcp47


class I18nSettings(_Group):
    """Languages (SPEC §9): resources, active languages, the sweep, the lint and the intents."""

    model_config = SettingsConfigDict(env_prefix="METNOS_I18N_")

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
