"""Tests for the correlation heatmap."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.validity.heatmap import ceiling_note, format_rho, plot_heatmap, row_descriptions

METRICS = ["resp_chars", "len_ratio", "ttr", "distinct_2", "jaccard_uni", "flesch_reading_ease", "emb_mean_cos", "sync_l03"]
TARGETS = ["mistake_identification", "coherence", "tutor_tone"]


def _table(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for m in METRICS:
        for t in TARGETS:
            rho = float(rng.uniform(-0.6, 0.6))
            rows.append((m, t, rho, "**" if abs(rho) > 0.3 else "", ""))
    table = pl.DataFrame(rows, schema=["metric", "target", "rho", "stars", "reason"], orient="row")
    return table.with_columns(
        pl.when(pl.col("metric") == "sync_l03").then(None).otherwise(pl.col("rho")).alias("rho"),
        pl.when(pl.col("metric") == "sync_l03").then(pl.lit("too_few")).otherwise(pl.col("reason")).alias("reason"),
    )


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_writes_each_format(tmp_path: Path, ext: str) -> None:
    out = tmp_path / f"heat.{ext}"
    fig = plot_heatmap(_table(), out, dpi=100)
    assert isinstance(fig, Figure)
    assert out.exists() and out.stat().st_size > 1000


def test_png_has_column_width_and_grows_with_metrics(tmp_path: Path) -> None:
    small, big = tmp_path / "small.png", tmp_path / "big.png"
    plot_heatmap(_table().filter(pl.col("metric").is_in(METRICS[:3])), small, dpi=100)
    plot_heatmap(_table(), big, dpi=100)
    h_small, w_small = mpimg.imread(small).shape[:2]
    h_big, w_big = mpimg.imread(big).shape[:2]
    assert w_small == w_big and 340 <= w_big <= 350  # 3.5 in, the tight box and its 0.05 in pad inside it
    assert h_big > h_small


def test_annotations_stars_reasons_and_families() -> None:
    table = _table()
    fig = plot_heatmap(table, title="Validity", note="Ceiling note.")
    texts = _texts(fig)
    starred = table.filter(pl.col("stars") == "**").row(0, named=True)
    assert f"{format_rho(starred['rho'])}**" in texts  # one line when the cell is wide enough
    assert texts.count("too few") == len(TARGETS)
    assert {"length", "diversity"} <= set(texts)  # two-row families get the full name
    # one-row families too (issue 22: no cut labels), written across their row; jaccard_uni is no declared column
    assert {"other", "readability", "embedding", "synchrony"} <= set(texts)
    assert not {"oth", "read", "emb", "sync", "ovl"} & set(texts)
    note = " ".join(t.get_text() for t in fig.texts)
    assert "** p_adj < .01" in note.replace("\xa0", " ")  # the star legend says what the stars mean
    heat = fig.axes[0]
    assert [t.get_text() for t in heat.get_yticklabels()] == METRICS
    assert [t.get_text() for t in heat.get_xticklabels()] == TARGETS
    assert fig.axes[1].get_xlabel() == "Spearman ρ"
    assert heat.images[0].get_clim() == (-1.0, 1.0)
    assert "Validity" in [t.get_text() for t in fig.texts]


def test_groups_cluster_order_and_mask() -> None:
    table = _table()
    groups = {m: ("A" if i % 2 else "B") for i, m in enumerate(METRICS)}
    fig = plot_heatmap(table, groups=groups, order="cluster", mask_nonsignificant=True, vmax=None)
    heat = fig.axes[0]
    labels = [t.get_text() for t in heat.get_yticklabels()]
    assert set(labels[:4]) == {m for m, g in groups.items() if g == "B"}  # family B appears first
    assert sorted(labels) == sorted(METRICS)
    lo, hi = heat.images[0].get_clim()
    assert lo == -hi and hi <= 1.0
    faded = [t for t in heat.texts if t.get_color() == "#8c8c8c"]
    assert len(faded) == table.filter((pl.col("stars") == "") & pl.col("rho").is_not_null()).height


def test_value_column_and_errors(tmp_path: Path) -> None:
    table = _table().with_columns((pl.col("rho") - 0.1).alias("ci_low"))
    fig = plot_heatmap(table, value="ci_low")
    assert fig.axes[1].get_xlabel() == "ci_low"
    with pytest.raises(ConfigError, match="png"):
        plot_heatmap(table, tmp_path / "x.jpg")
    with pytest.raises(ConfigError):
        plot_heatmap(table, order="alphabetical")  # type: ignore[arg-type]
    with pytest.raises(InputSchemaError, match="p_adj"):
        plot_heatmap(table, value="p_adj")
    with pytest.raises(InputSchemaError, match="duplicate"):
        plot_heatmap(pl.concat([table, table.head(1)]))


def test_helpers() -> None:
    # families come from the registry's declared columns (no name-prefix guess): jaccard_uni is no declared column
    assert [d.family_label for d in row_descriptions(METRICS + ["unknown_metric"], None)] == [
        "length", "length", "diversity", "diversity", "other", "readability", "embedding", "synchrony", "other",
    ]
    assert format_rho(-0.314) == "−.31"
    assert format_rho(-0.001) == ".00"
    assert format_rho(float("nan")) == ""
    note = ceiling_note(pl.DataFrame({"rare": [1.0] * 12 + [0.0] * 237, "even": [0.0, 0.5, 1.0] * 83}))
    assert note == "Max attainable |ρ| given target prevalence: rare .37."
