"""A criterion's declared scale: ``--levels L`` for every criterion, ``--levels CRIT=L`` for one (``docs/guide/paper.md#scale``).

A declared scale gives the lowest and highest level of ``pct_max_*``, the Q × Q table of the judge's symmetry
tests (every declared level a row and a column, empty ones included) and ``--per-rater``'s ``top_score``. A
criterion without a declaration keeps the categories observed over all raters (``docs/design/raters.md#categories``); the judge
table marks its rows ``scale_inferred`` and :func:`inferred_scale_note` words the one stderr note.

Example:
    >>> s = LevelScale(default=(0.0, 1.0, 2.0), by_criterion={"tone": (1.0, 2.0, 3.0)})
    >>> s.levels_for("tone"), s.levels_for("accuracy"), LevelScale().levels_for("tone")
    ((1.0, 2.0, 3.0), (0.0, 1.0, 2.0), None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tutormetrics.errors import ConfigError

__all__ = ["LevelScale", "as_level_scale", "inferred_scale_note", "parse_level_options"]


@dataclass(frozen=True)
class LevelScale:
    """``default`` levels for every criterion (``--levels L``) and per-criterion ones (``--levels CRIT=L``),
    which override the default; each a sorted tuple of at least two numbers."""

    default: tuple[float, ...] | None = None
    by_criterion: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    def levels_for(self, criterion: str) -> tuple[float, ...] | None:
        """The declared levels of ``criterion``, or ``None`` when its scale is inferred from the data."""
        return self.by_criterion.get(criterion, self.default)

    @property
    def declared(self) -> bool:
        """Whether any scale was declared."""
        return self.default is not None or bool(self.by_criterion)

    def check_criteria(self, criteria: Sequence[str]) -> None:
        """Exit 2 when ``--levels CRIT=L`` names a criterion that is not in the ratings.

        Example:
            >>> LevelScale(by_criterion={"tone": (0.0, 1.0)}).check_criteria(["tone", "accuracy"])
        """
        unknown = [c for c in self.by_criterion if c not in set(criteria)]
        if unknown:
            shown = ", ".join(list(criteria)[:12])
            raise ConfigError(f"--levels names criterion {unknown[0]!r}, which is not in the ratings", hint=f"criteria: {shown}")


def as_level_scale(levels: LevelScale | Sequence[float] | None) -> LevelScale:
    """A :class:`LevelScale` from either form the library accepts: a scale, a plain list of levels, or ``None``.

    Example:
        >>> as_level_scale([2, 0, 1]).default
        (0.0, 1.0, 2.0)
    """
    if isinstance(levels, LevelScale):
        return levels
    if levels is None or len(levels) == 0:
        return LevelScale()
    return LevelScale(default=tuple(sorted(float(v) for v in levels)))


def parse_level_options(items: str | Sequence[str] | None) -> LevelScale | None:
    """``--levels L`` (every criterion) and ``--levels CRIT=L`` (one, repeatable; overrides L for it) → a
    :class:`LevelScale`; ``None`` without any. A criterion named twice, or two plain ``L``, is exit 2. Each L is
    read by ``parse_levels``, the one reader of a list of levels.

    Example:
        >>> s = parse_level_options(["0,1,2", "tone=1,2,3"])
        >>> s.default, dict(s.by_criterion)
        ((0.0, 1.0, 2.0), {'tone': (1.0, 2.0, 3.0)})
    """
    try:  # the one reader of a list of levels: tutormetrics.flags once the typed options land, ratings before
        from tutormetrics.flags import parse_levels  # type: ignore[import-not-found]
    except ImportError:
        from tutormetrics.psychometrics.ratings import parse_levels

    if items is None or isinstance(items, str):
        items = [] if items is None else [items]
    default: tuple[float, ...] | None = None
    per: dict[str, tuple[float, ...]] = {}
    for item in items:
        name, sep, text = item.partition("=") if "=" in item else ("", "", item)
        name = name.strip()
        if sep and not name:
            raise ConfigError(f"--levels {item!r} has no criterion before '='", hint="write --levels CRIT=0,1,2")
        if (name in per) if sep else (default is not None):
            raise ConfigError(f"--levels gives {'criterion ' + repr(name) if sep else 'the scale of every criterion'} twice",
                              hint="declare each criterion once (--levels L for all, --levels CRIT=L for one)")  # fmt: skip
        values = tuple(parse_levels(text) or ())
        if sep:
            per[name] = values
        else:
            default = values
    return LevelScale(default, per) if (default is not None or per) else None


def _range_text(lo: float, hi: float) -> str:
    return f"{lo:g}..{hi:g}"


def inferred_scale_note(ranges: Mapping[str, tuple[float, float]], command: str = "agree") -> str:
    """The stderr note naming the criteria whose leniency scale was inferred, ranges grouped, the most common last.

    ``ranges`` maps each inferred criterion (in table order) to its observed (lo, hi); empty gives ``""``.

    Example:
        >>> inferred_scale_note({"vocabulary": (1, 2), "tone": (0, 2), "accuracy": (0, 2), "concept_clarity": (1, 2)})
        'agree: leniency scale inferred from the data (no --levels): vocabulary 1..2, concept_clarity 1..2; 0..2 for the other 2 criteria'
    """
    if not ranges:
        return ""
    groups: dict[tuple[float, float], list[str]] = {}
    for name, (lo, hi) in ranges.items():
        groups.setdefault((float(lo), float(hi)), []).append(name)
    order = sorted(groups, key=lambda r: len(groups[r]))  # stable: ties keep first appearance
    *rest, common = order
    head = f"{command}: leniency scale inferred from the data (no --levels): "
    n = len(groups[common])
    noun = "criterion" if n == 1 else "criteria"
    if not rest:
        return head + f"{_range_text(*common)} for {'the' if n == 1 else 'all'} {n} {noun}"
    named = ", ".join(f"{name} {_range_text(*r)}" for r in rest for name in groups[r])
    return head + f"{named}; {_range_text(*common)} for the other {n} {noun}"
