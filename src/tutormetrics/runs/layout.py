"""The names of the files ``run`` may write into its folder (``docs/commands/run.md``): checked against the inputs
before any work (nothing a user has is overwritten), and recorded in ``run.json`` (``run_files``) so that the report
can tell a file this run wrote from one an earlier run left (``docs/commands/report.md#only-what-the-run-wrote``)."""

from __future__ import annotations

from collections.abc import Sequence

#: The tables of a run that do not depend on the level: the scored tables, θ, agreement, the rating targets, predict,
#: and θ's measurement tables (fit, separation, DIF by ``--group-col``; ``docs/measurement.md#commands``).
FIXED_FILES: tuple[str, ...] = (
    "metrics.csv", "metrics.csv.manifest.json", "theta.csv", "facets.csv", "agreement.csv", "targets.csv",
    "turns.csv", "turns.csv.manifest.json", "conversations.csv", "conversations.csv.manifest.json", "predictive.csv",
    "fit.csv", "separation.csv", "dif.csv",
)  # fmt: skip
#: File prefixes of the validated levels: exchanges or the first dialogue level, the conversations, the turns.
LEVEL_PREFIXES: tuple[str, ...] = ("", "conversations_", "turns_")


def run_files(formats: Sequence[str] = ("png", "pdf")) -> tuple[str, ...]:
    """Every file ``run`` may write into its folder: the fixed tables, and per level the correlation table, the ρ
    matrices and the heatmaps (raw and ``_partial``) in each figure format, then ``run.json`` and the report.

    >>> [n for n in run_files() if n.startswith("turns_heatmap")]
    ['turns_heatmap.png', 'turns_heatmap.pdf', 'turns_heatmap_partial.png', 'turns_heatmap_partial.pdf']
    """
    levels = [
        name
        for prefix in LEVEL_PREFIXES
        for name in (f"{prefix}correlations.csv", f"{prefix}rho_matrix.csv", f"{prefix}rho_matrix_partial.csv",
                     *(f"{prefix}heatmap{kind}.{fmt}" for kind in ("", "_partial") for fmt in formats))
    ]
    return (*FIXED_FILES, *levels, "run.json", "report.html")


#: The files of :func:`run_files` with the default figure formats.
RUN_FILES = run_files()
