"""``predict --features embedding|both`` and ``--decision ordinal`` (docs/commands/predict.md#representation-features,
#decision-rules): equal to an independent scikit-learn pipeline on the same folds, and nothing of a test fold reaches
its fit (labels, thresholds, representation)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import f1_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from tutormetrics.errors import ConfigError, InputSchemaError  # noqa: E402
from tutormetrics.validity.decision_rules import decode, tune_thresholds  # noqa: E402
from tutormetrics.validity.folds import group_folds  # noqa: E402
from tutormetrics.validity.predictive import PredictOptions, predict_frame  # noqa: E402
from tutormetrics.validity.representation import representation_matrix  # noqa: E402

LR = {"C": 1.0, "l1_ratio": 0.0, "solver": "newton-cholesky", "tol": 1e-8, "max_iter": 100}
K = 4


def _study(seed: int = 0, n_groups: int = 24, d: int = 6, n_levels: int = 3):
    """A frame of 3 metrics and a representation (response and prompt vectors) that both carry the label."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 7, n_groups)
    groups = np.repeat([f"g{j:02d}" for j in range(n_groups)], sizes)
    n = groups.size
    latent = rng.normal(size=n)
    r = rng.normal(size=(n, d)) + latent[:, None] * np.linspace(0.2, 1.0, d)
    p = np.repeat(rng.normal(size=(n_groups, d)), sizes, axis=0)
    m = np.column_stack([latent + rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)])
    m[rng.random(m.shape) < 0.05] = np.nan
    r[rng.integers(0, n, 3), rng.integers(0, d, 3)] = np.nan  # imputed inside the fold
    cuts = np.quantile(latent, np.linspace(0, 1, n_levels + 1)[1:-1])
    y = np.digitize(latent + 0.5 * rng.normal(size=n), cuts) / (n_levels - 1)
    frame = pl.DataFrame({"exchange_id": [f"e{i:03d}" for i in range(n)], "g": groups,
                          "m1": m[:, 0], "m2": m[:, 1], "m3": m[:, 2], "y": y})  # fmt: skip
    block, _ = representation_matrix({"response": r, "prompt": p}, "response,response-prompt,response*prompt")
    return frame, block


def _reference_proba(frame: pl.DataFrame, block: np.ndarray, features: str, class_weight: str | None = None) -> np.ndarray:
    """Out-of-fold probabilities of an independent scikit-learn pipeline on the same folds."""
    metrics = frame.select("m1", "m2", "m3").to_numpy()
    x = {"metrics": metrics, "embedding": block, "both": np.hstack([metrics, block])}[features]
    parts = []
    if features != "embedding":
        parts.append(("m", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), [0, 1, 2]))
    if features != "metrics":
        start = 0 if features == "embedding" else 3
        emb = make_pipeline(SimpleImputer(strategy="median"), StandardScaler(), PCA(K, svd_solver="covariance_eigh"), StandardScaler())
        parts.append(("e", emb, list(range(start, start + block.shape[1]))))
    y = np.searchsorted(np.unique(frame["y"].to_numpy()), frame["y"].to_numpy())
    folds = group_folds(frame["g"].to_list(), 5)
    out = np.zeros((y.size, np.unique(y).size))
    for f in range(5):
        tr, te = folds != f, folds == f
        pipe = make_pipeline(ColumnTransformer(parts), LogisticRegression(class_weight=class_weight, **LR))
        out[te] = pipe.fit(x[tr], y[tr]).predict_proba(x[te])
    return out


def _proba(result, model: str, n_levels: int) -> np.ndarray:
    sub = result.predictions.filter((pl.col("target") == "y") & (pl.col("model") == model))
    return sub.select([f"p_{k}" for k in range(n_levels)]).to_numpy()


@pytest.mark.parametrize(("n_levels", "class_weight"), [(3, "none"), (2, "balanced")])
def test_representation_equals_sklearn_pipeline(n_levels, class_weight):
    frame, block = _study(n_levels=n_levels)
    cw = None if class_weight == "none" else class_weight
    for features in ("both", "embedding"):
        opts = PredictOptions(features=features, components=K, class_weight=class_weight, ci="none")
        res = predict_frame(frame, targets=["y"], features=["m1", "m2", "m3"], group_col="g", options=opts, representation=block)
        np.testing.assert_allclose(_proba(res, "all", n_levels), _reference_proba(frame, block, features, cw), atol=1e-7, rtol=0)
        # the metrics model beside it is the metrics-only pipeline
        np.testing.assert_allclose(_proba(res, "metrics", n_levels), _reference_proba(frame, block, "metrics", cw), atol=1e-7, rtol=0)


