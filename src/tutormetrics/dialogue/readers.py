"""Read conversations from the three input forms (``docs/guide/dialogues.md``, ``docs/guide/input.md#conversations``).

* long table (CSV, Parquet, JSONL without ``messages``): one row per turn;
* chat JSONL: one conversation per line, ``{"conversation_id", "messages": [{"role", "content"}]}``;
* transcript column: an exchange table whose column holds "Speaker: text" lines, the row's
  ``response`` being the final tutor turn.

Every reader returns the same :class:`~tutormetrics.dialogue.model.Conversation` list, plus the
warnings to show (unknown roles). Bad input raises :class:`InputSchemaError` naming file and row/line.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from tutormetrics.dialogue.model import OTHER_ROLE_MODES, Conversation, Roles, Turn
from tutormetrics.dialogue.speakers import SpeakerMap
from tutormetrics.dialogue.transcript import UNKNOWN_LABELS_HINT, parse_transcript, unknown_labels_message
from tutormetrics.engine.exchanges import stable_id
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.flags import flag
from tutormetrics.ids import IdKey, input_key
from tutormetrics.io.tables import infer_format, read_table, require_columns, require_distinct

_INTEGER = re.compile(r"^\s*[+-]?\d+\s*$")


@dataclass
class DialogueColumns:
    """The column names of a dialogue input (long table, or an exchange table with a transcript column)."""

    PANEL: ClassVar[str] = "Dialogues"

    conversation_col: str = flag('--conversation-col', default='conversation_id',
         help='Conversation id column of a long dialogue table.')
    turn_col: str = flag('--turn-col', default='turn',
         help='Turn number column of a long dialogue table (turns are sorted by it).')
    role_col: str = flag('--role-col', default='role',
         help='Speaker role column of a long dialogue table.')
    text_col: str = flag('--text-col', default='text',
         help='Turn text column of a long dialogue table.')
    transcript_col: str | None = flag('--transcript-col', default=None, show_default=False,
         help="Exchange-table column holding the history as 'Tutor: ...'/'Student: ...' lines; each row is one conversation ending with its response (implies --dialogue).")
    #: ``--history-col``: each row's response after this history, one exchange per row (``docs/guide/dialogues.md#one-response-after-its-history-history-col``)
    history_col: str | None = flag('--history-col', default=None, show_default=False,
         help="Column holding each row's history ('Tutor: ...'/'Student: ...' turns, parsed like --transcript-col): score the row's --response as the next tutor turn after it, one output row per input row, keeping the id (the context of --context is the prompt; not with --prompt, --dialogue or --transcript-col).")


@dataclass
class ReadOptions(DialogueColumns):
    """Column names and role rules; the same names as the ``score --dialogue`` options."""

    id_col: str = "exchange_id"
    response_col: str = "response"
    roles: Roles = field(default_factory=Roles)
    other_role: str = "keep"
    keep_columns: list[str] = field(default_factory=list)
    input_format: str | None = None
    encoding: str = "utf8"
    turn_sep: str | None = None
    speakers: SpeakerMap = field(default_factory=SpeakerMap)
    turn_tag: re.Pattern[str] | None = None
    #: the response column was named explicitly (--response): a transcript table must then have it
    response_required: bool = False
    #: ``--id`` (repeatable): a composite exchange_id is built in a transcript table (``docs/guide/input.md#composite-ids``)
    id_key: IdKey | None = None

    def __post_init__(self) -> None:
        if self.other_role not in OTHER_ROLE_MODES:
            raise ConfigError(f"invalid --other-role {self.other_role!r}", hint="use keep, ignore or error")
        if self.turn_sep == "":
            raise ConfigError("--turn-sep is empty", hint="give the literal text between turns, e.g. --turn-sep '|EOM|'")

    def kind(self, role: object) -> str:
        """A long-table / chat role's kind: an exact or glob ``--speaker`` mapping first, then the role lists."""
        label = str(role).strip()
        mapped = self.speakers.exact_role(label) or self.speakers.glob_role(label)
        return mapped if mapped is not None else self.roles.kind(role)


