"""Speaker-prefixed transcripts ("Tutor: …" / "Student: …" lines, MRBench style) into turns (``dialogue.md`` §1.3)."""

from __future__ import annotations

import re
import unicodedata

from tutormetrics.dialogue.model import Roles, Turn, fold

#: A line that may start a turn: a short speaker name, then an ASCII or full-width colon.
SPEAKER_LINE = re.compile(r"^\s*([^:：]{1,40}?)\s*[:：](.*)$")


def parse_transcript(text: str | None, roles: Roles | None = None) -> list[Turn]:
    """Turns of a transcript; numbered ``0..n-1``.

    1. NFC, split into lines. 2. A line starts a turn when it matches ``SPEAKER_LINE`` and the speaker
    (stripped, casefolded) is a tutor or student role. 3. Other lines continue the current turn
    (joined with ``"\\n"``). 4. Turn texts are stripped. 5. Non-blank lines before the first speaker line
    form one leading ``other`` turn.

    >>> [(t.kind, t.text) for t in parse_transcript("Problem 1\\nTutor: Hi\\nStudent: I add\\nthen: 3\\nTUTOR: Good")]
    [('other', 'Problem 1'), ('tutor', 'Hi'), ('student', 'I add\\nthen: 3'), ('tutor', 'Good')]
    """
    rk = roles or Roles()
    lead: list[str] = []
    turns: list[tuple[str, str, list[str]]] = []  # (role as written, kind, lines)
    for line in unicodedata.normalize("NFC", text or "").splitlines():
        m = SPEAKER_LINE.match(line)
        kind = rk.kind(m.group(1)) if m else "other"
        if m and kind in ("tutor", "student"):
            turns.append((m.group(1).strip(), kind, [m.group(2)]))
        elif turns:
            turns[-1][2].append(line)
        else:
            lead.append(line)
    out: list[Turn] = []
    if "\n".join(lead).strip():
        out.append(Turn(0, "", "\n".join(lead).strip(), "other"))
    for role, kind, lines in turns:
        out.append(Turn(len(out), role, "\n".join(lines).strip(), kind))
    return out


def speaker_of(line: str, roles: Roles | None = None) -> str | None:
    """The kind of speaker a line starts (``tutor``/``student``), or ``None`` if it continues a turn.

    >>> speaker_of("老师：你好", Roles.of(["老师"], ["学生"]))
    'tutor'
    """
    m = SPEAKER_LINE.match(line)
    if not m:
        return None
    kind = (roles or Roles()).kind(fold(m.group(1)))
    return kind if kind in ("tutor", "student") else None
