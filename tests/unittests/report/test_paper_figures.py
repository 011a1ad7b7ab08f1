"""Figures at paper width (``docs/guide/paper.md#figures``): the ΔP forest plot, the small-multiple compare figure,
the heatmap's selection and page size, and the common rules (≤ 7 in, ≥ 6 pt, tight box with a background
border, ``--dpi``, the format from the extension). Sizes are paper.md §7's; the PNGs are read back at 100 dpi."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import polars as pl
import pytest
from matplotlib.text import Text

from tutormetrics.errors import ConfigError
from tutormetrics.plotting import check_dpi, check_figure_path
from tutormetrics.report.delta_p_plot import delta_p_figure, delta_p_figure_size, save_delta_p_figure
from tutormetrics.report.effects import compare_figure_size, compare_figures, compare_panels, save_compare_figure
from tutormetrics.validity.heatmap import plot_heatmap, select_cells


def png_size(path: Path) -> tuple[int, int]:
    h, w = mpimg.imread(path).shape[:2]
    return w, h


def border_is_background(path: Path, px: int = 3) -> bool:
    img = mpimg.imread(path)[..., :3]
    edges = np.concatenate([img[:px].reshape(-1, 3), img[-px:].reshape(-1, 3), img[:, :px].reshape(-1, 3), img[:, -px:].reshape(-1, 3)])
    return bool(np.all(edges > 0.99))


def smallest_font(fig) -> float:
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes)


@pytest.fixture(scope="module")
def m3_effects(paper_data: Path) -> pl.DataFrame:
    from tutormetrics.psychometrics.mfrm import fit_mfrm
    from tutormetrics.psychometrics.recode import apply_recode

    ratings, _ = apply_recode(pl.read_csv(paper_data / "s000" / "ratings_raw.csv"), "score", {0.5: 0.0})
    fit = fit_mfrm(ratings, covariates=pl.read_csv(paper_data / "s000" / "covariates.csv"), covariate_cols="suff",
                   topics=pl.read_csv(paper_data / "s000" / "topics.csv"))  # fmt: skip
    return fit.effects_table()


def test_delta_p_figure_seed_m3(m3_effects: pl.DataFrame, tmp_path: Path) -> None:
    """paper.md §7: seed M3 (suff + 5 topics, 5 criteria) is 7 × 2.2 in; points at delta_p_mean, filled iff the HDI
    excludes 0, one rule between covariates and topics, the footer names the reference and the draws."""
    assert delta_p_figure_size(5, 6) == (7.0, 2.22) and delta_p_figure_size(7, 6) == (7.0, 4.44) and delta_p_figure_size(2, 6)[0] == 3.8
    fig = delta_p_figure(m3_effects)
    assert tuple(fig.get_size_inches()) == (7.0, 2.22)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["i1", "i2", "i3", "i4", "i5"]
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["suff", "t1", "t2", "t3", "t4", "t5"]
    lo, hi = axes[0].get_xlim()
    assert lo == -hi and hi >= float(m3_effects.select(pl.col("hdi_low").abs().max(), pl.col("hdi_high").abs().max()).max_horizontal()[0])
    for ax, crit in zip(axes, ["i1", "i2", "i3", "i4", "i5"], strict=True):
        rows = m3_effects.filter(pl.col("criterion") == crit)
        filled, hollow = ax.lines[0], ax.lines[1]
        assert sorted(filled.get_xdata()) == sorted(rows.filter(pl.col("hdi_excl_zero"))["delta_p_mean"].to_list())
        assert sorted(hollow.get_xdata()) == sorted(rows.filter(~pl.col("hdi_excl_zero"))["delta_p_mean"].to_list())
        assert hollow.get_markerfacecolor() == "white"
        assert sum(1 for line in ax.lines if list(line.get_ydata()) == [0.5, 0.5]) == 1  # the rule between the sets
    footer = fig._supxlabel.get_text().replace("\n", " ")
    assert "theta=0; s=0 (mean rater); suff=0 (raw); topics=0" in footer and "MML: 4000 draws from N(mode, H^-1), seed 0" in footer
    assert smallest_font(fig) >= 6
    out = save_delta_p_figure(m3_effects, tmp_path / "fig3.png", dpi=100)
    w, h = png_size(out)
    assert 690 <= w <= 700 and 212 <= h <= 222 and border_is_background(out)
    for ext in ("pdf", "svg"):
        assert save_delta_p_figure(m3_effects, tmp_path / f"fig3.{ext}").stat().st_size > 1000


@pytest.fixture(scope="module")
def s001_compare(paper_data: Path) -> pl.DataFrame:
    from tutormetrics.io.tables import read_table
    from tutormetrics.stats.aggregate import aggregate_labels
    from tutormetrics.stats.paired import compare_groups

    keys = ["question_id", "model", "domain", "dimension", "level"]
    labels = ["answer_leakage", "step_scaffolded", "actionability", "corrective_tone", "mistake_recognize"]
    rates = aggregate_labels(read_table(paper_data / "s001" / "turns.csv", id_columns=keys), by=keys, cols=labels, na=[-1]).result
    return compare_groups(rates, metric_cols=labels, group_col="level", block_col="question_id", strata=["model", "domain"],
                          dimensions=["dimension"], family="metric", n_resamples=0, seed=0)  # fmt: skip


def test_compare_small_multiples_seed_001(s001_compare: pl.DataFrame, tmp_path: Path) -> None:
    """paper.md §7: s001 (P = 4, R = 5 + 5 + 5 + 15 = 30, C = 15) is 7 × 7.6 in with 0.33 in cells showing values."""
    panels = compare_panels(s001_compare)
    assert [(p.title, p.r.shape) for p in panels] == [("first_language", (5, 15)), ("gender", (5, 15)), ("immigration", (5, 15)),
                                                      ("ses", (15, 15))]  # fmt: skip
    assert panels[3].rows[0] == "answer_leakage  high–low"  # metric × pair when k ≥ 3
    (fig,) = compare_figures(s001_compare)
    assert tuple(fig.get_size_inches()) == (7.0, 7.6) == compare_figure_size(15, [5, 5, 5, 15])
    heat = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"][:4]
    cell_w = heat[0].get_position().width * 7.0 / 15
    assert 0.30 <= cell_w <= 0.36
    assert next(t.get_text() for t in heat[-1].get_xticklabels()) == "deepseek_r1_70b · chemistry"
    values = [t for t in heat[0].texts]
    assert len(values) == 75 and all(t.get_text().lstrip("−").startswith(".") or t.get_text()[0] == "1" for t in values)
    r = panels[0].r
    bold = [t.get_fontweight() == "bold" for t in values]
    assert bold == [bool(abs(v) >= 0.10) for v in r.ravel()]
    assert smallest_font(fig) >= 6
    out = save_compare_figure(s001_compare, tmp_path / "bias.png", dpi=100)
    (path,) = out
    w, h = png_size(path)
    assert 690 <= w <= 700 and 740 <= h <= 760 and h >= w / 2 and border_is_background(path)


def test_compare_figure_outlines_violations_and_splits_above_9_in(tmp_path: Path) -> None:
    rows = []
    for p in range(6):  # 6 panels × 8 metrics: 1.6 + 1.8 + 0.16·48 = 11.08 in > 9 → two files
        for m in range(8):
            for s in ("A", "B", "C"):
                r = (m - 3.5) / 5
                rows.append({"stratum": s, "dimension": "d", "dimension_value": f"v{p}", "metric": f"m{m}", "test": "wilcoxon",
                             "group_a": "x", "group_b": "y", "r_rb": r, "ci_low": r - 0.1, "ci_high": r + 0.1, "violation": abs(r) > 0.5})  # fmt: skip
    table = pl.DataFrame(rows)
    assert compare_figure_size(3, [8] * 6) == (3.5, 11.08)
    paths = save_compare_figure(table, tmp_path / "cmp.png", dpi=100)
    assert [p.name for p in paths] == ["cmp-1.png", "cmp-2.png"] and not (tmp_path / "cmp.png").exists()
    figs = compare_figures(table)
    assert [tuple(f.get_size_inches()) for f in figs] == [compare_figure_size(3, [8] * 4), compare_figure_size(3, [8] * 2)]
    assert all(f.get_size_inches()[1] <= 9 for f in figs)
    outlined = [p for p in figs[0].axes[0].patches if not p.get_fill()]
    assert len(outlined) == 3 * int(sum(abs((m - 3.5) / 5) > 0.5 for m in range(8)))
    for p in paths:
        w, _h = png_size(p)
        assert w <= 350 and border_is_background(p)


def test_fairness_example_size() -> None:
    """paper.md §7: ``run --example fairness`` is 3.5 × 4.1 in (gender: 3 metrics, ses: 3 metrics × 3 pairs; 4 strata)."""
    assert compare_figure_size(4, [3, 9]) == (3.5, 4.12)


def _corr(n_metrics: int, targets: list[str]) -> pl.DataFrame:
    rng = np.random.default_rng(1)
    metrics = ["resp_chars", "resp_words", "ttr", "distinct_2", "jaccard_1", "flesch_reading_ease"] + [f"sync_l{k:02d}" for k in range(6)]
    names = (metrics + [f"m{k}" for k in range(200)])[:n_metrics]
    rows = [(m, t, float(rng.uniform(-0.7, 0.7)), "**" if k % 3 == 0 else "", "") for k, m in enumerate(names) for t in targets]
    return pl.DataFrame(rows, schema=["metric", "target", "rho", "stars", "reason"], orient="row")


def test_heatmap_fits_a_page_and_selects(tmp_path: Path) -> None:
    targets = ["mistake_identification", "mistake_location", "providing_guidance", "guidance_accuracy", "next_step", "theta"]
    table = _corr(42, targets)
    fig = plot_heatmap(table, tmp_path / "h.png", dpi=100)  # one column, 42 metrics (a newcomer's run)
    w, h = png_size(tmp_path / "h.png")
    assert fig.get_size_inches()[1] <= 9.0 and h <= 900 and w <= 350 and border_is_background(tmp_path / "h.png")
    assert smallest_font(fig) >= 6
    heat = fig.axes[0]
    assert all("\n" not in t.get_text() or t.get_text().endswith("*") for t in heat.texts)
    # selection: metric columns (in the order named), families, targets
    sel = select_cells(table, metrics=["ttr", "resp_chars"], targets=["theta", "mistake_location"])
    assert sel.select("metric", "target").rows() == [("ttr", "theta"), ("ttr", "mistake_location"), ("resp_chars", "theta"),
                                                     ("resp_chars", "mistake_location")]  # fmt: skip
    fams = select_cells(table, families=["synchrony", "length"])
    assert fams["metric"].unique(maintain_order=True).to_list() == [f"sync_l{k:02d}" for k in range(6)] + ["resp_chars", "resp_words"]
    small = plot_heatmap(table, families=["length"], targets=["theta"], width_in=3.5)
    assert [t.get_text() for t in small.axes[0].get_yticklabels()] == ["resp_chars", "resp_words"]
    for kw, match in (({"metrics": ["resp_char"]}, "did you mean resp_chars"), ({"families": ["lenght"]}, "did you mean length"),
                      ({"targets": ["thta"]}, "did you mean theta")):  # fmt: skip
        with pytest.raises(ConfigError, match=match):
            select_cells(table, **kw)
    with pytest.raises(ConfigError, match="between 1 and 7 inches"):
        plot_heatmap(table, width_in=8)
    # very many rows: cells shrink to 0.11 in, the labels stay at 6 pt
    big = plot_heatmap(_corr(120, targets[:3]), width_in=7)
    assert smallest_font(big) >= 6


def test_common_rules() -> None:
    assert check_dpi(50) == 50 and check_dpi(1200) == 1200
    for bad in (49, 1201):
        with pytest.raises(ConfigError, match="--dpi"):
            check_dpi(bad)
    with pytest.raises(ConfigError, match="figure format"):
        check_figure_path("f.jpg")
    assert check_figure_path("f.SVG").suffix == ".SVG"
