"""Single-column metrics with a parameter, for direct use: ``Jaccard(n=3)``, ``DistinctN(n=4)``, ...

Each is a :class:`Metric` (usable in a :class:`~tutormetrics.engine.scorer.Scorer` list) and also a plain
callable on texts. They are registered but left out of ``--metrics all``, whose families already emit
the canonical n = 1, 2 (3) columns.

>>> Jaccard(n=2)("a rose is a flower which is a rose", "a rose is a rose is a rose")
0.5
>>> DistinctN(n=2)("a rose is a rose is a rose")
0.42857142857142855
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from tutormetrics.errors import ConfigError
from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.functional.lexical import distinct_n, ngram_entropy, repetition_n
from tutormetrics.metrics.functional.overlap import containment, jaccard

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class _NGramMetric(Metric):
    """Shared plumbing: one column, parameter ``n``, computed from the shared tokens."""

    requires = frozenset({"tokens"})
    include_in_all: ClassVar[bool] = False
    pair: ClassVar[bool] = False  # True when the metric compares prompt and response

    def __init__(self, n: int = 1) -> None:
        self.n = n

    def _check(self) -> None:
        if not isinstance(self.n, int) or self.n < 1:
            raise ConfigError(f"{type(self).__name__}: n must be a positive integer, got {self.n!r}")

    def column_ranges(self, n_layers: int | None = None) -> dict[str, tuple[float, float]]:
        return dict.fromkeys(self.columns(), (0.0, 1.0))

    def score(self, batch: ExchangeBatch, art: Artifacts) -> dict[str, np.ndarray]:
        import numpy as np

        self._check()
        assert art.tokens is not None
        if self.pair:
            values = [self._value(art.tokens[p], art.tokens[r]) for p, r in zip(batch.prompt_idx, batch.response_idx, strict=True)]
        else:
            values = [self._value(art.tokens[r]) for r in batch.response_idx]
        return {self.columns()[0]: np.array(values, dtype=np.float64)}

    def _value(self, *tokens: list[str]) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def __call__(self, *texts: str) -> float:
        self._check()
        return self._value(*texts)


class DistinctN(_NGramMetric):
    """``distinct_n = V_n/N_n`` of the response; NaN when it has fewer than n tokens."""

    name = "distinct_n"
    description = "distinct-n of the response for any n (V_n/N_n); column distinct_<n>"
    higher_is_better = True

    def columns(self, n_layers: int | None = None) -> list[str]:
        return [f"distinct_{self.n}"]

    def _value(self, tokens: list[str]) -> float:  # type: ignore[override]
        return distinct_n(tokens, self.n)


class RepetitionN(_NGramMetric):
    """``rep_n = 1 − V_n/N_n`` (seq-rep-n) of the response."""

    name = "repetition_n"
    description = "seq-rep-n of the response for any n (1 - V_n/N_n); column rep_<n>"
    higher_is_better = False

    def columns(self, n_layers: int | None = None) -> list[str]:
        return [f"rep_{self.n}"]

    def _value(self, tokens: list[str]) -> float:  # type: ignore[override]
        return repetition_n(tokens, self.n)


class NGramEntropy(_NGramMetric):
    """Normalised n-gram entropy ``H_n / ln N_n`` of the response; NaN when ``N_n < 2``."""

    name = "ngram_entropy"
    description = "normalised n-gram entropy H_n/ln N_n of the response for any n; column entropy_<n>"
    higher_is_better = True

    def columns(self, n_layers: int | None = None) -> list[str]:
        return [f"entropy_{self.n}"]

    def _value(self, tokens: list[str]) -> float:  # type: ignore[override]
        return ngram_entropy(tokens, self.n)


class Jaccard(_NGramMetric):
    """Resemblance ``|A∩B|/|A∪B|`` of prompt and response n-gram sets."""

    name = "jaccard"
    description = "Jaccard resemblance of prompt and response n-gram sets for any n; column jaccard_<n>"
    higher_is_better = None
    pair = True

    def columns(self, n_layers: int | None = None) -> list[str]:
        return [f"jaccard_{self.n}"]

    def _value(self, prompt: list[str], response: list[str]) -> float:  # type: ignore[override]
        return jaccard(prompt, response, self.n)


class Containment(_NGramMetric):
    """``|A∩B|/|A|`` (``direction="prompt_in_resp"``) or ``|A∩B|/|B|`` (``"resp_in_prompt"``) on n-gram sets."""

    name = "containment"
    description = "containment of prompt n-grams in the response (or the reverse) for any n"
    higher_is_better = None
    pair = True

    def __init__(self, n: int = 1, direction: str = "prompt_in_resp") -> None:
        self.n = n
        self.direction = direction

    def _check(self) -> None:
        super()._check()
        if self.direction not in ("prompt_in_resp", "resp_in_prompt"):
            raise ConfigError(f"direction must be prompt_in_resp or resp_in_prompt, got {self.direction!r}")

    def columns(self, n_layers: int | None = None) -> list[str]:
        return [f"contain_{self.direction}" + ("" if self.n == 1 else f"_{self.n}")]

    def _value(self, prompt: list[str], response: list[str]) -> float:  # type: ignore[override]
        return containment(prompt, response, self.n, direction=self.direction)
