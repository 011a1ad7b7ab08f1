"""The bundled example: 40 C++ debugging exchanges (10 problems × 4 tutors), two raters, five binary criteria.

``theta.csv`` holds θ (EAP, MFRM) estimated from ``ratings.csv`` with ``tutormetrics theta``.

>>> paths = example_paths()
>>> sorted(paths)
['exchanges', 'ratings', 'theta']

The dialogue example: 12 short math-tutoring conversations (a long table) and conversation-level ratings.

>>> sorted(dialogue_example_paths())
['dialogues', 'ratings']
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

#: Prompt columns of the example, joined as labelled sections.
EXAMPLE_PROMPT_COLUMNS = ["query", "code", "error"]


def example_paths() -> dict[str, Path]:
    """Paths of the bundled ``exchanges.csv``, ``ratings.csv`` and ``theta.csv``."""
    root = Path(str(files("tutormetrics.examples").joinpath("data")))
    return {name: root / f"{name}.csv" for name in ("exchanges", "ratings", "theta")}


#: Names ``run --example NAME`` accepts (``cpp`` is the default example above).
EXAMPLE_NAMES = ("cpp", "dialogue")


def dialogue_example_paths() -> dict[str, Path]:
    """Paths of the bundled ``dialogues.csv`` (long table of turns) and ``dialogue_ratings.csv``."""
    root = Path(str(files("tutormetrics.examples").joinpath("data")))
    return {"dialogues": root / "dialogues.csv", "ratings": root / "dialogue_ratings.csv"}
