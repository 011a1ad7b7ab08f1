"""One run key, one manifest and one chunk pipeline for the local and dialogue engines; concurrency over any
picklable callable; no import circle in the package even at type level."""

from __future__ import annotations

import ast
import hashlib
import json
import operator
from pathlib import Path

import polars as pl
import pytest

from tutormetrics.dialogue.file_scoring import DialogueOptions, score_dialogue_file
from tutormetrics.engine.checkpoint import Checkpoint
from tutormetrics.engine.concurrency import parallel_map, worker_process
from tutormetrics.engine.file_scoring import ScoreOptions, build_scorer, score_file
from tutormetrics.engine.run_stats import ScoreStats
from tutormetrics.engine.run_summary import run_key
from tutormetrics.engine.run_warnings import long_text_warning, mostly_nan_warnings, run_notes
from tutormetrics.io.hashing import file_sha256

SRC = Path(__file__).resolve().parents[3] / "src" / "tutormetrics"

DIALOGUE = (
    "conversation_id,turn,role,text\n"
    "c1,0,student,Is 9 prime?\nc1,1,tutor,No. Why not?\nc1,2,student,It is 3 times 3.\nc1,3,tutor,Right!\n"
    "c2,0,student,What is 2+2?\nc2,1,tutor,What do you think?\n"
    "c3,0,student,\nc3,1,tutor,Tell me more?\n"
)


def test_run_key_is_the_input_sha256_and_what_changes_numbers(tmp_path):
    src = tmp_path / "x.csv"
    src.write_text("prompt,response\na,b\n")
    options = ScoreOptions(metrics="length")
    scorer = build_scorer(options)
    key = run_key(src, scorer, options=options.result_key())
    from tutormetrics import __version__

    meta = {"input_sha256": file_sha256(src), "options": options.result_key(), "resolved": {},  # nothing `auto` ran
            "params": {f.name: f.get_params() for f in scorer.families}, "encoder": None, "version": __version__}
    assert key == hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode()).hexdigest()
    assert run_key(src, scorer, options=ScoreOptions(metrics="length", progress=True).result_key()) == key  # not a number
    assert run_key(src, scorer, options=ScoreOptions(metrics="length", lang="en").result_key()) != key
    src.write_text("prompt,response\na,c\n")
    assert run_key(src, scorer, options=options.result_key()) != key


def test_one_wording_for_long_texts_and_mostly_nan():
    assert long_text_warning(1, 2, 6, "window") == "1 of 2 unique texts exceeded max_seq_length=6 and were windowed"
    assert long_text_warning(3, 9, 8, "truncate", unit="exchanges") == "3 of 9 exchanges exceeded max_seq_length=8 and were truncated"
    stats = ScoreStats(n_exchanges=12, nan_counts={"mattr": 12, "ttr": 2}, nan_reasons={"mattr": {"short": 12}})
    from tutormetrics.engine.scorer import Scorer

    (message,) = mostly_nan_warnings(stats, Scorer("lexical_richness").nan_hints())
    assert message.startswith("mattr is NaN for 12 of 12 exchanges (short: 12); the replies are shorter than mattr_window")
    assert mostly_nan_warnings(ScoreStats(n_exchanges=9, nan_counts={"mattr": 9})) == []  # too few rows to say
    notes, _ = run_notes(stats, ["lexical_richness"])
    assert notes == []  # mattr's reasons are in its warning already


def _score_dialogues(src: Path, out: Path) -> dict:
    score_dialogue_file(src, out, ScoreOptions(metrics="lexical", chunk_size=1, progress=False), DialogueOptions())
    return json.loads(out.with_name(out.name + ".manifest.json").read_text())


def test_resumed_dialogue_run_reports_what_an_uninterrupted_one_does(tmp_path, monkeypatch):
    src = tmp_path / "d.csv"
    src.write_text(DIALOGUE)
    fresh_manifest = _score_dialogues(src, tmp_path / "fresh.csv")
    real_save = Checkpoint.save

    def save_then_stop(self, index, *rest):
        real_save(self, index, *rest)
        if index == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(Checkpoint, "save", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        _score_dialogues(src, tmp_path / "o.csv")
    chunks = json.loads((tmp_path / "o.csv.partial" / "chunks.json").read_text())["chunks"]
    # a chunk's counts are saved with it; --chunk-size 1 cuts the 2-tutor-turn conversation into pieces of one
    # (docs/design/dialogue.md#context-memory)
    assert [e["stats"]["n_exchanges"] for e in chunks.values()] == [1, 1]
    monkeypatch.setattr(Checkpoint, "save", real_save)
    resumed_manifest = _score_dialogues(src, tmp_path / "o.csv")
    assert (tmp_path / "o.csv").read_bytes() == (tmp_path / "fresh.csv").read_bytes()
    assert resumed_manifest["stats"] == fresh_manifest["stats"] and resumed_manifest["stats"]["n_exchanges"] == 4
    assert resumed_manifest["warnings"] == fresh_manifest["warnings"]


def test_local_and_dialogue_manifests_share_one_builder(tmp_path):
    src = tmp_path / "d.csv"
    src.write_text(DIALOGUE)
    dialogue = _score_dialogues(src, tmp_path / "t.csv")
    ex = tmp_path / "e.csv"
    pl.DataFrame({"prompt": ["Is 9 prime?", ""], "response": ["No. Why not?", "ok"]}).write_csv(ex)
    local = score_file(ex, tmp_path / "s.csv", ScoreOptions(metrics="lexical", progress=False)).manifest
    tail = ["options", "warnings", "nan_reasons"]
    assert [k for k in dialogue if k in tail] == tail == [k for k in local if k in tail]
    common = {"tutormetrics", "python", "metrics", "stats", "text", "input"}
    assert common <= set(dialogue) and common <= set(local)
    assert dialogue["metrics"]["dialogue_turn"]["class"] == "DialogueTurnMetrics"  # the registered family


def test_parallel_map_is_generic_and_keeps_order():
    items = [(i, -i) for i in range(9)]
    assert list(parallel_map(operator.sub, [], 2)) == []
    assert list(parallel_map(sum, items, 2)) == [0] * 9
    assert list(parallel_map(max, items, 1)) == list(range(9))
    pool = worker_process()
    try:
        assert pool.submit(operator.add, 2, 3).result() == 5
    finally:
        pool.shutdown()


def _imports(path: Path) -> set[str]:
    """Every tutormetrics module ``path`` imports, TYPE_CHECKING blocks included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tutormetrics"):
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("tutormetrics")}
    return found


def test_no_import_circle_even_at_type_level():
    modules = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    graph = {m: {d for d in _imports(p) if d in modules and d != m and not m.startswith(d + ".")} for m, p in modules.items()}
    assert "tutormetrics.engine.scorer" not in graph["tutormetrics.engine.concurrency"]

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo.extend(graph[m])
        return False

    circles = sorted((a, b) for a in graph for b in graph[a] if reaches(b, a))
    assert circles == []
