"""The measurement report's cost (issue 38, ``docs/measurement.md``).

A. **1M ratings**: 50,000 exchanges × 5 criteria on 0–2 × 4 raters (partial credit; c3 0.5 logit harder for a
   ``human`` group of 40%). The θ fit (``fit_mfrm``, facet SEs included), then what the tables add beyond it: the
   ratings prepared again as the fit prepared them, the estimates and ratings arrays, fit + separation + DIF (the
   goal: ≤ 30 s), and the bias table.
B. **Plausible values vs validate**: MRBench (8 criteria, 1,655 exchanges) and ``--metrics`` synthetic metrics
   (exchange-level, correlated with the gold scores): ``validate_metrics`` as ``validate`` runs it (θ estimated,
   BCa bootstrap with 9,999 resamples over every metric × target), then the ``theta_pv`` rows (M = 20 PVs
   conditioned on each metric). The goal: PVs add at most 2× to validate's time.

Wall seconds and the process's CPU seconds are both reported: on the shared 2-core machine the CPU seconds are the
comparable number.

Usage::

    python benchmarks/bench_measurement.py                 # A and B
    python benchmarks/bench_measurement.py --quick         # A at 100k ratings, B with 9 metrics
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from tutormetrics.psychometrics.measurement.bias import bias_table, default_bias_pairs
from tutormetrics.psychometrics.measurement.dif import dif_groups, dif_table
from tutormetrics.psychometrics.measurement.estimates import estimates_from_result
from tutormetrics.psychometrics.measurement.fit import fit_table
from tutormetrics.psychometrics.measurement.measurement_report import prepare_like_fit
from tutormetrics.psychometrics.measurement.observations import observations
from tutormetrics.psychometrics.measurement.separation import separation_table
from tutormetrics.psychometrics.mfrm import fit_mfrm


def clock(fn):
    """(result, wall s, CPU s) of ``fn()``."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def simulate(n_items: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    human = rng.random(n_items) < 0.4
    theta = rng.standard_normal(n_items)
    b, s, tau = np.linspace(-1, 1, 5), np.array([0.2, 0.0, -0.1, -0.1]), np.array([-0.7, 0.7])
    eta = theta[:, None, None] - b[None, :, None] - s[None, None, :]
    eta[:, 2, :] -= 0.5 * human[:, None]
    logits = np.stack([np.zeros_like(eta), eta - tau[0], 2 * eta - tau.sum()], axis=-1)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    cdf = np.cumsum(p / p.sum(-1, keepdims=True), -1)
    y = (rng.random(eta.shape)[..., None] > cdf).sum(-1)
    ii, jj, rr = np.meshgrid(np.arange(n_items), np.arange(5), np.arange(4), indexing="ij")
    ids = np.array([f"e{i:06d}" for i in range(n_items)])
    ratings = pl.DataFrame({"exchange_id": ids[ii.ravel()], "rater": np.array(["r1", "r2", "r3", "r4"])[rr.ravel()],
                            "criterion": np.array([f"c{j + 1}" for j in range(5)])[jj.ravel()], "score": y.ravel() / 2.0})  # fmt: skip
    return ratings, pl.DataFrame({"exchange_id": ids, "tutor": np.where(human, "human", "llm")})


def part_a(n_items: int) -> dict:
    ratings, groups = simulate(n_items)
    result, fit_w, fit_c = clock(lambda: fit_mfrm(ratings))
    steps: dict[str, tuple[float, float]] = {"theta fit": (fit_w, fit_c)}
    prep, *t = clock(lambda: prepare_like_fit(ratings, result))
    steps["prepare again"] = tuple(t)
    (est, obs), *t = clock(lambda: (lambda e: (e, observations(e, prep)))(estimates_from_result(result, prep)))
    steps["estimates + ratings arrays"] = tuple(t)
    g = dif_groups(groups, "tutor", est.ids)
    fit, *t = clock(lambda: fit_table(est, obs, groups=(g.levels, g.code)))
    steps["fit table"] = tuple(t)
    _sep, *t = clock(lambda: separation_table(est))
    steps["separation table"] = tuple(t)
    dif, *t = clock(lambda: dif_table(est, obs, prep, g))
    steps["DIF table"] = tuple(t)
    _bias, *t = clock(lambda: bias_table(est, obs, prep, default_bias_pairs(4, True), groups=g))
    steps["bias table"] = tuple(t)
    beyond = [k for k in steps if k not in ("theta fit", "bias table")]
    return {
        "n_ratings": ratings.height, "n_items": n_items, "steps": {k: {"wall_s": v[0], "cpu_s": v[1]} for k, v in steps.items()},
        "beyond_fit_wall_s": sum(steps[k][0] for k in beyond), "beyond_fit_cpu_s": sum(steps[k][1] for k in beyond),
        "dif_classes": dif["ets_class"].to_list(), "rasch_classes": dif["rasch_class"].to_list(),
        "underfit": fit.filter(pl.col("flag") == "underfit").height,
    }  # fmt: skip


