"""tutormetrics: reference-free metrics for LLM tutor replies, validated against rubric ratings.

Importing the package is cheap: torch and sentence-transformers load only when an encoder metric runs.

Example:
    >>> from tutormetrics import Scorer
    >>> Scorer(["length"]).score(["e1"], ["Hi?"], ["Hello there."])["resp_words"][0]
    2.0
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {"Scorer": "tutormetrics.engine.scorer", "score_texts": "tutormetrics.engine.scorer",
         "score_file": "tutormetrics.engine.file_scoring", "ScoreOptions": "tutormetrics.engine.file_scoring"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tutormetrics' has no attribute {name!r}")


__all__ = ["ScoreOptions", "Scorer", "__version__", "score_file", "score_texts"]
