"""The pages as readers get them, tried on one small book built with the project's configuration.

The small book is built once for the module (with ``repository.url`` empty, as a book without
a home is built): a chapter with a figure, inline and display math and a cross-reference to a
second page. ``book/_ext/book_pages.py`` is what is under test: the buttons that follow the
repository, MathJax from the build's own files, and the check of every page's images and
internal links, which fails the real book's build.
"""

import shutil
import subprocess
from pathlib import Path

import book_pages
import nbformat
import pytest
import yaml

from tests.book.scratch import ROOT, build, write_chapter

ALT = "A straight line rising from the lower left to the upper right."
FIGURE_CELL = f"""---
mystnb:
  figure:
    caption: A line.
    name: fig-line
  image:
    alt: {ALT}
---
import matplotlib.pyplot as plt
plt.figure(figsize=(2, 2))
plt.plot([0, 1], [0, 1])
plt.show()"""
TEXT = r"""
Inline math $\eta_i = x^2$ and a display:

$$
\mathrm{AUC} = \int_0^1 \mathrm{TPR}\, d\,\mathrm{FPR}
$$

{numref}`fig-line` is drawn below; the {ref}`other page's section <other-section>` is elsewhere.
"""
PLACEHOLDERS = ("synpmx-lite-book", "executablebooks/jupyter-book", "mybinder.org", "github.com")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The small book's HTML output folder."""
    book = tmp_path_factory.mktemp("pages")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    extensions = config["sphinx"]["local_extensions"]
    config["sphinx"]["local_extensions"] = dict.fromkeys(extensions, str(ROOT / "book" / "_ext"))
    config["sphinx"]["config"]["execution_depends_on"] = []
    config["repository"]["url"] = ""
    (book / "_config.yml").write_text(yaml.safe_dump(config))
    (book / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n"
        "  - file: book/chapter\n  - file: book/other\n"
    )
    shutil.copytree(ROOT / "book" / "_static", book / "book" / "_static")
    for bibfile in config["bibtex_bibfiles"]:
        (book / bibfile).write_text("")
    (book / "book" / "intro.md").write_text("# Small book\n\nTwo pages.\n")
    (book / "book" / "other.md").write_text("# Other\n\n(other-section)=\n## A section\n\nText.\n")
    write_chapter(book, FIGURE_CELL, text=TEXT)
    result = build(book)
    assert result.returncode == 0, result.stdout + result.stderr
    return book / "_build" / "html"


def chapter_html(built: Path) -> str:
    return (built / "book" / "chapter.html").read_text()


def test_no_page_links_a_placeholder_or_a_repository_when_none_is_named(built):
    for path in book_pages.html_pages(built):
        html = path.read_text()
        assert not [word for word in PLACEHOLDERS if word in html], path
    assert "launch-buttons" not in chapter_html(built)
    assert "download-buttons" in chapter_html(built)


def test_every_figure_is_described_and_every_internal_link_resolves(built):
    assert book_pages.page_defects(built) == []
    images = book_pages.read_page(built / "book" / "chapter.html").images
    assert [alt for _, alt in images] == [ALT]


def test_an_undescribed_figure_or_a_dead_link_is_found(built, tmp_path):
    # The real chapter's HTML, its image's alt text replaced by its path and a link broken.
    copy = tmp_path / "html"
    shutil.copytree(built, copy)
    page = copy / "book" / "chapter.html"
    (src, _), = book_pages.read_page(page).images
    html = page.read_text().replace(f'alt="{ALT}"', f'alt="{src}"')
    html = html.replace('href="other.html#other-section"', 'href="other.html#no-such-section"')
    page.write_text(html.replace("</body>", '<a href="missing.html">gone</a></body>'))
    defects = book_pages.page_defects(copy)
    assert len(defects) == 3, defects
    assert any("has no description" in defect for defect in defects)
    assert any("missing anchor #no-such-section" in defect for defect in defects)
    assert any("missing.html points at a missing file" in defect for defect in defects)


@pytest.mark.parametrize(
    ("src", "alt", "described"),
    [
        ("../_images/abc.png", "", False),
        ("../_images/abc.png", "   ", False),
        ("../_images/abc.png", "../_images/abc.png", False),
        ("../_images/abc.png", "abc.png", False),
        ("../_images/abc.png", "abc", False),
        ("../_images/abc.png", "_images/other.svg", False),
        ("../_images/abc.png", "Scores of members and outsiders, one panel per visit.", True),
    ],
)
def test_alt_text_must_describe_the_image(src, alt, described):
    assert book_pages.is_described(src, alt) is described


def test_the_download_menu_gives_the_executed_notebook(built):
    html = chapter_html(built)
    assert 'href="../_sources/book/chapter.ipynb"' in html
    assert 'href="../_sources/book/chapter.md"' in html
    notebook = nbformat.read(built / "_sources" / "book" / "chapter.ipynb", as_version=4)
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    assert any("image/png" in output.get("data", {}) for output in outputs)


def test_mathjax_comes_from_the_builds_own_files(built):
    html = chapter_html(built)
    assert f'src="../_static/{book_pages.MATHJAX_PATH}?' in html  # with Sphinx's checksum
    assert "cdn.jsdelivr" not in html and "mathjax@3" not in html
    copied = built / "_static" / book_pages.MATHJAX_PATH
    assert copied.read_bytes() == book_pages.mathjax_source().read_bytes()


def test_equations_render_in_a_browser_without_a_network(built):
    browser = next(
        (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
         if shutil.which(name)),
        None,
    )
    assert browser is not None, "a headless Chromium (chromium or google-chrome) is needed"
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
         # No network: every request outside the book's own files fails.
         "--proxy-server=127.0.0.1:9", "--dump-dom", (built / "book" / "chapter.html").as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    assert dom.count("<mjx-container") == 2
    assert "\\(" not in dom and "\\[" not in dom and "$$" not in dom
