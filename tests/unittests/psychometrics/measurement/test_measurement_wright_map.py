"""The Wright map (docs/measurement.md#wright-map): size, formats, the numbers it draws, labels, the notes."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from matplotlib.image import imread
from measurement_fixtures import fitted, planted

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.measurement.fit import fit_table
from tutormetrics.report.wright_map import save_wright_map, shorten, spread_labels, wright_map_figure


@pytest.fixture(scope="module")
def planted_fit():
    return fitted(planted(1)[0])


def _marker_y(ax) -> np.ndarray:
    return np.sort(np.concatenate([ln.get_ydata() for ln in ax.lines if ln.get_marker() == "o"]))


def test_png_size_and_formats(planted_fit, tmp_path):
    fit = fit_table(planted_fit.est, planted_fit.obs)
    png = save_wright_map(planted_fit.est, tmp_path / "map.png", fit)
    assert imread(png).shape[:2] == (1350, 2100)  # 7.0 × 4.5 in at 300 dpi
    for ext in ("pdf", "svg"):
        assert save_wright_map(planted_fit.est, tmp_path / f"map.{ext}", fit).stat().st_size > 1000
    with pytest.raises(ConfigError, match="cannot tell the figure format"):
        save_wright_map(planted_fit.est, tmp_path / "map.jpg")


def test_draws_the_estimates_and_flags(planted_fit):
    est = planted_fit.est
    fit = fit_table(est, planted_fit.obs)
    fig = wright_map_figure(est, fit)
    ax_e, ax_r, ax_c = fig.axes[:3]
    assert sum(p.get_width() for p in ax_e.patches) == est.n_items
    edges = sorted({round(p.get_y(), 9) for p in ax_e.patches})
    assert all(abs(e / 0.25 - round(e / 0.25)) < 1e-9 for e in edges)  # bins of 0.25 aligned on 0
    np.testing.assert_allclose(_marker_y(ax_r), np.sort(est.s))
    np.testing.assert_allclose(_marker_y(ax_c), np.sort(est.b))
    ticks = sorted(ln.get_ydata()[0] for ln in ax_c.lines if ln.get_marker() in ("None", "") and len(ln.get_xdata()) == 2
                   and ln.get_ydata()[0] == ln.get_ydata()[1] and ln.get_color() != "#9a9a9a")  # fmt: skip
    expected = sorted((est.b[:, None] + est.tau[:, :4]).ravel())
    np.testing.assert_allclose([t for t in ticks if t != 0.0], [e for e in expected if e != 0.0])
    open_red = [ln for ln in ax_r.lines if ln.get_markerfacecolor() == "white" and len(ln.get_ydata())]
    assert len(open_red) == 1 and open_red[0].get_ydata()[0] == pytest.approx(est.s[est.raters.index("r4")])
    assert [t.get_text() for t in ax_r.get_legend().get_texts()] == ["estimate", "underfit (fit table)"]
    assert fig.texts[0].get_text() == "Wright map: 500 exchanges, 6 criteria, 4 raters"
    sizes = [t.get_fontsize() for ax in fig.axes for t in ax.texts] + [t.get_fontsize() for t in fig.axes[2].get_xticklabels()]
    assert min(sizes) >= 8


def test_labels_one_rater_and_many(bundled):
    assert shorten("x" * 24) == "x" * 24 and shorten("x" * 30) == "x" * 23 + "…"
    pos = spread_labels(np.array([0.0, 0.01, 0.02, 3.0]), 0.3, -5, 5)
    assert np.all(np.diff(np.sort(pos)) >= 0.3 - 1e-9) and pos[3] == pytest.approx(3.0, abs=0.31)
    one = fitted(bundled.ratings.filter(pl.col("rater") == "r1"))
    fig = wright_map_figure(one.est)
    assert "one rater (s = 0)" in [t.get_text() for t in fig.axes[1].texts]
    rng = np.random.default_rng(0)
    many = pl.DataFrame({"exchange_id": np.repeat([f"e{i:03d}" for i in range(120)], 40), "rater": [f"r{k:02d}" for k in range(40)] * 120,
                         "criterion": "c", "score": rng.integers(0, 2, 4800).astype(float)})  # fmt: skip
    many = pl.concat([many, many.with_columns(pl.lit("d").alias("criterion"))])
    fig = wright_map_figure(fitted(many).est)
    assert "40 raters" in [t.get_text() for t in fig.axes[1].texts]
