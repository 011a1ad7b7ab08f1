"""report/: embedding, file recognition, collection and the page (no browser; see tests/integration for that)."""

from __future__ import annotations

import json
import math
import re

import polars as pl
import pytest

from tutormetrics.errors import InputSchemaError
from tutormetrics.report import build_report, write_report
from tutormetrics.report.collect import classify, collect_study
from tutormetrics.report.embed import script_json
from tutormetrics.report.html import csp_hash

HOSTILE = ["</script><script>alert(1)</script>", "<!--", "a\u2028b\u2029c", "&amp;", "<img src=x onerror=alert(1)>", "{{DATA}}"]


@pytest.mark.parametrize("text", HOSTILE)
def test_script_json_is_inert_and_round_trips(text):
    out = script_json({"r": text, "n": [1.5, None]})
    assert not re.search(r"[<>&\u2028\u2029]", out)
    assert json.loads(out) == {"r": text, "n": [1.5, None]}


def test_script_json_refuses_nan():
    with pytest.raises(ValueError, match="not JSON compliant"):
        script_json([float("nan")])


@pytest.mark.parametrize(
    ("columns", "kind"),
    [
        (["metric", "target", "n", "rho", "control"], "correlations"),
        (["criterion", "n_units", "krippendorff_alpha", "gwet_ac1"], "agreement"),
        (["criterion", "judge", "reference", "accuracy"], "judge"),
        (["group", "variable", "n", "mean", "sd"], "summary"),
        (["metric", "group_a", "group_b", "r_rb"], "comparisons"),
        (["facet", "level", "estimate", "se"], "facets"),
        (["exchange_id", "theta", "theta_sd"], "theta"),
        (["conversation_id", "n_turns", "n_tutor_turns", "talk_ratio"], "conversations"),
        (["exchange_id", "conversation_id", "turn", "tutor_turn", "resp_words"], "metrics"),
        (["metric", "theta", "mistake_location"], None),  # rho_matrix: not shown
    ],
)
def test_classify(columns, kind):
    assert classify(columns) == kind


@pytest.fixture(scope="module")
def study(tmp_path_factory, example_dir):
    """The example scored with the lexical metrics (no encoder), θ estimated, Fisher CIs: a real run folder."""
    from tutormetrics.cli import main

    out = tmp_path_factory.mktemp("rep") / "study"
    code = main(["run", str(example_dir / "exchanges.csv"), "--ratings", str(example_dir / "ratings.csv"), "--prompt", "query",
                 "--prompt", "code", "--prompt", "error", "-m", "lexical", "--ci", "fisher", "-o", str(out), "--no-progress"])
    assert code == 0
    return out


def test_run_writes_the_report(study, example_dir):
    page = (study / "report.html").read_text(encoding="utf8")
    data = json.loads(re.search(r'<script type="application/json" id="tm-data">(.*?)</script>', page, re.DOTALL).group(1))
    ex = pl.read_csv(example_dir / "exchanges.csv")
    assert data["exchanges"]["ids"] == ex["exchange_id"].to_list()
    texts, resp = data["exchanges"]["texts"], data["exchanges"]["response"]
    assert [texts[i] for i in resp] == ex["response"].to_list()
    first_prompt = texts[data["exchanges"]["prompt"][0]]
    assert first_prompt.startswith("Query:\n") and "\n\nCode:\n" in first_prompt  # as score joined it
    corr = pl.read_csv(study / "correlations.csv")
    table = data["correlations"][0]["table"]
    assert len(table["rows"]) == corr.height and data["correlations"][0]["control"] == ""
    rho = dict(zip(zip(corr["metric"], corr["target"], strict=True), corr["rho"], strict=True))
    got = {(r[table["columns"].index("metric")], r[table["columns"].index("target")]): r[table["columns"].index("rho")] for r in table["rows"]}
    assert all(abs(got[k] - v) < 1e-6 for k, v in rho.items() if v is not None and not math.isnan(v))
    assert data["exchanges"]["ratings"]["mistake_location"][0] in (0, 0.5, 1)
    assert len(data["exchanges"]["theta"]["theta"]) == ex.height
    assert {a["file"] for a in data["agreement"]} == {"agreement.csv"}
    assert data["families"]["ttr"] == "diversity" and data["families"]["jaccard_1"] == "overlap"


def test_csp_allows_only_the_page_own_script_and_style(study):
    page = (study / "report.html").read_text(encoding="utf8")
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    script = re.search(r"<script>(.*)</script>\s*</body>", page, re.DOTALL).group(1)
    style = re.search(r"<style>(.*?)</style>", page, re.DOTALL).group(1)
    assert f"script-src {csp_hash(script)};" in csp and f"style-src {csp_hash(style)};" in csp
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert page.count("<script") == 2


