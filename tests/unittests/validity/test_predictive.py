"""``predict`` (predictive.md §1) against the spec's worked example and an independent scikit-learn pipeline."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from tutormetrics.validity.folds import group_folds
from tutormetrics.validity.predictive import PredictOptions, predict_frame

sklearn = pytest.importorskip("sklearn")
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import LogisticRegression, Ridge  # noqa: E402
from sklearn.metrics import accuracy_score, brier_score_loss, f1_score, log_loss, r2_score, roc_auc_score  # noqa: E402
from sklearn.model_selection import GroupKFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

NAN = float("nan")
M1 = [12, 30, 25, 8, 40, 22, 15, 35, 18, 27, 9, 33, 21, 14, 38, 11, 26, 19, 31, 16]
M2 = [.91, .70, .78, .95, .62, .80, .88, .66, .85, .74, .93, .69, .81, .90, .64, .92, .76, .83, .71, .87]
M3 = [.10, .35, .20, .05, .42, .18, .12, NAN, .15, .30, .08, .38, .25, .09, .33, .07, .28, .14, .36, .11]
Y = [0, 1, .5, 0, 1, .5, 0, 1, .5, 1, 0, 1, .5, 0, .5, 0, 1, 0, 1, .5]
THETA = [-.62, .30, -.30, -.83, .65, -.22, -.60, .40, -.43, .13, -.74, .42, -.46, -.59, .27, -.66, .14, -.54, .39, -.61]
DIALOGUE = ["d1"] * 4 + ["d2"] * 4 + ["d3"] * 3 + ["d4"] * 3 + ["d5"] * 3 + ["d6"] * 3
LR = dict(C=1.0, l1_ratio=0.0, solver="newton-cholesky", tol=1e-8, max_iter=100)


def _example() -> pl.DataFrame:
    return pl.DataFrame({
        "exchange_id": [f"e{i + 1:02d}" for i in range(20)], "dialogue": DIALOGUE,
        "m1": [float(v) for v in M1], "m2": M2, "m3": M3, "y": [float(v) for v in Y], "theta": THETA,
        "y_yes": [float(v == 1) for v in Y],
    })  # fmt: skip


@pytest.fixture(scope="module")
def example():
    return predict_frame(_example(), targets=["y", "theta", "y_yes"], features=["m1", "m2", "m3"], group_col="dialogue",
                         options=PredictOptions(folds=3))  # fmt: skip


def _get(table: pl.DataFrame, target: str, model: str, measure: str) -> dict:
    row = table.filter((pl.col("target") == target) & (pl.col("model") == model) & (pl.col("measure") == measure))
    assert row.height == 1, (target, model, measure)
    return row.row(0, named=True)


def test_worked_example_folds_and_predictions(example):
    pred = example.predictions.filter((pl.col("target") == "y") & (pl.col("model") == "all"))
    assert pred["fold"].to_list() == [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 2, 2, 2, 2, 2, 2]
    assert pred["label"].to_list() == [0, 1, .5, 0, 1, .5, 0, .5, 0, 1, 0, 1, 1, 0, 1, 0, 1, .5, 1, 0]
    assert pred["score"][:2].round(4).to_list() == [0.1281, 0.8370]
    for target in ("y", "theta", "y_yes"):
        assert _get(example.table, target, "best_single", "rho")["selected"] == "m3;m3;m1"


@pytest.mark.parametrize(
    ("model", "measure", "value", "lo", "hi"),
    [
        ("all", "rho", 0.8187518, 0.6807, 0.9266),
        ("all", "macro_f1", 0.6666667, 0.4722, 0.8237),
        ("all", "accuracy", 0.7, None, None),
        ("all", "macro_f1_lenient", 0.84, 0.5998, 1.0),
        ("all", "accuracy_lenient", 0.85, None, None),
        ("all", "auc_lenient", 0.9670330, None, None),
        ("all", "log_loss", 0.6903401, None, None),
        ("best_single", "rho", 0.7876599, None, None),
        ("best_single", "macro_f1", 0.7078431, None, None),
        ("best_single", "accuracy", 0.75, None, None),
        ("best_single", "macro_f1_lenient", 0.8465473, None, None),
        ("best_single", "log_loss", 0.7276910, None, None),
        ("all-best_single", "rho", 0.0310918, 0.0, 0.1361),
        ("all-best_single", "macro_f1", -0.0411765, -0.1180, 0.0101),
        ("all-best_single", "accuracy", -0.05, -0.1579, 0.0),
        ("all-best_single", "macro_f1_lenient", -0.0065473, -0.1744, 0.1399),
        ("all-best_single", "accuracy_lenient", 0.0, -0.1579, 0.1364),
        ("all-best_single", "auc_lenient", 0.0, None, None),
        ("all-best_single", "log_loss", -0.0373509, -0.0962, 0.0298),
    ],
)
def test_worked_example_ordinal(example, model, measure, value, lo, hi):
    row = _get(example.table, "y", model, measure)
    assert row["estimate"] == pytest.approx(value, abs=5e-8)
    if lo is not None:
        assert row["ci_low"] == pytest.approx(lo, abs=5e-5)
        assert row["ci_high"] == pytest.approx(hi, abs=5e-5)
    assert (row["n"], row["n_groups"], row["folds"], row["reason"]) == (20, 6, 3, "")


def test_worked_example_theta_and_binary(example):
    t = example.table
    assert _get(t, "theta", "all", "rho")["estimate"] == pytest.approx(0.9203008, abs=5e-8)
    assert _get(t, "theta", "all", "pearson_r")["estimate"] == pytest.approx(0.9275738, abs=5e-8)
    assert _get(t, "theta", "all", "r2")["estimate"] == pytest.approx(0.8585460, abs=5e-8)
    assert _get(t, "theta", "all", "rmse")["estimate"] == pytest.approx(0.1746576, abs=5e-8)
    assert _get(t, "theta", "best_single", "rho")["estimate"] == pytest.approx(0.8706767, abs=5e-8)
    assert _get(t, "theta", "best_single", "r2")["estimate"] == pytest.approx(0.7464679, abs=5e-8)
    d = _get(t, "theta", "all-best_single", "r2")
    assert (d["estimate"], d["ci_low"], d["ci_high"]) == pytest.approx((0.1120781, 0.0087, 0.2496), abs=5e-5)
    expected = {"rho": 0.6635541, "auc": 0.9010989, "macro_f1": 0.8901099, "accuracy": 0.9, "brier": 0.1203227, "log_loss": 0.3996334}
    for measure, value in expected.items():
        assert _get(t, "y_yes", "all", measure)["estimate"] == pytest.approx(value, abs=5e-8)
    for measure, value in {"auc": 0.8681319, "macro_f1": 0.8290598, "brier": 0.1346585}.items():
        assert _get(t, "y_yes", "best_single", measure)["estimate"] == pytest.approx(value, abs=5e-8)
    assert set(t.filter(pl.col("model") == "all")["n_features"].to_list()) == {3}
    assert set(t.filter(pl.col("model") == "best_single")["n_features"].to_list()) == {1}


# ---- folds -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_folds_equal_sklearn_group_kfold(seed):
    """scikit-learn >= 1.8 sorts group sizes stably; the rule here equals it on tied layouts."""
    rng = np.random.default_rng(seed)
    n_groups = int(rng.integers(6, 40))
    sizes = rng.integers(1, 5, n_groups)  # many ties
    labels = np.repeat([f"g{rng.integers(0, 10**6):06d}_{j}" for j in range(n_groups)], sizes)
    rng.shuffle(labels)
    k = int(rng.integers(2, 6))
    ours = group_folds(labels, k)
    ref = np.empty(labels.size, dtype=int)
    for f, (_, test) in enumerate(GroupKFold(n_splits=k).split(np.zeros((labels.size, 1)), groups=labels)):
        ref[test] = f
    if tuple(int(v) for v in sklearn.__version__.split(".")[:2]) >= (1, 8):
        assert ours.tolist() == ref.tolist()
    # every group lies in one fold
    for g in np.unique(labels):
        assert np.unique(ours[labels == g]).size == 1


def test_shuffling_rows_keeps_each_groups_fold():
    rng = np.random.default_rng(3)
    labels = np.repeat([f"c{j}" for j in range(30)], rng.integers(1, 9, 30))
    base = dict(zip(labels, group_folds(labels, 5), strict=True))
    for _ in range(5):
        perm = rng.permutation(labels.size)
        shuffled = labels[perm]
        folds = group_folds(shuffled, 5)
        assert {g: f for g, f in zip(shuffled, folds, strict=True)} == base


# ---- independent scikit-learn pipeline -----------------------------------------------------------------


def _synthetic(n_groups=40, seed=0, levels=(0.0, 0.5, 1.0)):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 10, n_groups)
    g = np.repeat([f"dlg{j:03d}" for j in range(n_groups)], sizes)
    n = g.size
    effect = np.repeat(rng.normal(size=n_groups), sizes)
    x = rng.normal(size=(n, 5))
    x[:, 1] = x[:, 0] * 0.5 + rng.normal(size=n)
    x[rng.random((n, 5)) < 0.05] = np.nan  # missing values
    lin = np.nan_to_num(x[:, 0]) + 0.5 * np.nan_to_num(x[:, 2]) + effect
    cuts = np.quantile(lin, np.linspace(0, 1, len(levels) + 1)[1:-1])
    y = np.asarray(levels)[np.searchsorted(cuts, lin)]
    frame = pl.DataFrame({"exchange_id": [f"r{i}" for i in range(n)], "dlg": g, **{f"m{j}": x[:, j] for j in range(5)},
                          "y": y, "cont": lin + rng.normal(size=n)})  # fmt: skip
    return frame, x, y, g


def _reference_oos(x, y_codes, g, k, make, proba=True):
    out = np.zeros((y_codes.size, int(y_codes.max()) + 1)) if proba else np.zeros(y_codes.size)
    for tr, te in GroupKFold(n_splits=k).split(x, y_codes, groups=g):
        model = make().fit(x[tr], y_codes[tr])
        out[te] = model.predict_proba(x[te]) if proba else model.predict(x[te])
    return out


@pytest.mark.parametrize("n_levels", [2, 3])
def test_logistic_equals_sklearn_pipeline(n_levels):
    levels = (0.0, 1.0) if n_levels == 2 else (0.0, 0.5, 1.0)
    frame, x, y, g = _synthetic(levels=levels)
    res = predict_frame(frame, targets=["y"], features=[f"m{j}" for j in range(5)], group_col="dlg",
                        options=PredictOptions(folds=5, ci="none"))  # fmt: skip
    codes = np.searchsorted(levels, y)
    ref = _reference_oos(x, codes, g, 5, lambda: make_pipeline(SimpleImputer(strategy="median"), StandardScaler(), LogisticRegression(**LR)))
    pred = res.predictions.filter(pl.col("model") == "all")
    ours = np.column_stack([pred[f"p_{k}"].to_numpy() for k in range(n_levels)])
    np.testing.assert_allclose(ours, ref, atol=1e-7)
    label = ref.argmax(axis=1)
    t = res.table.filter(pl.col("model") == "all")
    est = dict(zip(t["measure"], t["estimate"], strict=True))
    if n_levels == 2:
        score = ref[:, 1]
        assert est["auc"] == pytest.approx(roc_auc_score(codes, score), abs=1e-6)
        assert est["brier"] == pytest.approx(brier_score_loss(codes, score), abs=1e-6)
    else:
        score = ref @ np.asarray(levels)
        assert est["macro_f1_lenient"] == pytest.approx(f1_score(codes > 0, label > 0, average="macro"), abs=1e-6)
        assert est["accuracy_lenient"] == pytest.approx(accuracy_score(codes > 0, label > 0), abs=1e-6)
        assert est["auc_lenient"] == pytest.approx(roc_auc_score(codes > 0, 1 - ref[:, 0]), abs=1e-6)
    assert est["rho"] == pytest.approx(stats.spearmanr(score, y).statistic, abs=1e-6)
    assert est["macro_f1"] == pytest.approx(f1_score(codes, label, average="macro"), abs=1e-6)
    assert est["accuracy"] == pytest.approx(accuracy_score(codes, label), abs=1e-6)
    assert est["log_loss"] == pytest.approx(log_loss(codes, ref, labels=list(range(n_levels))), abs=1e-6)


def test_best_single_equals_reference_selection():
    frame, x, y, g = _synthetic(seed=4, levels=(0.0, 1.0))
    res = predict_frame(frame, targets=["y"], features=[f"m{j}" for j in range(5)], group_col="dlg",
                        options=PredictOptions(folds=4, ci="none"))  # fmt: skip
    codes = y.astype(int)
    oos = np.zeros(y.size)
    chosen = []
    for tr, te in GroupKFold(n_splits=4).split(x, codes, groups=g):
        rhos = []
        for j in range(5):
            ok = np.isfinite(x[tr, j])
            rhos.append(abs(stats.spearmanr(x[tr, j][ok], y[tr][ok]).statistic))
        j = int(np.argmax(rhos))
        chosen.append(f"m{j}")
        pipe = make_pipeline(SimpleImputer(strategy="median"), StandardScaler(), LogisticRegression(**LR))
        oos[te] = pipe.fit(x[tr][:, [j]], codes[tr]).predict_proba(x[te][:, [j]])[:, 1]
    pred = res.predictions.filter(pl.col("model") == "best_single")
    np.testing.assert_allclose(pred["p_1"].to_numpy(), oos, atol=1e-7)
    assert res.table.filter(pl.col("model") == "best_single")["selected"][0] == ";".join(chosen)


def test_ridge_continuous_and_hgb_equal_sklearn():
    frame, x, y, g = _synthetic(seed=2)
    res = predict_frame(frame, targets=["cont"], features=[f"m{j}" for j in range(5)], group_col="dlg",
                        options=PredictOptions(folds=5, ci="none"))  # fmt: skip
    cont = frame["cont"].to_numpy()
    ref = np.zeros(cont.size)
    for tr, te in GroupKFold(n_splits=5).split(x, cont, groups=g):
        ref[te] = make_pipeline(SimpleImputer(strategy="median"), StandardScaler(), Ridge(alpha=1.0)).fit(x[tr], cont[tr]).predict(x[te])
    pred = res.predictions.filter(pl.col("model") == "all")
    np.testing.assert_allclose(pred["score"].to_numpy(), ref, atol=1e-8)
    t = res.table.filter(pl.col("model") == "all")
    est = dict(zip(t["measure"], t["estimate"], strict=True))
    assert est["r2"] == pytest.approx(r2_score(cont, ref), abs=1e-9)
    assert est["pearson_r"] == pytest.approx(stats.pearsonr(cont, ref).statistic, abs=1e-9)
    assert est["rmse"] == pytest.approx(np.sqrt(np.mean((cont - ref) ** 2)), abs=1e-9)
    # gradient boosting on a 3-level target
    res = predict_frame(frame, targets=["y"], features=[f"m{j}" for j in range(5)], group_col="dlg",
                        options=PredictOptions(folds=3, ci="none", model="hgb"))  # fmt: skip
    codes = np.searchsorted([0.0, 0.5, 1.0], y)
    ref = _reference_oos(x, codes, g, 3, lambda: make_pipeline(
        SimpleImputer(strategy="median"), StandardScaler(), HistGradientBoostingClassifier(random_state=0, early_stopping=False)))
    pred = res.predictions.filter(pl.col("model") == "all")
    np.testing.assert_allclose(np.column_stack([pred[f"p_{k}"].to_numpy() for k in range(3)]), ref, atol=1e-7)


def test_cluster_bootstrap_interval_equals_expanded_resamples():
    """The weighted pass equals scikit-learn / scipy on the expanded resamples (same draws)."""
    frame, _x, y, g = _synthetic(seed=5, n_groups=25, levels=(0.0, 1.0))
    b = 300
    res = predict_frame(frame, targets=["y"], features=[f"m{j}" for j in range(5)], group_col="dlg",
                        options=PredictOptions(folds=5, n_resamples=b, seed=7))  # fmt: skip
    pred = res.predictions.filter(pl.col("model") == "all")
    score = pred["score"].to_numpy()
    label = (pred["label"].to_numpy() > 0).astype(int)
    codes = y.astype(int)
    uniq, gcode = np.unique(g.astype(str), return_inverse=True)
    idx = np.random.default_rng([7, 0]).integers(0, uniq.size, size=(b, uniq.size))
    vals = {"rho": [], "auc": [], "macro_f1": [], "log_loss": []}
    p1 = pred["p_1"].to_numpy()
    for row in idx:
        rows = np.concatenate([np.flatnonzero(gcode == j) for j in row])
        yy, ss = codes[rows], score[rows]
        vals["rho"].append(stats.spearmanr(ss, yy).statistic if np.ptp(yy) else np.nan)
        vals["auc"].append(roc_auc_score(yy, ss) if np.ptp(yy) else np.nan)
        vals["macro_f1"].append(f1_score(yy, label[rows], average="macro"))
        p = np.column_stack((1 - p1[rows], p1[rows]))
        vals["log_loss"].append(log_loss(yy, p, labels=[0, 1]))
    t = res.table.filter(pl.col("model") == "all")
    for measure, values in vals.items():
        v = np.asarray(values)
        v = v[np.isfinite(v)]
        lo, hi = np.quantile(v, [0.025, 0.975])
        row = t.filter(pl.col("measure") == measure).row(0, named=True)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), abs=1e-9), measure


# ---- leakage ---------------------------------------------------------------------------------------------


def test_test_rows_do_not_reach_the_fit():
    """Changing the targets of one fold's rows, or one test row's features, leaves the other test predictions."""
    frame, x, y, _g = _synthetic(seed=6)
    feats = [f"m{j}" for j in range(5)]
    opts = PredictOptions(folds=5, ci="none")
    base = predict_frame(frame, targets=["y"], features=feats, group_col="dlg", options=opts).predictions
    fold = base.filter(pl.col("model") == "all")["fold"].to_numpy()
    te = fold == 2
    y2 = y.copy()
    y2[te] = np.random.default_rng(0).permutation(y[te])
    x0 = x[:, 0].copy()
    first = np.flatnonzero(te)[0]
    x0[first] = 1e6  # an outlier in a test row must not move the training medians or scales
    changed = frame.with_columns(pl.Series("y", y2), pl.Series("m0", x0))
    other = predict_frame(changed, targets=["y"], features=feats, group_col="dlg", options=opts).predictions
    for model in ("all", "best_single"):
        a = base.filter(pl.col("model") == model)
        b = other.filter(pl.col("model") == model)
        keep = te.copy()
        keep[first] = False
        np.testing.assert_allclose(a["p_1"].to_numpy()[keep], b["p_1"].to_numpy()[keep], atol=1e-12)


def test_metric_informative_only_in_test_fold_does_not_help():
    frame, _x, y, g = _synthetic(seed=8, levels=(0.0, 1.0))
    folds = group_folds(g, 5)
    rng = np.random.default_rng(1)
    feats = ["m0", "m2"]
    base = predict_frame(frame, targets=["y"], features=feats, group_col="dlg", options=PredictOptions(ci="none")).table
    leak = {}
    for f in range(5):
        col = rng.normal(size=y.size)
        col[folds == f] = y[folds == f] + 0.01 * rng.normal(size=int((folds == f).sum()))
        leak[f"leak{f}"] = col
    leaky = frame.with_columns(**{k: pl.Series(v) for k, v in leak.items()})
    res = predict_frame(leaky, targets=["y"], features=feats + list(leak), group_col="dlg", options=PredictOptions(ci="none")).table
    for measure in ("auc", "macro_f1", "rho"):
        assert _get(res, "y", "all", measure)["estimate"] <= _get(base, "y", "all", measure)["estimate"] + 0.02
    # a pipeline that chose the best metric on all rows would pick a leak column and score near 1
    assert _get(res, "y", "best_single", "auc")["estimate"] < 0.9


# ---- reasons and judge ---------------------------------------------------------------------------------


def test_target_reasons_and_judge():
    frame, _x, y, _g = _synthetic(seed=9, levels=(0.0, 1.0))
    n = y.size
    judge = y.copy()
    judge[:7] = np.nan
    frame = frame.with_columns(pl.Series("j", judge), pl.Series("const", np.ones(n)), pl.Series("few", [1.0, 0.0] + [None] * (n - 2)))
    res = predict_frame(frame, targets=["y", "const", "few"], features=["m0", "m1"], group_col="dlg",
                        judge_cols={"y": "j"}, options=PredictOptions(ci="none"))  # fmt: skip
    t = res.table
    assert t.filter(pl.col("target") == "const")["reason"].to_list() == ["constant"]
    assert t.filter(pl.col("target") == "few")["reason"].to_list() == ["too_few;too_few_groups"]
    j = _get(t, "y", "judge", "macro_f1")
    assert j["estimate"] == 1.0 and j["n"] == n - 7 and j["reason"] == "judge_missing_7"
    assert not t.filter((pl.col("model") == "judge") & pl.col("measure").is_in(["brier", "log_loss"])).height
    d = _get(t, "y", "all-judge", "accuracy")
    allj = res.predictions.filter(pl.col("model") == "all")
    ok = np.isfinite(judge)
    assert d["estimate"] == pytest.approx(accuracy_score(y[ok], allj["label"].to_numpy()[ok]) - 1.0, abs=1e-12)
    assert "judge" not in res.predictions["model"].unique().to_list()


def test_balanced_logistic_and_ridge_on_levels_equal_sklearn():
    frame, x, y, g = _synthetic(seed=12)
    feats = [f"m{j}" for j in range(5)]
    codes = np.searchsorted([0.0, 0.5, 1.0], y)
    res = predict_frame(frame, targets=["y"], features=feats, group_col="dlg", options=PredictOptions(ci="none", class_weight="balanced"))
    ref = _reference_oos(x, codes, g, 5, lambda: make_pipeline(
        SimpleImputer(strategy="median"), StandardScaler(), LogisticRegression(**LR, class_weight="balanced")))
    pred = res.predictions.filter(pl.col("model") == "all")
    np.testing.assert_allclose(np.column_stack([pred[f"p_{k}"].to_numpy() for k in range(3)]), ref, atol=1e-7)
    res = predict_frame(frame, targets=["y"], features=feats, group_col="dlg", options=PredictOptions(ci="none", model="ridge"))
    ref = np.zeros(y.size)
    for tr, te in GroupKFold(n_splits=5).split(x, y, groups=g):
        ref[te] = make_pipeline(SimpleImputer(strategy="median"), StandardScaler(), Ridge(alpha=1.0)).fit(x[tr], y[tr]).predict(x[te])
    pred = res.predictions.filter(pl.col("model") == "all")
    np.testing.assert_allclose(pred["score"].to_numpy(), ref, atol=1e-9)
    levels = np.array([0.0, 0.5, 1.0])
    nearest = levels[np.argmin(np.abs(ref[:, None] - levels[None, :]) - 1e-12 * np.arange(3), axis=1)]  # ties → higher
    assert pred["label"].to_list() == nearest.tolist()
    assert pred["p_0"].null_count() == pred.height
    measures = res.table.filter(pl.col("model") == "all")["measure"].to_list()
    assert "log_loss" not in measures and "auc_lenient" in measures


def test_too_few_groups_and_class_codes():
    frame, _x, _y, _g = _synthetic(seed=13, n_groups=4)
    res = predict_frame(frame, targets=["y"], features=["m0"], group_col="dlg", options=PredictOptions(ci="none"))
    assert res.table["reason"].to_list() == ["too_few_groups"] and res.table["measure"][0] is None
    frame, _x, y, _g = _synthetic(seed=14, levels=(0.0, 1.0))
    rare = np.zeros(y.size)
    rare[:2] = 1.0  # one group holds both 1s: every other training fold has both levels, one has a single level
    frame = frame.with_columns(pl.Series("rare", rare))
    t = predict_frame(frame, targets=["rare"], features=["m0"], group_col="dlg", options=PredictOptions(ci="none")).table
    assert t["reason"][0].startswith("class_lt_folds;")
    assert "one_class_in_fold_1" in t["reason"][0]
