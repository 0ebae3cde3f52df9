"""The chapters as files: in the form jupytext writes, and every figure described."""

from pathlib import Path

import book_pages
import jupytext
import pytest
from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file

from tests.book.scratch import ROOT

CHAPTERS = sorted(
    path for path in (ROOT / "book").glob("*.md") if path.read_text().startswith("---\njupytext:")
)


def test_the_chapters_are_found():
    names = {path.stem for path in CHAPTERS}
    assert {"intro", "privacy_protections", "membership_inference", "tracing_attack"} <= names
    assert "fisher_information" in names


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_a_round_trip_through_a_notebook_leaves_the_chapter_byte_identical(path: Path):
    # What JupyterLab does when a reader opens the chapter and saves it unchanged.
    config = load_jupytext_configuration_file(find_jupytext_configuration_file(str(path.parent)))
    text = path.read_text()
    ipynb = jupytext.writes(jupytext.reads(text, fmt="md:myst"), "ipynb")
    notebook = jupytext.reads(ipynb, "ipynb")
    assert jupytext.writes(notebook, fmt="md:myst", config=config) == text


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_every_figure_has_alt_text_that_describes_it(path: Path):
    figures = [
        cell.metadata["mystnb"]
        for cell in jupytext.read(path).cells
        if "figure" in cell.metadata.get("mystnb", {})
    ]
    for figure in figures:
        alt = figure.get("image", {}).get("alt", "")
        assert book_pages.is_described(f"{figure['figure']['name']}.png", alt), figure
        assert len(alt.split()) >= 12, f"{figure['figure']['name']}: alt text too short"


def test_the_publishing_workflow_never_cancels_a_deploy_in_progress():
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "publish.yml").read_text())
    assert workflow["concurrency"]["cancel-in-progress"] is False
