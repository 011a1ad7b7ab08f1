"""Per-text reductions of token states that the encoder applies on its way out (``docs/metrics.md#pooling``).

The encoder keeps no raw hidden states: each text leaves as pooled vectors, an extrema vector and its
normalised content-token matrix. The rules live here so the encoder and the metric functions share them.
"""

from __future__ import annotations

import numpy as np


def extrema_rule(vmax: np.ndarray, vmin: np.ndarray) -> np.ndarray:
    """Liu et al. (2016) vector-extrema rule from per-dimension max and min.

    ``v_d = max_d if max_d ≥ |min_d| else min_d`` (ties go positive; no nlg-eval ``min == 0`` quirk).

    Example:
        >>> extrema_rule(np.array([1.0, 0.5, 2.0]), np.array([-1.0, -3.0, 0.0]))
        array([ 1., -3.,  2.])
    """
    vmax = np.asarray(vmax, dtype=np.float64)
    vmin = np.asarray(vmin, dtype=np.float64)
    return np.where(vmax >= np.abs(vmin), vmax, vmin)