def compile_turn_tag(pattern: str | None, existing: Iterable[str] = ()) -> re.Pattern[str] | None:
    """``--turn-tag REGEX`` compiled; a bad regex, or a group named like an existing column, is a ConfigError.

    >>> compile_turn_tag(r"\\((?P<move>\\w+)\\)\\s*").groupindex
    mappingproxy({'move': 1})
    """
    if pattern is None:
        return None
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"--turn-tag {pattern!r} is not a valid regular expression: {exc}",
                          hint=r"e.g. --turn-tag '\((?P<move>\w+)\)\s*'") from None
    clash = sorted(set(tag_columns(compiled)) & set(existing))
    if clash:
        raise ConfigError(f"--turn-tag group {clash[0]!r} is named like an existing column",
                          hint="rename the group, e.g. (?P<tag_move>...)")
    return compiled


def tag_columns(pattern: re.Pattern[str] | None) -> list[str]:
    """The TURNS columns a ``--turn-tag`` adds: its named groups, else ``tag``."""
    if pattern is None:
        return []
    return list(pattern.groupindex) or ["tag"]


def apply_turn_tag(text: str, pattern: re.Pattern[str] | None) -> tuple[str, dict[str, str | None]]:
    """Remove the tag at the start of ``text``; its values by column (``None`` where it did not match).

    >>> apply_turn_tag("(focus)Right. And 12 + 3?", re.compile(r"\\((?P<move>\\w+)\\)\\s*"))
    ('Right. And 12 + 3?', {'move': 'focus'})
    """
    if pattern is None:
        return text, {}
    columns = tag_columns(pattern)
    match = pattern.match(text)
    if match is None:
        return text, dict.fromkeys(columns)
    if pattern.groupindex:
        values = {name: match.group(name) for name in columns}
    else:
        values = {"tag": match.group(1) if pattern.groups else match.group(0)}
    return text[match.end():].strip(), values


def _tagged(turn: Turn, opts: ReadOptions) -> Turn:
    if opts.turn_tag is None:
        return turn
    text, values = apply_turn_tag(turn.text, opts.turn_tag)
    return Turn(turn.turn, turn.role, text, turn.kind, {**turn.keep, **values})


@dataclass
class Dialogues:
    """What a reader found: the conversations, the form, and warnings for stderr."""

    conversations: list[Conversation]
    form: str
    warnings: list[str] = field(default_factory=list)
    #: facts for stderr that are not warnings (--strict ignores them)
    notes: list[str] = field(default_factory=list)


def read_conversations(path: str | Path, options: ReadOptions | None = None) -> Dialogues:
    """Read ``path`` in whichever form it is (transcript when ``options.transcript_col`` is set)."""
    opts = options or ReadOptions()
    path = Path(path)
    kind = infer_format(path, opts.input_format)
    notes: list[str] = []
    if opts.transcript_col is not None:
        frame, form = read_table(path, kind, encoding=opts.encoding, string_columns=True), "transcript"
        if opts.id_key is not None:
            frame = input_key(frame, opts.id_key, str(path))
        convs = transcript_conversations(frame, opts, source=str(path))
        if opts.id_col not in frame.columns:
            notes.append(f"{path} has no {opts.id_col!r} column; generated stable content ids (sha1 of transcript and response)")
        if not (opts.response_required or opts.response_col in frame.columns):
            notes.append(f"{path} has no {opts.response_col!r} column: the transcript alone is the conversation")
    elif kind == "jsonl" and _is_chat_jsonl(path):
        convs, form = chat_conversations(path, opts), "chat"
    else:
        frame, form = read_table(path, kind, encoding=opts.encoding, string_columns=True), "long"
        convs = long_conversations(frame, opts, source=str(path))
    found = _apply_other_role(convs, form, opts, str(path))
    found.notes.extend(notes)
    return found


