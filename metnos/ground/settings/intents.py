"""The language intents of `[i18n.communication]`, `[i18n.artifacts]` and its rules
(SPEC §9.7, seed `i18n-intents-runbook.pt`): plain models the `I18nSettings` group holds.

Tables accept the runbook's camelCase names (`generateTranslations`, `pathPrefix`, ...) as
well as snake_case; every language is checked as a BCP-47 tag (`bcp47`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

LANG_TAG_HELP = "a BCP-47 language tag such as 'it', 'en' or 'pt-BR'"


def bcp47(value: str) -> str:
    tag = value.strip().replace("_", "-")
    if not tag or not all(part.isalnum() and len(part) <= 8 for part in tag.split("-")):
        raise ValueError(f"not {LANG_TAG_HELP}: {value!r}")
    return tag


class _IntentModel(BaseModel):
    """Intent tables accept the runbook's camelCase names as well as snake_case."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class CommunicationIntent(_IntentModel):
    """The language Metnos speaks in: a *soft* intent (yields to explicit instructions)."""

    language: str = Field("auto-user-profile",
                          description="'auto-user-profile' (the session's language) or a tag.")
    intent: Literal["soft", "hard"] = "soft"

    @field_validator("language")
    @classmethod
    def _language(cls, value: str) -> str:
        return value if value == "auto-user-profile" else bcp47(value)


ARTIFACT_POLICIES = ("preserve-existing-or-user-language", "preserve-existing")


class _ArtifactPolicy(_IntentModel):
    """What an artifact policy says: which language, how firmly, and whether translations
    may be written (shared by the global policy and its rules)."""

    language: str = Field(ARTIFACT_POLICIES[0], description="A policy name or a tag.")
    intent: Literal["soft", "hard"] = "hard"
    generate_translations: bool = Field(False, alias="generateTranslations")
    translation_targets: tuple[str, ...] = Field((), alias="translationTargets")

    @field_validator("language")
    @classmethod
    def _language(cls, value: str) -> str:
        return value if value in ARTIFACT_POLICIES else bcp47(value)

    @field_validator("translation_targets")
    @classmethod
    def _targets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(bcp47(v) for v in value)


class ArtifactRule(_ArtifactPolicy):
    """An override for files under `path_prefix` and/or with one of `extensions`."""

    id: str = Field(min_length=1, max_length=64)
    path_prefix: str | None = Field(None, alias="pathPrefix")
    extensions: tuple[str, ...] = Field((), validation_alias=AliasChoices(
        "extensions", "fileExtensions", "file_extensions"))
    language: str = Field("preserve-existing", description="A policy name or a tag.")
    reason: str = ""

    @model_validator(mode="after")
    def _selects_something(self) -> ArtifactRule:
        if not self.path_prefix and not self.extensions:
            raise ValueError(f"rule {self.id!r}: give pathPrefix, extensions or both")
        return self


class ArtifactsIntent(_ArtifactPolicy):
    """The language of files Metnos writes: a *hard* intent (preserve the existing one)."""

    rules: tuple[ArtifactRule, ...] = ()
