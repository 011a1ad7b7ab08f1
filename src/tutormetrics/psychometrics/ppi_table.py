"""``ppi``: a criterion's mean human score, overall and per group, from judge labels on every item and human
labels on a few (``predictive.md`` §3). Formulas in :mod:`tutormetrics.stats.ppi`.

Example:
    >>> judge = pl.DataFrame({"exchange_id": [f"e{i}" for i in range(6)], "rater": "llm", "criterion": "c",
    ...                       "score": [1, 0, 1, 1, 0, 1]})
    >>> human = pl.DataFrame({"exchange_id": ["e0", "e1", "e2"], "rater": "h", "criterion": "c", "score": [1, 0, 0]})
    >>> t = ppi_table(judge, human)
    >>> t.select("n_labeled", "n_unlabeled", "estimate").row(0)
    (3, 3, 0.3333333333333333)
"""

from __future__ import annotations

import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.progress import Log, quiet
from tutormetrics.psychometrics.ratings import clean_long_ratings, ratings_to_targets
from tutormetrics.stats.ppi import PPIResult, ppi_mean

COLUMNS: tuple[str, ...] = (
    "criterion", "group", "n_labeled", "n_unlabeled", "lambda", "estimate", "se", "ci_low", "ci_high", "classical",
    "classical_se", "classical_ci_low", "classical_ci_high", "judge_mean", "n_effective", "reason",
)  # fmt: skip


def parse_lambda(text: str | float) -> float | str:
    """``"1"`` → 1.0, ``"auto"`` → ``"auto"``; a number outside [0, 1] or other text is an error.

    >>> parse_lambda("auto"), parse_lambda("0.5")
    ('auto', 0.5)
    """
    if isinstance(text, str) and text.strip().lower() == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"--lambda must be auto or a number in [0, 1], got {text!r}", hint="e.g. --lambda 1 or --lambda auto") from None
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"--lambda must lie in [0, 1], got {value:g}", hint="λ = 0 is the classical mean, λ = 1 plain PPI")
    return value


def _judge_scores(all_labels: pl.DataFrame, judge: str | None, id_col: str, rater_col: str, criterion_col: str, score_col: str) -> pl.DataFrame:
    if rater_col in all_labels.columns:
        raters = sorted(set(all_labels.get_column(rater_col).cast(pl.String).drop_nulls().to_list()))
        if judge is None:
            if len(raters) > 1:
                raise InputSchemaError(f"the judge labels hold {len(raters)} raters ({', '.join(raters[:5])})",
                                       hint="pick one with --judge NAME")  # fmt: skip
        elif judge not in raters:
            raise InputSchemaError(f"the judge {judge!r} is not a rater of the judge labels", hint=f"raters: {', '.join(raters[:10])}")
        else:
            all_labels = all_labels.filter(pl.col(rater_col).cast(pl.String) == judge)
    elif judge is not None:
        raise InputSchemaError(f"--judge needs a rater column ({rater_col!r}) in the judge labels")
    return ratings_to_targets(all_labels, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col)


def _groups(all_labels: pl.DataFrame, group_col: str, id_col: str) -> pl.DataFrame:
    if group_col not in all_labels.columns:
        raise InputSchemaError(f"the group column {group_col!r} is not in the judge labels", hint="name an ALL.csv column with --group-col")
    g = all_labels.select(pl.col(id_col).cast(pl.String).alias("_id"), pl.col(group_col).cast(pl.String).alias("_group"))
    if g["_group"].null_count():
        raise InputSchemaError(f"{g['_group'].null_count():,} judge label(s) have an empty {group_col!r}")
    per = g.group_by("_id", maintain_order=True).agg(pl.col("_group").n_unique().alias("k"), pl.col("_group").first())
    bad = per.filter(pl.col("k") > 1)
    if bad.height:
        raise InputSchemaError(f"{group_col!r} is not constant within an exchange, e.g. {bad['_id'][0]!r}",
                               hint="a group (e.g. tutor) must be one value per exchange")  # fmt: skip
    return per.select("_id", "_group")


