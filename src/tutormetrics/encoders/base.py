"""What every encoder backend shares (torch in :mod:`.hf`, ONNX Runtime in :mod:`.onnx.encoder`): the run counters,
the window geometry and the word-piece entry points, so both backends count, window and tokenise alike.

A backend provides ``load()``, ``n_special_tokens``, ``_max_seq_length`` and ``_pieces(texts, with_offsets)``.

Example:
    >>> class Toy(EncoderBase):
    ...     _max_seq_length, n_special_tokens = 8, 2
    ...     def load(self): return self
    ...     def _pieces(self, texts, with_offsets): return [[1, 2]] * len(texts), None
    >>> t = Toy(); t.reset_counters(); t.window_size, t.tokenize(["a"]), t.texts_encoded
    (6, [[1, 2]], 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tutormetrics.encoders.artifacts import EncodedTexts

#: Config fields that decide the backend and the export (``with_options`` changing one decides again).
_DECISIVE = ("model_name_or_path", "device", "dtype", "trust_remote_code", "quantize")


class EncoderBase:
    """Counters, ``max_seq_length`` / ``window_size``, :meth:`tokenize` / :meth:`tokenize_with_offsets` and
    :attr:`resolved`."""

    _max_seq_length: int | None
    n_special_tokens: int
    config: Any
    _resolved: Any = None

    @property
    def resolved(self) -> Any:
        """The :class:`~tutormetrics.encoders.resolve.ResolvedEncoder` this encoder runs (handed in by
        :func:`~tutormetrics.encoders.backend.make_encoder`, else decided here once)."""
        if self._resolved is None:
            from tutormetrics.encoders.resolve import resolve_encoder

            self._resolved = resolve_encoder(self.config)
        return self._resolved

    def _adopt(self, resolved: Any) -> None:
        """Keep ``resolved``: as it is for this config (``backend="auto"`` there, the backend it became here), re-keyed
        (:meth:`~tutormetrics.encoders.resolve.ResolvedEncoder.with_config`) when only run-time fields differ, and
        dropped (decided again on first use) when a field that decides the backend or the export differs."""
        if resolved is not None:
            from dataclasses import replace

            if replace(resolved.config, backend=self.config.backend) != self.config:
                same = all(getattr(resolved.config, f) == getattr(self.config, f) for f in _DECISIVE)
                resolved = resolved.with_config(self.config) if same else None
        self._resolved = resolved

    def reset_counters(self) -> None:
        """``texts_encoded``, ``windows_encoded``, ``forward_calls``, ``texts_windowed`` back to 0."""
        self.texts_encoded = 0
        self.windows_encoded = 0
        self.forward_calls = 0
        self.texts_windowed = 0

    def count(self, n_win: np.ndarray, n_windows: int, n_forward: int, encoded: EncodedTexts) -> None:
        """Add one :meth:`encode` call to the counters (texts with a window, windows, forward calls, long texts).

        Args:
            n_win: (U,) windows per text of the call (0 = no content tokens).
            n_windows: windows encoded by the call.
            n_forward: forward (model) calls of the call.
            encoded: the call's result, for its windowed and truncated counts.
        """
        self.texts_encoded += int(np.sum(n_win > 0))
        self.windows_encoded += n_windows
        self.forward_calls += n_forward
        self.texts_windowed += encoded.n_windowed + encoded.n_truncated

    def load(self) -> Any:  # pragma: no cover - every backend defines it
        raise NotImplementedError

    def _pieces(self, texts: Sequence[str], with_offsets: bool) -> tuple[list[Any], list[np.ndarray] | None]:  # pragma: no cover
        raise NotImplementedError

    @property
    def max_seq_length(self) -> int:
        """Tokens per window including special tokens."""
        self.load()
        assert self._max_seq_length is not None
        return self._max_seq_length

    @property
    def window_size(self) -> int:
        """Content tokens per window: ``max_seq_length − n_special_tokens`` (BERT: ``− 2``)."""
        return self.max_seq_length - self.n_special_tokens

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Word-piece ids of each text without special tokens and without truncation."""
        ids, _ = self._pieces(texts, with_offsets=False)
        return [x.tolist() if isinstance(x, np.ndarray) else list(x) for x in ids]

    def tokenize_with_offsets(self, texts: Sequence[str]) -> tuple[list[list[int]], list[np.ndarray] | None]:
        """Word-piece ids as :meth:`tokenize`, plus each piece's ``(start, end)`` character span in its text.

        Spans come from a fast tokenizer's offsets; with a slow tokenizer the second value is ``None``
        (span-based metrics such as coherence are then NaN).
        """
        ids, offsets = self._pieces(texts, with_offsets=True)
        return [x.tolist() if isinstance(x, np.ndarray) else list(x) for x in ids], offsets
