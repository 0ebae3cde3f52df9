"""Tests of the argument checks every public function shares (synpmx_lite._validation)."""

import numpy as np
import pandas as pd
import pytest

from synpmx_lite import draw_attendance, random_predicates
from synpmx_lite._validation import check_array, check_flag, check_rng
from synpmx_lite.fisher.datasets import diabetes_data


def test_check_rng_accepts_generators_seeds_and_none():
    generator = np.random.default_rng(5)
    assert check_rng(generator) is generator
    assert check_rng(5).random() == np.random.default_rng(5).random()
    assert check_rng(np.int64(5)).random() == np.random.default_rng(5).random()
    assert check_rng(10**30).random() == np.random.default_rng(10**30).random()
    sequence = np.random.SeedSequence(7)
    assert check_rng(sequence).random() == np.random.default_rng(np.random.SeedSequence(7)).random()
    assert isinstance(check_rng(None), np.random.Generator)


@pytest.mark.parametrize("seed", [-1, np.int32(-5), -(10**30)])
def test_check_rng_refuses_a_negative_seed_naming_the_argument(seed):
    with pytest.raises(ValueError, match=rf"rng must be a non-negative integer seed, got {seed}"):
        check_rng(seed)
    with pytest.raises(ValueError, match=r"^seed must be a non-negative"):
        check_rng(seed, "seed")


@pytest.mark.parametrize("rng", [True, 1.5, "1", [1, 2], np.random.RandomState(1)])
def test_check_rng_refuses_other_kinds_naming_the_argument(rng):
    with pytest.raises(TypeError, match=r"^rng must be a numpy.random.Generator"):
        check_rng(rng)


@pytest.mark.parametrize(
    "call",
    [
        lambda: draw_attendance(5, [0.5, 0.4], 0.0, rng=-1),
        lambda: random_predicates([[1, 2], [3, 4]], 4, rng=-3),
        lambda: diabetes_data(rng=-2),
    ],
)
def test_public_functions_refuse_a_negative_seed_naming_rng(call):
    with pytest.raises(ValueError, match="rng must be a non-negative integer seed"):
        call()


@pytest.mark.parametrize(
    "text", ["12", b"12", ["1.5", "2"], np.array(["1", "2"]), np.array([1.0, "2"], dtype=object)]
)
def test_check_array_refuses_text_instead_of_parsing_it(text):
    with pytest.raises(TypeError, match=r"^scores must be numeric, got text"):
        check_array(text, "scores")


def test_check_array_still_takes_numbers_in_any_container():
    np.testing.assert_array_equal(check_array(pd.Series([1, 2]), "x"), [1.0, 2.0])
    np.testing.assert_array_equal(check_array(np.array([1, 2], dtype=object), "x"), [1.0, 2.0])
    with pytest.raises(ValueError, match="x must be finite"):
        check_array([1.0, None], "x")  # None is NaN to numpy


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        # Found in review: None read as NaN, dates and durations as their counts of days or
        # seconds, a complex number as "got list", and a huge integer as an OverflowError.
        (None, TypeError, r"^x must be numeric, got None"),
        (np.array(["2020-01-01"], dtype="datetime64[D]"), TypeError, r"^x must be real numbers"),
        (pd.Series(pd.to_timedelta([1, 2], unit="h")), TypeError, r"^x must be real numbers"),
        ([1.0, 2 + 1j], TypeError, r"^x must be real numbers, got complex"),
        ([1.0, 10**400], ValueError, r"^x holds a number too large for a float"),
    ],
)
def test_check_array_refuses_what_is_not_real_numbers(value, error, message):
    with pytest.raises(error, match=message):
        check_array(value, "x")


@pytest.mark.parametrize("flag", [True, False, np.True_])
def test_check_flag_takes_booleans(flag):
    assert check_flag(flag, "paired") is bool(flag)


@pytest.mark.parametrize("flag", ["yes", "False", 1, 0, None])
def test_check_flag_refuses_anything_else(flag):
    with pytest.raises(TypeError, match=r"^paired must be True or False"):
        check_flag(flag, "paired")
