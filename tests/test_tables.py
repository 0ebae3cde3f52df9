"""The book's captioned tables: both representations, and refusals of bad input."""

import pandas as pd
import pytest

from synpmx_lite.tables import and_list, book_table, percentile_name


def test_markdown_is_a_myst_table_directive_with_caption_and_label():
    frame = pd.DataFrame({"study": ["warfarin"], "patients": ["32"]})
    text = book_table(frame, "Cohorts.", "tab-cohorts")._repr_markdown_()
    lines = text.splitlines()
    assert lines[0] == ":::{table} Cohorts."
    assert lines[1] == ":name: tab-cohorts"
    assert lines[-1] == ":::"
    assert "| warfarin" in text and "| 32" in text


def test_html_carries_the_caption_inside_the_table():
    html = book_table(pd.DataFrame({"a": ["<b>"]}), "A & B.", "tab-a")._repr_html_()
    assert html.startswith("<table")
    assert "<caption>A &amp; B.</caption>" in html
    assert "&lt;b&gt;" in html  # cells are escaped


def test_numbers_are_shown_as_formatted_not_reparsed():
    text = book_table(pd.DataFrame({"x": ["0.10"]}), "x.", "tab-x")._repr_markdown_()
    assert "0.10" in text


@pytest.mark.parametrize(
    ("frame", "caption", "label", "error"),
    [
        ([1, 2], "c", "tab-a", TypeError),
        (pd.DataFrame(), "c", "tab-a", ValueError),
        (pd.DataFrame({"a": [1]}), "", "tab-a", ValueError),
        (pd.DataFrame({"a": [1]}), "two\nlines", "tab-a", ValueError),
        (pd.DataFrame({"a": [1]}), "c", "Tab A", ValueError),
        (pd.DataFrame({"a": [1]}), "c", 3, TypeError),
    ],
)
def test_bad_input_is_refused(frame, caption, label, error):
    with pytest.raises(error):
        book_table(frame, caption, label)


@pytest.mark.parametrize(
    "percent, name",
    [(0, "0th"), (1, "1st"), (2, "2nd"), (3, "3rd"), (11, "11th"), (13, "13th"), (21, "21st"),
     (2.5, "2.5th"), (95, "95th"), (100, "100th")],
)  # fmt: skip
def test_a_percentile_is_named_as_prose_names_it(percent, name):
    assert percentile_name(percent) == name


@pytest.mark.parametrize("percent", [-1, 100.5, float("nan"), "5", True])
def test_a_percentile_outside_0_to_100_or_not_a_number_is_refused(percent):
    with pytest.raises((ValueError, TypeError), match="percent"):
        percentile_name(percent)


def test_words_are_listed_as_prose_lists_them():
    assert and_list(["a"]) == "a"
    assert and_list(("a", "b")) == "a and b"
    assert and_list(iter(["a", "b", "c"])) == "a, b and c"
    with pytest.raises(TypeError, match="items"):
        and_list("abc")
    with pytest.raises(ValueError, match="items"):
        and_list([])