def test_both_rows_models_and_incremental_validity():
    frame, block = _study()
    opts = PredictOptions(features="both", components=K, n_resamples=200)
    res = predict_frame(frame, targets=["y"], features=["m1", "m2", "m3"], group_col="g", options=opts, representation=block)
    t = res.table
    assert t["model"].unique(maintain_order=True).to_list() == ["all", "best_single", "metrics", "all-best_single", "all-metrics"]
    nf = dict(t.filter(pl.col("measure") == "rho").select("model", "n_features").iter_rows())
    assert (nf["all"], nf["best_single"], nf["metrics"]) == (3 + K, 1, 3)
    def get(model: str, measure: str) -> dict:
        return t.filter((pl.col("model") == model) & (pl.col("measure") == measure)).row(0, named=True)

    for measure in ("macro_f1", "macro_f1_lenient", "auc_lenient", "rho"):
        diff = get("all-metrics", measure)
        assert diff["estimate"] == pytest.approx(get("all", measure)["estimate"] - get("metrics", measure)["estimate"], abs=1e-12)
        assert diff["ci_low"] <= diff["estimate"] <= diff["ci_high"]
    # metrics-only output is unchanged by the new options
    plain = predict_frame(frame, targets=["y"], features=["m1", "m2", "m3"], group_col="g", options=PredictOptions(n_resamples=200))
    assert plain.table["model"].unique(maintain_order=True).to_list() == ["all", "best_single", "all-best_single"]
    metrics_rows = t.filter(pl.col("model") == "metrics").select("measure", "estimate", "ci_low", "ci_high")
    assert metrics_rows.equals(plain.table.filter(pl.col("model") == "all").select("measure", "estimate", "ci_low", "ci_high"))


def _run(frame, block, **kw):
    opts = PredictOptions(features="both", components=K, ci="none", **kw)
    return predict_frame(frame, targets=["y"], features=["m1", "m2", "m3"], group_col="g", options=opts, representation=block)


@pytest.mark.parametrize("decision", ["argmax", "ordinal"])
def test_shuffled_test_fold_labels_leave_its_model_and_thresholds_unchanged(decision):
    frame, block = _study(seed=3)
    folds = group_folds(frame["g"].to_list(), 5)
    base = _run(frame, block, decision=decision)
    y = frame["y"].to_numpy().copy()
    test = np.flatnonzero(folds == 2)
    y[test] = np.random.default_rng(1).permutation(y[test])
    y[test[0]] = 1.0 - y[test[0]]  # changed, not only reordered
    shuffled = _run(frame.with_columns(pl.Series("y", y)), block, decision=decision)
    for model in ("all", "metrics", "best_single"):
        a = base.predictions.filter((pl.col("model") == model) & (pl.col("fold") == 2))
        b = shuffled.predictions.filter((pl.col("model") == model) & (pl.col("fold") == 2))
        for col in ("score", "label", "p_0", "p_1", "p_2"):
            np.testing.assert_array_equal(a[col].to_numpy(), b[col].to_numpy())
    if decision == "ordinal":
        def cut(r):
            return r.thresholds.filter(pl.col("fold") == 2).sort("model")

        assert cut(base).equals(cut(shuffled))
        assert cut(base)["t_1"].is_not_null().all()
        # the other folds' thresholds did see fold 2's labels
        assert not base.thresholds.equals(shuffled.thresholds)


def test_a_test_row_representation_never_reaches_its_fold():
    frame, block = _study(seed=4)
    folds = group_folds(frame["g"].to_list(), 5)
    rows = np.flatnonzero(folds == 1)
    changed = block.copy()
    changed[rows[0]] = changed[rows[0]] * 50 + 3
    a = _run(frame, block).predictions.filter((pl.col("model") == "all") & (pl.col("fold") == 1))
    b = _run(frame, changed).predictions.filter((pl.col("model") == "all") & (pl.col("fold") == 1))
    np.testing.assert_array_equal(a["p_0"].to_numpy()[1:], b["p_0"].to_numpy()[1:])
    assert a["p_0"][0] != b["p_0"][0]


