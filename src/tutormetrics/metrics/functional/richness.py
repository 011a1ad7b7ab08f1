"""Length-robust lexical diversity of the response: MTLD, MATTR and HD-D (``docs/metrics.md#lexical-richness``).

All three read the tokens ``t = T(r)`` (the one tokeniser), N = |t|, and are NaN where undefined:

- ``mtld``: McCarthy & Jarvis (2010). One pass keeps a running segment and adds a factor whenever the
  segment's TTR falls to ``threshold`` (0.72) or below, then restarts it; a non-empty remainder adds the
  partial factor ``(1 − TTR_rem)/(1 − threshold)``; the pass value is N / factors. MTLD is the mean of
  the forward and the backward (reversed) pass. NaN when N = 0 or no factor accrues (every token
  distinct: the value is then only known to exceed N).
- ``mattr``: Covington & McFall (2010). Mean TTR over all ``N − W + 1`` windows of W tokens
  (W = 50), with a sliding counter in O(N). NaN when N < W.
- ``hdd``: McCarthy & Jarvis (2007). ``Σ_types (1 − C(N − f, d)/C(N, d)) / d``, the expected TTR of
  a sample of d = 42 tokens drawn without replacement. NaN when N < d.

Reason codes for a NaN (:func:`richness_reasons`): ``empty`` (no tokens), ``all_distinct`` (MTLD),
``too_short`` (MATTR, HD-D: fewer tokens than the window / the draws).

Examples (``docs/metrics.md#richness-examples``):
    >>> mtld("a rose is a rose is a rose")
    8.0
    >>> round(hdd(["a", "a", "b", "c", "c", "c"], draws=4), 10)
    0.65
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tutormetrics.errors import ConfigError
from tutormetrics.metrics.functional._util import NAN, as_tokens

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

#: Literature defaults (docs/metrics.md#lexical-richness): MTLD factor threshold, MATTR window (TAALED), HD-D draws.
MTLD_THRESHOLD = 0.72
MATTR_WINDOW = 50
HDD_DRAWS = 42

RICHNESS_COLUMNS = ("mtld", "mattr", "hdd")


def check_richness_params(mtld_threshold: float, mattr_window: int, hdd_draws: int) -> None:
    """Raise :class:`ConfigError` unless ``0 < mtld_threshold < 1`` and the window and draws are positive integers.

    Args:
        mtld_threshold: MTLD's TTR threshold, in (0, 1).
        mattr_window: MATTR window length, in tokens.
        hdd_draws: HD-D sample size, in tokens.

    Example:
        >>> check_richness_params(0.72, 50, 42)
    """
    if isinstance(mtld_threshold, bool) or not isinstance(mtld_threshold, (int, float)) or not 0.0 < mtld_threshold < 1.0:
        raise ConfigError(f"mtld_threshold must lie strictly between 0 and 1, got {mtld_threshold!r}", hint="the literature uses 0.72")
    for name, value in (("mattr_window", mattr_window), ("hdd_draws", hdd_draws)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ConfigError(f"{name} must be a positive integer, got {value!r}")


def _mtld_pass(tokens: Sequence[str], threshold: float) -> float:
    """Factor count of one MTLD pass (full factors plus the partial factor of the remainder)."""
    factors = 0.0
    seen: set[str] = set()
    count = 0
    for tok in tokens:
        seen.add(tok)
        count += 1
        if len(seen) / count <= threshold:
            factors += 1.0
            seen = set()
            count = 0
    if count:
        factors += (1.0 - len(seen) / count) / (1.0 - threshold)
    return factors


def mtld(text_or_tokens: str | Sequence[str], threshold: float = MTLD_THRESHOLD) -> float:
    """MTLD: mean of the forward and backward pass values ``N / factors``; NaN when N = 0 or no factor accrues.

    >>> mtld("Great job, great job, great job!")
    3.0
    >>> mtld("Let us check the first step together")
    nan
    """
    check_richness_params(threshold, 1, 1)
    tokens = list(as_tokens(text_or_tokens))
    n = len(tokens)
    if n == 0:
        return NAN
    forward = _mtld_pass(tokens, threshold)
    backward = _mtld_pass(tokens[::-1], threshold)
    if forward <= 0.0 or backward <= 0.0:  # both are 0 exactly when every token is distinct
        return NAN
    return (n / forward + n / backward) / 2.0


def mattr(text_or_tokens: str | Sequence[str], window: int = MATTR_WINDOW) -> float:
    """Moving-average TTR: mean of ``V(t[i:i+W]) / W`` over ``i = 0..N−W``; NaN when N < W.

    >>> mattr("a b a b c", window=2)
    1.0
    >>> round(mattr("a a b a", window=3), 6)
    0.666667
    """
    check_richness_params(MTLD_THRESHOLD, window, 1)
    tokens = list(as_tokens(text_or_tokens))
    n = len(tokens)
    if n < window or n == 0:
        return NAN
    counts = Counter(tokens[:window])
    types = len(counts)
    total = types
    for i in range(window, n):
        out, inn = tokens[i - window], tokens[i]
        if out != inn:
            counts[out] -= 1
            if counts[out] == 0:
                del counts[out]
                types -= 1
            if counts[inn] == 0:
                types += 1
            counts[inn] += 1
        total += types
    return total / (window * (n - window + 1))


def hdd(text_or_tokens: str | Sequence[str], draws: int = HDD_DRAWS) -> float:
    """HD-D: ``Σ_types P_f / d`` with ``P_f = 1 − C(N − f, d)/C(N, d)``; NaN when N < d.

    ``C(N − f, d)/C(N, d) = Π_{i<d} (N − f − i)/(N − i)``, a product of d ratios (0 once ``N − f < d``).

    >>> round(hdd("a rose is a rose is a rose", draws=4), 7)
    0.6607143
    """
    import numpy as np

    check_richness_params(MTLD_THRESHOLD, 1, draws)
    tokens = as_tokens(text_or_tokens)
    n = len(tokens)
    if n < draws or n == 0:
        return NAN
    freq_of_type = np.fromiter(Counter(tokens).values(), dtype=np.float64)
    freqs, n_types = np.unique(freq_of_type, return_counts=True)
    i = np.arange(draws, dtype=np.float64)
    ratios = np.maximum(n - freqs[:, None] - i[None, :], 0.0) / (n - i[None, :])
    p_absent = np.prod(ratios, axis=1)
    return float(np.sum(n_types * (1.0 - p_absent)) / draws)


def lexical_richness(
    text_or_tokens: str | Sequence[str],
    *,
    mtld_threshold: float = MTLD_THRESHOLD,
    mattr_window: int = MATTR_WINDOW,
    hdd_draws: int = HDD_DRAWS,
) -> dict[str, float]:
    """``mtld``, ``mattr`` and ``hdd`` of one response.

    Args:
        text_or_tokens: the response text, or its tokens.
        mtld_threshold: MTLD's TTR threshold, in (0, 1).
        mattr_window: MATTR window length, in tokens.
        hdd_draws: HD-D sample size, in tokens.

    >>> lexical_richness("a rose is a rose is a rose", mattr_window=10, hdd_draws=4)["mtld"]
    8.0
    """
    tokens = list(as_tokens(text_or_tokens))
    return {
        "mtld": mtld(tokens, mtld_threshold),
        "mattr": mattr(tokens, mattr_window),
        "hdd": hdd(tokens, hdd_draws),
    }


def richness_reasons(
    tokens: Sequence[str], *, mattr_window: int = MATTR_WINDOW, hdd_draws: int = HDD_DRAWS
) -> dict[str, str]:
    """Why each column is NaN for these tokens (``""`` when it is defined).

    Args:
        tokens: the response's tokens.
        mattr_window: MATTR window length; fewer tokens give ``too_short``.
        hdd_draws: HD-D sample size; fewer tokens give ``too_short``.

    >>> richness_reasons(["a", "b"])
    {'mtld': 'all_distinct', 'mattr': 'too_short', 'hdd': 'too_short'}
    """
    n = len(tokens)
    if n == 0:
        return dict.fromkeys(RICHNESS_COLUMNS, "empty")
    return {
        "mtld": "all_distinct" if len(set(tokens)) == n else "",
        "mattr": "too_short" if n < mattr_window else "",
        "hdd": "too_short" if n < hdd_draws else "",
    }


def defined_share(n_tokens: Sequence[int] | np.ndarray, size: int) -> float:
    """Share of texts with at least ``size`` tokens (MATTR window / HD-D draws), NaN for no texts.

    >>> defined_share([10, 60, 45, 80], 50)
    0.5
    """
    import numpy as np

    arr = np.asarray(n_tokens)
    return float(np.mean(arr >= size)) if arr.size else math.nan
