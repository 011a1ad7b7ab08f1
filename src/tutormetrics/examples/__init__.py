"""The bundled examples.

* 40 C++ debugging exchanges (10 problems × 4 tutors), two raters, five binary criteria;
  ``theta.csv`` holds θ (EAP, MFRM) estimated from ``ratings.csv`` with ``tutormetrics theta``.
* ``cjk_exchanges.csv``: 12 Chinese and Japanese programming-help exchanges (no ratings), for the
  CJK tokeniser, the ``lang`` column and the concision columns (docs/design/languages.md#languages).

>>> paths = example_paths()
>>> sorted(paths)
['exchanges', 'ratings', 'theta']
>>> cjk_example_path().name
'cjk_exchanges.csv'

The dialogue example: 12 short math-tutoring conversations (a long table) and conversation-level ratings.

>>> sorted(dialogue_example_paths())
['dialogues', 'ratings']

The fairness example (``docs/design/studies.md#seed-studies``, simulated by ``scripts/make_fairness_example.py``): tutor turns
of 2 models × 2 domains × 16 questions asked at every level of gender and SES, three binary labels with
−1 = not applicable, and the labels' desirable directions.

>>> sorted(fairness_example_paths())
['directions', 'turns']
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


def cjk_example_path() -> Path:
    """Path of the bundled ``cjk_exchanges.csv`` (columns exchange_id, conversation_id, tutor, prompt, response)."""
    return Path(str(files("tutormetrics.examples").joinpath("data"))) / "cjk_exchanges.csv"
#: Names ``run --example NAME`` accepts (``cpp`` is the default example above).
EXAMPLE_NAMES = ("cpp", "dialogue", "fairness")


def dialogue_example_paths() -> dict[str, Path]:
    """Paths of the bundled ``dialogues.csv`` (long table of turns) and ``dialogue_ratings.csv``."""
    root = Path(str(files("tutormetrics.examples").joinpath("data")))
    return {"dialogues": root / "dialogues.csv", "ratings": root / "dialogue_ratings.csv"}


def fairness_example_paths() -> dict[str, Path]:
    """Paths of the bundled ``fairness_turns.csv`` and ``fairness_directions.csv``."""
    root = Path(str(files("tutormetrics.examples").joinpath("data")))
    return {"turns": root / "fairness_turns.csv", "directions": root / "fairness_directions.csv"}