def test_hostile_texts_never_reach_markup(tmp_path, example_dir):
    ex = pl.read_csv(example_dir / "exchanges.csv")
    ex = ex.with_columns(pl.Series("response", [HOSTILE[i % len(HOSTILE)] for i in range(ex.height)]))
    ex.write_csv(tmp_path / "ex.csv")
    from tutormetrics.cli import main

    out = tmp_path / "o"
    assert main(["run", str(tmp_path / "ex.csv"), "--ratings", str(example_dir / "ratings.csv"), "--prompt", "query",
                 "-m", "length", "--ci", "none", "-o", str(out), "--no-progress"]) == 0
    page = (out / "report.html").read_text(encoding="utf8")
    assert "onerror" in page and "<img" not in page and page.count("</script>") == 2 and "<!--" not in page
    data = json.loads(re.search(r'id="tm-data">(.*?)</script>', page, re.DOTALL).group(1))
    assert set(data["exchanges"]["texts"]) >= set(HOSTILE)


def test_optional_tables_and_missing_input(study, tmp_path):
    folder = tmp_path / "copy"
    folder.mkdir()
    for name in ("metrics.csv", "metrics.csv.manifest.json", "correlations.csv", "theta.csv", "facets.csv"):
        (folder / name).write_bytes((study / name).read_bytes())
    pl.DataFrame({"group": ["A", "B"], "variable": ["ttr"] * 2, "n": [3, 4], "mean": [0.5, 0.6], "sd": [0.1, 0.2],
                  "median": [0.5, 0.6], "ci_low": [0.4, 0.5], "ci_high": [0.6, 0.7]}).write_csv(folder / "per_tutor.csv")
    corr = pl.read_csv(study / "correlations.csv").with_columns(pl.lit("resp_words").alias("control"))
    corr.write_csv(folder / "correlations_controlled.csv")
    manifest = json.loads((folder / "metrics.csv.manifest.json").read_text())
    manifest["input"] = str(tmp_path / "moved.csv")
    (folder / "metrics.csv.manifest.json").write_text(json.dumps(manifest))
    data = collect_study(folder)
    assert [c["control"] for c in data["correlations"]] == ["", "resp_words"]
    assert data["summary"][0]["file"] == "per_tutor.csv"
    assert "agreement" not in data and "comparisons" not in data and "dialogues" not in data
    assert "texts" not in data["exchanges"] and any("not found" in n for n in data["notes"])
    page = build_report(folder, exchanges=study.parent / "nowhere.csv")
    assert "tm-data" in page


def test_dialogue_turns(tmp_path):
    long = pl.DataFrame({
        "conversation_id": ["c1", "c1", "c1", "c2", "c2"], "turn": [2, 0, 1, 0, 1],
        "role": ["tutor", "student", "tutor", "student", "tutor"],
        "text": ["Try again </script>", "I got 5", "Why 5?", "hi", "hello"],
    })
    long.write_csv(tmp_path / "dialogues.csv")
    folder = tmp_path / "out"
    folder.mkdir()
    pl.DataFrame({"exchange_id": ["c1:1", "c1:2", "c2:1"], "conversation_id": ["c1", "c1", "c2"], "turn": [1, 2, 1],
                  "tutor_turn": [1, 2, 1], "ctx_turns": [1, 2, 1], "resp_words": [2.0, 3.0, 1.0]}).write_csv(folder / "turns.csv")
    (folder / "turns.csv.manifest.json").write_text(json.dumps({"input": str(tmp_path / "dialogues.csv"), "options": {}}))
    data = collect_study(folder)
    c1 = data["dialogues"][0]
    assert c1["conversation_id"] == "c1" and [t["turn"] for t in c1["turns"]] == ["0", "1", "2"]
    assert [t["role"] for t in c1["turns"]] == ["student", "tutor", "tutor"]
    ex = data["exchanges"]
    assert [ex["texts"][i] for i in ex["response"]] == ["Why 5?", "Try again </script>", "hello"]
    out = write_report(folder, tmp_path / "r.html")
    assert "<\\/script>" not in out.read_text() and out.read_text().count("</script>") == 2


def test_not_a_study_folder(tmp_path):
    with pytest.raises(InputSchemaError, match="no table the report can show"):
        collect_study(tmp_path)
    with pytest.raises(InputSchemaError, match="not a folder"):
        collect_study(tmp_path / "missing")


def test_large_studies_embed_a_sample(study):
    full = collect_study(study)
    part = collect_study(study, max_exchanges=7)
    ids = full["exchanges"]["ids"]
    assert len(part["exchanges"]["ids"]) == 7 and len(part["exchanges"]["response"]) == 7
    assert [i for i in ids if i in set(part["exchanges"]["ids"])] == part["exchanges"]["ids"]  # input order kept
    assert any("random sample of 7 of 40" in n for n in part["notes"])
    assert part["correlations"] == full["correlations"]


def test_assets_cannot_close_their_own_elements():
    from tutormetrics.report.html import _asset

    assert not re.search(r"</script|<!--", _asset("report.js"), re.IGNORECASE)
    assert "</style" not in _asset("report.css").lower()


