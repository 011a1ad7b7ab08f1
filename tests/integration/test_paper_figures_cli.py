"""Figures at paper width from the command line (``docs/guide/paper.md#figures``, ``#heatmap``): ``theta
--effects-plot``/``--dpi``, the small-multiple ``compare --figure`` and ``heatmap``'s ``--metrics-cols``/
``--families``/``--targets``, drawn at ``--dpi 100`` on the seeded synthetic data: at most 700 px wide, a white
border, the sizes paper.md §7 gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main


def _png(path: Path) -> np.ndarray:
    from matplotlib.image import imread

    return imread(str(path))


def _paper_png(path: Path) -> tuple[int, int]:
    img = _png(path)
    h, w = img.shape[:2]
    assert w <= 700
    border = np.concatenate([img[0, :, :3], img[-1, :, :3], img[:, 0, :3], img[:, -1, :3]])
    assert np.allclose(border, 1.0), f"{path}: the border is not background"
    return w, h


def test_effects_plot_is_seven_by_two_point_two(paper_data: Path, tmp_path: Path) -> None:
    d = paper_data / "s000"
    fig = tmp_path / "fig3.png"
    assert main(["theta", str(d / "ratings_raw.csv"), "--recode", "0.5=0", "--covariates", str(d / "covariates.csv"),
                 "--covariate-col", "suff", "--topics", str(d / "topics.csv"), "-o", str(tmp_path / "theta.csv"),
                 "--effects-plot", str(fig), "--dpi", "100"]) == 0  # fmt: skip
    w, h = _paper_png(fig)
    assert w == pytest.approx(700, abs=6) and h == pytest.approx(220, abs=12)  # paper.md §7: 7 x 2.2 in (seed M3)
    assert not (tmp_path / "effects.csv").exists()  # --effects itself is not required


@pytest.mark.parametrize("argv", [["--dpi", "49"], ["--dpi", "1201"], ["--effects-plot", "x.gif"]])
def test_theta_figure_options_exit_2(paper_data: Path, tmp_path: Path, argv: list[str]) -> None:
    d = paper_data / "s000"
    base = ["theta", str(d / "ratings_raw.csv"), "--covariates", str(d / "covariates.csv"), "-o", str(tmp_path / "t.csv")]
    args = [a if a != "x.gif" else str(tmp_path / "x.gif") for a in argv]
    assert main(base + args + ([] if "--effects-plot" in argv else ["--effects-plot", str(tmp_path / "f.png")])) == 2


def test_compare_figure_small_multiples(paper_data: Path, tmp_path: Path) -> None:
    d = paper_data / "s001"
    rates = tmp_path / "rates.csv"
    labels = "answer_leakage,step_scaffolded,actionability,corrective_tone,mistake_recognize"
    assert main(["aggregate", str(d / "turns.csv"), "--by", "question_id,model,domain,dimension,level", "--cols", labels,
                 "--na", "-1", "-o", str(rates)]) == 0  # fmt: skip
    fig = tmp_path / "bias.png"
    assert main(["compare", str(rates), "--group-col", "level", "--block-col", "question_id", "--strata", "model,domain",
                 "--dimension", "dimension", "--n-resamples", "200", "--figure", str(fig), "--dpi", "100",
                 "-o", str(tmp_path / "fair.md")]) == 0  # fmt: skip
    w, h = _paper_png(fig)
    assert w == pytest.approx(700, abs=8) and h == pytest.approx(760, abs=30)  # paper.md §7: 7 x 7.6 in
    assert h >= w / 2
    assert (tmp_path / "fair.md").read_text().startswith("| ")


@pytest.fixture(scope="module")
def correlations(paper_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d, out = paper_data / "s000", tmp_path_factory.mktemp("heat")
    metrics, corr = out / "metrics.csv", out / "corr.csv"
    assert main(["score", str(d / "exchanges.csv"), "--prompt", "query", "--prompt", "code", "--prompt", "error",
                 "--metrics", "lexical", "-o", str(metrics)]) == 0  # fmt: skip
    assert main(["validate", str(metrics), "--ratings", str(d / "ratings_raw.csv"), "--recode", "0.5=0",
                 "--n-resamples", "99", "-o", str(corr)]) == 0  # fmt: skip
    return corr


def test_heatmap_selection(correlations: Path, tmp_path: Path) -> None:
    all_png, sel_png = tmp_path / "all.png", tmp_path / "sel.png"
    assert main(["heatmap", str(correlations), "-o", str(all_png), "--dpi", "100"]) == 0
    assert main(["heatmap", str(correlations), "-o", str(sel_png), "--dpi", "100", "--families", "diversity",
                 "--metrics-cols", "resp_chars", "--targets", "i1,i5"]) == 0  # fmt: skip
    (_, ha), (_, hs) = _paper_png(all_png), _paper_png(sel_png)
    assert ha <= 900 and hs < ha  # a page (9 in) at most; fewer rows, a shorter figure
    corr = pl.read_csv(correlations)
    assert {"resp_chars", "ttr"} <= set(corr["metric"])


@pytest.mark.parametrize("argv", [["--targets", "nope"], ["--metrics-cols", "resp_charz"], ["--families", "richnes"],
                                  ["--width", "8"]])  # fmt: skip
def test_heatmap_selection_errors(correlations: Path, tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["heatmap", str(correlations), "-o", str(tmp_path / "h.png"), *argv]) == 2
    assert "rror" in capsys.readouterr().err
