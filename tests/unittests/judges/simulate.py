"""Simulated judge studies (``docs/guide/judges.md#validation``): dialogues of tutor replies whose latent
quality has an intra-dialogue correlation (ICC) and rises with log length, two humans, and judges."""

from __future__ import annotations

import numpy as np
import polars as pl


def length_study(seed: int, n_dialogues: int = 120, per: int = 8, bias: float = 0.5, icc: float = 0.3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Ratings on a 0–10 scale: humans A and B (independent noise), judge ``J`` adding ``bias`` points per SD
    of log length plus a dialogue-level error with ``icc``, and judge ``N`` measuring what the humans measure
    with its own independent error (no length effect). Returns (long ratings, metrics table)."""
    rng = np.random.default_rng(seed)
    n = n_dialogues * per
    dialogue = np.repeat(np.arange(n_dialogues), per)
    words = np.maximum(1, np.round(np.exp(rng.normal(3.5, 0.6, n))))
    x = np.log1p(words)
    z = (x - x.mean()) / x.std(ddof=1)
    quality = np.sqrt(icc) * rng.normal(size=n_dialogues)[dialogue] + np.sqrt(1 - icc) * rng.normal(size=n) + 0.5 * z

    def score(err: np.ndarray, shift: np.ndarray | float = 0.0) -> np.ndarray:
        return np.clip(np.round(5 + quality + err + shift), 0, 10)

    noise = lambda: 0.6 * rng.normal(size=n)  # noqa: E731
    judge_err = 0.6 * (np.sqrt(icc) * rng.normal(size=n_dialogues)[dialogue] + np.sqrt(1 - icc) * rng.normal(size=n))
    raters = {"A": score(noise()), "B": score(noise()), "J": score(judge_err, bias * z), "N": score(noise())}
    ids = [f"r{i:05d}" for i in range(n)]
    conv = [f"d{d:04d}" for d in dialogue]
    long = pl.DataFrame({
        "exchange_id": np.tile(ids, 4), "conversation_id": np.tile(conv, 4), "rater": np.repeat(list(raters), n),
        "criterion": "overall", "score": np.concatenate(list(raters.values())),
    })  # fmt: skip
    return long, pl.DataFrame({"exchange_id": ids, "conversation_id": conv, "resp_words": words})
