"""Vector columns: the ``VECTOR(dim)`` type and the codecs its bind and result processors apply.

On OceanBase/seekdb a vector travels as ``'[0.1,0.2,...]'`` text; on MySQL/MariaDB
(no vector type) as little-endian float32 bytes in a ``LONGBLOB``.  The engine
dialect (:mod:`.dialects`) hands statements the type with its engine's codec,
so no service encodes a vector by hand.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from sqlalchemy.types import UserDefinedType

from .schema_base import DEFAULT_EMBEDDING_DIM

__all__ = ["FLOAT32_VECTORS", "TEXT_VECTORS", "Float32VectorCodec", "TextVectorCodec", "Vector", "VectorCodec"]


class VectorCodec:
    """How one engine stores a vector: ``encode`` for binds, ``decode`` for results (``None`` passes through).

    The one codec per value type that :class:`Vector` applies in its bind and
    result processors, as pgvector-python's ``Vector`` does; the engine
    dialect (:mod:`.dialects`) names the codec its column needs.  Raw-SQL hot
    paths that bypass SQLAlchemy's types (the memory search's query-vector
    ``SET`` on the driver connection) call ``encode`` through the dialect.
    """

    name = "base"

    def encode(self, vec: Sequence[float] | np.ndarray) -> str | bytes:
        raise NotImplementedError

    def decode(self, raw: object) -> np.ndarray | None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class TextVectorCodec(VectorCodec):
    """OceanBase/seekdb ``VECTOR``: the text literal ``'[0.1,0.2,...]'`` in, the same text (or its bytes) out."""

    name = "text"

    def encode(self, vec: Sequence[float] | np.ndarray) -> str:
        arr = np.asarray(vec, dtype=np.float32)
        # repr of float32 via float() keeps ~9 significant digits: enough for float32.
        return "[" + ",".join(f"{float(x):.8g}" for x in arr) + "]"

    def decode(self, raw: object) -> np.ndarray | None:
        if raw is None:
            return None
        if isinstance(raw, (bytes, bytearray)):
            raw = raw.decode()
        body = str(raw).strip().strip("[]")
        if not body:
            return np.zeros(0, dtype=np.float32)
        return np.array([float(x) for x in body.split(",")], dtype=np.float32)


class Float32VectorCodec(VectorCodec):
    """MySQL/MariaDB ``LONGBLOB``: little-endian float32 bytes, scored in numpy."""

    name = "float32"

    def encode(self, vec: Sequence[float] | np.ndarray) -> bytes:
        return np.asarray(vec, dtype="<f4").tobytes()

    def decode(self, raw: object) -> np.ndarray | None:
        if raw is None:
            return None
        return np.frombuffer(bytes(raw), dtype="<f4").copy()  # type: ignore[arg-type]


TEXT_VECTORS = TextVectorCodec()
FLOAT32_VECTORS = Float32VectorCodec()


class Vector(UserDefinedType):
    """``VECTOR(dim)`` on OceanBase/seekdb, ``LONGBLOB`` on MySQL; numpy arrays in and out.

    The bind processor encodes a vector with ``codec`` and the result
    processor decodes it, so no caller encodes by hand.  One SQLAlchemy
    dialect (``mysql``) serves both engines, so the codec cannot be told from
    it: the engine dialect hands out the type with the right codec
    (``EngineDialect.vector_type()``); statements that bind or read an
    embedding type that parameter or column with it.  The table's own column
    keeps the text codec (OceanBase's); MySQL's DDL swaps the column for
    ``LONGBLOB`` (``head_schema``).
    """

    cache_ok = True

    def __init__(self, dim: int = DEFAULT_EMBEDDING_DIM, codec: VectorCodec = TEXT_VECTORS):
        self.dim = dim
        self.codec = codec

    def get_col_spec(self, **kw: object) -> str:
        return f"VECTOR({self.dim})"

    def bind_processor(self, dialect: Any) -> Any:
        encode = self.codec.encode

        def process(value: Any) -> Any:
            return None if value is None else encode(value)

        return process

    def result_processor(self, dialect: Any, coltype: Any) -> Any:
        return self.codec.decode
