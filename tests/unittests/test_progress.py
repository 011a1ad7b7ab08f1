"""Progress off a terminal (datasets.md §7): one line per interval, the spec's format, estimate after 5 %."""

from __future__ import annotations

import io
import re

from tutormetrics.progress import ProgressLines, duration, progress_bar

LINE = re.compile(r"^progress: \S+ [\d,]+/[\d,]+ .+ \(\d+%\), \S+ elapsed(, about \S+ left)?$")


def _clock(times):
    it = iter(times)
    return lambda: next(it)


def test_lines_match_the_spec_format_and_skip_the_estimate_before_5_percent():
    out = io.StringIO()
    bar = ProgressLines(3699, "score", "tutor turns", 30, file=out, clock=_clock([0, 31, 250, 251]))
    bar.update(100)   # 2.7 %: no estimate
    bar.update(1104)  # 1,204 of 3,699 at 250 s
    bar.update(1)     # within the interval: nothing
    lines = out.getvalue().splitlines()
    assert lines == [
        "progress: score 100/3,699 tutor turns (2%), 31s elapsed",
        "progress: score 1,204/3,699 tutor turns (32%), 4m10s elapsed, about 8m38s left",
    ]
    assert all(LINE.match(line) for line in lines)


def test_a_stage_shorter_than_one_interval_prints_nothing():
    out = io.StringIO()
    bar = ProgressLines(10, "encode", "batches", 30, file=out, clock=_clock([0, 1, 2]))
    bar.update(5)
    bar.update(5)
    bar.close()
    assert out.getvalue() == ""


def test_every_zero_and_no_progress_print_nothing():
    out = io.StringIO()
    assert progress_bar(10, stage="s", unit="u", progress=None, every=0, file=out).disable
    assert progress_bar(10, stage="s", unit="u", progress=False, file=out).disable
    assert isinstance(progress_bar(10, stage="s", unit="u", progress=None, file=out), ProgressLines)


def test_duration():
    assert [duration(s) for s in (0, 59.6, 60, 250, 3600, 3725)] == ["0s", "1m0s", "1m0s", "4m10s", "1h0m", "1h2m"]


def test_a_step_without_a_count_names_itself_and_a_child_counts_inside_it():
    from tutormetrics.progress import RunProgress

    out = io.StringIO()
    steps = RunProgress(ProgressLines(None, "run", "", 30, file=out, clock=_clock([0, 31, 40, 62, 93, 124]), label="now"),
                        every=30, heartbeat=False)  # fmt: skip
    steps.detail("θ: MFRM fit (MML, 72 ratings)")  # 31 s: due
    steps.detail("agreement")  # 40 s: not due
    fits = steps.child(None, "predict", "fits")
    fits.set_total(12)
    fits.detail("clear: model all, fold 1/3")  # 62 s
    fits.update(1)  # 93 s
    fits.detail("clear: model all, fold 2/3")  # 124 s
    assert out.getvalue().splitlines() == [
        "progress: run, 31s elapsed; now: θ: MFRM fit (MML, 72 ratings)",
        "progress: run, 1m2s elapsed; now: predict 0/12 fits: clear: model all, fold 1/3",
        "progress: run, 1m33s elapsed; now: predict 1/12 fits",
        "progress: run, 2m4s elapsed; now: predict 1/12 fits: clear: model all, fold 2/3",
    ]


def test_set_total_gives_the_share_and_the_estimate():
    from tutormetrics.progress import RunProgress

    out = io.StringIO()
    fits = RunProgress(ProgressLines(None, "predict", "fits", 30, file=out, clock=_clock([0, 31, 62]), label="now"),
                       every=30, heartbeat=False)  # fmt: skip
    fits.detail("reading")
    fits.set_total(60)
    fits.update(12)
    assert out.getvalue().splitlines() == [
        "progress: predict 0/? fits (0%), 31s elapsed; now: reading",
        "progress: predict 12/60 fits (20%), 1m2s elapsed, about 4m8s left",
    ]
    assert LINE.match(out.getvalue().splitlines()[1])
