"""A voice note's bytes, decoded and made ready for a transcription server.

PyAV decodes any container a person's phone or browser records (OGG/Opus as Telegram sends,
WebM/Opus as browsers record, WAV, MP3, M4A) with the ffmpeg codecs its wheels bundle, so no
system ffmpeg is needed. The note is resampled to 16 kHz mono, the rate Whisper models read,
and counted as it is decoded: a note longer than `[voice] max_seconds` is refused as soon as
that many seconds came out, whatever its header claims, so a crafted file cannot make the
gateway decode hours of audio. Everything stays in memory.
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass

import av
import av.error

from metnos.ground.errors import MetnosError
from metnos.ground.settings.voice import VoiceSettings

RATE = 16_000  # what Whisper models read; the server would resample anything else
_SAMPLE_BYTES = 2  # signed 16-bit PCM


class VoiceRefused(MetnosError, ValueError):
    """A voice note that is not transcribed: too large, too long, or not audio; the key says
    which, in words the person reads."""

    key = "ERR_VOICE_UNREADABLE"


@dataclass(frozen=True)
class Speech:
    """A voice note as the transcription server takes it: 16 kHz mono WAV, and how long."""

    wav: bytes
    seconds: float


def check_size(size: int | None, settings: VoiceSettings) -> None:
    """Refuse a note Telegram (or a browser) already says is too large, before fetching it."""
    if size is not None and size > settings.max_bytes:
        raise VoiceRefused("ERR_VOICE_TOO_LARGE", max_mb=_mb(settings.max_bytes))


def to_wav(data: bytes, settings: VoiceSettings) -> Speech:
    """`data` (any audio container) as 16 kHz mono WAV; `VoiceRefused` when it is larger than
    `max_bytes`, longer than `max_seconds`, empty of sound, or not audio at all. Blocking:
    call it in a worker thread."""
    check_size(len(data), settings)
    limit = int(settings.max_seconds * RATE)
    pcm = bytearray()
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise VoiceRefused("ERR_VOICE_UNREADABLE")
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    pcm += bytes(out.planes[0])[:out.samples * _SAMPLE_BYTES]
                if len(pcm) > limit * _SAMPLE_BYTES:
                    raise VoiceRefused("ERR_VOICE_TOO_LONG", max_seconds=_seconds(settings))
            for out in resampler.resample(None):  # what the resampler still holds
                pcm += bytes(out.planes[0])[:out.samples * _SAMPLE_BYTES]
    except VoiceRefused:
        raise
    except (av.error.FFmpegError, ValueError, IndexError, OSError) as exc:
        raise VoiceRefused("ERR_VOICE_UNREADABLE") from exc
    samples = len(pcm) // _SAMPLE_BYTES
    if samples > limit:
        raise VoiceRefused("ERR_VOICE_TOO_LONG", max_seconds=_seconds(settings))
    if samples == 0:
        raise VoiceRefused("ERR_VOICE_UNREADABLE")
    return Speech(_wav(bytes(pcm[:samples * _SAMPLE_BYTES])), samples / RATE)


def _wav(pcm: bytes) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(_SAMPLE_BYTES)
        writer.setframerate(RATE)
        writer.writeframes(pcm)
    return out.getvalue()


def _mb(size: int) -> int:
    return max(1, size >> 20)


def _seconds(settings: VoiceSettings) -> int:
    return max(1, int(settings.max_seconds))
