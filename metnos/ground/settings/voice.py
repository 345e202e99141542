"""The `[voice]` settings group: voice notes, transcribed before they become a turn (issue 31).

Environment variables are `METNOS_VOICE_<FIELD>`; the table in `metnos.toml` is `[voice]`.
An empty `api_base` turns voice off: the person is told, in one line, that voice needs a
transcription server.
"""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class VoiceSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_VOICE_")

    api_base: str = Field(
        "", description="An OpenAI-compatible transcription server (a local whisper.cpp or "
        "faster-whisper server, or a provider), e.g. http://127.0.0.1:8000/v1; empty: voice "
        "is off.")
    model: str = Field(
        "openai/whisper-1", min_length=1, description="The transcription model, as litellm "
        "names it (`openai/<name>` for any OpenAI-compatible server).")
    api_key: SecretStr = Field(
        SecretStr(""),
        description="The transcription server's key (a local server usually needs none).")
    max_seconds: float = Field(
        120.0, gt=0, le=3600, description="The longest voice note transcribed; a longer one "
        "is refused before it leaves the machine.")
    max_bytes: int = Field(
        10 << 20, ge=1024, le=100 << 20, description="The largest voice note fetched; a "
        "larger one is refused before it is downloaded.")
