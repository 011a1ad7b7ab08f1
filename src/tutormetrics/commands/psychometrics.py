"""Thin Typer commands for the psychometrics layer: ``theta`` (MFRM), ``agree`` and ``compare``.

Each command parses options, reads tables with :func:`tutormetrics.io.tables.read_table`, calls one library
function and writes the result with :func:`tutormetrics.io.tables.write_table`. Summaries go to stderr.
Expected errors (:class:`~tutormetrics.errors.TutorMetricsError`) print one line plus a hint and exit 2.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import polars as pl
import typer

from tutormetrics.commands import agree, compare
from tutormetrics.commands import options as opt
from tutormetrics.commands.explanatory import check_explanatory_options
from tutormetrics.commands.options import split_list
from tutormetrics.errors import ConfigError, TutorMetricsError
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import require_columns, write_table
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.psychometrics.recode import apply_recode, parse_recode, recode_message

__all__ = ["register"]

_MODELS = {"auto": "auto", "binary": "binary", "partial-credit": "partial_credit", "partial_credit": "partial_credit"}


@contextlib.contextmanager
def _expected_errors() -> Iterator[None]:
    """Turn expected errors into one stderr message and their exit code (2); let typer.Exit through."""
    try:
        yield
    except TutorMetricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exc.exit_code) from None


def _clean(frame: pl.DataFrame, source: str, kwargs: dict[str, Any], exchangeable: bool = False) -> Ratings:
    """The long ratings of ``theta``/``agree`` (all four columns needed; the rater column may be absent with
    ``--raters exchangeable``) cleaned and scale-checked once (``--levels``, ``--drop-out-of-scale``); the fit
    and the agreement tables take the value as it is."""
    keys = ("id_col", "criterion_col", "score_col") if exchangeable else ("id_col", "rater_col", "criterion_col", "score_col")
    require_columns(frame, [kwargs[k] for k in keys], source="ratings")
    return Ratings.clean(
        frame, id_col=kwargs["id_col"], rater_col=kwargs["rater_col"], criterion_col=kwargs["criterion_col"],
        score_col=kwargs["score_col"], levels=opt.parse_levels(kwargs["levels"]), drop_out_of_scale=kwargs["drop_out_of_scale"],
        source=source, log=lambda m: typer.echo(m, err=True), exchangeable=exchangeable,
    )  # fmt: skip


def recoded(frame: pl.DataFrame, recode: list[str] | None, *, score_col: str, id_col: str, source: str) -> pl.DataFrame:
    """``--recode`` applied to the score column right after reading (``effects.md`` §7), reported on stderr."""
    mapping = parse_recode(recode)
    if not mapping:
        return frame
    if score_col not in frame.columns:
        return frame  # the missing column is reported by the next step
    out, counts = apply_recode(frame, score_col, mapping, id_col=id_col, source=source)
    typer.echo(recode_message(mapping, counts), err=True)
    return out


def theta(
    ratings: Annotated[Path, typer.Argument(help="Long ratings table (exchange_id, rater, criterion, score).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Theta table (csv/parquet/jsonl).")],
    facets: Annotated[Optional[Path], typer.Option("--facets", help="Also write the facet estimates here.")] = None,
    covariates: Annotated[Optional[Path], typer.Option("--covariates", help="Exchange-level covariate table.")] = None,
    covariate_col: Annotated[
        Optional[list[str]], typer.Option("--covariate-col", help="Covariate column(s), repeat or comma-separate (default: all numeric).")
    ] = None,
    groups: Annotated[Optional[Path], typer.Option("--groups", help="Exchange-level group table.")] = None,
    group_col: Annotated[Optional[str], typer.Option("--group-col", help="Group column in --groups.")] = None,
    model: Annotated[str, typer.Option("--model", help="auto, binary or partial-credit.")] = "auto",
    method: Annotated[str, typer.Option("--method", help="mml (Gauss-Hermite MML + EAP) or nuts (Bayesian, needs the bayes extra).")] = "mml",
    draws: Annotated[int, typer.Option("--draws", min=1, help="nuts: draws kept per chain.")] = 1000,
    tune: Annotated[int, typer.Option("--tune", min=0, help="nuts: warm-up iterations per chain.")] = 1000,
    chains: Annotated[int, typer.Option("--chains", min=1, help="nuts: number of chains.")] = 4,
    sampler: Annotated[str, typer.Option("--sampler", help="nuts: nutpie or pymc.")] = "nutpie",
    seed: Annotated[int, typer.Option("--seed", **opt.SEED_RANGE, help="nuts: random seed.")] = 0,
    compare_models_path: Annotated[
        Optional[Path],
        typer.Option("--compare-models", help="nuts: write the PSIS-LOO comparison of the nested models (needs --covariates, --topics and/or --groups)."),
    ] = None,
    # --- explanatory MFRM (effects.md): scale, topics, effects, recoding, plot, named models
    covariate_scale: Annotated[
        str, typer.Option("--covariate-scale", help="auto (0/1 covariates raw, others z-scored), raw or z.")
    ] = "auto",
    topics: Annotated[
        Optional[Path], typer.Option("--topics", help="Exchange-level 0/1 topic table (multi-hot; effects sum to zero per criterion).")
    ] = None,
    topic_col: Annotated[
        Optional[list[str]], typer.Option("--topic-col", help="Topic column(s), repeat or comma-separate (default: every 0/1 column).")
    ] = None,
    effects: Annotated[
        Optional[Path], typer.Option("--effects", help="Write Δp per covariate/topic/group and criterion with 94% HDIs here.")
    ] = None,
    effect_draws: Annotated[int, typer.Option("--effect-draws", help="mml: draws from N(mode, H^-1) for --effects (>= 100).")] = 4000,
    recode: Annotated[
        Optional[list[str]], typer.Option("--recode", help="Recode scores FROM=TO before the fit (repeatable; TO empty = missing), e.g. 0.5=0.")
    ] = None,
    facets_plot: Annotated[
        Optional[Path], typer.Option("--facets-plot", help="Draw θ and the facets on one logit axis: .png, .pdf or .svg.")
    ] = None,
    spec: Annotated[
        Optional[list[str]],
        typer.Option("--spec", help="nuts, with --compare-models: a named model NAME=TERMS (TERMS: covariate names, topics, groups joined by +; empty = facets only)."),
    ] = None,
    **kwargs: Any,
) -> None:
    """Estimate theta (EAP) per exchange with a many-facet Rasch model (MML, Gauss-Hermite; or Bayesian NUTS).

    With ``--method nuts`` the sampler diagnostics are written to ``<output stem>_diagnostics.csv``
    next to the output and summarised on stderr.
    """
    from tutormetrics.ids import read_keyed
    from tutormetrics.psychometrics.exchangeable import check_raters_mode, theta_ratings
    from tutormetrics.psychometrics.mfrm import fit_theta

    key = opt.table_key(kwargs)  # --id (repeatable: a composite exchange_id, datasets.md §3.1)
    id_col = kwargs["id_col"]
    with _expected_errors():
        exchangeable = check_raters_mode(kwargs["raters"], "theta")
        if model not in _MODELS:
            raise ConfigError(f"unknown --model {model!r}", hint="use auto, binary or partial-credit")
        if method not in ("mml", "nuts"):
            raise ConfigError(f"unknown --method {method!r}", hint="use mml or nuts")
        if sampler not in ("nutpie", "pymc"):
            raise ConfigError(f"unknown --sampler {sampler!r}", hint="use nutpie or pymc")
        diagnostics = output.with_name(f"{output.stem}_diagnostics.csv") if method == "nuts" else None
        check_outputs([ratings, covariates, groups, topics], [output, facets, diagnostics, compare_models_path, effects, facets_plot])
        explanatory = check_explanatory_options(
            method=method, covariates=covariates, topics=topics, groups=groups, topic_col=topic_col,
            covariate_scale=covariate_scale, effects=effects, effect_draws=effect_draws, facets_plot=facets_plot,
            compare_models=compare_models_path, spec=spec,
        )  # fmt: skip
        if compare_models_path and method != "nuts":
            raise ConfigError("--compare-models needs --method nuts")
        if compare_models_path and covariates is None and groups is None and topics is None:
            raise ConfigError("--compare-models needs --covariates, --topics and/or --groups")
        if covariate_col and covariates is None:
            raise ConfigError("--covariate-col needs --covariates")
        if group_col and groups is None:
            raise ConfigError("--group-col needs --groups")
        nuts = {"draws": draws, "tune": tune, "chains": chains, "sampler": sampler, "seed": seed} if method == "nuts" else {}
        ids = [id_col]
        cleaned = _clean(
            recoded(read_keyed(ratings, key, id_columns=ids, drop_parts=True), recode, score_col=kwargs["score_col"], id_col=id_col, source=str(ratings)),
            str(ratings), kwargs, exchangeable,
        )  # fmt: skip
        ratings_df, notes, warned = theta_ratings(cleaned)  # one rater label with --raters exchangeable (s ≡ 0)
        for line in [*notes, *warned]:
            typer.echo(line, err=True)
        cov_df = read_keyed(covariates, key, id_columns=ids, drop_parts=True) if covariates else None
        grp_df = read_keyed(groups, key, id_columns=ids, drop_parts=True) if groups else None
        top_df = read_keyed(topics, key, id_columns=ids, drop_parts=True) if topics else None
        covariate_col = split_list(covariate_col)
        if explanatory.specs:  # unknown terms fail before any sampling
            from tutormetrics.psychometrics.mfrm.bayes import model_specs

            cov_names = covariate_col or ([c for c, dt in cov_df.schema.items() if c != id_col and dt.is_numeric()] if cov_df is not None else [])
            model_specs(explanatory.specs, covariate_names=cov_names, has_topics=top_df is not None, has_groups=grp_df is not None)
        columns = ratings_df.columns()
        result = fit_theta(
            ratings_df,
            **columns,
            covariates=cov_df,
            covariate_cols=covariate_col,
            covariate_scale=covariate_scale,
            groups=grp_df,
            group_col=group_col,
            topics=top_df,
            topic_cols=split_list(topic_col),
            model=_MODELS[model],  # type: ignore[arg-type]
            method=method,  # type: ignore[arg-type]
            **nuts,  # type: ignore[arg-type]
        )
        write_table(result.theta_table(), output)
        if facets:
            write_table(result.facets_table(), facets)
        explanatory.report_scales(result, lambda m: typer.echo(m, err=True))
        if effects:
            table = explanatory.effects(result, method=method, seed=seed, log=lambda m: typer.echo(m, err=True))
            write_table(table, effects)
        if facets_plot:
            from tutormetrics.report.facets_plot import save_facets_figure

            save_facets_figure(result, facets_plot)
            typer.echo(f"facets plot: {facets_plot}", err=True)
        if method == "nuts":
            diag_path = diagnostics
            write_table(result.diagnostics(), diag_path)  # type: ignore[union-attr]
            typer.echo(f"{result.diagnostic_summary}; per-parameter diagnostics: {diag_path}", err=True)  # type: ignore[union-attr]
        if compare_models_path:
            from tutormetrics.psychometrics.mfrm.bayes import compare_models

            loo = compare_models(
                ratings_df,
                **columns,
                covariates=cov_df,
                covariate_cols=covariate_col,
                covariate_scale=covariate_scale,
                groups=grp_df,
                group_col=group_col,
                topics=top_df,
                topic_cols=split_list(topic_col),
                specs=explanatory.specs,
                model=_MODELS[model],
                **nuts,
            )
            write_table(loo, compare_models_path)
            best = loo.row(0, named=True)
            typer.echo(
                f"PSIS-LOO: best {best['model']} (elpd_loo {best['elpd_loo']:.1f} +/- {best['se']:.1f}); "
                + "; ".join(
                    f"{r['model']} elpd_diff {r['elpd_diff']:.1f} +/- {r['dse']:.1f}, p_loo {r['p_loo']:.1f}, "
                    f"{r['n_high_pareto_k']} ratings with Pareto k > {r['pareto_k_threshold']:.2f}"
                    + (f", delta elpd vs {r['ref_model']} {r['delta_elpd_ref']:+.2f} +/- {r['delta_elpd_ref_se']:.2f}" if "ref_model" in r else "")
                    for r in loo.iter_rows(named=True)
                    if r["rank"] > 0
                ),
                err=True,
            )
        typer.echo(
            f"MFRM {result.model}: {result.n_obs} observations, {result.n_items} exchanges, "
            f"{len(result.criteria)} criteria, "
            + ("raters exchangeable (no rater facet)" if exchangeable else f"{len(result.raters)} raters")
            + (" (rater facet dropped)" if len(result.raters) == 1 and not exchangeable else "")
            + f"; EAP reliability {result.reliability:.3f}; converged {result.converged}",
            err=True,
        )
        if result.dropped_criteria:
            typer.echo(f"dropped criteria with a single observed score: {', '.join(result.dropped_criteria)}", err=True)
        if not result.converged:
            if method == "nuts":
                warned.append("warning: NUTS diagnostics miss the thresholds; increase --draws/--tune before using the estimates")
            else:
                warned.append(f"warning: optimiser did not converge ({result.message})")  # type: ignore[union-attr]
            typer.echo(warned[-1], err=True)
        opt.strict_gate(kwargs["strict"], warned)  # the θ warnings above and datasets.md §5's


def register(app: typer.Typer) -> None:
    """Add the ``theta``, ``agree`` and ``compare`` commands to ``app``."""
    opt.command(app, "theta", theta, opt.COMMANDS["theta"], outputs=("output", "facets", "effects", "facets_plot"))
    agree.register(app)  # agree and compare are registered from their own command modules
    compare.register(app)
