import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from synpmx_lite import round_significant


def test_hand_worked_values():
    values = [4.349, 0.0615, 172.0, -38.0, 0.0, 1234.5]
    np.testing.assert_allclose(round_significant(values, 1), [4.0, 0.06, 200.0, -40.0, 0.0, 1000.0])
    np.testing.assert_allclose(
        round_significant(values, 2), [4.3, 0.062, 170.0, -38.0, 0.0, 1200.0]
    )


@given(st.floats(min_value=1e-6, max_value=1e6), st.integers(min_value=1, max_value=4))
def test_rounding_moves_a_value_by_at_most_half_a_step(value, figures):
    rounded = round_significant(value, figures)
    step = 10.0 ** (np.floor(np.log10(value)) - figures + 1)
    assert abs(rounded - value) <= step / 2 * (1 + 1e-9)


def test_bad_input():
    with pytest.raises(TypeError, match="figures"):
        round_significant([1.0], 1.5)
    with pytest.raises(ValueError, match="figures"):
        round_significant([1.0], 0)
    with pytest.raises(ValueError, match="values"):
        round_significant([np.nan], 1)