def _is_chat_jsonl(path: Path) -> bool:
    """The first non-blank record of a JSONL file has a ``messages`` key."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(record, dict) and "messages" in record
    return False


# -- long table ------------------------------------------------------------------------------------
def long_conversations(frame: pl.DataFrame, opts: ReadOptions, *, source: str = "input") -> list[Conversation]:
    """One row per turn → conversations (turns sorted by ``turn``, conversations by first appearance).

    Args:
        frame: one row per turn.
        opts: the column names, roles and kept columns.
        source: the input's name in messages.
    """
    need = {
        "--conversation-col": opts.conversation_col,
        "--turn-col": opts.turn_col,
        "--role-col": opts.role_col,
        "--text-col": opts.text_col,
    }
    require_distinct(need, command=source, hint="the conversation, turn, role and text are four different columns")
    for option, col in need.items():
        require_columns(frame, [col], source=source, option=option)
    require_columns(frame, opts.keep_columns, source=source, option="--keep")
    if frame.height == 0:
        raise InputSchemaError(f"{source}: has a header but no rows", hint="add at least one turn")
    cids = frame.get_column(opts.conversation_col).cast(pl.String).to_list()
    cells = _turn_cells(frame.get_column(opts.turn_col), f"{source}: column {opts.turn_col!r}")
    roles = frame.get_column(opts.role_col).cast(pl.String).to_list()
    texts = frame.get_column(opts.text_col).cast(pl.String).to_list()
    keep = {c: frame.get_column(c).to_list() for c in opts.keep_columns}
    rows: dict[str, list[int]] = {}
    for i, (cid, t, r) in enumerate(zip(cids, cells, roles, strict=True)):
        where = f"{source}: row {i + 1}"
        if cid is None or not str(cid).strip():
            raise InputSchemaError(f"{where}: missing {opts.conversation_col!r}", hint="every turn needs a conversation id")
        if t is None:
            raise InputSchemaError(f"{where}: missing {opts.turn_col!r}", hint="every turn needs a turn number (NaN is a missing one)")
        if r is None or not r.strip():
            raise InputSchemaError(f"{where}: missing {opts.role_col!r}", hint="every turn needs a role (e.g. tutor, student)")
        rows.setdefault(cid, []).append(i)
    out = []
    turns: list[Any] = [None] * len(cells)
    for cid, in_file in rows.items():
        numbers = conversation_turns([cells[i] for i in in_file], in_file, cid, f"{source}: column {opts.turn_col!r}")
        for i, number in zip(in_file, numbers, strict=True):
            turns[i] = number
        idx = sorted(in_file, key=lambda i: turns[i])
        for a, b in pairwise(idx):
            if turns[a] == turns[b]:
                first, second = sorted((a, b))
                raise InputSchemaError(
                    f"{source}: duplicate turn {turns[a]} in conversation {cid} (rows {first + 1} and {second + 1})",
                    hint="each (conversation, turn) pair must appear once",
                )
        out.append(
            Conversation(
                cid,
                [
                    _tagged(Turn(turns[i], roles[i], texts[i] or "", opts.kind(roles[i]), {c: keep[c][i] for c in keep}), opts)
                    for i in idx
                    if opts.kind(roles[i]) != "system"
                ],
            )
        )
    return out


def _turn_cells(column: pl.Series, where: str = "input") -> list[int | float | str | None]:
    """Each turn cell as an ``int`` (``3``, ``"11.0"``), a ``float`` (``1.5``), a text (``"intro"``) or ``None``
    (empty or NaN: a missing turn). An infinite number is exit 2 naming the row.

    >>> _turn_cells(pl.Series(["2.0", "11", " 1.5", "intro", "", "NaN"]))
    [2, 11, 1.5, 'intro', None, None]
    """
    if column.dtype.is_integer():
        return column.to_list()
    values = column.to_list() if column.dtype.is_float() else column.cast(pl.String).to_list()
    out = []
    for row, value in enumerate(values, 1):
        try:
            out.append(_turn_cell(value))
        except OverflowError:
            raise InputSchemaError(f"{where}: row {row}: turn {value!r} is not a finite number",
                                   hint="number the turns 0, 1, 2, …") from None
    return out


def _turn_cell(value: Any) -> int | float | str | None:
    if value is None:
        return None
    if isinstance(value, float):
        number: Any = value
    else:
        text = str(value).strip()
        if not text:
            return None
        if _INTEGER.match(text):
            return int(text)
        number = _decimal(text)
        if number is None:
            return str(value)
    if math.isnan(number):  # a missing turn
        return None
    return int(number) if number == int(number) else float(number)


def conversation_turns(cells: list[Any], rows: list[int], cid: str, where: str) -> list[Any]:
    """One conversation's turn numbers, decided for that conversation alone (``docs/design/dialogue.md#long-table``):
    integers when each is a whole number, floats when one is not, texts (sorted as text) when none is a number. A
    text turn among numbers is exit 2 naming its row: sorting the conversation as text (``0, 1, 10, 2``) or dropping
    the turn would both be silent.

    Args:
        cells: the conversation's cells from :func:`_turn_cells`, in file order.
        rows: their 0-based rows (for the message).
        cid: the conversation id.
        where: the file and column, for the message.

    >>> conversation_turns([2, 1.5], [0, 1], "c1", "t.csv"), conversation_turns(["b", "a"], [0, 1], "c1", "t.csv")
    ([2.0, 1.5], ['b', 'a'])
    """
    text = [i for i, v in enumerate(cells) if isinstance(v, str)]
    if not text:
        return [float(v) for v in cells] if any(isinstance(v, float) for v in cells) else list(cells)
    if len(text) == len(cells):
        return list(cells)
    i = text[0]
    raise InputSchemaError(
        f"{where}: row {rows[i] + 1}: turn {cells[i]!r} of conversation {cid} is not a number, while its other turns are",
        hint="number every turn of the conversation (0, 1, 2, …); a label such as 'intro' belongs in its own column (--keep)",
    )


def _decimal(text: str) -> Any:
    from decimal import Decimal, InvalidOperation

    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        return None
    if number.is_nan():
        return float("nan")
    return number if number.is_finite() else float(number)


# -- chat JSONL ------------------------------------------------------------------------------------
def chat_conversations(path: Path, opts: ReadOptions) -> list[Conversation]:
    """One conversation per line; ``turn`` = index in ``messages`` (before ``system`` is dropped)."""
    out: list[Conversation] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as fh:
        try:
            lines = list(fh)
        except UnicodeDecodeError as exc:
            raise InputSchemaError(f"{path}: not valid UTF-8: {exc.reason}") from exc
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}: line {lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputSchemaError(f"{where}: not valid JSON ({exc.msg})", hint="one JSON object per line") from exc
        messages = record.get("messages") if isinstance(record, dict) else None
        if not isinstance(messages, list):
            raise InputSchemaError(
                f"{where}: not a conversation (no 'messages' list)",
                hint='each line must look like {"conversation_id": "c1", "messages": [{"role": "user", "content": "..."}]}',
            )
        cid = record.get("conversation_id")
        cid = str(lineno) if cid is None else str(cid)
        if cid in seen:
            raise InputSchemaError(f"{where}: conversation id {cid!r} already used on line {seen[cid]}", hint="ids must be unique")
        seen[cid] = lineno
        keep = {c: record.get(c) for c in opts.keep_columns}
        turns = []
        for k, msg in enumerate(messages):
            if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
                raise InputSchemaError(f"{where}: message {k} is not an object with a string 'role'", hint="messages are {\"role\": ..., \"content\": ...}")
            kind = opts.kind(msg["role"])
            if kind == "system":
                continue
            text = _content_text(msg.get("content"), f"{where}: message {k}")
            turns.append(_tagged(Turn(k, msg["role"], text, kind, keep), opts))
        out.append(Conversation(cid, turns))
    if not out:
        raise InputSchemaError(f"{path}: no conversations", hint="add at least one line")
    missing = [c for c in opts.keep_columns if all(t.keep.get(c) is None for conv in out for t in conv.turns)]
    if missing and any(c.turns for c in out):
        raise InputSchemaError(
            f"{path}: --keep {missing[0]!r} is not a top-level key of any conversation record",
            hint="--keep copies top-level keys of each JSONL record (e.g. conversation metadata)",
        )
    return out


def _content_text(content: Any, where: str) -> str:
    """A string; ``None`` → ``""``; a list of parts → the ``text`` of ``type == "text"`` parts joined with "\\n"."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                if not isinstance(part.get("text"), str):
                    raise InputSchemaError(f"{where}: a text part has no string 'text'")
                texts.append(part["text"])
        return "\n".join(texts)
    raise InputSchemaError(f"{where}: 'content' must be a string, null or a list of parts", hint="got " + type(content).__name__)