def _row(crit: str, group: str, r: PPIResult, extra: list[str]) -> dict[str, object]:
    return {
        "criterion": crit, "group": group, "n_labeled": r.n_labeled, "n_unlabeled": r.n_unlabeled, "lambda": r.lam,
        "estimate": r.estimate, "se": r.se, "ci_low": r.ci_low, "ci_high": r.ci_high, "classical": r.classical,
        "classical_se": r.classical_se, "classical_ci_low": r.classical_ci_low, "classical_ci_high": r.classical_ci_high,
        "judge_mean": r.judge_mean, "n_effective": r.n_effective, "reason": ";".join([*r.reasons, *extra]),
    }  # fmt: skip


def ppi_table(
    judge_labels: pl.DataFrame,
    human_labels: pl.DataFrame,
    *,
    judge: str | None = None,
    group_col: str | None = None,
    lam: float | str = 1.0,
    confidence_level: float = 0.95,
    aggregate: str = "mean",
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    log: Log = quiet,
) -> pl.DataFrame:
    """One row per criterion × group (pooled row first, ``group`` empty; groups sorted as text)."""
    if not 0.0 < confidence_level < 1.0:
        raise ConfigError(f"--confidence-level must lie in (0, 1), got {confidence_level}")
    lam = parse_lambda(lam) if isinstance(lam, str) else parse_lambda(str(lam))
    if aggregate not in ("mean", "min", "max"):
        raise ConfigError(f"--aggregate {aggregate!r} does not give one human score per exchange", hint="use mean, min or max")
    src = dict(id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col)
    clean_long_ratings(judge_labels, source="judge labels", **src)  # one clear message for a bad file
    clean_long_ratings(human_labels, source="human labels", **src)
    jw = _judge_scores(judge_labels, judge, **src)
    hw = ratings_to_targets(human_labels, aggregate=aggregate, **src)  # type: ignore[arg-type]
    jw = jw.with_columns(pl.col(id_col).cast(pl.String).alias("_id"))
    hw = hw.with_columns(pl.col(id_col).cast(pl.String).alias("_id"))
    groups = _groups(judge_labels, group_col, id_col) if group_col else None
    criteria = [c for c in jw.columns if c not in (id_col, "_id")]
    missing = [c for c in hw.columns if c not in (id_col, "_id") and c not in criteria]
    if missing:
        log(f"note: human criteria without judge labels, skipped: {', '.join(missing)}")
    rows: list[dict[str, object]] = []
    for crit in criteria:
        j = jw.select("_id", pl.col(crit).alias("_f")).filter(pl.col("_f").is_not_null() & pl.col("_f").is_not_nan())
        h = (hw.select("_id", pl.col(crit).alias("_y")).filter(pl.col("_y").is_not_null() & pl.col("_y").is_not_nan())
             if crit in hw.columns else pl.DataFrame(schema={"_id": pl.String, "_y": pl.Float64}))  # fmt: skip
        both = j.join(h, on="_id", how="left", maintain_order="left")
        if groups is not None:
            both = both.join(groups, on="_id", how="left", maintain_order="left")
        orphan = h.filter(~pl.col("_id").is_in(j["_id"].implode())).height
        extra = [f"human_without_judge_{orphan}"] if orphan else []
        parts: list[tuple[str, pl.DataFrame]] = [("", both)]
        if groups is not None:
            for g in sorted(set(both["_group"].drop_nulls().to_list())):
                parts.append((g, both.filter(pl.col("_group") == g)))
        for g, part in parts:
            lab = part.filter(pl.col("_y").is_not_null())
            unl = part.filter(pl.col("_y").is_null())
            r = ppi_mean(lab["_y"].to_numpy(), lab["_f"].to_numpy(), unl["_f"].to_numpy(), lam=lam, confidence_level=confidence_level)
            rows.append(_row(crit, g, r, extra if g == "" else []))
    schema = {c: pl.Float64 for c in COLUMNS}
    schema.update({"criterion": pl.String, "group": pl.String, "n_labeled": pl.Int64, "n_unlabeled": pl.Int64, "reason": pl.String})
    return pl.DataFrame(rows, schema=schema, orient="row").select(COLUMNS)
