"""MTLD, MATTR and HD-D (richness.md §2): spec worked examples, independent oracles, NaN rules, the family."""

from __future__ import annotations

import math
import random
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.engine import Scorer
from tutormetrics.engine.run_warnings import MostlyNaNWarning
from tutormetrics.errors import ConfigError
from tutormetrics.metrics import REGISTRY
from tutormetrics.metrics.functional.richness import hdd, lexical_richness, mattr, mtld, richness_reasons
from tutormetrics.metrics.richness import LexicalRichness
from tutormetrics.text import tokenize

E2 = (
    "Good try! You added the numerators, but the denominators stay the same only when the fractions already "
    "share a denominator. Here the denominators are 3 and 4, so first find a common denominator. What is the "
    "smallest number that both 3 and 4 divide into? Once you have it, rewrite each fraction with that "
    "denominator and then add the numerators."
)
NAN = float("nan")
# richness.md §2.5: text, N, V, mtld, mattr (50), hdd (42), mattr (10), hdd (4)
TABLE = [
    ("a rose is a rose is a rose", 8, 3, 8.0, NAN, NAN, NAN, 0.6607143),
    ("Great job, great job, great job!", 6, 2, 3.0, NAN, NAN, NAN, 0.5),
    # The spec's table prints NaN for hdd(draws 4) here, but its rule (§2.3: NaN only when N < draws)
    # and lexicalrichness both give 1.0 for 7 distinct tokens: every type is drawn with P = 4/7.
    ("Let us check the first step together", 7, 7, NAN, NAN, NAN, NAN, 1.0),
    (E2, 60, 43, 60.0, 0.7581818, 0.7725510, 0.9588235, 0.9722497),
]


