"""The tie rule of every rank the validity layer computes (``docs/design/effects.md#tie-rule``).

Values are keyed by ``k(x) = float(format(x, ".12g"))`` — rounded to 12 significant digits by Python's
correctly rounded formatting (R: ``signif(x, 12)``) — before ranking, so values that differ only by
float noise (1e-16–1e-13 relative) rank as ties. NaN stays NaN; ``digits=0`` leaves the values as
they are.

Example:
    >>> tie_key(np.array([0.8347413929481615, 0.8347413929481616])).tolist()
    [0.834741392948, 0.834741392948]
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_TIE_DIGITS", "tie_key"]

#: Significant digits of the rank key.
DEFAULT_TIE_DIGITS = 12


def tie_key(values: np.ndarray, digits: int = DEFAULT_TIE_DIGITS) -> np.ndarray:
    """``float(format(x, f".{digits}g"))`` elementwise (a new float array); NaN/±inf unchanged; ``digits=0``: a copy.

    Example:
        >>> tie_key(np.array([1.23456789012345, np.nan]), 3).tolist()
        [1.23, nan]
    """
    arr = np.array(values, dtype=float, copy=True)
    if digits < 0:
        raise ValueError("digits must be >= 0")
    if digits == 0 or arr.size == 0:
        return arr
    flat = arr.ravel()
    spec = f".{int(digits)}g"
    finite = np.isfinite(flat)
    flat[finite] = [float(format(float(v), spec)) for v in flat[finite]]
    return flat.reshape(arr.shape)
