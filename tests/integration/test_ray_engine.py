"""``score --engine ray`` equals ``--engine local`` on real MRBench rows (ids and order identical, lexical exact,
encoder within 1e-6), on a local 2-CPU Ray cluster started here; ScoreBatch in Ray's map_batches and Dask's
map_partitions (the README recipes). Skipped when Ray (or Dask) is not installed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tutormetrics.cli import main
from tutormetrics.engine.file_scoring import ScoreOptions, score_file

ray = pytest.importorskip("ray", reason="the ray extra is not installed")
pytest.importorskip("ray.data")


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture
def rows(mrbench_dir: Path, tmp_path: Path) -> Path:
    """60 real MRBench exchanges from the end of the file (8-9 tutors per prompt), with a kept column."""
    src = tmp_path / "in.csv"
    pl.read_csv(mrbench_dir / "exchanges.csv").select("exchange_id", "tutor", "prompt", "response").tail(60).write_csv(src)
    return src


def _assert_same(local: pl.DataFrame, other: pl.DataFrame, encoder_prefixes=("emb_", "sync_")) -> None:
    assert other.columns == local.columns
    assert other["exchange_id"].to_list() == local["exchange_id"].to_list()
    for col in local.columns:
        a, b = local[col], other[col]
        if col.startswith(encoder_prefixes):
            np.testing.assert_allclose(b.to_numpy(), a.to_numpy(), atol=1e-6, rtol=0, equal_nan=True, err_msg=col)
        else:
            assert a.to_list() == b.to_list() or ((a.is_nan() == b.is_nan()).all() and a.fill_nan(0).to_list() == b.fill_nan(0).to_list()), col


@pytest.mark.slow
def test_ray_engine_equals_local_engine(ray_cluster, rows, tiny_model_dir, tmp_path, capsys):
    args = ["-m", "length,overlap,lexical_diversity,embedding_similarity", "--model-name-or-path", str(tiny_model_dir),
            "--device", "cpu", "--max-seq-length", "16", "--chunk-size", "16", "--keep", "tutor", "--no-progress"]
    assert main(["score", str(rows), "-o", str(tmp_path / "local.csv"), *args]) == 0
    local_err = capsys.readouterr().err
    assert main(["score", str(rows), "-o", str(tmp_path / "ray.csv"), *args, "--engine", "ray", "--num-actors", "2"]) == 0
    ray_err = capsys.readouterr().err
    assert "ray, 2 actor(s)" in ray_err
    # one wording for long texts (the Ray driver counts exchanges: its actors count unique texts each on its own)
    assert re.search(r"warning: \d+ of \d+ unique texts exceeded max_seq_length=16 and were windowed", local_err)
    assert re.search(r"warning: \d+ of 60 exchanges exceeded max_seq_length=16 and were windowed", ray_err)
    manifests = [json.loads((tmp_path / f"{n}.csv.manifest.json").read_text()) for n in ("local", "ray")]
    assert set(manifests[0]) - {"text_cache"} == set(manifests[1]) - {"engine"}  # one manifest builder
    assert manifests[1]["stats"]["n_exchanges"] == 60 and manifests[1]["encoder"]["fingerprint"] == manifests[0]["encoder"]["fingerprint"]
    local, other = pl.read_csv(tmp_path / "local.csv"), pl.read_csv(tmp_path / "ray.csv")
    assert local.height == 60 and "tutor" in other.columns and "emb_mean_cos" in other.columns
    _assert_same(local, other)
    assert not list(tmp_path.glob(".ray.csv.ray-*"))  # the shards are gone


@pytest.mark.slow  # the 2-CPU Ray start-up (~5-10 s) is paid by the first test that needs it
def test_score_batch_in_map_batches(ray_cluster, rows):
    from tutormetrics.engine import ScoreBatch

    opts = {"metrics": "length,overlap", "chunk_size": 8}
    ds = ray.data.read_csv(str(rows)).map_batches(
        ScoreBatch, fn_constructor_kwargs={"options": opts}, batch_format="pandas", batch_size=20,
        compute=ray.data.ActorPoolStrategy(size=1), num_cpus=0.5,
    )
    got = pl.from_pandas(ds.to_pandas()).sort("exchange_id")
    ref = score_file(rows, None, ScoreOptions(**opts, progress=False)).frame.sort("exchange_id")
    _assert_same(ref, got)


def test_score_batch_in_dask_map_partitions(rows):
    dd = pytest.importorskip("dask.dataframe")
    from tutormetrics.engine import ScoreBatch

    scorer = ScoreBatch({"metrics": "length,overlap"})
    ddf = dd.read_csv(str(rows), dtype=str, blocksize=None).repartition(npartitions=3)
    meta = scorer(ddf.head(1, npartitions=1)).iloc[:0]
    got = pl.from_pandas(ddf.map_partitions(scorer, meta=meta).compute(scheduler="synchronous"))
    ref = score_file(rows, None, ScoreOptions(metrics="length,overlap", progress=False)).frame
    _assert_same(ref, got)


def test_missing_ray_is_a_clear_error(rows, tmp_path, monkeypatch, capsys):
    import builtins

    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    assert main(["score", str(rows), "-o", str(tmp_path / "o.csv"), "-m", "length", "--engine", "ray"]) == 2
    err = capsys.readouterr().err
    assert "--engine ray needs Ray Data" in err and "tutormetrics[ray]" in err and "Traceback" not in err


@pytest.mark.slow
def test_run_on_ray_resumes_after_a_failed_later_step(ray_cluster, tmp_path, capsys):
    """`run --engine ray` whose validation fails keeps the Ray run's verified scores (`metrics.csv.partial/`); the
    rerun reuses them without Ray and writes the same metrics.csv; a finished run leaves no checkpoint behind."""
    out = tmp_path / "study"
    args = ["run", "--example", "-o", str(out), "-m", "length,lexical_diversity", "--ci", "none", "--no-estimate-theta",
            "--no-progress", "--engine", "ray", "--num-actors", "1"]  # fmt: skip
    assert main([*args, "--control", "no_such_metric"]) == 2
    err = capsys.readouterr().err
    assert "no_such_metric" in err and "Traceback" not in err and (out / "metrics.csv.partial").is_dir()
    first = (out / "metrics.csv").read_bytes()
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "ray: reusing the 40 rows scored by an earlier run" in err and "ray: 0 blocks" not in err and " blocks on " not in err
    assert (out / "metrics.csv").read_bytes() == first and not (out / "metrics.csv.partial").exists()
    manifest = json.loads((out / "metrics.csv.manifest.json").read_text())
    assert manifest["engine"]["name"] == "ray" and manifest["engine"]["actors"] == 1
