import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from synpmx_lite import round_significant
from synpmx_lite.rounding import _ONE_AT_A_TIME

# Every finite float: subnormals (down to 5e-324) and values next to the largest included.
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
# Figures past 17 keep every value; the rounding accepts any count, so draw far beyond it.
any_figures = st.one_of(st.integers(min_value=1, max_value=20), st.integers(min_value=1))


def magnitude(exact: Fraction) -> int:
    """The power of ten of the first significant digit of a nonzero rational."""
    exact = abs(exact)
    power = len(str(exact.numerator // exact.denominator)) - 1
    if exact < 1:
        power = -1
        while exact * Fraction(10) ** -power < 1:
            power -= 1
    return power


def reference(value: float, figures: int) -> float:
    """Round in exact rational arithmetic: the shortest decimal of ``value``, half to even.

    Raises OverflowError where the rounded value is too large for a float.
    """
    exact = Fraction(repr(value))
    if exact == 0:
        return value
    # The shortest decimal of a float has at most 17 digits: rounding to more changes nothing.
    figures = min(figures, 40)
    step = Fraction(10) ** (magnitude(exact) - figures + 1)
    return float(round(exact / step) * step)  # round() of a Fraction rounds half to even


def test_hand_worked_values():
    values = [4.349, 0.0615, 172.0, -38.0, 0.0, 1234.5]
    np.testing.assert_allclose(round_significant(values, 1), [4.0, 0.06, 200.0, -40.0, 0.0, 1000.0])
    np.testing.assert_allclose(
        round_significant(values, 2), [4.3, 0.062, 170.0, -38.0, 0.0, 1200.0]
    )


def test_halves_round_to_even_as_the_value_is_printed():
    # 0.15 and 0.35 are stored just below their decimals; they round as they are written.
    assert round_significant([0.15, 0.25, 0.35, 0.45], 1).tolist() == [0.2, 0.2, 0.4, 0.4]
    assert round_significant([125.0, 135.0, -2.5], 2).tolist() == [120.0, 140.0, -2.5]


def test_the_ends_of_the_float_range():
    # Each of these gave NaN, 0 or infinity when the scale factor overflowed.
    assert round_significant(1.2345, 400) == 1.2345
    assert round_significant(1e-300, 15) == 1e-300
    assert round_significant(1.234567890123456e-300, 15) == 1.23456789012346e-300
    assert round_significant(5e-324, 1) == 5e-324
    assert round_significant(2.5e-320, 1) == 2e-320
    assert round_significant(1.7e308, 2) == 1.7e308
    assert round_significant(sys.float_info.max, 17) == sys.float_info.max


@pytest.mark.parametrize(
    ("value", "figures"), [(1.7e308, 1), (-1.7e308, 1), (sys.float_info.max, 16)]
)
def test_a_rounded_value_beyond_the_largest_float_is_refused(value, figures):
    with pytest.raises(ValueError, match=r"values: .* beyond the largest float"):
        round_significant([1.0, value], figures)


def test_the_refusal_names_the_first_value_at_fault():
    # Each distinct value is rounded once; the error still names the first one in the data.
    with pytest.raises(ValueError, match=r"values: 1\.7e\+308 rounded"):
        round_significant([1.0, 1.7e308, -1.7e308, 1.7e308], 1)
    # The same past _ONE_AT_A_TIME values, on the vectorised path.
    padded = [1.0] * _ONE_AT_A_TIME + [1.7e308, -1.7e308, 1.7e308]
    with pytest.raises(ValueError, match=r"values: 1\.7e\+308 rounded"):
        round_significant(padded, 1)


def assert_both_paths_round_as_the_reference(value: float, figures: int) -> None:
    """One value alone (rounded exactly) and in an array past ``_ONE_AT_A_TIME`` values (the
    vectorised path) round as the exact reference does, or are both refused."""
    many = np.full(_ONE_AT_A_TIME + 1, value)
    try:
        expected = reference(value, figures)
    except OverflowError:
        for values in (value, many):
            with pytest.raises(ValueError, match="values"):
                round_significant(values, figures)
        return
    assert round_significant(value, figures) == expected
    assert (round_significant(many, figures) == expected).all()


@given(finite_floats, any_figures)
@example(0.0615, 2)
@example(1e23, 1)
@example(9.999999999999999e22, 3)
@example(sys.float_info.max, 1)
@example(5e-324, 1)
@example(2.225073858507201e-308, 15)
@example(9.999999999999965e16, 15)
@example(0.5, 1)
@example(-8.5e-5, 1)
def test_agrees_with_exact_rational_rounding(value, figures):
    assert_both_paths_round_as_the_reference(value, figures)


@given(st.integers(min_value=1, max_value=10**15), st.integers(min_value=-340, max_value=300))
def test_decimal_halves_agree_with_exact_rational_rounding(digits, exponent):
    # A decimal ending in 5 one place past the kept figures: the case scaling gets wrong.
    value = float(f"{digits}5e{exponent}")
    assume(np.isfinite(value))
    figures = len(str(digits))
    assert_both_paths_round_as_the_reference(value, figures)


@given(
    st.lists(finite_floats.filter(lambda v: abs(v) < 1e308), min_size=1, max_size=50),
    st.integers(min_value=1, max_value=17),
)
def test_arrays_round_elementwise_and_idempotently(values, figures):
    rounded = round_significant(values, figures)
    assert rounded.tolist() == [float(round_significant(v, figures)) for v in values]
    np.testing.assert_array_equal(round_significant(rounded, figures), rounded)
    np.testing.assert_array_equal(round_significant(np.negative(values), figures), -rounded)


@given(finite_floats.filter(lambda v: 0 < abs(v) < 1e308), st.integers(min_value=1, max_value=17))
def test_rounding_moves_a_value_by_at_most_half_a_step(value, figures):
    rounded = Fraction(float(round_significant(value, figures)))
    exact = Fraction(repr(value))
    step = Fraction(10) ** (magnitude(exact) - figures + 1)
    # Half a step in decimal, plus half a unit in the last place of the float result.
    assert abs(rounded - exact) <= step / 2 + abs(Fraction(float(np.spacing(float(rounded))))) / 2


def test_shape_is_kept():
    assert round_significant(3.14159, 2).shape == ()
    assert round_significant(np.full((2, 3), 0.123), 1).shape == (2, 3)


def test_bad_input():
    with pytest.raises(TypeError, match="figures"):
        round_significant([1.0], 1.5)
    with pytest.raises(ValueError, match="figures"):
        round_significant([1.0], 0)
    with pytest.raises(ValueError, match="values"):
        round_significant([np.nan], 1)
    with pytest.raises(ValueError, match="values"):
        round_significant([1.0, np.inf], 1)
    with pytest.raises(TypeError, match="values"):
        round_significant(["1.5"], 1)
