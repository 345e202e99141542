"""Voice notes (issue 31): a note's audio decoded and capped (`audio`), then its words asked of
an OpenAI-compatible transcription server (`transcribe`); the faces show the words and run them
as a turn like typed text. The audio is never kept."""

from metnos.features.voice.audio import Speech, VoiceRefused, check_size, to_wav
from metnos.features.voice.transcribe import VoiceUnavailable, transcribe, voice_on

__all__ = ["Speech", "VoiceRefused", "VoiceUnavailable", "check_size", "to_wav", "transcribe",
           "voice_on"]
