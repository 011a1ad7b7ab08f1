"""The atomic writer replaces a planted symlink (dangling or not) instead of following it; every writer of
:mod:`tutormetrics.io` (text, bytes, tables, figures, guard records, checkpoints) goes through it; a name imported from
the split package's top says where it lives now."""

from __future__ import annotations

import importlib
import json
import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import polars as pl
import pytest

from tutormetrics.io.atomic import atomic_output, save_figure, write_bytes_atomic, write_text_atomic
from tutormetrics.io.formula_guard import record_guard
from tutormetrics.io.tables import write_table


def _write(kind, path):
    if kind == "text":
        write_text_atomic(path, "new")
    elif kind == "bytes":
        write_bytes_atomic(path, b"new")
    elif kind == "csv":
        write_table(pl.DataFrame({"exchange_id": ["a"], "x": [1.0]}), path)
    else:
        fig, _ = plt.subplots()
        save_figure(fig, path, dpi=20)
        plt.close(fig)


@pytest.mark.parametrize(("kind", "name"), [("text", "out.json"), ("bytes", "out.npz"), ("csv", "out.csv"),
                                            ("figure", "out.png")])  # fmt: skip
def test_a_dangling_symlink_is_replaced_and_its_target_never_created(tmp_path, kind, name):
    elsewhere = tmp_path / "elsewhere" / "planted"
    elsewhere.parent.mkdir()
    link = tmp_path / "store" / name
    link.parent.mkdir()
    link.symlink_to(elsewhere)  # dangling: following it would create ``elsewhere``
    _write(kind, link)
    assert not elsewhere.exists(), "the writer followed the link"
    assert link.is_file() and not link.is_symlink() and link.stat().st_size > 0
    assert sorted(p.name for p in link.parent.iterdir()) == [name]  # no temporary left behind


def test_a_link_to_a_users_file_leaves_that_file_alone(tmp_path):
    victim = tmp_path / "notes.txt"
    victim.write_text("precious")
    link = tmp_path / "run.json"
    link.symlink_to(victim)
    write_text_atomic(link, json.dumps({"ok": True}))
    assert victim.read_text() == "precious" and json.loads(link.read_text()) == {"ok": True} and not link.is_symlink()


def test_a_guard_record_replaces_a_planted_link(tmp_path):
    table = tmp_path / "m.csv"
    write_table(pl.DataFrame({"t": ["=1"]}), table, record=False)
    victim = tmp_path / "victim.json"
    victim.write_text("{}")
    (tmp_path / "m.csv.manifest.json").symlink_to(victim)
    record_guard(table)
    assert victim.read_text() == "{}" and not (tmp_path / "m.csv.manifest.json").is_symlink()


def _write_half_then_crash(target) -> None:
    with atomic_output(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "x.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="killed"):
        _write_half_then_crash(target)
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["x.txt"]


def test_names_of_the_former_module_say_where_they_live():
    io = importlib.import_module("tutormetrics.io")
    with pytest.raises(ImportError, match=r"read_table is in tutormetrics\.io\.tables"):
        exec("from tutormetrics.io import read_table", {})
    with pytest.raises(ImportError, match=r"stable_id is in tutormetrics\.engine\.exchanges"):
        exec("from tutormetrics.io import stable_id", {})
    assert not hasattr(io, "no_such_name")
    for name, module in io.MOVED.items():  # the map is right: each name is where it says
        assert hasattr(importlib.import_module(module), name), (name, module)
