"""The scoring engine: the :class:`Scorer` (dedupe, one encoder pass per unique text, concurrency), file scoring
with checkpoints (:func:`score_file`, :mod:`~tutormetrics.engine.file_scoring`) over the one chunk pipeline
(:mod:`~tutormetrics.engine.chunk_run`, shared with ``score --dialogue``), one run key, manifest and set of
warnings for every engine (:mod:`~tutormetrics.engine.run_summary`, :mod:`~tutormetrics.engine.run_warnings`), and
:class:`ScoreBatch`, a batch callable for Ray Data, Spark and Dask (``score --engine ray``:
:mod:`tutormetrics.engine.ray_engine`).

Example:
    >>> from tutormetrics.engine import score_texts
    >>> score_texts(["Where did the cat sit?"], ["The cat sat on the mat."], metrics="overlap")["jaccard_1"][0]
    0.25
"""

from tutormetrics.engine.batch import ScoreBatch
from tutormetrics.engine.file_scoring import ScoreOptions, ScoreResult, score_file
from tutormetrics.engine.scorer import Scorer, ScoreStats, score_texts

__all__ = ["ScoreBatch", "ScoreOptions", "ScoreResult", "ScoreStats", "Scorer", "score_file", "score_texts"]
