"""Speaker-prefixed transcripts ("Tutor: …" / "Student: …" pieces, MRBench style) into turns (``docs/design/dialogue.md#transcript-form``
as amended by ``docs/design/datasets.md#transcripts``).

Pieces are the lines, or with ``turn_sep`` the non-blank pieces of ``text.split(turn_sep)``. A *labelled piece*
matches :data:`SPEAKER_LINE`; its role, first match wins: an exact ``--speaker`` label, a tutor or student role,
``system``, a glob ``--speaker`` matching a speaker-like label. A labelled piece with a role (tutor, student, other,
system) starts a turn; every other piece continues the current turn (joined with ``"\\n"``). A speaker-like label
with no role after the first turn is *unknown*: :func:`parse_transcript` reports it, and the reader stops the run.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from tutormetrics.dialogue.model import Roles, Turn, fold
from tutormetrics.dialogue.speakers import SpeakerMap, is_speaker_like

#: A piece that may start a turn: a short label, then an ASCII or full-width colon (group 2 runs to the end).
SPEAKER_LINE = re.compile(r"^\s*([^:：]{1,40}?)\s*[:：](.*)$", re.DOTALL)


@dataclass
class ParsedTranscript:
    """The turns, and the unknown speaker-like labels found after the first turn (label → count)."""

    turns: list[Turn]
    unknown: Counter[str] = field(default_factory=Counter)


def pieces(text: str | None, turn_sep: str | None = None) -> list[str]:
    """NFC, then the lines, or the non-blank pieces of ``text.split(turn_sep)``.

    >>> pieces("Teacher: hi|EOM| |EOM|Student: 2\\nmore", "|EOM|")
    ['Teacher: hi', 'Student: 2\\nmore']
    """
    text = unicodedata.normalize("NFC", text or "")
    if turn_sep is None:
        return text.splitlines()
    return [p for p in text.split(turn_sep) if p.strip()]


def piece_role(label: str, roles: Roles, speakers: SpeakerMap) -> str | None:
    """The role of a label (tutor, student, other, system, text), ``"unknown"``, or ``None`` (not a speaker).

    Args:
        label: the speaker label, as written.
        roles: role → kind mapping.
        speakers: the ``--speaker`` label map (exact names and globs).
    """
    role = speakers.exact_role(label)
    if role is not None:
        return role
    kind = roles.kind(fold(label))
    if kind in ("tutor", "student", "system"):
        return kind
    if is_speaker_like(label):
        return speakers.glob_role(label) or "unknown"
    return None


def parse_transcript(
    text: str | None,
    roles: Roles | None = None,
    *,
    turn_sep: str | None = None,
    speakers: SpeakerMap | None = None,
) -> ParsedTranscript:
    """Turns of a transcript, numbered ``0..n-1`` (system turns dropped), and its unknown labels.

    Args:
        text: the transcript; ``None`` gives no turns.
        roles: role → kind mapping; ``None`` uses the default role lists.
        turn_sep: separator between turns (e.g. ``|EOM|``); ``None`` splits at lines.
        speakers: the ``--speaker`` label map; ``None`` maps no extra labels.

    >>> p = parse_transcript("Problem 1\\nTutor: Hi\\nStudent: I add\\nthen: 3\\nTUTOR: Good")
    >>> [(t.kind, t.text) for t in p.turns], dict(p.unknown)
    ([('other', 'Problem 1'), ('tutor', 'Hi'), ('student', 'I add\\nthen: 3'), ('tutor', 'Good')], {})
    >>> dict(parse_transcript("Teacher: 3 x 4?|EOM|Cody: 12", turn_sep="|EOM|").unknown)
    {'Cody': 1}
    """
    rk = roles or Roles()
    sp = speakers or SpeakerMap()
    lead: list[str] = []
    turns: list[tuple[str, str, list[str]]] = []  # (label as written, kind, pieces)
    unknown: Counter[str] = Counter()
    for piece in pieces(text, turn_sep):
        match = SPEAKER_LINE.match(piece)
        role = piece_role(match.group(1).strip(), rk, sp) if match else None
        if role in ("tutor", "student", "other", "system"):
            turns.append((match.group(1).strip(), role, [match.group(2)]))
            continue
        if role == "unknown" and turns:
            unknown[match.group(1).strip()] += 1
        if turns:
            turns[-1][2].append(piece)
        else:
            lead.append(piece)
    out: list[Turn] = []
    if "\n".join(lead).strip():
        out.append(Turn(0, "", "\n".join(lead).strip(), "other"))
    for label, kind, parts in turns:
        if kind != "system":
            out.append(Turn(len(out), label, "\n".join(parts).strip(), kind))
    return ParsedTranscript(out, unknown)


def unknown_labels_message(unknown: Counter[str], n_conversations: int, where: str) -> str:
    """``N speaker labels in M conversations are neither tutor nor student roles: A (n), B (n), +k more``.

    Args:
        unknown: count per unknown label.
        n_conversations: conversations with an unknown label.
        where: prefix of the message (e.g. the file).
    """
    ranked = sorted(unknown.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{label} ({n})" for label, n in ranked[:8])
    more = f", +{len(ranked) - 8} more" if len(ranked) > 8 else ""
    total = sum(unknown.values())
    return (f"{where}: {total} speaker label{'s' if total != 1 else ''} in {n_conversations} "
            f"conversation{'s' if n_conversations != 1 else ''} are neither tutor nor student roles: {shown}{more}")


UNKNOWN_LABELS_HINT = (
    "map them with --speaker LABEL=ROLE (tutor, student, other, system or text), e.g. --speaker {example}=student, "
    "or all at once with --speaker '*=student'; --speaker '*=text' keeps such lines inside the turn above (the old "
    "behaviour)"
)


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