def _brute_force(score, codes, n_levels):
    cand = np.concatenate([[-np.inf], np.unique(score), [np.inf]])
    best, cut = -1.0, None
    for t in itertools.combinations_with_replacement(cand, n_levels - 1):
        f1 = f1_score(codes, decode(score, np.array(t)), average="macro", labels=list(range(n_levels)))
        if f1 > best + 1e-12:
            best, cut = f1, np.array(t)
    return best, cut


@pytest.mark.parametrize(("seed", "n_levels"), [(0, 3), (1, 3), (2, 2), (3, 2)])
def test_tuned_thresholds_reach_the_brute_force_macro_f1(seed, n_levels):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_levels, 20)
    score = codes / (n_levels - 1) + rng.normal(scale=0.4, size=20)
    cut = tune_thresholds(score, codes, n_levels)
    best, _ = _brute_force(score, codes, n_levels)
    assert f1_score(codes, decode(score, cut), average="macro") == pytest.approx(best, abs=1e-12)
    assert np.all(np.diff(cut) >= 0)


def test_ordinal_decoding_equals_inner_cv_by_hand():
    """Fold 0 of ``all`` with ``--decision ordinal``: thresholds from an independent inner grouped CV of the pipeline."""
    frame, block = _study(seed=5)
    res = _run(frame, block, decision="ordinal")
    metrics = frame.select("m1", "m2", "m3").to_numpy()
    x = np.hstack([metrics, block])
    parts = [("m", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), [0, 1, 2]),
             ("e", make_pipeline(SimpleImputer(strategy="median"), StandardScaler(), PCA(K, svd_solver="covariance_eigh"),
                                 StandardScaler()), list(range(3, x.shape[1])))]  # fmt: skip
    levels = np.array([0.0, 0.5, 1.0])
    y = np.searchsorted(levels, frame["y"].to_numpy())
    groups = np.asarray(frame["g"].to_list())
    folds = group_folds(groups, 5)
    tr = np.flatnonzero(folds != 0)
    inner = group_folds(groups[tr], 5)
    oof = np.empty(tr.size)
    for g in range(5):
        a, b = tr[inner != g], tr[inner == g]
        pipe = make_pipeline(ColumnTransformer(parts), LogisticRegression(**LR)).fit(x[a], y[a])
        oof[inner == g] = pipe.predict_proba(x[b]) @ levels
    expected = tune_thresholds(oof, y[tr], 3)
    got = res.thresholds.filter((pl.col("model") == "all") & (pl.col("fold") == 0)).select("t_1", "t_2").row(0)
    np.testing.assert_allclose(got, expected, atol=1e-7)
    pred = res.predictions.filter((pl.col("model") == "all") & (pl.col("fold") == 0))
    np.testing.assert_array_equal(np.searchsorted(levels, pred["label"].to_numpy()), decode(pred["score"].to_numpy(), expected))


def test_option_errors():
    frame, _ = _study()
    with pytest.raises(ConfigError, match="representation block"):
        predict_frame(frame, targets=["y"], features=["m1"], group_col="g", options=PredictOptions(features="both"))
    with pytest.raises(ConfigError, match="--features"):
        PredictOptions(features="text").check()
    with pytest.raises(ConfigError, match="--decision"):
        PredictOptions(decision="mode").check()
    with pytest.raises(ConfigError, match="importance drop"):
        PredictOptions(features="embedding", importance="drop").check()


def test_representation_terms():
    rng = np.random.default_rng(0)
    views = {"response": rng.normal(size=(4, 3)), "prompt": rng.normal(size=(4, 3))}
    block, names = representation_matrix(views, "response*prompt, prompt")
    assert names == ["response*prompt", "prompt"]
    np.testing.assert_array_equal(block, np.hstack([views["response"] * views["prompt"], views["prompt"]]))
    with pytest.raises(ConfigError, match="not VIEW"):
        representation_matrix(views, "response,-prompt")
    with pytest.raises(InputSchemaError, match="does not hold"):
        representation_matrix(views, "response-prev_student")
