"""tutormetrics: reference-free metrics for LLM tutor replies, validated against rubric ratings.

Importing the package is cheap: torch and sentence-transformers load only when an encoder metric runs.

Example:
    >>> from tutormetrics import Scorer
    >>> Scorer(["length"]).score(["e1"], ["Hi?"], ["Hello there."])["resp_words"][0]
    2.0
"""

from __future__ import annotations

from tutormetrics.lazy_exports import lazy_exports

__version__ = "0.1.0"

#: Each public name and the module that defines it, loaded on first use.
_EXPORTS = {"Scorer": "engine.scorer", "score_texts": "engine.scorer",
            "score_file": "engine.file_scoring", "ScoreOptions": "engine.file_scoring"}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = ["ScoreOptions", "Scorer", "__version__", "score_file", "score_texts"]