def part_b(n_metrics: int, ratings_path: Path) -> dict:
    from tutormetrics.pipeline import ValidateOptions, validate_metrics

    from tutormetrics.validity.plausible_rho import theta_pv_table

    ratings = pl.read_csv(ratings_path).select("exchange_id", "rater", "criterion", "score")
    wide = ratings.pivot("criterion", index="exchange_id", values="score")
    rng = np.random.default_rng(1)
    quality = wide.drop("exchange_id").to_numpy().mean(1)
    metrics = pl.DataFrame({"exchange_id": wide["exchange_id"],
                            **{f"m{k:02d}": quality * rng.uniform(0, 1) + rng.standard_normal(wide.height) for k in range(n_metrics)}})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        study, val_w, val_c = clock(lambda: validate_metrics(metrics, ratings=ratings, options=ValidateOptions()))
    fit = study.theta_fit

    def pv():
        prep = prepare_like_fit(ratings, fit)
        est = estimates_from_result(fit, prep)
        return theta_pv_table(metrics, [c for c in metrics.columns if c != "exchange_id"], est, observations(est, prep), prep, draws=20, seed=0)

    table, pv_w, pv_c = clock(pv)
    return {
        "n_metrics": n_metrics, "n_exchanges": wide.height, "validate_wall_s": val_w, "validate_cpu_s": val_c,
        "pv_wall_s": pv_w, "pv_cpu_s": pv_c, "ratio_wall": (val_w + pv_w) / val_w, "ratio_cpu": (val_c + pv_c) / val_c,
        "median_fmi": float(np.median(table["pv_fmi"].to_numpy())), "reasons": sorted(set(table["reason"].to_list())),
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--items", type=int, default=None, help="exchanges of part A (default 50,000 = 1M ratings)")
    ap.add_argument("--metrics", type=int, default=None, help="metrics of part B (default 27)")
    ap.add_argument("--ratings", type=Path, default=C.DEFAULT_RATINGS)
    ap.add_argument("--name", default="measurement")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-md", action="store_true")
    args = ap.parse_args()
    result = C.header(args.name)
    n_items = args.items or (5_000 if args.quick else 50_000)
    result["a"] = a = part_a(n_items)
    print(f"A: {a['n_ratings']} ratings: beyond the fit {a['beyond_fit_wall_s']:.1f} s wall, {a['beyond_fit_cpu_s']:.1f} s CPU", file=sys.stderr)
    result["b"] = b = part_b(args.metrics or (9 if args.quick else 27), args.ratings) if args.ratings.exists() else None
    rows = [(k, f"{v['wall_s']:.2f}", f"{v['cpu_s']:.2f}") for k, v in a["steps"].items()]
    body = "\n".join([
        "## 23. The measurement report (`bench_measurement.py`, issue 38)", "",
        (f"**A.** {a['n_ratings']:,} ratings ({a['n_items']:,} exchanges × 5 criteria on 0–2 × 4 raters; c3 0.5 logit harder "
        f"for 40% `human`). Goal: fit + separation + DIF ≤ 30 s beyond the θ fit. **Beyond the fit: "
        f"{a['beyond_fit_wall_s']:.1f} s wall, {a['beyond_fit_cpu_s']:.1f} s CPU** (prepare again + arrays + fit + "
        f"separation + DIF). DIF classes (ETS, Rasch): {a['dif_classes']}, {a['rasch_classes']}."), "",
        C.md_table(rows, ["step", "wall s", "CPU s"]), "",
    ])  # fmt: skip
    if b:
        body += (
            f"\n**B.** MRBench ({b['n_exchanges']:,} exchanges, 8 criteria), {b['n_metrics']} synthetic metrics: `validate_metrics` "
            f"(θ estimated, BCa 9,999) {b['validate_wall_s']:.1f} s wall / {b['validate_cpu_s']:.1f} s CPU; the `theta_pv` rows "
            f"(M = 20, conditioned) {b['pv_wall_s']:.1f} s / {b['pv_cpu_s']:.1f} s CPU: **validate × {b['ratio_cpu']:.2f} "
            f"(CPU), × {b['ratio_wall']:.2f} (wall)** — goal ≤ 2×. Median FMI {b['median_fmi']:.2f}.\n"
        )
    body += "\n" + C.env_lines(result)
    return C.publish(args, result, body)


if __name__ == "__main__":
    raise SystemExit(main())
