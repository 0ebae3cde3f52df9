"""The book's Sphinx extensions (book/_ext) are importable by the tests of this folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
