"""Counter-based randomness: numbers that are pure functions of integer keys.

``counter_uniform(seed, stream, i, j)`` hashes its keys with splitmix64's finaliser, so the
value for one key never depends on what else is drawn, in which order, or after which crash.
The sort's initial orders, the simulated crowd's answers and the web crowd's tie-breaks use it;
being integer arithmetic, its values do not change with numpy's random-stream versions.
"""

from __future__ import annotations

import lazy_loader

np = lazy_loader.load("numpy")  # imported on first use

_GOLDEN = 0x9E3779B97F4A7C15
"""splitmix64's increment: the golden ratio as a 64-bit fraction."""


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-mixed 64-bit hash of each value."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def counter_uniform(*keys) -> np.ndarray:
    """Uniform numbers in (0, 1) that are a pure function of the (broadcast) integer keys."""
    arrays = np.broadcast_arrays(*(np.asarray(k).astype(np.uint64) for k in keys))
    h = np.zeros(arrays[0].shape, dtype=np.uint64)
    for key in arrays:
        h = _mix(h ^ key)
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
