"""dialogue.md on real multi-turn data: MRBench histories ("Tutor: …"/"Student: …" lines) through
``score --transcript-col prompt``, against an independent plain-Python re-computation."""

from __future__ import annotations

import math
import re
import statistics

import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.text import (
    split_sentences,  # S(x) is the spec's splitter, tested on its own in metrics/
)

WORD = re.compile(r"\w+(?:['\u2019-]\w+)*")


def toks(text: str) -> list[str]:
    import unicodedata

    return WORD.findall(unicodedata.normalize("NFC", text).lower())


def parse(history: str) -> list[tuple[str, str]]:
    """MRBench histories: every line starts 'Tutor:' or 'Student:' or continues the turn above."""
    turns: list[tuple[str, list[str]]] = []
    for line in history.splitlines():
        head, sep, rest = line.partition(":")
        if sep and head.strip().lower() in ("tutor", "student"):
            turns.append((head.strip().lower(), [rest]))
        else:
            turns[-1][1].append(line)
    return [(who, "\n".join(lines).strip()) for who, lines in turns]


def jac(a: list[str], b: list[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else math.nan


def questions(text: str) -> int:
    return sum(1 for s in split_sentences(text) if re.search(r"[?？][?？!！]*[\"'”’)\]」』）】]*$", s.rstrip()))


@pytest.fixture(scope="module")
def scored(mrbench_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mrb")
    frame = pl.read_csv(mrbench_dir / "exchanges.csv", infer_schema=False).sample(n=250, seed=11)
    frame.write_csv(tmp / "ex.csv")
    code = main(["score", str(tmp / "ex.csv"), "--transcript-col", "prompt", "-o", str(tmp / "turns.csv"),
                 "--conversations", str(tmp / "conv.csv"), "-m", "overlap,length", "--no-progress"])  # fmt: skip
    assert code == 0
    return frame, pl.read_csv(tmp / "turns.csv", infer_schema_length=None), pl.read_csv(tmp / "conv.csv", infer_schema_length=None)


def test_turns_match_an_independent_computation(scored):
    frame, turns, _ = scored
    got = {r["exchange_id"]: r for r in turns.iter_rows(named=True)}
    n = 0
    for row in frame.iter_rows(named=True):
        convo = parse(row["prompt"]) + [("tutor", row["response"] or "")]
        last_student = None
        for i, (who, text) in enumerate(convo):
            if who == "student":
                last_student = text
                continue
            r = got[f"{row['exchange_id']}:{i}"]
            context = "\n".join(t for _, t in convo[:i])
            p, q = toks(context), toks(text)
            assert r["ctx_turns"] == i
            assert r["resp_words"] == len(q)
            for col, want in (
                ("jaccard_1", jac(p, q)),
                ("contain_prompt_in_resp", len(set(p) & set(q)) / len(set(p)) if p else math.nan),
                ("len_ratio", len(q) / len(p) if p else math.nan),
                ("prev_student_jaccard_1", math.nan if last_student is None else jac(toks(last_student), q)),
                ("resp_questions", questions(text)),
            ):
                value = r[col]
                assert (math.isnan(want) and math.isnan(value)) or value == pytest.approx(want, abs=1e-9), (col, r["exchange_id"])
            n += 1
    assert n == turns.height > 800  # histories hold several tutor turns each


def test_conversations_match_an_independent_computation(scored):
    frame, turns, conv = scored
    got = {r["conversation_id"]: r for r in conv.iter_rows(named=True)}
    for row in frame.iter_rows(named=True):
        convo = parse(row["prompt"]) + [("tutor", row["response"] or "")]
        tutor = [toks(t) for w, t in convo if w == "tutor"]
        student = [toks(t) for w, t in convo if w == "student"]
        c = got[row["exchange_id"]]
        assert (c["n_turns"], c["n_tutor_turns"], c["n_student_turns"]) == (len(convo), len(tutor), len(student))
        tw, sw = sum(map(len, tutor)), sum(map(len, student))
        assert (c["tutor_words"], c["student_words"]) == (tw, sw)
        assert c["talk_ratio"] == pytest.approx(tw / sw if sw else math.nan, nan_ok=True)
        qs = [questions(t) >= 1 for w, t in convo if w == "tutor"]
        assert c["tutor_question_rate"] == pytest.approx(sum(qs) / len(qs))
        maxima = [max((v for v in (jac(tutor[j], tutor[k]) for j in range(k)) if not math.isnan(v)), default=math.nan)
                  for k in range(1, len(tutor))]  # fmt: skip
        maxima = [m for m in maxima if not math.isnan(m)]
        assert c["tutor_self_jaccard"] == pytest.approx(statistics.mean(maxima) if maxima else math.nan, nan_ok=True)
        mine = turns.filter(pl.col("conversation_id") == row["exchange_id"])["jaccard_1"].to_list()
        mine = [v for v in mine if not math.isnan(v)]
        assert c["mean_jaccard_1"] == pytest.approx(statistics.mean(mine) if mine else math.nan, nan_ok=True)
