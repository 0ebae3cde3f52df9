"""Rounding to significant figures, the coarsening every released estimate goes through."""

from __future__ import annotations

import decimal
import sys

import numpy as np

from ._validation import check_array, check_count

# A double is identified by its shortest decimal of at most 17 significant digits, so rounding
# to 17 figures or more returns every value unchanged.
_FIGURES_THAT_KEEP_EVERY_DOUBLE = 17

# The fast path scales by an exact power of ten (10**22 is the largest double that is one) and
# rounds an integer of at most 15 digits, which a double holds exactly.
_LARGEST_EXACT_POWER = 22
_FAST_FIGURES = 15

# Up to this many values, rounding each exactly costs less than the vectorised path's setup
# (a few microseconds a value against about a hundred for the whole path): the checks round
# one estimate at a time, tens of thousands of times.
_ONE_AT_A_TIME = 8


def _round_one(value: float, figures: int) -> float:
    """Round one value exactly: its shortest decimal (``repr``) rounded half to even."""
    context = decimal.Context(prec=figures, rounding=decimal.ROUND_HALF_EVEN)
    rounded = context.create_decimal(repr(value))
    result = float(rounded)
    if not np.isfinite(result):
        raise ValueError(
            f"values: {value!r} rounded to {figures} significant figures is {rounded}, "
            f"beyond the largest float ({sys.float_info.max!r})"
        )
    return result


def round_significant(values: object, figures: int) -> np.ndarray:
    """Round each value to a number of significant figures.

    A value is rounded as the decimal Python prints for it (its shortest representation), so
    0.15 rounds as 0.15 does rather than as the binary fraction just below it, and halves
    round to even: at one figure 0.15 gives 0.2, 0.25 gives 0.2 and 0.35 gives 0.4. The result
    is the float nearest the rounded decimal, over the whole float range, subnormal values
    included.

    Parameters
    ----------
    values : array_like
        Finite real numbers; zeros stay zero.
    figures : int
        Significant figures to keep, at least 1. From 17 on, every value is returned
        unchanged: 17 significant digits identify any float.

    Returns
    -------
    numpy.ndarray
        The rounded values, with the shape of ``values``.

    Raises
    ------
    ValueError
        If a rounded value is too large for a float (1.7e308 rounds to 2e308 at one figure).

    Examples
    --------
    >>> round_significant([4.349, 0.0615, 172.0], 1)
    array([4.e+00, 6.e-02, 2.e+02])
    >>> round_significant([0.15, 0.25, 0.35], 1)
    array([0.2, 0.2, 0.4])
    """
    figures = check_count(figures, "figures")
    values = check_array(values, "values")
    if figures >= _FIGURES_THAT_KEEP_EVERY_DOUBLE:
        return values.copy()
    flat = values.ravel()
    if flat.size <= _ONE_AT_A_TIME:
        rounded = [_round_one(float(v), figures) if v else float(v) for v in flat]
        return np.array(rounded).reshape(values.shape)
    size = np.abs(flat)
    nonzero = size > 0
    exponent = figures - 1 - np.floor(np.log10(size, where=nonzero, out=np.ones_like(size)))
    # Fast path: scale by an exact power of ten and round there. The scaled value lies within
    # two units in its last place of the scaled decimal, so only values close to a half can
    # round the wrong way; those, the values too large or too small to scale by an exact
    # power, and those whose power of ten is in doubt are rounded one at a time.
    fast = nonzero & (np.abs(exponent) <= _LARGEST_EXACT_POWER) & (figures <= _FAST_FIGURES)
    power = 10.0 ** np.where(fast, np.abs(exponent), 0)
    scaled = np.where(exponent >= 0, size * power, size / power)
    whole = np.round(scaled)
    with np.errstate(over="ignore"):  # the spacing next to the largest float, never fast
        error = 4 * np.spacing(scaled)
    near_half = np.abs(np.abs(scaled - np.trunc(scaled)) - 0.5) <= error
    # Just below a power of ten, log10 can round up to it and put the rounding one digit off.
    off_by_a_digit = (scaled < 10.0 ** (figures - 1) + error) | (scaled >= 10.0**figures)
    fast &= ~(near_half | off_by_a_digit)
    rounded = np.copysign(np.where(exponent >= 0, whole / power, whole * power), flat)
    rounded[~nonzero] = flat[~nonzero]
    # Data repeat their values (nominal times, doses), so each distinct value is rounded once,
    # in the order the values come, so that an error names the first value at fault.
    slow = np.flatnonzero(nonzero & ~fast)
    distinct, first, where = np.unique(flat[slow], return_index=True, return_inverse=True)
    once = np.empty(distinct.size)
    for index in np.argsort(first):
        once[index] = _round_one(float(distinct[index]), figures)
    rounded[slow] = once[where]
    return rounded.reshape(values.shape)
