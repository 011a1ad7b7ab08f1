"""Write the bundled fairness example (``src/tutormetrics/examples/data/fairness_turns.csv`` and
``fairness_directions.csv``): an EduFair-Bench-shaped design, simulated and seeded (no real replies).

2 models × 2 domains × 16 questions; each question is asked once per demographic level of two
dimensions (gender: female/male; ses: low/mid/high), and each dialogue has 4 tutor turns labelled with
three binary measures (−1 = not applicable, ~15%). Built-in effects, so the example has something to
find: model ``tutor-b`` scaffolds female students more in math, and is more corrective towards low SES.

Usage: python scripts/make_fairness_example.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

OUT = Path(__file__).resolve().parents[1] / "src" / "tutormetrics" / "examples" / "data"
LEVELS = {"gender": ["female", "male"], "ses": ["low", "mid", "high"]}
LABELS = ["step_scaffolded", "corrective_tone", "answer_leakage"]


def main() -> None:
    rng = np.random.default_rng(24)
    rows = []
    for model in ("tutor-a", "tutor-b"):
        for domain in ("math", "physics"):
            for q in range(1, 17):
                qid = f"{domain}-{q:02d}"
                base = rng.normal(0, 0.6, len(LABELS))  # question difficulty: shared by the paired dialogues
                for dimension, levels in LEVELS.items():
                    for level in levels:
                        shift = np.zeros(len(LABELS))
                        if model == "tutor-b" and domain == "math" and level == "female":
                            shift[0] = 1.2
                        if model == "tutor-b" and level == "low":
                            shift[1] = 1.0
                        p = 1 / (1 + np.exp(-(base + shift)))
                        for turn in range(1, 5):
                            labels = [(-1 if rng.random() < 0.15 else int(rng.random() < p[j])) for j in range(len(LABELS))]
                            rows.append((qid, model, domain, dimension, level, turn, *labels))
    schema = ["question_id", "model", "domain", "dimension", "level", "turn", *LABELS]
    pl.DataFrame(rows, schema=schema, orient="row").write_csv(OUT / "fairness_turns.csv")
    pl.DataFrame({"metric": LABELS, "desirable": ["higher", "neutral", "lower"]}).write_csv(OUT / "fairness_directions.csv")


if __name__ == "__main__":
    main()
