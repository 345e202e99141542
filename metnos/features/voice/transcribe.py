"""A voice note's words, from the OpenAI-compatible transcription server `[voice]` names.

The server is reached through litellm (`atranscription`), so a local whisper.cpp or
faster-whisper server and a provider are spoken to alike. The call is bounded by a timeout
(a slow CPU server takes about as long as the note lasts); whatever goes wrong (the server
down, a wrong key, a timeout) becomes one `VoiceUnavailable` whose words the person reads,
while the log keeps the cause. The audio goes from memory to the request: nothing is written
to disk.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from metnos.features.voice.audio import RATE
from metnos.ground.errors import MetnosError
from metnos.ground.settings.root import Settings

log = logging.getLogger(__name__)

BASE_TIMEOUT_S = 30.0  # on top of the note's own length (a CPU server runs about real time)


class VoiceUnavailable(MetnosError, RuntimeError):
    """The transcription server did not give the words of a note (down, refused, too slow)."""

    key = "ERR_VOICE_TRANSCRIPTION_FAILED"


def voice_on(settings: Settings) -> bool:
    """Whether a transcription server is configured (`[voice] api_base`): else voice is off."""
    return bool(settings.voice.api_base.strip())


async def transcribe(settings: Settings, wav: bytes, lang_hint: str | None) -> str:
    """The words said in `wav` (16 kHz mono WAV, `audio.to_wav`), trimmed; `lang_hint`, a
    language code, tells the server which language to expect (None: it detects it, so a note
    is read in the language it is in). `VoiceUnavailable` when the server fails."""
    voice = settings.voice
    if not voice_on(settings):
        raise VoiceUnavailable("ERR_VOICE_OFF")
    seconds = max(0, len(wav) - 44) / (RATE * 2)
    timeout = BASE_TIMEOUT_S + min(seconds, voice.max_seconds)
    extra: dict[str, Any] = {}
    if lang_hint:
        extra["language"] = lang_hint.split("-")[0].lower()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import
    import litellm  # late, as the model port does: a gateway without voice never loads it here

    litellm.suppress_debug_info = True
    try:
        response = await asyncio.wait_for(
            litellm.atranscription(model=voice.model, file=("voice.wav", wav),
                                   api_base=voice.api_base.strip(),
                                   api_key=voice.api_key.get_secret_value() or "none",
                                   timeout=timeout,
                                   max_retries=0, **extra),
            timeout=timeout + 5)
    except Exception as exc:  # litellm raises one class per provider and failure
        log.warning("voice.transcription_failed model=%s: %s", voice.model,
                    type(exc).__name__)
        raise VoiceUnavailable() from exc
    text = getattr(response, "text", None)
    if text is None and isinstance(response, dict):
        text = response.get("text")
    return str(text or "").strip()
