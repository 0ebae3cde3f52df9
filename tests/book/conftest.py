"""The scratch book each build test writes, of its own."""

from pathlib import Path

import pytest

from tests.book.scratch import make_book


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A scratch book of the test's own (see tests.book.scratch.make_book)."""
    return make_book(tmp_path)
