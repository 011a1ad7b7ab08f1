"""The one model of a conversation every input form is read into (``docs/design/dialogue.md#inputs``).

A :class:`Conversation` is an id and its turns in order; a :class:`Turn` has its ``turn`` number (as
given, or an index), the role as written, the text, and its *kind*: ``tutor``, ``student`` or
``other``. ``system`` turns are dropped when a conversation is built.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tutormetrics.errors import ConfigError

DEFAULT_TUTOR_ROLES = ("tutor", "assistant", "teacher")
DEFAULT_STUDENT_ROLES = ("student", "user", "learner")
OTHER_ROLE_MODES = ("keep", "ignore", "error")


def fold(role: object) -> str:
    """How roles are compared: surrounding whitespace stripped, casefolded.

    >>> fold("  TUTOR ")
    'tutor'
    """
    return str(role).strip().casefold()


@dataclass(frozen=True)
class Roles:
    """Which roles are tutor and which are student (compared with :func:`fold`); ``system`` is ignored.

    Example:
        >>> r = Roles.of(["Tutor"], None)
        >>> r.kind("tutor"), r.kind("User"), r.kind("system"), r.kind("Note")
        ('tutor', 'student', 'system', 'other')
    """

    tutor: frozenset[str] = frozenset(DEFAULT_TUTOR_ROLES)
    student: frozenset[str] = frozenset(DEFAULT_STUDENT_ROLES)

    @classmethod
    def of(cls, tutor: Iterable[str] | None = None, student: Iterable[str] | None = None) -> Roles:
        """Roles from user lists; a given list **replaces** the defaults."""
        t = frozenset(fold(r) for r in (tutor or DEFAULT_TUTOR_ROLES))
        s = frozenset(fold(r) for r in (student or DEFAULT_STUDENT_ROLES))
        both = sorted(t & s)
        if both:
            raise ConfigError(
                f"role(s) {', '.join(map(repr, both))} are both tutor and student roles",
                hint="give each role to one side only (--tutor-role / --student-role)",
            )
        if "system" in t | s:
            raise ConfigError("'system' cannot be a tutor or student role", hint="system turns are always ignored")
        if "" in t | s:
            raise ConfigError("a tutor or student role is empty")
        return cls(t, s)

    def kind(self, role: object) -> str:
        """``tutor``, ``student``, ``system`` or ``other``."""
        r = fold(role)
        if r in self.tutor:
            return "tutor"
        if r in self.student:
            return "student"
        if r == "system":
            return "system"
        return "other"


@dataclass(frozen=True)
class Turn:
    """One turn: ``turn`` number, ``role`` as written, ``text`` (``""`` for a missing text), ``kind``."""

    turn: int | str
    role: str
    text: str
    kind: str
    keep: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass
class Conversation:
    """A conversation: its id and its turns in order (``system`` already removed).

    Example:
        >>> c = Conversation.from_lists("c1", ["tutor", "student", "tutor"], ["Hi! What is 3^3?", "Is it 9?", "No."])
        >>> [t.kind for t in c.turns], c.turns[2].turn
        (['tutor', 'student', 'tutor'], 2)
    """

    conversation_id: str
    turns: list[Turn]

    @classmethod
    def from_lists(
        cls,
        conversation_id: str,
        roles: Sequence[str],
        texts: Sequence[str | None],
        turns: Sequence[int | str] | None = None,
        *,
        role_kinds: Roles | None = None,
    ) -> Conversation:
        """Build a conversation from parallel lists (``turns`` defaults to ``0..n-1``; ``system`` dropped).

        Args:
            conversation_id: the conversation's id.
            roles: role of each turn, as written.
            texts: text of each turn (``None`` is empty).
            turns: turn numbers; ``None`` numbers them ``0..n-1``.
            role_kinds: role → kind mapping; ``None`` uses the default role lists.
        """
        if len(roles) != len(texts) or (turns is not None and len(turns) != len(roles)):
            raise ConfigError("roles, texts (and turns) must have the same length")
        rk = role_kinds or Roles()
        numbers = list(turns) if turns is not None else list(range(len(roles)))
        out = [
            Turn(n, str(r), t or "", rk.kind(r))
            for n, r, t in zip(numbers, roles, texts, strict=True)
            if rk.kind(r) != "system"
        ]
        return cls(str(conversation_id), out)

    @property
    def n_tutor_turns(self) -> int:
        return sum(t.kind == "tutor" for t in self.turns)
