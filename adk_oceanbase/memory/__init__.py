"""Long-term memory for ADK agents: hybrid (vector + full-text + recency + frequency) retrieval in SQL."""

from .embedding import Embedder, GeminiEmbedder, HashEmbedder, SentenceTransformerEmbedder, default_embedder
from .extraction import ExtractedFact, LlmExtractor, embedding_text, is_trivial
from .pipeline import ExtractionPipeline, PipelineSettings
from .search_scope import SearchFilters
from .shared import SharedKnowledge, SharedMemory, scope_user_id
from .poisoning import InstructionDetector, PatternDetector
from .retrieval import HitJoin, ProfileCache, Retriever, SearchRequest
from .retrievers import retriever_for
from .scoring import Signals
from .service import MemoryHit, OceanBaseMemoryService
from .settings import MemorySettings, ScoreWeights

__all__ = [
    "Embedder",
    "ExtractionPipeline",
    "ExtractedFact",
    "GeminiEmbedder",
    "HashEmbedder",
    "HitJoin",
    "InstructionDetector",
    "LlmExtractor",
    "MemoryHit",
    "MemorySettings",
    "OceanBaseMemoryService",
    "PatternDetector",
    "PipelineSettings",
    "ProfileCache",
    "Retriever",
    "ScoreWeights",
    "SearchFilters",
    "SearchRequest",
    "SentenceTransformerEmbedder",
    "SharedKnowledge",
    "SharedMemory",
    "Signals",
    "default_embedder",
    "embedding_text",
    "is_trivial",
    "retriever_for",
    "scope_user_id",
]
