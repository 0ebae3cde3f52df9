"""Sphinx extension: pages a reader can trust, offline, without a dead button or link.

**Buttons follow the repository.** ``repository.url`` in ``_config.yml`` is the one setting
that names the repository. Where it is set, the repository, issue and edit buttons and the
Binder and Live Code (Thebe) launch buttons are rendered; where it is empty, none of them is,
so that a book built before it has a home links to no placeholder. The download menu offers
each chapter's executed notebook either way.

**Math without a network.** MathJax is loaded from the book's own static files: its
self-contained SVG component (``tex-svg-full.js``, fonts included) is copied from the
``django-static-mathjax`` package into ``_static/mathjax/`` when the build starts, and
``mathjax_path`` points at it, so equations render on a machine that has no network.

**Every figure described, every link resolving.** When the HTML is written, every page is read
back: an image whose alt text is empty or a file path, and an internal link whose page or
anchor does not exist, are warnings, which fail the book's build (``-W``).

Load it from ``_config.yml``::

    sphinx:
      local_extensions:
        book_pages: book/_ext
"""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

# The one MathJax 3.2.2 component that needs no other file: TeX input, SVG output.
MATHJAX_COMPONENT = "tex-svg-full.js"
MATHJAX_PATH = f"mathjax/{MATHJAX_COMPONENT}"
REPOSITORY_BUTTONS = ("use_repository_button", "use_issues_button", "use_edit_page_button")
# Launch buttons that open the repository elsewhere (Binder) or run it in place (Thebe).
REPOSITORY_LAUNCHERS = ("binderhub_url", "jupyterhub_url", "thebe", "colab_url")
# Folders of the HTML output that hold no pages of the book.
_NOT_PAGES = ("_static", "_sources", "_images", "reports", "_downloads")
_IMAGE_FILE = re.compile(r"\.(png|jpe?g|gif|svg|webp)$", re.IGNORECASE)


def mathjax_source() -> Path:
    """The MathJax component shipped by ``django-static-mathjax`` (imported as ``mathjax``)."""
    import mathjax

    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / MATHJAX_COMPONENT


def buttons_follow_the_repository(app: Sphinx, config: Config) -> None:
    """Render the repository and launch buttons if ``repository.url`` is set, none if not."""
    options = config.html_theme_options
    has_repository = bool(str(options.get("repository_url") or "").strip())
    for button in REPOSITORY_BUTTONS:
        options[button] = has_repository
    if not has_repository:
        launch = dict(options.get("launch_buttons") or {})
        for key in REPOSITORY_LAUNCHERS:
            launch.pop(key, None)
        options["launch_buttons"] = launch
        options.pop("repository_url", None)


def offer_the_executed_notebook(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object
) -> None:
    """Give the download menu a chapter's executed notebook, with or without launch buttons.

    sphinx-book-theme copies it into ``_sources`` only while it makes launch buttons, which
    are not rendered without a repository.
    """
    executed = Path(app.env.mystnb_config.output_folder, *pagename.split("/"))
    executed = executed.with_name(executed.name + ".ipynb")
    if doctree is None or "kernelspec" not in app.env.metadata[pagename] or not executed.exists():
        return
    offered = Path(app.outdir, "_sources", *pagename.split("/"))
    offered = offered.with_name(offered.name + ".ipynb")
    offered.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(executed, offered)
    context["ipynb_source"] = f"{pagename}.ipynb"


def use_local_mathjax(app: Sphinx, config: Config) -> None:
    """Point ``mathjax_path`` at the copy in ``_static`` (see :func:`copy_mathjax`)."""
    config.mathjax_path = MATHJAX_PATH


def copy_mathjax(app: Sphinx) -> None:
    """Copy the MathJax component into the build's ``_static/mathjax/``."""
    if app.builder.format != "html":
        return
    target = Path(app.outdir, "_static", MATHJAX_PATH)
    source = mathjax_source()
    if not target.exists() or target.stat().st_size != source.stat().st_size:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


class PageLinks(HTMLParser):
    """What one HTML page links to, the anchors it defines, and its images' alt texts."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.anchors: set[str] = set()
        self.images: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for name in ("id", "name") if tag == "a" else ("id",):
            if values.get(name):
                self.anchors.add(values[name])
        if tag == "a" and "href" in values:
            self.links.append(values["href"])
        if tag == "img":
            self.images.append((values.get("src", ""), values.get("alt", "")))


def read_page(path: Path) -> PageLinks:
    page = PageLinks()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def is_described(src: str, alt: str) -> bool:
    """Whether an image's alt text describes it: not empty, not its file name or path."""
    text = alt.strip()
    if not text:
        return False
    names = {src, PurePosixPath(urlsplit(src).path).name, PurePosixPath(src).stem}
    return text not in names and not _IMAGE_FILE.search(text) and "/" not in text


def html_pages(outdir: Path) -> list[Path]:
    return sorted(
        path
        for path in outdir.rglob("*.html")
        if path.relative_to(outdir).parts[0] not in _NOT_PAGES
    )


def page_defects(outdir: Path) -> list[str]:
    """Every undescribed image and every internal link that does not resolve, in the HTML."""
    pages = {path.resolve(): read_page(path) for path in html_pages(outdir)}
    defects = []
    for path, page in pages.items():
        name = path.relative_to(outdir.resolve()).as_posix()
        defects += [
            f"{name}: image {src} has no description (alt text {alt!r})"
            for src, alt in page.images
            if not is_described(src, alt)
        ]
        defects += [
            f"{name}: link {href} {problem}"
            for href in page.links
            if (problem := _link_problem(path, href, pages)) is not None
        ]
    return defects


def _link_problem(path: Path, href: str, pages: dict[Path, PageLinks]) -> str | None:
    """Why an internal link does not resolve (its file or its anchor is missing), else None."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
        return None
    target = (path.parent / unquote(parts.path)).resolve() if parts.path else path.resolve()
    if not target.exists():
        return "points at a missing file"
    anchor = unquote(parts.fragment)
    if not anchor or target.suffix != ".html":
        return None
    if target not in pages:
        pages[target] = read_page(target)
    page = pages[target]
    return None if anchor in page.anchors else f"points at a missing anchor #{anchor}"


def warn_on_page_defects(app: Sphinx, exception: Exception | None) -> None:
    """Warn (failing a ``-W`` build) on every undescribed image and unresolved internal link."""
    if exception is not None or app.builder.format != "html":
        return
    for defect in page_defects(Path(app.outdir)):
        logger.warning(f"[book_pages] {defect}")


def setup(app: Sphinx) -> dict:
    # Before sphinx-book-theme reads its options (config-inited, priority 500).
    app.connect("config-inited", buttons_follow_the_repository, priority=400)
    app.connect("config-inited", use_local_mathjax)
    app.connect("builder-inited", copy_mathjax)
    # Before sphinx-book-theme makes the download menu (priority 501).
    app.connect("html-page-context", offer_the_executed_notebook, priority=500)
    app.connect("build-finished", warn_on_page_defects)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
