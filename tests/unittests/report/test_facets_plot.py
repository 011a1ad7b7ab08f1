"""Facets plot (effects.md §9): panel plan from the facets table, valid PNG/PDF/SVG files."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.stats import norm

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.mfrm import fit_mfrm, simulate_mfrm
from tutormetrics.report.facets_plot import facets_figure, facets_panels, save_facets_figure


@pytest.fixture(scope="module")
def fit():
    ratings, truth = simulate_mfrm(n_items=80, seed=3, gamma=[0.3, 0.2, 0.4, 0.1, 0.5])
    rng = np.random.default_rng(0)
    ids = truth["exchange_id"]
    top = pl.DataFrame({"exchange_id": ids, **{f"t{k}": (rng.random(80) < 0.4).astype(int) for k in range(3)}})
    return fit_mfrm(ratings, covariates=truth.select("exchange_id", "v"), topics=top)


def _drawn(ax) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What a panel shows: the points' heights and the interval segments' ends, read off the artists."""
    points = next(line for line in ax.get_lines() if line.get_marker() == "o")
    segments = ax.collections[0].get_segments()
    lo = np.array([min(seg[0][1], seg[1][1]) for seg in segments])
    hi = np.array([max(seg[0][1], seg[1][1]) for seg in segments])
    return np.asarray(points.get_ydata(), dtype=float), lo, hi


def _natural_se(fit, facet: str) -> np.ndarray:
    """SEs of one facet's natural parameters from the fit's covariance (not from the facets table)."""
    idx = [k for k, (f, _, _) in enumerate(fit.natural_labels) if f == facet]
    return np.sqrt(np.diag(fit.covariance)[idx])


def test_panels_draw_the_fitted_parameters(fit) -> None:
    fig = facets_figure(fit)
    assert [ax.get_title() for ax in fig.axes] == ["θ", "s", "b", "γ: v", "β: topics"]
    assert fig.get_figwidth() <= 7.2
    z = norm.ppf(0.97)
    by_title = {ax.get_title(): ax for ax in fig.axes}
    for title, values, facet in (("s", fit.s, "rater"), ("b", fit.b, "criterion"), ("γ: v", fit.gamma[:, 0], "covariate")):
        est, lo, hi = _drawn(by_title[title])
        np.testing.assert_allclose(est, values, rtol=1e-12)
        se = _natural_se(fit, facet)
        np.testing.assert_allclose(hi - est, z * se, rtol=1e-6)
        np.testing.assert_allclose(est - lo, z * se, rtol=1e-6)
    # topics: J values per topic, topic by topic, labelled by criterion, each topic's name above its block
    est, lo, hi = _drawn(by_title["β: topics"])
    np.testing.assert_allclose(est, fit.topic.T.ravel(), rtol=1e-12)
    assert np.all(lo < est) and np.all(est < hi)
    ax = by_title["β: topics"]
    assert [t.get_text() for t in ax.get_xticklabels()] == fit.criteria * 3
    assert {t.get_text() for t in ax.texts} == {"t0", "t1", "t2"}
    # θ: a histogram of every EAP (bar counts sum to the exchanges), its min and max marked
    bars = by_title["θ"].patches
    assert sum(bar.get_width() for bar in bars) == pytest.approx(fit.theta.size)
    marks = sorted(line.get_ydata()[0] for line in by_title["θ"].get_lines())
    assert marks == pytest.approx([fit.theta.min(), fit.theta.max()])
    assert facets_panels(fit.facets_table())[1][1]["label"].to_list() == fit.criteria


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".pdf", b"%PDF"), (".svg", b"<?xml")])
def test_files_are_valid(fit, tmp_path, suffix, magic) -> None:
    path = save_facets_figure(fit, tmp_path / f"facets{suffix}")
    assert path.read_bytes()[: len(magic)] == magic


def test_bad_extension(fit, tmp_path) -> None:
    with pytest.raises(ConfigError, match="figure format"):
        save_facets_figure(fit, tmp_path / "f.gif")
