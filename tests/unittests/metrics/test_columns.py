"""Column descriptions (issue 22): declared by the families, aliases linked, one fallback for tables without a manifest."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from tutormetrics.engine import Scorer
from tutormetrics.metrics import REGISTRY, LayerwiseSynchrony, Metric, get_metric, register_metric
from tutormetrics.metrics.columns import (
    OTHER,
    ColumnDescription,
    columns_near,
    conversation_means,
    describe_columns,
    describe_frame,
    describe_table,
    metric_names,
    read_manifest_columns,
)


def test_every_builtin_column_is_described_once_with_its_family_direction_and_params():
    scorer = Scorer("all")
    described = scorer.column_descriptions()
    assert [d.name for d in described] == scorer.metric_columns()
    by_name = {d.name: d for d in described}
    for fam in scorer.families:
        directions = fam.column_directions(scorer.n_layers)
        for col in fam.columns(scorer.n_layers):
            d = by_name[col]
            assert (d.family, d.higher_is_better, d.level) == (fam.name, directions[col], "exchange")
            assert dict(d.params) == fam.get_params()
    # the labels the figures and the report show: one per family
    labels = {d.name: d.family_label for d in Scorer(["length", "lexical_diversity", "lexical_richness"]).column_descriptions()}
    assert (labels["ttr"], labels["mtld"], labels["concision_band"]) == ("diversity", "richness", "length")
    assert (by_name["emb_mean_cos"].family_label, by_name["sync_l01"].family_label) == ("embedding", "synchrony")
    assert by_name["rep_1"].higher_is_better is False and by_name["resp_chars"].higher_is_better is None


def test_the_manifest_holds_the_descriptions_and_they_round_trip():
    scorer = Scorer(["length", "lexical_richness"])
    entries = scorer.manifest()["columns"]
    assert [e["name"] for e in entries] == scorer.metric_columns()
    mtld = next(e for e in entries if e["name"] == "mtld")
    assert mtld["family"] == "lexical_richness" and mtld["family_label"] == "richness"
    assert mtld["params"] == get_metric("lexical_richness").get_params()
    json.dumps(entries)  # plain data
    assert [ColumnDescription.from_dict(e) for e in entries] == scorer.column_descriptions()


@pytest.mark.parametrize("n_layers", [2, 6, 12])
def test_aliases_follow_the_pooled_layer(n_layers):
    fams = [get_metric("embedding_similarity"), get_metric("layerwise_synchrony")]
    alias = {d.name: d.alias_of for d in describe_columns(fams, n_layers)}
    last, mid = f"sync_l{n_layers:02d}", f"sync_l{-(-n_layers // 2):02d}"
    assert alias["sync_last"] == alias[last] == "emb_mean_cos"
    assert alias["sync_mid"] == mid
    assert all(alias[f"sync_l{k:02d}"] is None for k in range(n_layers))
    assert alias["emb_mean_cos"] is None and alias["sync_max"] is None


def test_no_alias_when_synchrony_pools_other_tokens():
    fams = [get_metric("embedding_similarity"), LayerwiseSynchrony(exclude_special=True)]
    alias = {d.name: d.alias_of for d in describe_columns(fams, 6)}
    assert alias["sync_last"] == "sync_l06"  # still the last layer, but not emb_mean_cos's pooling
    assert alias["sync_l06"] is None


def test_declared_aliases_are_equal_columns(tiny_model_dir):
    """What the descriptions declare equal is equal in a scored frame (and nothing else is), on the tiny model."""
    from tutormetrics.encoders.config import EncoderConfig

    scorer = Scorer("encoder", encoder=EncoderConfig(model_name_or_path=str(tiny_model_dir)), progress=False)
    frame = scorer.score(["a", "b", "c"], ["Why is x 2?", "What is 3+4?", "Solve it."], ["Because 2x=4.", "It is 7.", "Try again?"])
    described = scorer.column_descriptions()
    for d in described:
        if d.alias_of:
            np.testing.assert_allclose(frame[d.name].to_numpy(), frame[d.alias_of].to_numpy(), rtol=0, atol=1e-6)
    distinct = metric_names(described, aliases=False)
    values = frame.select(distinct).to_numpy().T
    for i in range(len(distinct)):  # no undeclared duplicate among the columns drawn once
        for j in range(i):
            assert not np.allclose(values[i], values[j], atol=1e-9), (distinct[i], distinct[j])


def test_fallback_describes_known_names_and_calls_the_rest_other():
    cols = ["exchange_id", "tutor_id", "mtld", "mean_ttr", "sync_l09", "my_score", "resp_empty", "resp_windows", "turn"]
    described = describe_table(cols, numeric=cols[1:], exclude=["exchange_id", "tutor_id"])
    got = {d.name: (d.family, d.level) for d in described}
    assert got == {
        "mtld": ("lexical_richness", "exchange"),
        "mean_ttr": ("lexical_diversity", "conversation"),
        "sync_l09": ("layerwise_synchrony", "exchange"),  # the layer count comes from the names
        "my_score": (OTHER, "exchange"),
    }
    assert all(d.alias_of is None for d in described)  # aliases need the manifest's parameters


def test_manifest_wins_over_the_fallback_and_kept_columns_are_never_metrics(tmp_path):
    frame = pl.DataFrame({"exchange_id": ["a"], "problem": [3], "mtld": [1.0], "mine": [2.0]})
    path = tmp_path / "m.csv"
    frame.write_csv(path)
    assert [d.name for d in describe_frame(frame, source=path, exclude=["exchange_id"])] == ["problem", "mtld", "mine"]
    desc = [ColumnDescription("mine", "my_family", "mine!"), ColumnDescription("mtld", "lexical_richness", "richness")]
    (tmp_path / "m.csv.manifest.json").write_text(json.dumps({"columns": [d.to_dict() for d in desc]}))
    described = describe_frame(frame, source=path, exclude=["exchange_id"])
    assert [(d.name, d.family) for d in described] == [("mtld", "lexical_richness"), ("mine", "my_family")]
    assert read_manifest_columns(path) == desc
    assert columns_near(tmp_path / "correlations.csv") == desc  # a table beside the metrics finds them


def test_conversation_means_keep_family_and_alias():
    fams = [get_metric("embedding_similarity"), get_metric("layerwise_synchrony")]
    means = {d.name: d for d in conversation_means(describe_columns(fams, 6))}
    assert means["mean_sync_last"].alias_of == "mean_emb_mean_cos"
    assert means["mean_emb_mean_cos"].family == "embedding_similarity"
    assert {d.level for d in means.values()} == {"conversation"}


def test_metric_names_keep_aliases_unless_drawing():
    ds = describe_columns([get_metric("embedding_similarity"), get_metric("layerwise_synchrony")], 6)
    assert metric_names(ds) == [d.name for d in ds]
    assert {"sync_last", "sync_l06", "sync_mid"}.isdisjoint(metric_names(ds, aliases=False))


def test_a_plugin_family_is_described_under_its_own_name():
    @register_metric
    class Hedges(Metric):
        name = "hedging_test"
        description = "hedge words per response"
        higher_is_better = False

        def __init__(self, words: str = "maybe,perhaps,might"):
            self.words = words

        def columns(self, n_layers=None):
            return ["resp_hedges"]

        def score(self, batch, art):
            w = set(self.words.split(","))
            return {"resp_hedges": np.array([sum(t in w for t in art.texts[i].lower().split()) for i in batch.response_idx], float)}

    try:
        (d,) = [d for d in Scorer(["length", "hedging_test"]).column_descriptions() if d.name == "resp_hedges"]
        assert (d.family, d.family_label, d.higher_is_better, dict(d.params)) == (
            "hedging_test", "hedging_test", False, {"words": "maybe,perhaps,might"})
        assert describe_table(["resp_hedges"])[0].family == "hedging_test"  # the fallback knows registered plug-ins
    finally:
        REGISTRY.unregister("hedging_test")
