"""Benchmark MML with effects (effects.md): fit + facet SEs + EAP θ + ``effects_table`` (4,000 draws).

Design (the seed study's shape, scaled): I exchanges × 5 criteria × 2 raters, binary scores, a 0/1
covariate (``suff``, 20%) and five multi-hot topics; optionally a continuous covariate as well
(``--continuous``: every exchange then has its own cells). Goal: 1M ratings ≤ 60 s on 2 cores.

Usage::

    python benchmarks/bench_effects.py                       # 100,000 exchanges = 1M ratings
    python benchmarks/bench_effects.py --n-items 20000       # a modest size on a busy machine
    python benchmarks/bench_effects.py --continuous --no-md

Writes ``benchmarks/results/effects.json`` and the ``effects`` section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import env_lines, header, md_table, publish
from tutormetrics.psychometrics.mfrm import fit_mfrm

B = np.array([1.517, 1.553, 0.0, -1.577, -1.493])


def simulate(n: int, continuous: bool, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    suff = (rng.random(n) < 0.2).astype(float)
    x = (rng.random((n, 5)) < 0.3).astype(float)
    beta = rng.normal(0, 0.4, (5, 5))
    beta -= beta.mean(1, keepdims=True)
    length = rng.gamma(2.0, 100.0, n)
    theta = rng.standard_normal(n)
    eta = theta[:, None] - B[None, :] + 0.5 * suff[:, None] + x @ beta.T
    if continuous:
        eta = eta + 0.2 * ((length - length.mean()) / length.std())[:, None]
    y = (rng.random((n, 5, 2)) < expit(eta[:, :, None] + np.array([0.05, -0.05]))).astype(np.float64)
    ids = pl.Series([f"x{i:06d}" for i in range(n)])
    ii, jj, rr = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(5), np.arange(2), indexing="ij"))
    ratings = pl.DataFrame({"exchange_id": ids.gather(ii), "rater": pl.Series(["r1", "r2"]).gather(rr),
                            "criterion": pl.Series([f"c{j + 1}" for j in range(5)]).gather(jj), "score": y.ravel()})  # fmt: skip
    cov = pl.DataFrame({"exchange_id": ids, "suff": suff, **({"length": length} if continuous else {})})
    topics = pl.DataFrame({"exchange_id": ids, **{f"t{k}": x[:, k].astype(np.int64) for k in range(5)}})
    return ratings, cov, topics


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-items", type=int, default=100_000)
    parser.add_argument("--continuous", action="store_true", help="add a continuous (z-scored) covariate")
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--name", default="effects")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--no-md", action="store_true")
    args = parser.parse_args()
    result = header(args.name)
    ratings, cov, topics = simulate(args.n_items, args.continuous)
    t0 = time.perf_counter()
    res = fit_mfrm(ratings, covariates=cov, topics=topics)
    t_fit = time.perf_counter() - t0
    t1 = time.perf_counter()
    eff = res.effects_table(n_draws=args.draws)
    t_eff = time.perf_counter() - t1
    result.update(
        n_ratings=ratings.height, n_items=args.n_items, continuous=args.continuous, draws=args.draws,
        seconds_fit=t_fit, seconds_effects=t_eff, seconds_total=t_fit + t_eff, converged=res.converged,
        iterations=res.n_iter, effect_rows=eff.height,
    )  # fmt: skip
    print(f"fit {t_fit:.1f} s, effects {t_eff:.1f} s", file=sys.stderr)
    rows = [[f"{ratings.height:,}", "suff (0/1) + 5 topics" + (" + length (z)" if args.continuous else ""),
             f"{t_fit:.1f}", f"{t_eff:.1f}", f"{t_fit + t_eff:.1f}", res.n_iter, res.converged]]  # fmt: skip
    body = (
        "## MML with effects (`bench_effects.py`)\n\n"
        "`fit_mfrm` (canonical coding, one likelihood term per unique pattern, facet SEs, EAP θ per θ-key) then "
        f"`effects_table(n_draws={args.draws})`; I × 5 criteria × 2 raters. Goal: 1M ratings ≤ 60 s on 2 cores.\n\n"
        + md_table(rows, ["ratings", "terms", "fit s", "effects s", "total s", "L-BFGS-B iterations", "converged"])
        + "\n\n" + env_lines(result)
    )
    return publish(args, result, body)


if __name__ == "__main__":
    raise SystemExit(main())
