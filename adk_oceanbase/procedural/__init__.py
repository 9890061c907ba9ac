"""Procedural memory (issue 27, seed 000 "Procedural-first"): which tool paths work, learned from ADK events.

* :mod:`.extraction`: events -> one run per invocation (tool path, argument shapes, failures, outcome);
* :mod:`.scenarios`: requests grouped so paraphrases meet (embedding centroids, optional labels);
* :mod:`.store`: :class:`ProcedureStore`, counts by atomic increments, recall by Wilson lower bound;
* :mod:`.serving`: the ADK tool and the ``## Procedures that worked (advice)`` instruction block;
* :mod:`.governance`: erasure and retention take a user's or an old run's numbers back out.
"""

from .extraction import EXTRACTOR, OUTCOME_KEY, Invocation, arg_shape, extract_invocations
from .recall import Procedure, Recall
from .serving import ProcedureAdvice, format_advice, recall_procedures_tool
from .settings import ProceduralSettings
from .stats import wilson_lower_bound
from .store import ExtractReport, ProcedureStore

__all__ = [
    "EXTRACTOR",
    "OUTCOME_KEY",
    "ExtractReport",
    "Invocation",
    "ProceduralSettings",
    "Procedure",
    "ProcedureAdvice",
    "ProcedureStore",
    "Recall",
    "arg_shape",
    "extract_invocations",
    "format_advice",
    "recall_procedures_tool",
    "wilson_lower_bound",
]