def test_report_command(study, tmp_path, capsys):
    from tutormetrics.cli import main

    out = tmp_path / "sub" / "r.html"
    assert main(["report", str(study), "-o", str(out)]) == 0
    assert "report:" in capsys.readouterr().err and out.read_text().startswith("<!DOCTYPE html>")
    assert json.loads((study / "run.json").read_text())["files"]["report"].endswith("report.html")
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2  # a folder without any table
    assert "no table the report can show" in capsys.readouterr().err


def test_ids_with_leading_zeros_keep_their_texts(tmp_path):
    from tutormetrics.cli import main

    ex = pl.DataFrame({"exchange_id": ["007", "010", "011"], "prompt": ["What is 2+2?", "Name a prime.", "Why?"],
                       "response": ["Four, because 2+2=4.", "Seven is prime.", "Because it is."]})
    ex.write_csv(tmp_path / "ex.csv")
    ratings = pl.DataFrame({"exchange_id": ["007", "010", "011"] * 2, "rater": ["a"] * 3 + ["b"] * 3,
                            "criterion": ["ok"] * 6, "score": [1, 0, 1, 1, 1, 0]})
    ratings.write_csv(tmp_path / "r.csv")
    out = tmp_path / "o"
    assert main(["run", str(tmp_path / "ex.csv"), "--ratings", str(tmp_path / "r.csv"), "-m", "length", "--ci", "none",
                 "--no-estimate-theta", "-o", str(out), "--no-progress"]) == 0
    data = collect_study(out)
    ex_ = data["exchanges"]
    assert ex_["ids"] == ["007", "010", "011"]
    assert [ex_["texts"][i] for i in ex_["response"]] == ex["response"].to_list()
    assert ex_["ratings"]["ok"] == [1, 0.5, 0.5]


def test_a_validate_output_alone(study, tmp_path):
    (tmp_path / "corr.csv").write_bytes((study / "correlations.csv").read_bytes())
    data = collect_study(tmp_path)
    assert "exchanges" not in data and data["correlations"][0]["file"] == "corr.csv"
    assert "tm-data" in build_report(tmp_path)


def test_report_shows_the_ratings_run_correlated_under_levels_and_drop_out_of_scale(tmp_path, example_dir):
    """--levels 0,1 --drop-out-of-scale drops three ratings of 2: run's targets.csv, its correlations and the report's
    per-exchange ratings all use the ratings without them (the report once re-aggregated the file, with them)."""
    from scipy import stats

    from tutormetrics.cli import main

    ratings = pl.read_csv(example_dir / "ratings.csv")
    rows = ratings.with_row_index().filter((pl.col("criterion") == "mistake_location") & (pl.col("rater") == "r1"))
    changed = rows["index"].head(3).to_list()
    edited = ratings.with_row_index().with_columns(
        pl.when(pl.col("index").is_in(changed)).then(2).otherwise(pl.col("score")).alias("score")).drop("index")
    edited.write_csv(tmp_path / "r.csv")
    out = tmp_path / "study"
    code = main(["run", str(example_dir / "exchanges.csv"), "--ratings", str(tmp_path / "r.csv"), "--prompt", "query",
                 "-m", "lexical", "--ci", "none", "--n-permutations", "99", "--no-estimate-theta", "--levels", "0,1",
                 "--drop-out-of-scale", "-o", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    kept = edited.filter(pl.col("score") <= 1)  # by hand: the ratings on the scale, mean over raters
    expected = kept.group_by("exchange_id", "criterion").agg(pl.col("score").cast(pl.Float64).mean())
    expected = expected.pivot(on="criterion", index="exchange_id", values="score")
    targets = pl.read_csv(out / "targets.csv")
    assert json.loads((out / "run.json").read_text())["files"]["targets"].endswith("targets.csv")
    ex = collect_study(out)["exchanges"]
    shown = pl.DataFrame({"exchange_id": ex["ids"], **{c: pl.Series(v, dtype=pl.Float64) for c, v in ex["ratings"].items()}})
    for table in (targets, shown):
        both = expected.join(table, on="exchange_id", suffix="_got")
        assert both.height == 40 and set(table.columns) - {"exchange_id"} == set(expected.columns) - {"exchange_id"}
        for c in set(expected.columns) - {"exchange_id"}:
            assert both[c].to_list() == both[f"{c}_got"].to_list(), c
    dropped = set(ratings["exchange_id"][changed].to_list())
    assert all(v in (0.0, 1.0) for i, v in zip(ex["ids"], ex["ratings"]["mistake_location"], strict=True) if i in dropped)
    corr = pl.read_csv(out / "correlations.csv").filter((pl.col("metric") == "ttr") & (pl.col("target") == "mistake_location"))
    data = pl.read_csv(out / "metrics.csv").join(shown, on="exchange_id", suffix="_r")
    assert corr["rho"][0] == pytest.approx(stats.spearmanr(data["ttr"], data["mistake_location"]).statistic, abs=1e-12)
