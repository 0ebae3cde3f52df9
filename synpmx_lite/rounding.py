"""Rounding to significant figures, the coarsening every released estimate goes through."""

from __future__ import annotations

import numpy as np

from ._validation import check_array, check_count


def round_significant(values: object, figures: int) -> np.ndarray:
    """Round each value to a number of significant figures.

    Parameters
    ----------
    values : array_like
        Finite real numbers; zeros stay zero.
    figures : int
        Significant figures to keep, at least 1.

    Returns
    -------
    numpy.ndarray
        The rounded values, with the shape of ``values``. Halves round to even, as
        :func:`numpy.round` does.

    Examples
    --------
    >>> round_significant([4.349, 0.0615, 172.0], 1)
    array([4.e+00, 6.e-02, 2.e+02])
    """
    figures = check_count(figures, "figures")
    values = check_array(values, "values")
    magnitude = np.floor(np.log10(np.abs(values), where=values != 0, out=np.zeros_like(values)))
    scale = 10.0 ** (figures - 1 - magnitude)
    return np.round(values * scale) / scale
