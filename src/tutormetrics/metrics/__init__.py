"""Metrics: the Metric protocol, the registry, pure functions (``functional/``) and one class per family.

Scoring many exchanges at once (dedupe, one encoder pass) is the engine's job: :class:`tutormetrics.Scorer`.

Every metric can be imported on its own::

    from tutormetrics.metrics import distinct_n, jaccard, LexicalDiversity
    distinct_n("a rose is a rose is a rose", 2)   # 0.428571...

Encoder families (``EmbeddingSimilarity``, ``LayerwiseSynchrony``) import torch lazily on first access.
"""

from __future__ import annotations

from tutormetrics.lazy_exports import lazy_exports
from tutormetrics.metrics.base import ARTIFACTS, Artifacts, ColumnDescription, ExchangeBatch, Metric
from tutormetrics.metrics.coherence import Coherence, coherence_texts
from tutormetrics.metrics.columns import describe_columns, describe_table
from tutormetrics.metrics.dialogue_turn import DialogueTurnMetrics, count_questions
from tutormetrics.metrics.functional.length import (
    char_count,
    length_ratio,
    length_ratio_chars,
    length_structure,
    mean_word_length,
    sentence_count,
    word_count,
)
from tutormetrics.metrics.functional.lexical import (
    distinct_n,
    distinct_n_li,
    lexical_diversity,
    ngram_entropy,
    ngram_entropy_evenness,
    ngram_entropy_nats,
    repetition_n,
    type_token_ratio,
)
from tutormetrics.metrics.functional.overlap import containment, jaccard, prompt_overlap
from tutormetrics.metrics.functional.readability import (
    SyllableCounter,
    flesch_kincaid_grade,
    flesch_reading_ease,
    readability_counts,
    readability_scores,
)
from tutormetrics.metrics.functional.richness import hdd, lexical_richness, mattr, mtld
from tutormetrics.metrics.length import LengthStructure
from tutormetrics.metrics.lexical import LexicalDiversity
from tutormetrics.metrics.ngrams import Containment, DistinctN, Jaccard, NGramEntropy, RepetitionN
from tutormetrics.metrics.overlap import PromptOverlap
from tutormetrics.metrics.readability import Readability
from tutormetrics.metrics.registry import (
    GROUPS,
    REGISTRY,
    MetricRegistry,
    get_metric,
    list_metrics,
    register_metric,
)
from tutormetrics.metrics.richness import LexicalRichness

_EXPORTS = {
    "EmbeddingSimilarity": "embedding",
    "LayerwiseSynchrony": "synchrony",
    "embedding_similarity_texts": "embedding",
    "layerwise_synchrony_texts": "synchrony",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "ARTIFACTS", "Artifacts", "ColumnDescription", "ExchangeBatch", "Metric", "describe_columns", "describe_table", "GROUPS", "REGISTRY", "MetricRegistry",
    "get_metric", "list_metrics", "register_metric",
    "LengthStructure", "LexicalDiversity", "PromptOverlap", "Readability", "LexicalRichness", "Coherence",
    "coherence_texts", "mtld", "mattr", "hdd", "lexical_richness",
    "DistinctN", "RepetitionN", "NGramEntropy", "Jaccard", "Containment", "DialogueTurnMetrics", "count_questions",
    "EmbeddingSimilarity", "LayerwiseSynchrony", "embedding_similarity_texts", "layerwise_synchrony_texts",
    "char_count", "word_count", "sentence_count", "mean_word_length", "length_ratio", "length_ratio_chars",
    "length_structure", "type_token_ratio", "distinct_n", "distinct_n_li", "ngram_entropy", "ngram_entropy_nats",
    "ngram_entropy_evenness", "repetition_n", "lexical_diversity", "jaccard", "containment", "prompt_overlap",
    "SyllableCounter", "readability_counts", "flesch_reading_ease", "flesch_kincaid_grade", "readability_scores",
]
