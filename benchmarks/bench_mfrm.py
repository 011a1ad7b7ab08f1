"""Benchmark the MML many-facet Rasch model: fit time by size and a parameter-recovery study.

Usage::

    python benchmarks/bench_mfrm.py            # 2.5k / 100k / 1M ratings + 30 replications
    python benchmarks/bench_mfrm.py --quick    # 2.5k / 100k only, 10 replications

Writes ``benchmarks/results/mfrm.json`` and prints a Markdown table. Design (statistics.md §2.6):
fully crossed, J = 5 criteria, R = 2 raters, b = (1.517, 1.553, 0, −1.577, −1.493), s = ±0.036.
Fit time includes the facet SEs (finite-difference Hessian) and the EAP theta.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import polars as pl

from tutormetrics.psychometrics.mfrm.mml import fit_mfrm, simulate_mfrm

B_TRUE = np.array([1.517, 1.553, 0.0, -1.577, -1.493])
S_TRUE = np.array([0.036, -0.036])


def time_fit(n_items: int, repeats: int, seed: int = 0) -> dict:
    ratings, _ = simulate_mfrm(n_items=n_items, seed=seed)
    times = []
    res = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fit_mfrm(ratings)
        times.append(time.perf_counter() - t0)
    assert res is not None
    return {
        "n_ratings": ratings.height,
        "n_items": n_items,
        "runs": repeats,
        "seconds_median": statistics.median(times),
        "seconds_all": times,
        "iterations": res.n_iter,
        "converged": res.converged,
    }


def time_full_model(n_items: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    gamma = rng.normal(0, 0.5, 5)
    beta = rng.normal(0, 0.5, (5, 3))
    beta -= beta.mean(axis=1, keepdims=True)
    ratings, truth = simulate_mfrm(n_items=n_items, seed=0, gamma=gamma, beta=beta)
    cov, grp = truth.select("exchange_id", "v"), truth.select("exchange_id", "group")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fit_mfrm(ratings, covariates=cov, groups=grp)
        times.append(time.perf_counter() - t0)
    return {
        "n_ratings": ratings.height,
        "runs": repeats,
        "seconds_median": statistics.median(times),
        "iterations": res.n_iter,
        "converged": res.converged,
    }


def recovery(n_reps: int) -> dict:
    corr, abs_err, b_hat, cover_theta, cover_b, cover_s = [], [], [], [], [], []
    for rep in range(n_reps):
        ratings, truth = simulate_mfrm(seed=10_000 + rep)
        res = fit_mfrm(ratings)
        joined = truth.join(res.theta_table(), on="exchange_id", suffix="_hat")
        corr.append(float(np.corrcoef(joined["theta"], joined["theta_hat"])[0, 1]))
        abs_err.append(np.abs(res.b - B_TRUE))
        b_hat.append(res.b)
        cover_theta.append(float(((joined["theta_low"] <= joined["theta"]) & (joined["theta"] <= joined["theta_high"])).mean()))
        ft = res.facets_table()
        crit = ft.filter(pl.col("facet") == "criterion")
        cover_b.append(float(((crit["lower"].to_numpy() <= B_TRUE) & (B_TRUE <= crit["upper"].to_numpy())).mean()))
        rat = ft.filter(pl.col("facet") == "rater")
        cover_s.append(float(((rat["lower"].to_numpy() <= S_TRUE) & (S_TRUE <= rat["upper"].to_numpy())).mean()))
    return {
        "replications": n_reps,
        "theta_corr_mean": float(np.mean(corr)),
        "theta_cover_94": float(np.mean(cover_theta)),
        "b_abs_error_mean": float(np.mean(abs_err)),
        "b_rmse": float(np.sqrt(np.mean(np.square(np.array(b_hat) - B_TRUE)))),
        "b_hat_mean": [float(v) for v in np.mean(b_hat, axis=0)],
        "b_cover_94": float(np.mean(cover_b)),
        "s_cover_94": float(np.mean(cover_s)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip 1M ratings and run 10 replications")
    parser.add_argument("--output", type=Path, default=Path(__file__).resolve().parent / "results" / "mfrm.json")
    args = parser.parse_args()

    sizes = [(249, 3), (10_000, 3)] + ([] if args.quick else [(100_000, 1)])
    timings = [time_fit(n, r) for n, r in sizes]
    full = time_full_model(249, 3)
    rec = recovery(10 if args.quick else 30)
    result = {
        "benchmark": "mfrm_mml",
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()},
        "design": "J=5 criteria, R=2 raters, fully crossed, 21 Gauss-Hermite nodes, binary scores",
        "timings": timings,
        "full_model_2.5k": full,
        "recovery": rec,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2))

    print("| ratings | runs | fit time (s, median) | L-BFGS-B iterations | converged |")
    print("|---|---|---|---|---|")
    for t in timings:
        print(f"| {t['n_ratings']:,} | {t['runs']} | {t['seconds_median']:.3f} | {t['iterations']} | {t['converged']} |")
    print(
        f"| {full['n_ratings']:,} (+ covariate, 3 groups) | {full['runs']} | {full['seconds_median']:.3f} | "
        f"{full['iterations']} | {full['converged']} |"
    )
    print()
    print(f"| recovery ({rec['replications']} reps, I=249) | value |")
    print("|---|---|")
    print(f"| corr(EAP, θ) mean | {rec['theta_corr_mean']:.3f} |")
    print(f"| EAP 94% coverage | {rec['theta_cover_94']:.3f} |")
    print(f"| mean abs(b̂ − b) | {rec['b_abs_error_mean']:.3f} |")
    print(f"| b RMSE | {rec['b_rmse']:.3f} |")
    print(f"| mean b̂ | ({', '.join(f'{v:.3f}' for v in rec['b_hat_mean'])}) |")
    print(f"| b 94% coverage | {rec['b_cover_94']:.3f} |")
    print(f"| s 94% coverage | {rec['s_cover_94']:.3f} |")
    print(f"\nwrote {args.output}")


if __name__ == "__main__":
    main()
