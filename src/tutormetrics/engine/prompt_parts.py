"""A prompt handed over as its parts but scored as their joined text (``docs/design/dialogue.md#context-memory``).

A dialogue context under ``--context-encoding joined`` is the text ``"\\n".join(turns)``: every family, the encoder
included, sees exactly that text. Handing the turns over as :class:`JoinedParts` rather than as the joined string
lets the Scorer tokenise each distinct turn once and build the context's ``T(x)`` from its turns' tokens
(:func:`tutormetrics.engine.artifacts.add_text_artifacts`): a long conversation's contexts then share their token
strings instead of each holding its own copy. A plain list of parts (``--context-encoding turns``) is also pooled
over its parts by the encoder; a :class:`JoinedParts` is not.

Example:
    >>> p = JoinedParts(["Hi", "Is it 9?"])
    >>> p.text(), isinstance(p, tuple)
    ('Hi\\nIs it 9?', True)
"""

from __future__ import annotations

from collections.abc import Iterable

#: What joins the parts of a prompt (``docs/design/dialogue.md#context``).
PART_SEPARATOR = "\n"


class JoinedParts(tuple[str, ...]):
    """The parts of a prompt whose text is their ``"\\n"``-join (a tuple of strings, nothing more)."""

    __slots__ = ()

    def __new__(cls, parts: Iterable[str | None] = ()) -> JoinedParts:
        return super().__new__(cls, ("" if p is None else p for p in parts))

    def text(self) -> str:
        """The prompt's text: the parts joined with ``"\\n"``."""
        return PART_SEPARATOR.join(self)
