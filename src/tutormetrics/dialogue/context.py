"""Which earlier turns form the prompt of a tutor turn (``docs/design/dialogue.md#context``)."""

from __future__ import annotations

from tutormetrics.dialogue.model import Turn
from tutormetrics.errors import ConfigError

Context = str | int


def parse_context(value: str | int) -> Context:
    """``"full"``, ``"last"`` or an integer N ≥ 1 (also given as a string).

    >>> parse_context("3"), parse_context("FULL")
    (3, 'full')
    """
    if isinstance(value, int) and not isinstance(value, bool):
        n = value
    else:
        text = str(value).strip().lower()
        if text in ("full", "last"):
            return text
        try:
            n = int(text)
        except ValueError:
            raise ConfigError(f"invalid --context {value!r}", hint="use full, last or an integer N >= 1") from None
    if n < 1:
        raise ConfigError(f"invalid --context {value!r}", hint="N must be at least 1")
    return n


def context_indices(turns: list[Turn], i: int, context: Context) -> list[int]:
    """Indices of the turns before position ``i`` that form its context.

    ``full``: all earlier turns; ``N``: the last N; ``last``: the most recent earlier non-tutor turn.

    Args:
        turns: the conversation's turns.
        i: position of the turn whose context is wanted.
        context: ``"full"``, ``"last"`` or a number of earlier turns N.

    >>> from tutormetrics.dialogue.model import Conversation
    >>> c = Conversation.from_lists("c", ["tutor", "student", "tutor", "student", "tutor"], list("abcde"))
    >>> context_indices(c.turns, 4, "full"), context_indices(c.turns, 4, 2), context_indices(c.turns, 4, "last")
    ([0, 1, 2, 3], [2, 3], [3])
    """
    if context == "full":
        return list(range(i))
    if context == "last":
        for j in range(i - 1, -1, -1):
            if turns[j].kind != "tutor":
                return [j]
        return []
    assert isinstance(context, int)
    return list(range(max(0, i - context), i))
