"""The in-memory study flow that ``validate`` and ``run`` both call: targets → (θ) → Spearman table.

``run`` adds scoring before it and agreement and the heatmap after it; it hands the scored frame and
the Scorer's column descriptions (the manifest's ``columns``) to :func:`validate_metrics` and the heatmap,
so nothing is re-read from disk or guessed from column names. ``validate`` reads a metrics table and calls the same function with the
same :class:`ValidateOptions` defaults.

Example:
    >>> import polars as pl
    >>> metrics = pl.DataFrame({"exchange_id": [str(i) for i in range(12)], "resp_words": [float(i) for i in range(12)]})
    >>> ratings = pl.DataFrame({"exchange_id": [str(i) for i in range(12)], "rater": ["a"] * 12,
    ...                         "criterion": ["clear"] * 12, "score": [0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1]})
    >>> study = validate_metrics(metrics, ratings=ratings, options=ValidateOptions(estimate_theta=False, ci="none"))
    >>> round(study.validity.table["rho"][0], 3)
    0.71
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tutormetrics import __version__
from tutormetrics.engine.file_scoring import ScoreOptions, score_file
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.atomic import write_text_atomic
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import write_table
from tutormetrics.progress import Log, quiet
from tutormetrics.psychometrics.ratings import RatingOptions, Ratings

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.metrics.columns import ColumnDescription


def run_files(formats: Sequence[str] = ("png", "pdf")) -> tuple[str, ...]:
    """Every file ``run`` may write into its folder (checked against the inputs before any work): the scored
    tables, θ, agreement, and per level (exchanges or turns; ``conversations_`` of a dialogue) the correlation
    table, the ρ matrices and the heatmaps (raw and ``_partial``) in each figure format.

    >>> [n for n in run_files() if n.startswith("turns_heatmap")]
    ['turns_heatmap.png', 'turns_heatmap.pdf', 'turns_heatmap_partial.png', 'turns_heatmap_partial.pdf']
    """
    fixed = ["metrics.csv", "metrics.csv.manifest.json", "theta.csv", "facets.csv", "agreement.csv", "turns.csv",
             "turns.csv.manifest.json", "conversations.csv", "conversations.csv.manifest.json", "predictive.csv"]  # fmt: skip
    levels = [
        name
        for prefix in ("", "conversations_", "turns_")
        for name in (f"{prefix}correlations.csv", f"{prefix}rho_matrix.csv", f"{prefix}rho_matrix_partial.csv",
                     *(f"{prefix}heatmap{kind}.{fmt}" for kind in ("", "_partial") for fmt in formats))  # fmt: skip
    ]
    return (*fixed, *levels, "run.json", "report.html")


#: The files of :func:`run_files` with the default figure formats.
RUN_FILES = run_files()


@dataclass
class ValidateOptions(RatingOptions):
    """Options of the validation step: one set of names and defaults for ``validate``, ``run`` and the API (the
    rating fields are :class:`~tutormetrics.psychometrics.ratings.RatingOptions`')."""

    adjust: str = "bh"
    ci: str = "bca"
    n_resamples: int = 9999
    confidence_level: float = 0.95
    seed: int = 0
    permutation: str = "auto"
    n_permutations: int = 9999
    stars_on: str = "p_adj"
    n_min: int = 10
    #: Significant digits of the rank key (``effects.md`` §2.5); 0 = raw values.
    tie_digits: int = 12
    #: ``"exchangeable"``: the rater labels are anonymous slots (``datasets.md`` §5); ``None``: raters are people.
    raters: str | None = None
    estimate_theta: bool = True
    #: Metrics columns held fixed for the partial rows (``richness.md`` §1); empty = raw only.
    control: list[str] = field(default_factory=list)
    #: Metrics column of cluster (dialogue) labels: intervals resample clusters (``predictive.md`` §2).
    cluster_col: str | None = None
    min_clusters: int = 10
    figure_formats: list[str] = field(default_factory=lambda: ["png", "pdf"])

    def spearman_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~tutormetrics.validity.correlate.spearman_matrix`."""
        return {
            "adjust": self.adjust,
            "ci": self.ci,
            "n_resamples": self.n_resamples,
            "confidence_level": self.confidence_level,
            "seed": self.seed,
            "permutation": self.permutation,
            "n_permutations": self.n_permutations,
            "stars_on": self.stars_on,
            "n_min": self.n_min,
            "tie_digits": self.tie_digits,
            **({"min_clusters": self.min_clusters} if self.cluster_col else {}),
        }


@dataclass
class StudyResult:
    """What :func:`validate_metrics` computed: the Spearman result and, when estimated, the θ fit."""

    validity: Any  # tutormetrics.validity.correlate.ValidityResult
    theta_fit: Any | None = None  # MFRMResult when θ was estimated here
    long_ratings: bool = False
    ratings: Ratings | None = None  # the ratings the targets came from, cleaned once
    warnings: list[str] = field(default_factory=list)  # θ's (datasets.md §5): slot-like raters, one rater on mixed scales


def validate_metrics(
    metrics: pl.DataFrame,
    *,
    ratings: pl.DataFrame | Ratings | None = None,
    theta: Sequence[pl.DataFrame] = (),
    options: ValidateOptions | None = None,
    id_col: str = "exchange_id",
    metric_cols: Sequence[str] | None = None,
    ratings_source: str = "ratings",
    log: Log = quiet,
) -> StudyResult:
    """Targets from ``ratings`` (long or wide; a frame, or a
    :class:`~tutormetrics.psychometrics.ratings.Ratings` already cleaned) and ``theta`` tables, θ estimated
    by the MFRM when asked and none is given, then every metric column against every target
    (``statistics.md`` §1).

    ``metric_cols`` names the metric columns (``run`` passes the Scorer's); without it every numeric
    column but the id is a metric.
    """
    from tutormetrics.validity.correlate import correlate_with_targets

    vo = options or ValidateOptions()
    rated = clean_ratings(ratings, vo, id_col, ratings_source, log) if ratings is not None else None
    if rated is None and not theta:
        raise ConfigError("nothing to correlate against", hint="pass ratings and/or theta")
    if rated is None and vo.targets_from:
        raise ConfigError("--targets-from needs --ratings")
    from tutormetrics.metrics.columns import check_named_columns

    check_named_columns(vo.targets_from, "--targets-from", what="target")  # ids are never targets (datasets.md §4)
    check_named_columns(vo.control, "--control", what="control")
    tables: list[pl.DataFrame] = []
    names: list[str] = []
    fit = None
    warned: list[str] = []
    if rated is not None:
        tables.append(rated.targets(vo.aggregate, vo.targets_from, log=log))  # type: ignore[arg-type]
        names.append("ratings")
    for k, table in enumerate(theta):
        tables.append(table)
        names.append("theta" if k == 0 else f"theta{k + 1}")
    if rated is not None and not theta and vo.estimate_theta:
        if rated.is_long:
            log("no θ given: estimating θ from the ratings with a many-facet Rasch model (MML, EAP)")
            from tutormetrics.psychometrics.exchangeable import theta_ratings

            fitted, notes, warned = theta_ratings(rated)
            for line in [*notes, *warned]:
                log(line)
            theta_targets, fit = estimate_theta_targets(fitted)
            tables.append(theta_targets)
            names.append("theta")
            log(f"      {fit.summary()}")
        else:
            log("θ: not estimated (the ratings are wide; the MFRM needs long ratings)")
    inherited = _inherited_targets(metrics, tables, id_col, vo)
    result = correlate_with_targets(
        metrics,
        tables,
        names=names,
        id_col=id_col,
        metrics_cols=metric_cols,
        id_type=vo.id_type,
        control=vo.control or None,
        cluster_col=vo.cluster_col,
        **vo.spearman_options(),
    )
    if inherited:  # one rating over several rows: ρ and the cluster interval, no p (datasets.md §6)
        from tutormetrics.validity.level import mark_inherited

        result = replace(result, table=mark_inherited(result.table))
    return StudyResult(result, fit, rated is not None and rated.is_long, rated, warned)


def _inherited_targets(metrics: pl.DataFrame, tables: Sequence[pl.DataFrame], id_col: str, vo: ValidateOptions) -> bool:
    """Whether several metric rows share a target id (then they inherit it); exit 2 without ``--cluster-col``."""
    from tutormetrics.validity.join import _id_series
    from tutormetrics.validity.level import check_shared_ids

    if id_col not in metrics.columns:
        return False
    ids = {v for t in tables if id_col in t.columns for v in _id_series(t, id_col, vo.id_type, "targets").to_list() if v is not None}
    keyed = metrics.with_columns(_id_series(metrics, id_col, vo.id_type, "metrics").alias(id_col))
    return check_shared_ids(keyed, id_col, ids, vo.cluster_col)


def clean_ratings(ratings: pl.DataFrame | Ratings, vo: ValidateOptions, id_col: str, source: str, log: Log = quiet) -> Ratings:
    """The :class:`~tutormetrics.psychometrics.ratings.Ratings` of a ratings frame under ``vo``'s columns
    and scale (``--levels``, ``--drop-out-of-scale``); one already cleaned is returned as it is."""
    if isinstance(ratings, Ratings):
        return ratings
    return Ratings.clean(
        ratings, id_col=id_col, rater_col=vo.rater_col, criterion_col=vo.criterion_col, score_col=vo.score_col,
        levels=vo.levels, drop_out_of_scale=vo.drop_out_of_scale, source=source, log=log,
        exchangeable=vo.raters == "exchangeable",
    )  # fmt: skip


def estimate_theta_targets(
    ratings: pl.DataFrame | Ratings,
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
) -> tuple[pl.DataFrame, Any]:
    """θ (EAP of the descriptive MFRM, statistics.md §2.2) from long ratings (a frame, or a
    :class:`~tutormetrics.psychometrics.ratings.Ratings`, whose own column names win), as a target table
    plus the fit.

    Returns ``(targets, fit)`` where ``targets`` has ``id_col`` and ``theta``.
    """
    from tutormetrics.psychometrics.mfrm import fit_mfrm
    from tutormetrics.psychometrics.ratings import theta_to_targets

    if isinstance(ratings, Ratings):
        c = ratings.columns()
        id_col, rater_col, criterion_col, score_col = c["id_col"], c["rater_col"], c["criterion_col"], c["score_col"]
    present = ratings.frame.columns if isinstance(ratings, Ratings) else ratings.columns
    rater = rater_col if rater_col in present else None
    fit = fit_mfrm(ratings, id_col=id_col, rater_col=rater, criterion_col=criterion_col, score_col=score_col)
    return theta_to_targets(fit.theta_table(), id_col=id_col), fit


def run_pipeline(
    exchanges: Path,
    ratings: Path,
    outdir: Path,
    *,
    score_options: ScoreOptions,
    validate_options: ValidateOptions,
    theta: Path | Sequence[Path] | None = None,
    dialogue: Any = None,
    metric_cols: Sequence[str] | None = None,
    top: int = 5,
    group_col: str | None = None,
    log: Log = quiet,
    history: Any = None,
) -> dict[str, Any]:
    """Score → (θ) → agreement → Spearman table → heatmap → report into ``outdir``; returns the summary
    (``run.json``).

    Resumable: the scoring step's verified checkpoint (``metrics.csv.partial/``, ``turns.csv.partial/``) is kept
    until the whole run has finished, so rerunning the same command after a failure in a later step reuses every
    scored chunk (same run key) and redoes only the later steps, byte-identical to an uninterrupted run.

    With ``dialogue`` (a :class:`tutormetrics.dialogue.file_scoring.DialogueOptions`) the input holds
    conversations: scoring writes ``turns.csv`` and ``conversations.csv``; the ratings are keyed by
    ``exchange_id`` (``"{conversation_id}:{turn}"``, one tutor turn: the turns are validated) or by
    ``conversation_id`` (``datasets.md`` §6): then ``correlations.csv``, ``heatmap.*`` and the headline are
    the conversation level (CONV), and the turn level (``turns_correlations.csv``, ``turns_heatmap.*``:
    ratings inherited, intervals over clusters, no p) is written only with ``--cluster-col``.

    ``theta`` may name several θ tables (the first is ``theta``, then ``theta2``, ...); ``metric_cols``
    restricts the metric columns of the first level; ``top`` strongest correlations are logged. ``history`` (a
    ``DialogueOptions`` with ``history_col``) scores each row's response after its history (``datasets.md`` §3.4)
    into ``metrics.csv``, one row per exchange, validated like any exchange table. The
    summary's ``warnings`` are the scoring run's (``run --strict`` exits 1 on them).
    """
    from tutormetrics.ids import IdKey, read_keyed
    from tutormetrics.psychometrics.ratings import theta_to_targets
    from tutormetrics.validity.correlate import summarize_correlations

    vo = validate_options
    key = score_options.id_key  # a composite exchange_id is built in every table with its parts (datasets.md §3.1)
    id_col = score_options.id_column
    thetas = [theta] if isinstance(theta, (str, Path)) else list(theta or [])
    check_outputs([exchanges, ratings, *thetas], [outdir / name for name in run_files(vo.figure_formats)])
    if score_options.engine not in ("local", "ray"):
        raise ConfigError(f"unknown engine {score_options.engine!r}", hint="use --engine local or --engine ray")
    if dialogue is not None and score_options.engine != "local":
        raise ConfigError("--dialogue runs on the local engine only", hint="drop --engine ray")
    outdir.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    # a dialogue's ratings are keyed by its TURNS or CONV ids ("<conversation>:<turn>", conversation_id)
    ratings_key = key if dialogue is None else IdKey()
    raw_ratings = read_keyed(ratings, ratings_key, id_columns=("exchange_id", "conversation_id", id_col), drop_parts=True)
    if raw_ratings.height == 0 and not thetas:  # a release without ratings (Bridge): the scores and the report only
        return _score_and_report(exchanges, ratings, outdir, score_options, dialogue, id_col, files, log, history, vo)
    if dialogue is not None:
        id_col = dialogue_ratings_key(raw_ratings, id_col, str(ratings))
    rated = clean_ratings(raw_ratings, vo, id_col, str(ratings), log)  # once: θ, agreement and targets share it

    log("[1/4] scoring")
    levels, warned = _score_levels(exchanges, outdir, score_options, dialogue, id_col, files, log, history)

    summary: dict[str, Any] = {"tutormetrics": __version__, "exchanges": str(exchanges), "ratings": str(ratings)}
    first_vo = vo
    if dialogue is not None:  # the level of validation (datasets.md §6)
        levels, first_vo, level_summary = _dialogue_levels(levels, id_col, vo, log)
        summary.update(level_summary)
    theta_tables = [theta_to_targets(read_keyed(path, key, drop_parts=True), id_col=id_col) for path in thetas]
    log("[2/4] θ and agreement")
    frame, scored_cols, columns = levels[0][1:]
    frame_all = frame  # the first level (the loop below rebinds frame)
    study = validate_metrics(
        frame, ratings=rated, theta=theta_tables, options=first_vo, id_col=id_col,
        metric_cols=_level_metric_cols(metric_cols, frame, summary) or scored_cols, ratings_source=str(ratings), log=log,
    )  # fmt: skip
    if thetas:
        summary["theta"] = {"source": ", ".join(map(str, thetas))}
    elif study.theta_fit is not None:
        fit = study.theta_fit
        write_table(fit.theta_table(), outdir / "theta.csv")
        write_table(fit.facets_table(), outdir / "facets.csv")
        files.update(theta=str(outdir / "theta.csv"), facets=str(outdir / "facets.csv"))
        summary["theta"] = {"source": "mfrm", "reliability": fit.reliability, "converged": fit.converged,
                            "raters": "exchangeable" if rated.exchangeable else len(fit.raters), "warnings": study.warnings}  # fmt: skip
        theta_tables = [theta_to_targets(fit.theta_table(), id_col=id_col)]
    warned = [*warned, *study.warnings]
    agreement = _agreement(rated)
    if agreement is not None and not rated.exchangeable and study.theta_fit is None:
        from tutormetrics.psychometrics.exchangeable import slot_warning  # θ's step said it already

        slot = slot_warning(rated.long) if rated.long is not None else None
        if slot:
            log(slot)
            warned.append(slot)
    if agreement is not None:
        write_table(agreement, outdir / "agreement.csv")
        files["agreement"] = str(outdir / "agreement.csv")

    result = study.validity
    log("[3/4] correlating metrics with ratings" + (" and θ" if "theta" in result.target_cols else ""))
    log("[4/4] writing the tables and drawing the heatmap" + ("s (raw and controlled)" if vo.control else ""))
    _write_level(result, "", first_vo, columns, outdir, files, log)
    for prefix, frame, level_cols, level_columns in levels[1:]:  # the turn level of conversation ratings
        log(f"      {prefix.rstrip('_')} level (each turn inherits its conversation's rating; intervals over {vo.cluster_col})")
        level = validate_metrics(
            frame, ratings=rated, theta=theta_tables, options=replace(vo, estimate_theta=False), id_col=id_col,
            metric_cols=[c for c in metric_cols or () if c in frame.columns] or level_cols, ratings_source=str(ratings), log=log,
        )  # fmt: skip
        _write_level(level.validity, prefix, vo, level_columns, outdir, files, log)
    if group_col is not None:  # grouped cross-validated predictive validity (predictive.md §1)
        log(f"      predictive validity, grouped by {group_col}")
        files["predictive"] = str(_write_predictive(frame_all, raw_ratings, theta_tables, group_col, id_col, first_vo, columns, outdir, log))
    from tutormetrics.report.provenance import input_hashes, record_hashes

    written = [Path(p).name for p in files.values()]
    written += [f"{n}.manifest.json" for n in written if (outdir / f"{n}.manifest.json").is_file()]
    files["report"] = str(outdir / "report.html")  # written last, from the files above
    summary.update(
        files=files,
        join=result.report.summary(),
        n_metrics=len(result.metric_cols),
        targets=result.target_cols,
        score_options=asdict(score_options),
        validate_options=asdict(vo),
        warnings=warned,
        # the report shows only these files, while their bytes are these (tutormetrics.report.provenance)
        file_sha256=record_hashes(outdir, written),
        run_files=list(run_files(vo.figure_formats)),  # a file of these names that this run did not write is stale
        input_sha256=input_hashes(exchanges=exchanges, ratings=ratings, theta=thetas or None),
    )
    write_text_atomic(outdir / "run.json", json.dumps(summary, indent=2, default=str))
    if top:
        log(summarize_correlations(result.table, top=top))
    from tutormetrics.report import write_report

    # `tutormetrics report OUTDIR` rebuilds it; files of an earlier run (a facets.csv when θ is now given) are left out
    write_report(outdir, on_stale=lambda line: log(f"note: report: {line}"))
    from tutormetrics.engine.checkpoint import remove_checkpoint

    for scored in ("metrics.csv", "turns.csv"):  # kept until here: a rerun after a failed later step reuses them
        remove_checkpoint(outdir / scored)
    return summary


def _score_and_report(
    exchanges: Path, ratings: Path, outdir: Path, score_options: ScoreOptions, dialogue: Any, id_col: str,
    files: dict[str, str], log: Log, history: Any, vo: ValidateOptions,
) -> dict[str, Any]:
    """``run`` with a ratings table that has a header and no rows (Bridge ships none): score, then write run.json and
    the report of the scores; nothing is validated (run.json ``"validated": false``), and stderr says so."""
    log(f"note: {ratings} holds no ratings: scoring and the report only, nothing to validate "
        "(compare groups with `tutormetrics compare --group-col ... --block-col ...`)")
    log("[1/2] scoring")
    _, warned = _score_levels(exchanges, outdir, score_options, dialogue, id_col, files, log, history)
    log("[2/2] writing the report")
    from tutormetrics.report.provenance import input_hashes, record_hashes

    written = [Path(p).name for p in files.values()]
    written += [f"{n}.manifest.json" for n in written if (outdir / f"{n}.manifest.json").is_file()]
    files["report"] = str(outdir / "report.html")
    summary: dict[str, Any] = {
        "tutormetrics": __version__, "exchanges": str(exchanges), "ratings": str(ratings), "validated": False,
        "files": files, "score_options": asdict(score_options), "validate_options": asdict(vo), "warnings": warned,
        "file_sha256": record_hashes(outdir, written), "run_files": list(run_files(vo.figure_formats)),
        "input_sha256": input_hashes(exchanges=exchanges, ratings=ratings, theta=None),
    }  # fmt: skip
    write_text_atomic(outdir / "run.json", json.dumps(summary, indent=2, default=str))
    from tutormetrics.engine.checkpoint import remove_checkpoint
    from tutormetrics.report import write_report

    write_report(outdir, on_stale=lambda line: log(f"note: report: {line}"))
    for scored in ("metrics.csv", "turns.csv"):
        remove_checkpoint(outdir / scored)
    return summary


def _write_predictive(
    frame: pl.DataFrame, ratings: pl.DataFrame, theta: Sequence[pl.DataFrame], group_col: str, id_col: str,
    vo: ValidateOptions, columns: Sequence[Any], outdir: Path, log: Log,
) -> Path:
    """``predictive.csv``: ``predict`` with the study's ratings, θ, controls and seed (defaults otherwise)."""
    from tutormetrics.validity.predict_study import predict_study
    from tutormetrics.validity.predictive import PredictOptions

    families = {d.name: d.family for d in columns}  # the Scorer's column descriptions
    metric_cols = [c for c in families if c in frame.columns] or None
    result = predict_study(
        frame, group_col=group_col, ratings=ratings, theta=theta, id_col=id_col, metrics_cols=metric_cols,
        controls=vo.control, rating_options=vo, options=PredictOptions(seed=vo.seed, n_min=vo.n_min),
        families=dict(families), ratings_source="ratings", log=log,
    )  # fmt: skip
    path = outdir / "predictive.csv"
    write_table(result.table, path)
    return path


def _score_levels(
    exchanges: Path, outdir: Path, score_options: ScoreOptions, dialogue: Any, id_col: str, files: dict[str, str], log: Log,
    history: Any = None,
) -> tuple[list[tuple[str, pl.DataFrame, list[str], list[ColumnDescription]]], list[str]]:
    """Score the input (local or Ray engine, as ``score`` does); return ``(file prefix, scored frame, metric
    columns, column descriptions)`` per level, and the scoring run's warnings.

    The descriptions are the manifest's (``columns``); the metric columns are the described ones (aliases
    too: the heatmap draws them once, but a cell's seeded permutation p depends on its index). Exchanges give one
    level. A dialogue gives the turn level, or, when the ratings are keyed by conversation, the
    conversation level (the §5 measures and the ``mean_*`` of the turn metrics) first and the turns
    (prefix ``turns_``) second; :func:`_dialogue_levels` decides which are validated.
    """
    from tutormetrics.metrics.columns import MANIFEST_KEY, ColumnDescription, metric_names

    if dialogue is None:
        metrics_path = outdir / "metrics.csv"
        score = score_file
        if score_options.engine == "ray":
            from tutormetrics.engine.ray_engine import score_file_ray as score
        resumable = {"keep_checkpoint": True}  # removed at the end of the run: a failed later step resumes
        if history is not None:  # each row's response after its history: one row per exchange
            from tutormetrics.dialogue.history import score_history_file

            resumable = {}

            def score(path: Path, out: Path, so: ScoreOptions, *, log: Log, keep_frame: bool) -> Any:
                return score_history_file(path, out, so, history, log=log, keep_frame=keep_frame)
        scored = score(exchanges, metrics_path, score_options, log=log, keep_frame=True, **resumable)
        files["metrics"] = str(metrics_path)
        described = [ColumnDescription.from_dict(d) for d in scored.manifest[MANIFEST_KEY]]
        return [("", scored.frame, metric_names(described), described)], list(scored.manifest.get("warnings", []))
    from tutormetrics.dialogue.file_scoring import score_dialogue_file
    from tutormetrics.dialogue.summary import conversation_columns

    turns_path, conv_path = outdir / "turns.csv", outdir / "conversations.csv"
    result = score_dialogue_file(exchanges, turns_path, score_options, dialogue, conversations_output=conv_path, log=log,
                                 keep_checkpoint=True)
    files.update(turns=str(turns_path), conversations=str(conv_path))
    turn_columns = [ColumnDescription.from_dict(d) for d in result.manifest[MANIFEST_KEY]]
    levels = [("", result.turns, metric_names(turn_columns), turn_columns)]
    if id_col == "conversation_id" and result.conversations is not None:
        conv_columns = conversation_columns(turn_columns)
        levels = [("", result.conversations, metric_names(conv_columns), conv_columns), ("turns_", *levels[0][1:])]
    return levels, list(result.manifest.get("warnings", []))


def _level_metric_cols(metric_cols: Sequence[str] | None, frame: pl.DataFrame, summary: dict[str, Any]) -> list[str] | None:
    """``--metrics-cols`` for the first level: at the conversation level a turn metric ``X`` names ``mean_X``.

    >>> _level_metric_cols(["resp_words", "talk_ratio"], pl.DataFrame({"mean_resp_words": [1.0], "talk_ratio": [2.0]}),
    ...                    {"level": "conversation"})
    ['mean_resp_words', 'talk_ratio']
    """
    if not metric_cols:
        return None
    if summary.get("level") != "conversation":
        return list(metric_cols)
    from tutormetrics.metrics.columns import at_conversation_level

    return at_conversation_level(metric_cols, frame.columns)


def _dialogue_levels(levels: list[Any], id_col: str, vo: ValidateOptions, log: Log) -> tuple[list[Any], ValidateOptions, dict[str, Any]]:
    """Which levels a dialogue run validates, the options of the first, and what ``run.json`` records.

    Conversation-keyed ratings: the CONV table first (``correlations.csv``, the headline); the turns
    (``turns_*``, ratings inherited, no p) only with ``--cluster-col``: ``conversation_id``, or a column
    that holds each conversation whole (the CONV rows then resample it too). Turn-keyed ratings: the turns.
    """
    if id_col != "conversation_id":
        if vo.cluster_col is None:
            log("note: turns are nested in conversations; --cluster-col conversation_id gives intervals over conversations")
        return levels, vo, {"level": "turn"}
    conv, turns = levels[0][1], levels[1][1]
    n = conv.height
    conv_vo = _conversation_controls(vo, conv, log)
    summary: dict[str, Any] = {"level": "conversation", "n_conversations": n}
    if conv_vo.control != vo.control:
        summary["conversation_control"] = conv_vo.control
    if vo.cluster_col is None:
        log(f"validating conversations (ratings keyed by conversation_id: {n:,} conversations); "
            "the turn level needs --cluster-col conversation_id")  # fmt: skip
        return levels[:1], conv_vo, summary
    conversation_only = [c for c in vo.control if c not in turns.columns]
    if conversation_only:  # found before the conversation level writes anything
        raise ConfigError(
            f"--control {conversation_only[0]}: the turn level (asked for by --cluster-col) has no such column",
            hint="control for a turn metric (the conversations then hold its mean_ fixed), or drop --cluster-col",
        )
    log(f"validating conversations (ratings keyed by conversation_id: {n:,} conversations); the turn level "
        f"(turns_correlations.csv) with intervals over {vo.cluster_col} and no p (inherited ratings)")  # fmt: skip
    summary["turn_level"] = "turns_correlations.csv"
    if vo.cluster_col == "conversation_id":  # one CONV row per cluster: the row bootstrap
        return levels, replace(conv_vo, cluster_col=None), summary
    from tutormetrics.io.tables import require_columns
    from tutormetrics.validity.level import check_nested

    require_columns(turns, [vo.cluster_col], source="turns", option="--cluster-col")
    check_nested(turns, "conversation_id", vo.cluster_col)
    labels = turns.select(pl.col("conversation_id").cast(pl.String), pl.col(vo.cluster_col).cast(pl.String)).unique()
    conv = conv.with_columns(pl.col("conversation_id").cast(pl.String)).join(labels, on="conversation_id", how="left", maintain_order="left")
    return [("", conv, *levels[0][2:]), *levels[1:]], conv_vo, summary


def _conversation_controls(vo: ValidateOptions, conv: pl.DataFrame, log: Log) -> ValidateOptions:
    """``--control`` at the conversation level: a turn metric there is its conversations' mean, ``mean_<col>``
    (``dialogue.md`` §5's CONV columns), so ``--control resp_words`` holds ``mean_resp_words`` fixed for the
    conversations and ``resp_words`` for the turns. Said on stderr and recorded in ``run.json``
    (``conversation_control``); a name that is neither stays as given (and is refused as missing)."""
    from tutormetrics.metrics.columns import at_conversation_level

    mapped = at_conversation_level(vo.control, conv.columns)
    for given, used in zip(vo.control, mapped, strict=True):
        if given != used:
            log(f"note: --control {given}: the conversation level controls for {used} (the mean over its turns); "
                f"a turn level holds {given} itself")  # fmt: skip
    return replace(vo, control=mapped) if mapped != vo.control else vo


def _write_level(
    result: Any, prefix: str, vo: ValidateOptions, columns: Sequence[ColumnDescription], outdir: Path, files: dict[str, str],
    log: Log,
) -> None:
    """``{prefix}correlations.csv``, ``{prefix}rho_matrix[_partial].csv`` and ``{prefix}heatmap[_partial].*``.

    With controls the correlation table holds the raw rows then the partial rows (richness.md §1.3); the
    wide matrices and the heatmaps come one per kind: raw, and ``*_partial``.
    """
    from tutormetrics.validity.correlate import rho_matrix, split_by_control

    log("      " + result.report.summary().replace("\n", "\n      "))
    write_table(result.table, outdir / f"{prefix}correlations.csv")
    files[f"{prefix}correlations"] = str(outdir / f"{prefix}correlations.csv")
    parts = split_by_control(result.table)
    kinds = [("", parts[""])] + ([("_partial", parts[",".join(vo.control)])] if vo.control else [])
    for suffix, part in kinds:
        write_table(rho_matrix(part), outdir / f"{prefix}rho_matrix{suffix}.csv")
        files[f"{prefix}rho_matrix{suffix}"] = str(outdir / f"{prefix}rho_matrix{suffix}.csv")
    files.update(_heatmaps(result, kinds, columns, outdir, vo.figure_formats, prefix))


def _agreement(ratings: Ratings) -> pl.DataFrame | None:
    """Rater agreement per criterion when the ratings (a cleaned ``Ratings``) are long with two or more raters."""
    if not ratings.is_long or (ratings.n_raters < 2 and not ratings.exchangeable):
        return None
    from tutormetrics.psychometrics.agreement import agreement_table

    return agreement_table(ratings, **ratings.columns(), exchangeable=ratings.exchangeable)


def _heatmaps(
    result: Any,
    kinds: Sequence[tuple[str, pl.DataFrame]],
    columns: Sequence[ColumnDescription],
    outdir: Path,
    formats: Sequence[str],
    prefix: str = "",
) -> dict[str, str]:
    """The heatmap of each kind (raw; partial with controls) in each format, rows grouped by the column descriptions."""
    from tutormetrics.validity.heatmap import ceiling_note, plot_heatmap

    note = ceiling_note(result.joined, [c for c in result.target_cols if c != "theta"])
    width = max(3.5, 1.6 + 0.55 * len(result.target_cols))
    files: dict[str, str] = {}
    for suffix, part in kinds:
        for fmt in formats:
            path = outdir / f"{prefix}heatmap{suffix}.{fmt}"
            plot_heatmap(part, path, columns=columns, note=note or None, width_in=width)
            files[f"{prefix}heatmap{suffix}_{fmt}"] = str(path)
    return files


def dialogue_ratings_key(ratings: pl.DataFrame, id_col: str, source: str) -> str:
    """The id a dialogue run's ratings are keyed by: ``id_col`` (default ``exchange_id``, one tutor turn)
    when present, else ``conversation_id``.

    >>> dialogue_ratings_key(pl.DataFrame({"conversation_id": ["c1"], "score": [1]}), "exchange_id", "r.csv")
    'conversation_id'
    """
    if id_col in ratings.columns:
        return id_col
    if "conversation_id" in ratings.columns:
        return "conversation_id"
    raise InputSchemaError(
        f"{source}: ratings have neither {id_col!r} nor 'conversation_id'",
        hint="key dialogue ratings by exchange_id ('<conversation_id>:<turn>') or by conversation_id",
    )


def check_ratings_path(ratings: Path | None, example: bool) -> None:
    if ratings is None and not example:
        raise InputSchemaError("run needs ratings", hint="pass --ratings RATINGS, or --example for the bundled data")
