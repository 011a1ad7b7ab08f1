"""The scoring engine: the :class:`Scorer` (dedupe, one encoder pass per unique text, concurrency) and
file scoring with checkpoints (:func:`score_file`).

Example:
    >>> from tutormetrics.engine import score_texts
    >>> score_texts(["Where did the cat sit?"], ["The cat sat on the mat."], metrics="overlap")["jaccard_1"][0]
    0.25
"""

from tutormetrics.engine.files import ScoreOptions, ScoreResult, score_file
from tutormetrics.engine.scorer import Scorer, ScoreStats, score_texts

__all__ = ["ScoreOptions", "ScoreResult", "ScoreStats", "Scorer", "score_file", "score_texts"]
