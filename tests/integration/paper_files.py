"""The shape every paper table file must have (``docs/guide/paper.md#tables``), shared by the paper-output tests."""

from __future__ import annotations

import re
from pathlib import Path


def check_paper_file(path: Path) -> str:
    """The text of a paper table, checked: a caption, no unescaped ``_ % #`` (tex), no number with more than
    three decimals, no ``-0.000``."""
    text = path.read_text(encoding="utf-8")
    assert "-0.000" not in text and not re.search(r"(?<![\w.])-?\d+\.\d{4,}", text), path
    if path.suffix == ".tex":
        assert text.startswith("\\begin{table}[htbp]") and "\\caption{" in text and "\\label{tab:" in text
        assert "\\toprule" in text and "\\bottomrule" in text and text.rstrip().endswith("\\end{table}")
        assert not re.search(r"(?<!\\)[_%#]", text), path
    else:
        assert text.startswith("|") and "\n\nTable: " in text
    return text
