"""Representation features of ``predict --features embedding|both`` (``docs/commands/predict.md#representation-features``).

The encoder's pooled vectors travel from ``score --embeddings PATH`` (:mod:`tutormetrics.engine.embedding_file`).
``--representation`` names the block: comma-separated terms, each a view of the file (``response``, ``prompt``,
``prev_student``, ``response_l04`` …), a difference ``a-b`` or an elementwise product ``a*b`` of two views
(:func:`representation_matrix`); the default is the response vector. Inside every training fold it is reduced to K principal components (:func:`reduce_in_fold`): median imputation and
standardisation on the training rows, PCA fitted on them, the test rows projected. The components then join the
metric columns and are standardised with them, so one L2 penalty treats every column alike. A
:class:`FoldReducer` keeps each fold's projection, since it depends on the rows only, not on the target or model.

Example:
    >>> rng = np.random.default_rng(0)
    >>> views = {"response": rng.normal(size=(6, 3)), "prompt": rng.normal(size=(6, 3))}
    >>> block, names = representation_matrix(views, "response,response-prompt,response*prompt")
    >>> block.shape, names
    ((6, 9), ['response', 'response-prompt', 'response*prompt'])
    >>> ztr, zte = reduce_in_fold(block[:4], block[4:], 2)
    >>> ztr.shape, zte.shape
    ((4, 2), (2, 2))
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tutormetrics.engine.embedding_file import (
    EmbeddingTable,
    check_matches,
    read_embeddings,
)
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.validity.predict_options import DEFAULT_REPRESENTATION, FEATURES, parse_representation


def representation_matrix(views: Mapping[str, np.ndarray], spec: str) -> tuple[np.ndarray, list[str]]:
    """The block of ``spec`` (:func:`parse_representation`; rows: exchanges) and its term names.

    A row lacking a text (NaN vector, e.g. no previous student turn) has NaN in its terms; they are imputed inside
    the fold. A view the file does not hold is exit 2.
    """
    blocks, names = [], []
    for a, op, b in parse_representation(spec):
        for view in (a, b) if op else (a,):
            if view not in views:
                raise InputSchemaError(f"--representation names the view {view!r}, which the embeddings file does not hold",
                                       hint=f"views: {', '.join(views)}")  # fmt: skip
        va = np.asarray(views[a], dtype=np.float64)
        blocks.append(va if not op else va - views[b] if op == "-" else va * views[b])
        names.append(f"{a}{op}{b}")
    return np.hstack(blocks), names


def reduce_in_fold(train: np.ndarray, test: np.ndarray, components: int) -> tuple[np.ndarray, np.ndarray]:
    """PCA scores of the training and test rows, fitted on the training rows only.

    Missing values → the training median (a column missing on every training row is dropped); standardise with the
    training mean and SD (ddof 0; constant columns dropped); ``PCA(n_components=min(K, n_train − 1, columns),
    svd_solver="covariance_eigh")`` of scikit-learn fitted on the training rows; both sets projected.

    Args:
        train: Training rows × columns.
        test: Test rows × columns.
        components: K, the most PCA components.
    """
    from sklearn.decomposition import PCA

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(train, axis=0)
    keep = np.isfinite(med)
    train, test, med = train[:, keep], test[:, keep], med[keep]
    train = np.where(np.isfinite(train), train, med)
    test = np.where(np.isfinite(test), test, med)
    sd = train.std(axis=0)
    ok = sd > 0
    mean = train[:, ok].mean(axis=0)
    train, test = (train[:, ok] - mean) / sd[ok], (test[:, ok] - mean) / sd[ok]
    k = min(components, train.shape[0] - 1, train.shape[1])
    if k < 1:
        return np.empty((train.shape[0], 0)), np.empty((test.shape[0], 0))
    pca = PCA(n_components=k, svd_solver="covariance_eigh").fit(train)
    return pca.transform(train), pca.transform(test)


@dataclass
class FoldReducer:
    """:func:`reduce_in_fold` of one representation block (rows of the frame), kept per (training, test) rows."""

    block: np.ndarray
    components: int
    _done: dict[bytes, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    def reduce(self, train_rows: np.ndarray, test_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The components of the frame rows ``train_rows`` (fitted there) and ``test_rows``."""
        key = hashlib.blake2b(np.asarray(train_rows, np.int64).tobytes() + b"|" + np.asarray(test_rows, np.int64).tobytes(),
                              digest_size=16).digest()  # fmt: skip
        if key not in self._done:
            self._done[key] = reduce_in_fold(self.block[train_rows], self.block[test_rows], self.components)
        return self._done[key]


@dataclass(frozen=True)
class RepresentationSource:
    """An embeddings side file and what it must match: the metrics table's manifest (its encoder) and name."""

    table: EmbeddingTable
    metrics_manifest: Mapping[str, Any] | None
    source: str = "the metrics table"

    def block_for(self, ids: Sequence[str], metrics_ids: Sequence[str], spec: str = DEFAULT_REPRESENTATION) -> np.ndarray:
        """The block of ``spec`` for the rows ``ids`` (the joined frame, a subset of the metrics rows); refuses a file
        whose model or ids differ from the metrics table's (``metrics_ids``), exit 2.

        Args:
            ids: The ids of the joined frame's rows.
            metrics_ids: The metrics table's ids (checked against the file).
            spec: The representation spec (views and their combination).
        """
        check_matches(self.table, metrics_ids, self.metrics_manifest, self.source)
        where = {i: k for k, i in enumerate(self.table.ids)}
        block, _ = representation_matrix(self.table.views, spec)
        return block[np.array([where[str(i)] for i in ids], dtype=np.intp)]


def views_of(spec: str) -> list[str]:
    """The views a ``--representation`` spec reads.

    >>> views_of("response,response-prompt,response*prompt")
    ['response', 'prompt']
    """
    return list(dict.fromkeys(v for a, _, b in parse_representation(spec) for v in (a, b) if v))


def load_representation(embeddings: str | Path, metrics: str | Path, spec: str = DEFAULT_REPRESENTATION) -> RepresentationSource:
    """Read the views ``spec`` needs from the side file, and the metrics table's manifest
    (``<metrics>.manifest.json``; ``None`` when absent).

    Args:
        embeddings: The side file (``score --embeddings``).
        metrics: The metrics table (its manifest is read beside it).
        spec: The representation spec (which views are read).
    """
    table = read_embeddings(embeddings, views_of(spec))
    manifest_file = Path(metrics).with_name(Path(metrics).name + ".manifest.json")
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf8"))
    except (OSError, ValueError):
        manifest = None
    return RepresentationSource(table, manifest if isinstance(manifest, dict) else None, str(metrics))


def check_features(features: str, source: RepresentationSource | None) -> None:
    """``--features`` is known, and ``embedding``/``both`` have an embeddings file (exit 2 otherwise)."""
    if features not in FEATURES:
        raise ConfigError(f"unknown --features {features!r}", hint=f"use one of {', '.join(FEATURES)}")
    if features != "metrics" and source is None:
        raise InputSchemaError(f"--features {features} needs --embeddings PATH",
                               hint="write it with `tutormetrics score ... --embeddings PATH`")  # fmt: skip