def _same(a: float, b: float, tol: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


@pytest.mark.parametrize(("text", "n", "v", "m", "ma50", "h42", "ma10", "h4"), TABLE)
def test_spec_worked_examples(text, n, v, m, ma50, h42, ma10, h4):
    t = tokenize(text)
    assert (len(t), len(set(t))) == (n, v)
    assert _same(mtld(t), m, 1e-12)
    assert _same(mattr(t), ma50, 5e-8)
    assert _same(hdd(t), h42, 5e-8)
    assert _same(mattr(t, 10), ma10, 5e-8)
    assert _same(hdd(t, 4), h4, 5e-8)


def test_hdd_by_hand():
    assert hdd(["a", "a", "b", "c", "c", "c"], draws=4) == pytest.approx(39 / 15 / 4, abs=1e-15)


def test_mtld_forward_pass_by_hand():
    # a, rose, is, a (.75), rose (.6 ≤ .72): one factor; remainder "is a rose" TTR 1 → partial 0
    assert mtld("a rose is a rose is a rose") == 8.0
    # threshold parameter: at 0.5 "a rose is a rose" never ends a factor, partial (1 − 3/5)/(1 − .5) = .8
    assert mtld("a rose is a rose", threshold=0.5) == pytest.approx(5 / 0.8)


def _exact_hdd(tokens: list[str], draws: int) -> Fraction:
    n = len(tokens)
    total = sum(1 - Fraction(math.comb(n - f, draws), math.comb(n, draws)) for f in (tokens.count(t) for t in set(tokens)))
    return total / draws


def _naive_mattr(tokens: list[str], w: int) -> float:
    return float(np.mean([len(set(tokens[i : i + w])) / w for i in range(len(tokens) - w + 1)]))


def test_hdd_and_mattr_against_exact_and_naive():
    rnd = random.Random(4)
    for _ in range(60):
        n = rnd.randint(1, 120)
        toks = [rnd.choice("abcdefghijklmnop"[: rnd.randint(1, 16)]) for _ in range(n)]
        for d in (1, 4, 42):
            if n >= d:
                assert hdd(toks, d) == pytest.approx(float(_exact_hdd(toks, d)), abs=1e-13)
            else:
                assert math.isnan(hdd(toks, d))
        for w in (1, 7, 50):
            if n >= w:
                assert mattr(toks, w) == pytest.approx(_naive_mattr(toks, w), abs=1e-13)
            else:
                assert math.isnan(mattr(toks, w))


def test_nan_rules_and_reasons():
    assert all(math.isnan(v) for v in lexical_richness("").values())
    assert richness_reasons([]) == {"mtld": "empty", "mattr": "empty", "hdd": "empty"}
    assert math.isnan(mtld("one two three"))
    assert richness_reasons(tokenize("a a b"), mattr_window=3, hdd_draws=4) == {"mtld": "", "mattr": "", "hdd": "too_short"}


@pytest.mark.parametrize(
    "params",
    [{"mtld_threshold": 1.0}, {"mtld_threshold": 0}, {"mattr_window": 0}, {"hdd_draws": 2.5}, {"mattr_window": True}],
)
def test_bad_parameters(params):
    with pytest.raises(ConfigError):
        Scorer([LexicalRichness(**params)], progress=False).score(["e"], ["p"], ["a a b"])


def test_family_params_manifest_and_reasons_in_run_stats():
    metric = REGISTRY.get("lexical_richness", mattr_window=3)
    assert metric.get_params() == {"mtld_threshold": 0.72, "mattr_window": 3, "hdd_draws": 42}
    scorer = Scorer([metric], progress=False)
    responses = ["a rose is a rose is a rose", "all words differ", "", "x y x"] * 3
    ids = [f"e{i}" for i in range(len(responses))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = scorer.score(ids, ["p"] * len(ids), responses)
    assert frame["mtld"][0] == 8.0 and math.isnan(frame["mtld"][1])
    assert scorer.stats.nan_counts == {"mtld": 6, "mattr": 3, "hdd": 12}
    assert scorer.stats.nan_reasons == {"mtld": {"all_distinct": 3, "empty": 3}, "mattr": {"empty": 3}, "hdd": {"too_short": 9, "empty": 3}}
    texts = [str(w.message) for w in caught if issubclass(w.category, MostlyNaNWarning)]
    assert texts == [("hdd is NaN for 12 of 12 exchanges (too_short: 9, empty: 3); the replies are shorter than hdd_draws: "
                     "lower it, e.g. --metric-param lexical_richness.hdd_draws=10")]
    assert scorer.manifest()["metrics"]["lexical_richness"]["params"]["mattr_window"] == 3


# ------------------------------------------------------------------ real data


@pytest.fixture(scope="module")
def mrbench_tokens(mrbench_dir: Path) -> list[list[str]]:
    return [tokenize(r) for r in pl.read_csv(mrbench_dir / "exchanges.csv")["response"].to_list()]


@pytest.mark.mrbench
def test_mrbench_defined_shares(mrbench_tokens):
    """richness.md §2 [ref]: 90.4% below 50 tokens, 81.9% below 42, 349 with no repeated token."""
    n = np.array([len(t) for t in mrbench_tokens])
    assert len(n) == 1655 and np.median(n) == 26
    assert np.sum(n < 50) / 1655 == pytest.approx(0.904, abs=5e-4)
    assert np.sum(n < 42) / 1655 == pytest.approx(0.819, abs=5e-4)
    assert sum(len(set(t)) == len(t) for t in mrbench_tokens) == 349


@pytest.mark.mrbench
def test_mrbench_equals_lexicalrichness(mrbench_tokens):
    """Same tokens → lexicalrichness 0.5.1 agrees wherever both are defined (1,306 / 159 / 300 replies)."""
    lr_mod = pytest.importorskip("lexicalrichness")
    defined = {"mtld": 0, "mattr": 0, "hdd": 0}
    for toks in mrbench_tokens:
        ours = lexical_richness(toks)
        lr = lr_mod.LexicalRichness(" ".join(toks), preprocessor=None, tokenizer=str.split)
        if not math.isnan(ours["mtld"]):
            assert ours["mtld"] == pytest.approx(lr.mtld(threshold=0.72), abs=1e-12)
            defined["mtld"] += 1
        if not math.isnan(ours["mattr"]):
            assert ours["mattr"] == pytest.approx(lr.mattr(window_size=50), abs=1e-12)
            defined["mattr"] += 1
        if not math.isnan(ours["hdd"]):
            assert ours["hdd"] == pytest.approx(lr.hdd(draws=42), abs=1e-12)
            defined["hdd"] += 1
    assert defined == {"mtld": 1306, "mattr": 159, "hdd": 300}
