"""Facets plot (effects.md §9): panel plan from the facets table, valid PNG/PDF/SVG files."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

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


def test_panels_follow_the_facets_table(fit) -> None:
    panels = facets_panels(fit.facets_table())
    assert [t for t, _ in panels] == ["s", "b", "γ: v", "β: topics"]
    b = panels[1][1]
    ft = fit.facets_table().filter(pl.col("facet") == "criterion")
    np.testing.assert_array_equal(b["estimate"], ft["estimate"])
    np.testing.assert_array_equal(b["lower"], ft["lower"])
    topics = panels[3][1]
    assert topics.height == 15 and topics["group"].unique(maintain_order=True).to_list() == ["t0", "t1", "t2"]
    fig = facets_figure(fit)
    assert [ax.get_title() for ax in fig.axes] == ["θ", "s", "b", "γ: v", "β: topics"]
    assert fig.get_figwidth() <= 7.2


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".pdf", b"%PDF"), (".svg", b"<?xml")])
def test_files_are_valid(fit, tmp_path, suffix, magic) -> None:
    path = save_facets_figure(fit, tmp_path / f"facets{suffix}")
    assert path.read_bytes()[: len(magic)] == magic


def test_bad_extension(fit, tmp_path) -> None:
    with pytest.raises(ConfigError, match="figure format"):
        save_facets_figure(fit, tmp_path / "f.gif")
