"""Cost of the CJK-aware tokeniser, splitter and language rule (languages.md) on English and CJK text.

(a) ``T(x)`` + ``S(x)`` on every unique MRBench text (prompts and responses): the frozen pre-languages.md
    regexes (metrics.md §0, §2) vs the shipped ``tokenize`` + ``split_sentences``; outputs are checked equal;
(b) the ``lang`` rule (``detect_language``) on the same texts;
(c) ``Scorer("lexical")`` on all MRBench rows (what a user waits for; it includes (a) and (b));
(d) the bundled CJK example's texts, repeated to about the same number of characters as (a): ``T`` + ``S``
    by character, and ``T`` with the rjieba segmenter when it is installed.

Runs alternate old and new so that load drift hits both; medians of ``--runs`` (default 5).

Usage:
    python benchmarks/bench_text.py
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

OLD_TOKEN = re.compile(r"\w+(?:['\u2019-]\w+)*")
OLD_BREAK = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+")
MARKER = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)]|#{1,6})\s+")
HAS_WORD = re.compile(r"\w")
ABBR = frozenset({"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "fig", "eq", "approx", "no"})


def old_tokenize(x: str) -> list[str]:
    return OLD_TOKEN.findall(unicodedata.normalize("NFC", x).lower())


def old_split(x: str) -> list[str]:
    out: list[str] = []
    for line in unicodedata.normalize("NFC", x).splitlines():
        merged, carry = [], ""
        for piece in OLD_BREAK.split(MARKER.sub("", line, count=1)):
            seg = (carry + " " + piece) if carry else piece
            carry = ""
            s = seg.rstrip()
            if s.endswith("."):
                words = s.split()
                if (words[-1].strip(".").lower() if words else "") in ABBR:
                    carry = s
                    continue
            merged.append(seg)
        if carry:
            merged.append(carry)
        out.extend(m.strip() for m in merged if HAS_WORD.search(m))
    return out


def main() -> None:  # noqa: C901 - a linear script: parse, time each case, print; nothing reusable to split out
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=C.DEFAULT_MRBENCH)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-md", action="store_true")
    args = ap.parse_args()

    import polars as pl

    from tutormetrics.engine import Scorer
    from tutormetrics.examples import cjk_example_path
    from tutormetrics.text import detect_language, split_sentences, tokenize

    df = pl.read_csv(args.input)
    texts = sorted(set(df["prompt"].drop_nulls().to_list()) | set(df["response"].drop_nulls().to_list()))
    n_chars = sum(map(len, texts))
    assert all(tokenize(t) == old_tokenize(t) and split_sentences(t) == old_split(t) for t in texts)

    cjk = pl.read_csv(cjk_example_path())
    cjk_base = cjk["prompt"].to_list() + cjk["response"].to_list()
    reps = max(1, n_chars // sum(map(len, cjk_base)))
    cjk_texts = [f"{t}{i}" for i in range(reps) for t in cjk_base]  # distinct texts, ~ the same volume
    cjk_chars = sum(map(len, cjk_texts))

    def run_old() -> None:
        for t in texts:
            old_tokenize(t)
            old_split(t)

    def run_new() -> None:
        for t in texts:
            tokenize(t)
            split_sentences(t)

    def run_lang() -> None:
        for t in texts:
            detect_language(t)

    def run_cjk() -> None:
        for t in cjk_texts:
            tokenize(t)
            split_sentences(t)

    try:
        import rjieba  # noqa: F401

        def run_cjk_seg() -> None:
            for t in cjk_texts:
                tokenize(t, "rjieba")
    except ImportError:
        run_cjk_seg = None  # type: ignore[assignment]

    ids, prompts, responses = df["exchange_id"].to_list(), df["prompt"].to_list(), df["response"].to_list()

    def run_scorer() -> None:
        Scorer("length,lexical_diversity,overlap", progress=False).score(ids, prompts, responses)

    result = C.header("text")
    run_new(), run_old(), run_scorer()  # warm-up
    if run_cjk_seg:
        run_cjk_seg()
    times: dict[str, list[float]] = {k: [] for k in ("old", "new", "lang", "scorer", "cjk", "cjk_rjieba")}
    loads = []
    for _ in range(args.runs):
        loads.append(C.load_average())
        for key, fn in (("old", run_old), ("new", run_new), ("lang", run_lang), ("scorer", run_scorer),
                        ("cjk", run_cjk), ("cjk_rjieba", run_cjk_seg)):
            if fn is None:
                continue
            t0 = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t0)
    med = {k: C.median(v) for k, v in times.items() if v}
    result.update(
        n_texts=len(texts), n_chars=n_chars, n_rows=df.height, n_cjk_texts=len(cjk_texts), n_cjk_chars=cjk_chars,
        times=times, medians=med, loads=loads,
        ratio_new_over_old=med["new"] / med["old"],
        lang_share_of_scorer=med["lang"] / med["scorer"],
    )
    C.write_json("text", result)
    if args.no_md:
        return
    rows = [
        ["T + S, frozen metrics.md §0/§2 regexes", f"{len(texts):,} MRBench texts ({n_chars / 1e6:.2f} M chars)",
         f"{med['old']:.3f}", "1.00"],
        ["T + S, shipped (languages.md)", "same", f"{med['new']:.3f}", f"{med['new'] / med['old']:.2f}"],
        ["lang rule (`detect_language`)", "same", f"{med['lang']:.3f}", f"{med['lang'] / med['old']:.2f}"],
        ["T + S, shipped, CJK", f"{len(cjk_texts):,} CJK texts ({cjk_chars / 1e6:.2f} M chars)", f"{med['cjk']:.3f}",
         f"{med['cjk'] / med['old']:.2f}"],
    ]
    if "cjk_rjieba" in med:
        rows.append(["T with `--segmenter rjieba`, CJK", "same", f"{med['cjk_rjieba']:.3f}",
                     f"{med['cjk_rjieba'] / med['old']:.2f}"])
    rows.append(["`Scorer(length, lexical_diversity, overlap)`", f"{df.height:,} MRBench rows", f"{med['scorer']:.3f}",
                 "–"])
    body = (
        "## 6. Tokeniser, splitter and language rule (`bench_text.py`)\n\n"
        "English output is identical to the frozen pre-CJK regexes on every MRBench text (checked by the script). "
        f"Median of {args.runs}, old and new alternating in one process.\n\n"
        + C.md_table(rows, ["what", "input", "seconds", "× old T + S"])
        + f"\n\nThe lang rule is {100 * med['lang'] / med['scorer']:.1f} % of the lexical scoring time "
        "(it runs once per unique text; texts without a CJK character take one regex search).\n\n"
        + C.env_lines(result)
    )
    C.update_results_md("text", body)


if __name__ == "__main__":
    main()