# -- transcript column -----------------------------------------------------------------------------
def transcript_conversations(frame: pl.DataFrame, opts: ReadOptions, *, source: str = "input") -> list[Conversation]:
    """Each exchange row is one conversation: the parsed transcript, then ``response`` as the last tutor turn.

    Without a response column (and none named with ``--response``) the transcript alone is the conversation
    (``docs/guide/dialogues.md``). Unknown speaker-like labels after a transcript's first turn stop the run, listed by
    count (rule 5).

    Args:
        frame: the exchange table.
        opts: the transcript column, roles, speakers, ``--turn-sep`` and kept columns.
        source: the input's name in messages.
    """
    assert opts.transcript_col is not None
    require_columns(frame, [opts.transcript_col], source=source, option="--transcript-col")
    with_response = opts.response_required or opts.response_col in frame.columns
    if with_response:
        require_distinct({"--transcript-col": opts.transcript_col, "--response": opts.response_col}, command=source,
                         hint="the transcript and the response are two different columns")  # fmt: skip
        require_columns(frame, [opts.response_col], source=source, option="--response")
    require_columns(frame, opts.keep_columns, source=source, option="--keep")
    if frame.height == 0:
        raise InputSchemaError(f"{source}: has a header but no rows", hint="add at least one exchange")
    histories = frame.get_column(opts.transcript_col).cast(pl.String).to_list()
    responses = frame.get_column(opts.response_col).cast(pl.String).to_list() if with_response else [None] * frame.height
    if opts.id_col in frame.columns:
        ids = frame.get_column(opts.id_col).cast(pl.String).to_list()
    else:  # no id column: the stable content ids of a plain ``score`` (sha1 of transcript and response)
        counts: dict[str, int] = {}
        ids = [stable_id(h, r, counts) for h, r in zip(histories, responses, strict=True)]
    keep = {c: frame.get_column(c).to_list() for c in opts.keep_columns}
    seen: dict[str, int] = {}
    unknown: Counter[str] = Counter()
    n_unknown_conversations = 0
    out = []
    for i, (cid, history, response) in enumerate(zip(ids, histories, responses, strict=True)):
        if cid is None or not cid.strip():
            raise InputSchemaError(f"{source}: row {i + 1}: missing {opts.id_col!r}", hint="each exchange row needs an id (it becomes the conversation id)")
        if cid in seen:
            raise InputSchemaError(f"{source}: id {cid!r} in rows {seen[cid] + 1} and {i + 1}", hint="ids must be unique")
        seen[cid] = i
        row_keep = {c: keep[c][i] for c in keep}
        parsed = parse_transcript(history, opts.roles, turn_sep=opts.turn_sep, speakers=opts.speakers)
        if parsed.unknown:
            unknown.update(parsed.unknown)
            n_unknown_conversations += 1
        turns = [_tagged(Turn(t.turn, t.role, t.text, t.kind, row_keep), opts) for t in parsed.turns]
        if with_response:
            turns.append(_tagged(Turn(len(turns), opts.response_col, response or "", "tutor", row_keep), opts))
        out.append(Conversation(cid, turns))
    if unknown:
        example = max(unknown.items(), key=lambda kv: (kv[1], kv[0]))[0]
        raise InputSchemaError(
            unknown_labels_message(unknown, n_unknown_conversations, f"{source}: column {opts.transcript_col!r}"),
            hint=UNKNOWN_LABELS_HINT.format(example=example if " " not in example else repr(example)),
        )
    return out


