"""Argument checks shared by the public functions.

Each helper raises ``TypeError`` for a value of the wrong kind and ``ValueError`` for a value
of the right kind outside its domain, naming the argument, so that bad input fails at the API
boundary rather than deep inside numpy.
"""

from __future__ import annotations

import numbers

import numpy as np


def check_count(value: object, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int, requiring a whole number of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def check_real(
    value: object,
    name: str,
    *,
    low: float = -np.inf,
    high: float = np.inf,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a float, requiring a finite real in the given interval."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    below = value <= low if low_open else value < low
    above = value >= high if high_open else value > high
    if not np.isfinite(value) or below or above:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {value}")
    return value


def check_array(value: object, name: str, *, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a finite float array, optionally of a given dimension.

    Text is refused rather than parsed: ``["1", "2"]`` is a TypeError, not ``[1.0, 2.0]``;
    so are None, complex numbers, dates and durations, which numpy would turn into NaN, a
    real part or a count of days or seconds.
    """
    if value is None:
        raise TypeError(f"{name} must be numeric, got None")
    if _holds_text(value):
        raise TypeError(f"{name} must be numeric, got text")
    kind = _dtype_kind(value)
    if kind is not None and kind in "cmM":
        raise TypeError(f"{name} must be real numbers, got {np.asarray(value).dtype}")
    try:
        array = np.asarray(value, dtype=float)
    except OverflowError as error:
        raise ValueError(f"{name} holds a number too large for a float") from error
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be numeric, got {type(value).__name__}") from error
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return array


def _dtype_kind(value: object) -> str | None:
    """numpy's kind of the array ``value`` makes, or None if it makes none (ragged nesting)."""
    try:
        return np.asarray(value).dtype.kind
    except (TypeError, ValueError):  # the float conversion reports it
        return None


def _holds_text(value: object) -> bool:
    if isinstance(value, str | bytes):
        return True
    kind = _dtype_kind(value)
    if kind is None:
        return False
    if kind == "O":
        return any(isinstance(item, str | bytes) for item in np.asarray(value).flat)
    return kind in "USV"


def check_flag(value: object, name: str) -> bool:
    """Return ``value`` as a bool, requiring True or False (not a string or a number)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_probabilities(value: object, name: str, *, ndim: int = 1) -> np.ndarray:
    """Return ``value`` as an array of probabilities strictly between 0 and 1."""
    array = check_array(value, name, ndim=ndim)
    if np.any((array <= 0) | (array >= 1)):
        raise ValueError(f"{name} must lie strictly between 0 and 1")
    return array


def check_binary(value: object, name: str, *, ndim: int) -> np.ndarray:
    """Return ``value`` as an int8 array, requiring every entry to be 0 or 1."""
    array = check_array(value, name, ndim=ndim)
    if not np.all((array == 0) | (array == 1)):
        raise ValueError(f"{name} must hold only 0 and 1")
    return array.astype(np.int8)


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """Return a ``numpy.random.Generator`` from a Generator, a seed or None.

    A seed is a non-negative integer or a ``numpy.random.SeedSequence``; None draws fresh
    entropy from the operating system. ``name`` is the argument's name in error messages.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"{name} must be a non-negative integer seed, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"{name} must be a numpy.random.Generator, a non-negative integer seed or None, "
        f"got {type(rng).__name__}"
    )
