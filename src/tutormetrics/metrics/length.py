"""Length and structure family (``resp_chars`` … ``len_ratio_chars``, ``resp_sentence_equiv``, ``concision_band``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tutormetrics.errors import ConfigError
from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional._util import ratio
from tutormetrics.metrics.functional.length import (
    CHARS_PER_SENTENCE,
    CONCISION_BANDS,
    check_concision,
    concision_band,
)
from tutormetrics.metrics.functional.readability import textstat_sentences
from tutormetrics.text import split_sentences

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

LENGTH_COLUMNS = [
    "resp_chars",
    "resp_words",
    "resp_sentences",
    "resp_mean_word_len",
    "len_ratio",
    "len_ratio_chars",
    "resp_sentence_equiv",
    "concision_band",
]


class LengthStructure(Metric):
    """Response length in characters, words and sentences, mean word length, and response/prompt ratios.

    ``sentence_mode="spec"`` counts ``S(x)`` (docs/metrics.md#sentences), ``"textstat"`` reproduces textstat's rule;
    ``strip_code_fences=True`` drops fenced code blocks before counting sentences.
    CSTutorBench's concision rule (docs/design/languages.md#concision): ``resp_sentence_equiv = resp_chars / chars_per_sentence``
    and ``concision_band`` = 2 up to ``concision_bands[0]`` sentence-equivalents, 1 up to ``concision_bands[1]``,
    else 0 (NaN for an empty reply).

    >>> from tutormetrics import score_texts
    >>> score_texts(["Where did the cat sit?"], ["The cat sat on the mat."], metrics=["length"])["resp_words"][0]
    6.0
    """

    name = "length"
    description = "Response length (chars, words, sentences), mean word length, response/prompt length ratios, CSTutorBench concision"
    requires = frozenset({"tokens", "sentences"})
    higher_is_better = None

    def __init__(
        self,
        sentence_mode: str = "spec",
        strip_code_fences: bool = False,
        chars_per_sentence: float = CHARS_PER_SENTENCE,
        concision_bands: tuple[float, float] = CONCISION_BANDS,
    ) -> None:
        self.sentence_mode = sentence_mode
        self.strip_code_fences = strip_code_fences
        self.chars_per_sentence = chars_per_sentence
        self.concision_bands = concision_bands

    def columns(self, n_layers: int | None = None) -> list[str]:
        return list(LENGTH_COLUMNS)

    def _sentences(self, art: Artifacts, indices: np.ndarray) -> np.ndarray:
        import numpy as np

        if self.sentence_mode not in ("spec", "textstat"):
            raise ConfigError(f"sentence_mode must be spec or textstat, got {self.sentence_mode!r}")
        if self.sentence_mode == "spec" and not self.strip_code_fences:
            assert art.sentences is not None
            return art.sentences[indices].astype(np.float64)  # the shared S(x) artifact
        count = {
            i: (
                textstat_sentences(art.texts[i])
                if self.sentence_mode == "textstat"
                else len(split_sentences(art.texts[i], strip_code_fences=True))
            )
            for i in set(indices.tolist())
        }
        return np.array([count[i] for i in indices], dtype=np.float64)

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        ranges = dict.fromkeys(LENGTH_COLUMNS, (0.0, math.inf))
        ranges["resp_mean_word_len"] = (1.0, math.inf)
        ranges["concision_band"] = (0.0, 2.0)
        return ranges

    def column_directions(self, n_layers: int | None = None) -> dict[str, bool | None]:
        return {c: (True if c == "concision_band" else None) for c in LENGTH_COLUMNS}  # band 2 = concise

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        import numpy as np

        assert art.tokens is not None and art.sentences is not None
        cps, bands = check_concision(self.chars_per_sentence, self.concision_bands)
        chars = np.array([len(art.texts[i].strip()) for i in range(len(art.texts))], dtype=np.float64)
        words = np.array([len(t) for t in art.tokens], dtype=np.float64)
        letters = np.array([sum(map(len, t)) for t in art.tokens], dtype=np.float64)
        p, r = batch.prompt_idx, batch.response_idx
        equiv = chars[r] / cps + 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            return {
                "resp_chars": chars[r],
                "resp_words": words[r],
                "resp_sentences": self._sentences(art, r),
                "resp_mean_word_len": np.array([ratio(letters[i], words[i]) for i in r]),
                "len_ratio": np.array([ratio(words[i], words[j]) for i, j in zip(r, p, strict=True)]),
                "len_ratio_chars": np.array([ratio(chars[i], chars[j]) for i, j in zip(r, p, strict=True)]),
                "resp_sentence_equiv": equiv,
                "concision_band": np.array([concision_band(x, bands) for x in equiv], dtype=np.float64),
            }
