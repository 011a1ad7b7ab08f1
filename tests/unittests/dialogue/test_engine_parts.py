"""The engine side of dialogues: prompts made of parts and aux texts, on every execution path."""

from __future__ import annotations

import numpy as np

from tutormetrics.engine import Scorer
from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.dialogue_turn import DialogueTurnMetrics

PARTS = [["where did the cat sit", "on the mat"], [], ["what is two plus four"], ["a", "", "b"]] * 3
RESP = ["the cat sat on the mat.", "yes", "it is six? why", "a b"] * 3
IDS = [f"e{i}" for i in range(len(PARTS))]


def test_parts_are_joined_for_the_text_families():
    joined = ["\n".join(p) for p in PARTS]
    a = Scorer("lexical", progress=False).score(IDS, PARTS, RESP)
    b = Scorer("lexical", progress=False).score(IDS, joined, RESP)
    assert a.equals(b)
    assert a["prompt_empty"].to_list()[:2] == [False, True]


def test_worker_processes_handle_parts_and_aux():
    aux = {"prev_student": ["on the mat", None, "", "b"] * 3}
    def fam():
        return ["overlap", DialogueTurnMetrics()]
    one = Scorer(fam(), chunk_size=5, n_jobs=1, progress=False).score(IDS, PARTS, RESP, aux)
    two = Scorer(fam(), chunk_size=5, n_jobs=2, progress=False).score(IDS, PARTS, RESP, aux)
    assert one.equals(two)
    jac = one["prev_student_jaccard_1"].to_numpy()
    assert jac[0] == 0.6 and np.isnan(jac[1]) and jac[2] == 0.0 and jac[3] == 0.5


def test_aux_indices_reach_the_families():
    seen = {}

    class Spy(Metric):
        name = "spy"
        description = "records aux"

        def columns(self, n_layers=None):
            return ["spy"]

        def score(self, batch: ExchangeBatch, art: Artifacts):
            seen["aux"] = [None if i < 0 else art.texts[i] for i in batch.aux_idx["x"]]
            return {"spy": np.zeros(len(batch))}

    Scorer([Spy()], progress=False).score(["a", "b"], ["p", ["q", "r"]], ["s", "t"], {"x": ["u", None]})
    assert seen["aux"] == ["u", None]
