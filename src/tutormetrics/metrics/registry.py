"""The metric registry: every family by name, built-ins and plug-ins alike.

Users add their own family with the :func:`register_metric` decorator, or from another package
through the ``tutormetrics.metrics`` entry-point group (``name = "pkg.module:Class"``).

>>> from tutormetrics.metrics import Metric, register_metric
>>> @register_metric
... class QuestionMarks(Metric):
...     name = "question_marks"
...     description = "Number of question marks in the response"
...     def columns(self, n_layers=None): return ["resp_questions"]
...     def score(self, batch, art):
...         import numpy as np
...         return {"resp_questions": np.array([art.texts[i].count("?") for i in batch.response_idx], float)}
>>> "question_marks" in REGISTRY
True
>>> _ = REGISTRY.unregister("question_marks")
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any, TypeVar

from tutormetrics.errors import ConfigError
from tutormetrics.metrics.base import ARTIFACTS, Metric

M = TypeVar("M", bound=type[Metric])

#: Built-in families, imported lazily so that listing metrics never imports torch.
BUILTIN_FAMILIES: dict[str, str] = {
    "length": "tutormetrics.metrics.length:LengthStructure",
    "lexical_diversity": "tutormetrics.metrics.lexical:LexicalDiversity",
    "overlap": "tutormetrics.metrics.overlap:PromptOverlap",
    "readability": "tutormetrics.metrics.readability:Readability",
    "embedding_similarity": "tutormetrics.metrics.embedding:EmbeddingSimilarity",
    "layerwise_synchrony": "tutormetrics.metrics.synchrony:LayerwiseSynchrony",
    "lexical_richness": "tutormetrics.metrics.richness:LexicalRichness",
    "coherence": "tutormetrics.metrics.coherence:Coherence",
    "distinct_n": "tutormetrics.metrics.ngrams:DistinctN",
    "repetition_n": "tutormetrics.metrics.ngrams:RepetitionN",
    "ngram_entropy": "tutormetrics.metrics.ngrams:NGramEntropy",
    "jaccard": "tutormetrics.metrics.ngrams:Jaccard",
    "containment": "tutormetrics.metrics.ngrams:Containment",
    "dialogue_turn": "tutormetrics.metrics.dialogue_turn:DialogueTurnMetrics",
}

#: Named selections accepted wherever family names are (``--metrics``).
GROUPS: dict[str, tuple[str, ...]] = {
    "lexical": ("length", "lexical_diversity", "overlap", "readability"),
    "encoder": ("embedding_similarity", "layerwise_synchrony"),
}

ENTRY_POINT_GROUP = "tutormetrics.metrics"


class MetricRegistry:
    """Name → metric family class. Entries are classes or lazy ``"module:Class"`` strings."""

    def __init__(self, entries: dict[str, str | type[Metric]] | None = None, *, entry_points: bool = True) -> None:
        self._entries: dict[str, str | type[Metric]] = dict(entries or {})
        self._want_entry_points = entry_points
        self._entry_points_loaded = False

    def register(self, cls: M | None = None, *, replace: bool = False) -> M | Callable[[M], M]:
        """Register a :class:`Metric` subclass under its ``name`` (usable as a decorator)."""

        def add(klass: M) -> M:
            _validate_class(klass)
            if klass.name in self._all() and not replace and self._all()[klass.name] is not klass:
                raise ConfigError(
                    f"a metric named {klass.name!r} is already registered",
                    hint="choose another name, or pass replace=True",
                )
            self._entries[klass.name] = klass
            return klass

        return add(cls) if cls is not None else add

    def unregister(self, name: str) -> str | type[Metric]:
        return self._entries.pop(name)

    def names(self) -> list[str]:
        return list(self._all())

    def get_class(self, name: str) -> type[Metric]:
        entries = self._all()
        if name not in entries:
            import difflib

            close = difflib.get_close_matches(name, list(entries) + list(GROUPS), n=1)
            raise ConfigError(
                f"unknown metric {name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                hint="`tutormetrics metrics` lists them; groups: all, " + ", ".join(GROUPS),
            )
        entry = entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            _validate_class(entry)
            self._entries[name] = entry
        return entry

    def get(self, name: str, **params: Any) -> Metric:
        """A configured instance: ``REGISTRY.get("lexical_diversity", variants=True)``."""
        return self.get_class(name)(**params)

    def configure(self, name: str, params: Mapping[str, Any]) -> Metric:
        """An instance with ``params`` given as text (e.g. from the CLI), checked against ``get_params()``.

        Each value is converted to the type of the family's default (``bool`` accepts true/false/1/0/yes/no);
        an unknown key or a value that does not convert raises :class:`ConfigError` naming the valid keys.

        Example:
            >>> REGISTRY.configure("length", {"sentence_mode": "textstat"}).get_params()["sentence_mode"]
            'textstat'
        """
        defaults = self.get_class(name)().get_params()
        unknown = sorted(set(params) - set(defaults))
        if unknown:
            valid = ", ".join(f"{name}.{k}" for k in defaults) or f"none ({name} has no parameters)"
            raise ConfigError(f"unknown parameter {', '.join(f'{name}.{k}' for k in unknown)}", hint=f"valid: {valid}")
        values = {k: _convert(name, k, v, defaults[k]) for k, v in params.items()}
        try:
            return self.get(name, **values)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{name}: {err}") from err

    def resolve(self, selection: str | list[str] | None) -> list[str]:
        """Expand ``"all"``, groups and comma-separated names into family names, in registry order.

        ``"all"`` leaves out classes with ``include_in_all = False`` (the single-column variants).
        """
        if selection is None:
            return self.names()
        items = selection.split(",") if isinstance(selection, str) else list(selection)
        wanted: list[str] = []
        for item in (i.strip() for i in items):
            if not item:
                continue
            if item == "all":
                names = [n for n in self.names() if getattr(self.get_class(n), "include_in_all", True)]
            else:
                names = list(GROUPS.get(item, (item,)))
            for n in names:
                self.get_class(n)
                if n not in wanted:
                    wanted.append(n)
        if not wanted:
            raise ConfigError("no metrics selected", hint="pass e.g. --metrics all or --metrics lexical")
        return wanted

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _all(self) -> dict[str, str | type[Metric]]:
        if self._want_entry_points and not self._entry_points_loaded:
            self._entry_points_loaded = True
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                self._entries.setdefault(ep.name, ep.value)
        return self._entries


def _validate_class(cls: type) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Metric)):
        raise ConfigError(f"{cls!r} is not a tutormetrics Metric subclass")
    for attr in ("name", "description"):
        if not isinstance(getattr(cls, attr, None), str):
            raise ConfigError(f"metric class {cls.__name__} must define a string class attribute {attr!r}")
    unknown = set(cls.requires) - ARTIFACTS
    if unknown:
        raise ConfigError(f"metric {cls.name!r} requires unknown artifacts {sorted(unknown)}; known: {sorted(ARTIFACTS)}")


REGISTRY = MetricRegistry(BUILTIN_FAMILIES)


def register_metric(cls: M | None = None, *, replace: bool = False) -> M | Callable[[M], M]:
    """Decorator: add a :class:`Metric` subclass to the default registry."""
    return REGISTRY.register(cls, replace=replace)


def get_metric(name: str, **params: Any) -> Metric:
    """A configured metric family from the default registry."""
    return REGISTRY.get(name, **params)


def list_metrics() -> list[str]:
    """Names of every registered family (built-ins, decorated classes, entry points)."""
    return REGISTRY.names()


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _convert(family: str, key: str, value: Any, default: Any) -> Any:
    """``value`` (text from the CLI, or already typed) as the type of ``default``."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        if isinstance(default, bool):
            if text.lower() not in _TRUE + _FALSE:
                raise ValueError
            return text.lower() in _TRUE
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
        if default is None:
            for kind in (int, float):
                with contextlib.suppress(ValueError):
                    return kind(text)
            return None if text.lower() in ("none", "null", "") else text
    except ValueError:
        kind = "true or false" if isinstance(default, bool) else type(default).__name__
        raise ConfigError(f"{family}.{key}={value!r} is not a valid {kind}", hint=f"default: {default!r}") from None
    return text
