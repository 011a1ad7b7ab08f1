"""``--speaker LABEL=ROLE`` maps and the *speaker-like* test for transcript labels (docs/design/datasets.md#transcripts).

A label is **speaker-like** when it is one to three words, the first starting with a letter that is not lowercase
(``Cody``, ``Mr. Smith``, ``Step 1``, ``小明``; not ``from both sides``, ``narrator`` or ``10``). Such a label that is
neither a tutor nor a student role nor mapped by ``--speaker`` is *unknown*: a transcript with one after its first
turn stops the run instead of silently gluing the line onto the turn above.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from tutormetrics.errors import ConfigError

#: What a --speaker ROLE may be: tutor/student/other turns, dropped system turns, or text (continue the turn above).
SPEAKER_ROLES = ("tutor", "student", "other", "system", "text")
_SPEAKER_LIKE = re.compile(r"[^\W\d_][^\W_]*(?:[ .'’-]+[^\W_]+){0,2}")
_GLOB = re.compile(r"[*?\[]")


def is_speaker_like(label: str) -> bool:
    """One to three words, the first starting with a letter, and the first character not lowercase.

    >>> [is_speaker_like(x) for x in ("Cody", "Mr. Smith", "Step 1", "小明", "Note", "from both sides", "narrator", "10")]
    [True, True, True, True, True, False, False, False]
    """
    return bool(_SPEAKER_LIKE.fullmatch(label)) and not label[:1].islower()


@dataclass(frozen=True)
class SpeakerMap:
    """Exact labels and glob patterns (casefolded) → role, from ``--speaker LABEL=ROLE`` options.

    Example:
        >>> m = SpeakerMap.parse(["Cody=student", "*=text"])
        >>> m.exact_role("CODY"), m.glob_role("Mariana"), m.exact_role("Mariana")
        ('student', 'text', None)
    """

    exact: dict[str, str] = field(default_factory=dict)
    globs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, items: Iterable[str] | None, *, allow_text: bool = True) -> SpeakerMap:
        """The map of ``--speaker`` values; a label given twice with different roles is exit 2 (the last would
        silently win), the same pair twice is one entry.

        >>> SpeakerMap.parse(["Cody=student", "cody=student"]).exact
        {'cody': 'student'}
        """
        exact: dict[str, str] = {}
        globs: list[tuple[str, str]] = []
        for item in items or ():
            label, sep, role = str(item).rpartition("=")
            label, role = label.strip(), role.strip().casefold()
            if not sep or not label:
                raise ConfigError(f"--speaker {item!r}: expected LABEL=ROLE", hint="e.g. --speaker Cody=student or --speaker '*=student'")
            allowed = SPEAKER_ROLES if allow_text else tuple(r for r in SPEAKER_ROLES if r != "text")
            if role not in allowed:
                raise ConfigError(
                    f"--speaker {item!r}: role {role!r} is not one of {', '.join(allowed)}",
                    hint="text (continue the turn above) is only for transcripts" if role == "text" else None,
                )
            folded = label.casefold()
            given = dict(globs) if _GLOB.search(label) else exact
            if given.get(folded, role) != role:
                raise ConfigError(
                    f"--speaker {label!r} is given twice, as {given[folded]} and as {role} (labels compare casefolded)",
                    hint=f"keep one of --speaker {label}={given[folded]} and --speaker {label}={role}",
                )
            if _GLOB.search(label):
                if (folded, role) not in globs:
                    globs.append((folded, role))
            else:
                exact[folded] = role
        return cls(exact, tuple(globs))

    def exact_role(self, label: str) -> str | None:
        return self.exact.get(label.casefold())

    def glob_role(self, label: str) -> str | None:
        folded = label.casefold()
        for pattern, role in self.globs:
            if fnmatch.fnmatchcase(folded, pattern):
                return role
        return None

    def __bool__(self) -> bool:
        return bool(self.exact or self.globs)
