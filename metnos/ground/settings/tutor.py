"""The `[tutor]` settings group: the Tutor's pre-check before the loop (SPEC §10).

Environment variables are `METNOS_TUTOR_<FIELD>`; the table in `metnos.toml` is `[tutor]`.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class TutorSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_TUTOR_")

    enabled: bool = Field(
        True, description="Answer questions about Metnos itself from the signed docs catalog "
        "before the loop. Off, or without a compiled catalog, every message goes to the loop.")
    window_ms: int = Field(
        2000, ge=50, le=10000, description="The one short window of the checks that give the "
        "Tutor a turn (source identity, classification, retrieval, view admission); past "
        "it the message goes to the loop. The composition gets the turn's deadline.")
    composer: str = Field(
        "auto", pattern="^(auto|llm|extractive)$", description="How answers are written: "
        "llm (the configured model, bound to the sources), extractive (sentences of the "
        "sources, no model), auto (llm when a model is configured).")
    confirm_ttl_s: int = Field(
        300, ge=10, le=3600, description="How long the one-time confirmation of a mixed "
        "request's operative clause (\"explain X and then do Y\") waits for a yes in the same "
        "conversation; past it the clause never runs and must be asked again.")
    read_at_start: bool = Field(
        True, description="When the home has no admitted catalog at start (initialised before "
        "`metnos init` compiled one, a new catalog schema, a refused file), compile it in the "
        "background; meanwhile a question about Metnos is told \"I'm still reading my guide\".")
