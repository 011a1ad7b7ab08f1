"""The stderr lines of the θ study (``docs/commands/theta.md``): the covariate scales and topics, the effects
summary, the PSIS-LOO comparison and the fit summary with its convergence warning.

Example:
    >>> from types import SimpleNamespace as NS
    >>> fit = NS(model="binary", n_obs=8, n_items=4, criteria=["c"], raters=["r1", "r2"], reliability=0.5,
    ...          converged=True, dropped_criteria=[])
    >>> fit_lines(fit, exchangeable=False, method="mml")
    (['MFRM binary: 8 observations, 4 exchanges, 1 criteria, 2 raters; EAP reliability 0.500; converged True'], None)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tutormetrics.progress import Log

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.psychometrics.theta_options import ThetaOptions

__all__ = ["effects_with_line", "fit_lines", "loo_line", "scale_lines"]


def scale_lines(result: Any) -> list[str]:
    """``topics: t_a, t_b``; ``covariates: flag raw (0/1), len z (mean 212.4, sd 85.7)`` (a raw non-0/1 column gets
    its range, ``docs/design/effects.md#explanatory-mfrm``)."""
    lines = []
    topics = getattr(result, "topic_matrix", None)
    if topics is not None:
        none = int((topics.sum(axis=1) == 0).sum())
        lines.append(f"topics: {', '.join(result.topic_names)}" + (f"; {none} exchanges have no topic" if none else ""))
    names = list(getattr(result, "covariate_names", []) or [])
    scales = list(getattr(result, "covariate_scales", []) or [])
    if not names or not scales:
        return lines
    raw = getattr(result, "covariate_raw", None)
    parts = []
    for c, (name, (kind, mean, sd)) in enumerate(zip(names, scales, strict=False)):
        col = raw[:, c] if raw is not None else None
        binary = col is not None and bool(np.all((col == 0) | (col == 1)))
        if kind == "z":
            parts.append(f"{name} z (mean {mean:.6g}, sd {sd:.6g})")
        elif binary:
            parts.append(f"{name} raw (0/1)")
        else:
            lo, hi = (float(col.min()), float(col.max())) if col is not None else (float("nan"),) * 2
            parts.append(f"{name} raw (range {lo:.6g} to {hi:.6g}; gamma is per unit)")
    return [*lines, "covariates: " + ", ".join(parts)]


def effects_with_line(result: Any, options: ThetaOptions, log: Log) -> pl.DataFrame:
    """The effects table of the fit (NUTS: every posterior draw; MML: ``options.effect_draws`` draws from
    N(mode, H⁻¹) with ``options.seed``), its summary line to ``log`` (``docs/design/effects.md#explanatory-mfrm``).

    Args:
        result: The MML or NUTS fit.
        options: The ``theta`` options (method, effect draws, seed).
        log: Where the summary line goes.
    """
    from tutormetrics.psychometrics.mfrm.effects import effects_summary_line

    if options.method == "nuts":
        if options.effect_draws != 4000:
            log("note: --effect-draws is ignored with --method nuts (every posterior draw is used)")
        table = result.effects_table()
        text = f"NUTS draws {int(table['n_draws'].max() or 0)}"
    else:
        table = result.effects_table(n_draws=options.effect_draws, seed=options.seed)
        if table.height and int(table["n_draws"].max() or 0) == 0:
            log("warning: the Hessian is not positive definite; effect draws are NaN (reason no_covariance)")
        text = f"MML draws {options.effect_draws} from N(mode, H^-1), seed {options.seed}"
    log(effects_summary_line(table, result.reference_point, text))
    return table


def loo_line(loo: pl.DataFrame) -> str:
    """``PSIS-LOO: best M1 (elpd_loo -812.3 +/- 20.1); M0 elpd_diff -4.2 +/- 2.9, ...`` (one line)."""
    best = loo.row(0, named=True)
    return f"PSIS-LOO: best {best['model']} (elpd_loo {best['elpd_loo']:.1f} +/- {best['se']:.1f}); " + "; ".join(
        f"{r['model']} elpd_diff {r['elpd_diff']:.1f} +/- {r['dse']:.1f}, p_loo {r['p_loo']:.1f}, "
        f"{r['n_high_pareto_k']} ratings with Pareto k > {r['pareto_k_threshold']:.2f}"
        + (f", delta elpd vs {r['ref_model']} {r['delta_elpd_ref']:+.2f} +/- {r['delta_elpd_ref_se']:.2f}" if "ref_model" in r else "")
        for r in loo.iter_rows(named=True)
        if r["rank"] > 0
    )


def fit_lines(result: Any, *, exchangeable: bool, method: str) -> tuple[list[str], str | None]:
    """The fit summary, the dropped criteria and, when the fit did not converge, the warning (also returned alone,
    for ``--strict``).

    Args:
        result: The MML or NUTS fit.
        exchangeable: ``--raters exchangeable`` (no rater facet).
        method: ``mml`` or ``nuts``.
    """
    lines = [
        f"MFRM {result.model}: {result.n_obs} observations, {result.n_items} exchanges, {len(result.criteria)} criteria, "
        + ("raters exchangeable (no rater facet)" if exchangeable else f"{len(result.raters)} raters")
        + (" (rater facet dropped)" if len(result.raters) == 1 and not exchangeable else "")
        + f"; EAP reliability {result.reliability:.3f}; converged {result.converged}"
    ]
    if result.dropped_criteria:
        lines.append(f"dropped criteria with a single observed score: {', '.join(result.dropped_criteria)}")
    if result.converged:
        return lines, None
    if method == "nuts":
        warning = "warning: NUTS diagnostics miss the thresholds; increase --draws/--tune before using the estimates"
    else:
        warning = f"warning: optimiser did not converge ({result.message})"
    return [*lines, warning], warning