# -- unknown roles ---------------------------------------------------------------------------------
def _apply_other_role(convs: list[Conversation], form: str, opts: ReadOptions, source: str) -> Dialogues:
    """``keep`` (warn once), ``ignore`` (drop other turns) or ``error`` for turns of unknown roles."""
    unknown: Counter[str] = Counter(t.role for c in convs for t in c.turns if t.kind == "other" and t.role)
    warnings: list[str] = []
    if unknown and opts.other_role == "error":
        role, n = unknown.most_common(1)[0]
        raise InputSchemaError(
            f"{source}: unknown role {role!r} ({n} turn(s); tutor roles: {_names(opts.roles.tutor)}; "
            f"student roles: {_names(opts.roles.student)})",
            hint="add it with --tutor-role/--student-role, or pass --other-role keep (context) or ignore (dropped)",
        )
    if opts.other_role == "ignore":
        for c in convs:
            c.turns = [t for t in c.turns if t.kind != "other"]
    elif unknown:
        listed = ", ".join(f"{r!r} ×{n}" for r, n in sorted(unknown.items()))
        warnings.append(
            f"{sum(unknown.values())} turn(s) with unknown roles kept as context, not scored: {listed} "
            "(--tutor-role/--student-role to classify them, --other-role ignore to drop them)"
        )
    return Dialogues(convs, form, warnings)


def _names(roles: Iterable[str]) -> str:
    return ", ".join(sorted(roles))
