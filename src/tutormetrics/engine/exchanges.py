"""Table rows → exchanges: the one place a row becomes ``(id, prompt, response)`` (``docs/design/scoring.md#rows-to-exchanges``).

``score`` (local and Ray), :class:`~tutormetrics.engine.batch.ScoreBatch` and the report all call
:func:`exchange_rows`, so a row means the same everywhere:

* **prompt**: one ``--prompt`` column as it is; several joined as labelled sections (:func:`join_prompt_columns`);
  a missing (null) cell is the empty text;
* **response**: the ``--response`` cell as text; null is the empty text (scored as an empty response, flagged
  ``resp_empty``);
* **id**: the ``--id`` cell as text, or, without an id column, a stable content id (:func:`stable_id`).

Example:
    >>> rows = exchange_rows(pl.DataFrame({"query": ["2+2?", None], "response": ["4", None]}), ["query"], "response")
    >>> rows.ids, rows.prompts, rows.responses
    (['606d41b72037', '953efe8f531a'], ['2+2?', ''], ['4', ''])
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

import polars as pl

__all__ = ["ExchangeRows", "exchange_rows", "join_prompt_columns", "stable_id"]


class ExchangeRows(NamedTuple):
    """Aligned ids, prompts and responses: the ``(ids, prompts, responses)`` chunk :meth:`Scorer.iter_scores` takes."""

    ids: list[str]
    prompts: list[str]
    responses: list[str]


def exchange_rows(
    frame: pl.DataFrame,
    prompt_columns: Sequence[str],
    response_column: str,
    *,
    id_column: str | None = None,
    seen: dict[str, int] | None = None,
) -> ExchangeRows:
    """The exchanges of ``frame``'s rows, in row order.

    Args:
        frame: the rows (the prompt and response columns must be there).
        prompt_columns: the ``--prompt`` columns, joined by :func:`join_prompt_columns`.
        response_column: the ``--response`` column; null cells are the empty text.
        id_column: the id column; ``None`` (or a column the frame lacks) gives content ids (:func:`stable_id`).
        seen: digests counted so far, so that repeats across chunks get ``-2``, ``-3`` (a fresh count when ``None``).
    """
    prompts = join_prompt_columns(frame, prompt_columns).to_list()
    responses = frame.get_column(response_column).cast(pl.String).fill_null("").to_list()
    if id_column is not None and id_column in frame.columns:
        ids = frame.get_column(id_column).cast(pl.String).to_list()
    else:
        counts = {} if seen is None else seen
        ids = [stable_id(p, r, counts) for p, r in zip(prompts, responses, strict=True)]
    return ExchangeRows(ids, prompts, responses)


def join_prompt_columns(df: pl.DataFrame, columns: Sequence[str]) -> pl.Series:
    """One prompt per row: a single column as it is, several joined as labelled sections.

    With ``columns=["query", "code"]`` a row becomes ``"Query:\\n<query>\\n\\nCode:\\n<code>"``;
    empty sections are left out, and a row with no text at all is ``""``.

    >>> join_prompt_columns(pl.DataFrame({"query": ["Why?"], "error_msg": [None]}), ["query", "error_msg"]).to_list()
    ['Query:\\nWhy?']
    """
    if len(columns) == 1:
        return df.get_column(columns[0]).cast(pl.String).fill_null("")
    parts = [
        pl.when(pl.col(c).cast(pl.String).fill_null("").str.strip_chars() != "")
        .then(pl.lit(f"{_label(c)}:\n") + pl.col(c).cast(pl.String))
        .otherwise(None)
        for c in columns
    ]
    return df.select(pl.concat_str(parts, separator="\n\n", ignore_nulls=True).fill_null("").alias("prompt")).to_series()


def stable_id(prompt: str | None, response: str | None, seen: dict[str, int]) -> str:
    """Content id for inputs without an id column: ``sha1(prompt + "\\x1f" + response)[:12]``, then ``-2``, ``-3`` for
    repeats. Stable when rows are reordered or added, unlike row numbers; ``seen`` counts digests across chunks.

    Args:
        prompt: the joined prompt (``None`` is empty).
        response: the response (``None`` is empty).
        seen: digests counted so far (updated).

    >>> seen = {}
    >>> stable_id("2+2?", "4", seen), stable_id("2+2?", "4", seen)
    ('606d41b72037', '606d41b72037-2')
    """
    digest = hashlib.sha1(f"{prompt or ''}\x1f{response or ''}".encode()).hexdigest()[:12]
    seen[digest] = seen.get(digest, 0) + 1
    return digest if seen[digest] == 1 else f"{digest}-{seen[digest]}"


def _label(column: str) -> str:
    return column.replace("_", " ").strip().capitalize()
