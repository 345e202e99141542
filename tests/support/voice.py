"""Speech for the voice tests: espeak-ng (Debian) says a sentence, PyAV encodes it as Telegram
records a voice note and measures how long any recording plays."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import av

from tests.support.system import ensure_debian_binary, skip_or_fail


def espeak_binary() -> str:
    """espeak-ng's path, installing Debian's package when missing (skipped outside CI when
    it cannot be installed; a failure in CI)."""
    found = ensure_debian_binary("espeak-ng", "espeak-ng")
    if found is None:
        skip_or_fail("espeak-ng (Debian package espeak-ng) is not installed")
    assert found is not None
    return found


def spoken(espeak: str, folder: Path, voice: str, sentence: str) -> bytes:
    """`sentence` said by espeak-ng in `voice`, as WAV bytes."""
    out = folder / f"{voice}.wav"
    subprocess.run([espeak, "-v", voice, "-w", str(out), sentence], check=True,  # noqa: S603
                   capture_output=True, timeout=60)
    return out.read_bytes()


def as_telegram(wav: bytes) -> bytes:
    """`wav` as Telegram records a voice note: Opus in an OGG container, 48 kHz mono."""
    out = io.BytesIO()
    with av.open(io.BytesIO(wav)) as source, av.open(out, "w", format="ogg") as target:
        stream = target.add_stream("libopus", rate=48_000, layout="mono")
        resampler = av.AudioResampler(format="s16", layout="mono", rate=48_000)
        frames = [f for frame in source.decode(audio=0) for f in resampler.resample(frame)]
        for frame in [*frames, *resampler.resample(None), None]:
            for packet in stream.encode(frame):
                target.mux(packet)
    return out.getvalue()


def seconds(data: bytes) -> float:
    """How long `data` plays, decoded (any container PyAV reads)."""
    with av.open(io.BytesIO(data)) as container:
        return sum(f.samples / f.sample_rate for f in container.decode(audio=0))
