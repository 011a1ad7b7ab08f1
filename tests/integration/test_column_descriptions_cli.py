"""Issue 22: every output reads the column descriptions of the metrics manifest, none guesses from names.

A plug-in family (registered by the user, a real measure: hedge words per 100 tokens) and ``lexical_richness``
(whose ``mtld`` a prefix rule once called "diversity") go through ``run``, ``validate``, ``heatmap``,
``summarize``, ``compare`` and the report; each names them by their own family.
"""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.metrics import REGISTRY, Metric, register_metric
from tutormetrics.text import tokenize

HEDGES = frozenset({"maybe", "perhaps", "might", "possibly", "probably", "seems", "could"})


class Hedging(Metric):
    """Hedge words per 100 tokens of the response (a plug-in family as a user would write it)."""

    name = "hedging_plugin"
    description = "hedge words per 100 response tokens"
    higher_is_better = False

    def __init__(self, per: int = 100) -> None:
        self.per = per

    def columns(self, n_layers=None):
        return ["hedge_rate"]

    def score(self, batch, art):
        out = []
        for i in batch.response_idx:
            toks = [t.lower() for t in tokenize(art.texts[i])]
            out.append(self.per * sum(t in HEDGES for t in toks) / len(toks) if toks else np.nan)
        return {"hedge_rate": np.array(out, dtype=float)}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    register_metric(Hedging)
    try:
        out = tmp_path_factory.mktemp("cols") / "run"
        code = main(["run", "--example", "-o", str(out), "--metrics", "length,lexical_richness,hedging_plugin",
                     "--n-resamples", "99", "--no-progress"])  # fmt: skip
    finally:  # from here on only the files know the plug-in
        REGISTRY.unregister("hedging_plugin")
    assert code == 0
    return out


def test_manifest_describes_every_metric_column(study):
    manifest = json.loads((study / "metrics.csv.manifest.json").read_text())
    cols = {d["name"]: d for d in manifest["column_descriptions"]}
    header = pl.read_csv(study / "metrics.csv", n_rows=1).columns
    assert list(cols) == [c for c in header if c in cols]  # table order
    assert cols["hedge_rate"] == {"name": "hedge_rate", "family": "hedging_plugin", "family_label": "hedging_plugin",
                                  "label": "hedge_rate", "higher_is_better": False, "level": "exchange",
                                  "params": {"per": 100}, "alias_of": None}  # fmt: skip
    assert (cols["mtld"]["family"], cols["mtld"]["family_label"]) == ("lexical_richness", "richness")
    assert cols["concision_band"]["family"] == "length"
    assert not {"exchange_id", "prompt_empty", "resp_empty", "lang"} & set(cols)  # ids and flags are no metrics
    corr = pl.read_csv(study / "correlations.csv")
    assert set(corr["metric"]) == set(cols)


def test_report_uses_the_manifest_families(study):
    html = (study / "report.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="tm-data">(.*?)</script>', html, re.S).group(1))
    assert data["families"]["hedge_rate"] == "hedging_plugin"
    assert data["families"]["mtld"] == "richness" and data["families"]["concision_band"] == "length"
    assert data["exchanges"]["families"]["mtld"] == "lexical_richness"  # a table: the family id (the heatmap: labels)
    assert data["rho_limit"] == 1.0
    assert data["star_legend"].replace("\xa0", " ").startswith("* p_adj < .05")


def test_heatmap_summarize_compare_and_validate_use_the_manifest(study, tmp_path, capsys):
    from tutormetrics.metrics.columns import columns_near
    from tutormetrics.validity.heatmap import plot_heatmap

    # heatmap: the figure's family labels come from the manifests beside the table (the plug-in is unregistered now)
    assert "hedging_plugin" not in REGISTRY
    fig = plot_heatmap(pl.read_csv(study / "correlations.csv"), columns=columns_near(study / "correlations.csv"))
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert {"hedging_plugin", "richness", "length"} <= labels and "other" not in labels
    assert main(["heatmap", str(study / "correlations.csv"), "-o", str(tmp_path / "h.png")]) == 0

    # summarize and compare: each metric with its family
    metrics = study / "metrics.csv"
    frame = pl.read_csv(metrics).with_columns(
        tutor=pl.col("exchange_id").str.split("::").list.last(), problem=pl.col("exchange_id").str.split("::").list.first()
    )
    table = tmp_path / "m.csv"
    frame.write_csv(table)
    (tmp_path / "m.csv.manifest.json").write_text((study / "metrics.csv.manifest.json").read_text())
    assert main(["summarize", str(table), "--group-col", "tutor", "-o", str(tmp_path / "s.csv"), "--n-resamples", "0"]) == 0
    fam = dict(pl.read_csv(tmp_path / "s.csv").select("variable", "family").unique().iter_rows())
    assert fam["hedge_rate"] == "hedging_plugin" and fam["mtld"] == "lexical_richness"
    assert "problem" not in fam  # a kept column is no metric
    assert main(["compare", str(table), "--group-col", "tutor", "--block-col", "problem", "--n-resamples", "0",
                 "-o", str(tmp_path / "c.csv")]) == 0  # fmt: skip
    fam = dict(pl.read_csv(tmp_path / "c.csv").select("metric", "metric_family").unique().iter_rows())
    assert fam["hedge_rate"] == "hedging_plugin" and fam["mtld"] == "lexical_richness"

    # validate: the described columns are the metrics (the kept column "problem" is not)
    from tutormetrics.examples import example_paths

    assert main(["validate", str(table), "--ratings", str(example_paths()["ratings"]), "-o", str(tmp_path / "v.csv"),
                 "--ci", "none", "--permutation", "never"]) == 0  # fmt: skip
    assert set(pl.read_csv(tmp_path / "v.csv")["metric"]) == set(pl.read_csv(study / "correlations.csv")["metric"])


def test_a_csv_without_manifest_falls_back_to_the_registry(tmp_path):
    frame = pl.DataFrame({"exchange_id": [f"e{i}" for i in range(12)], "mtld": np.arange(12.0), "mine": np.arange(12.0) ** 2,
                          "tutor": ["A", "B"] * 6})  # fmt: skip
    path = tmp_path / "own.csv"
    frame.write_csv(path)
    assert main(["summarize", str(path), "--group-col", "tutor", "-o", str(tmp_path / "s.csv"), "--n-resamples", "0"]) == 0
    fam = dict(pl.read_csv(tmp_path / "s.csv").select("variable", "family").unique().iter_rows())
    assert fam == {"mtld": "lexical_richness", "mine": "other"}
