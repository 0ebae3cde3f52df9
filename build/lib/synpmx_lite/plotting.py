"""The book's plotnine theme and colours, so that every chapter's figures look alike."""

from __future__ import annotations

import plotnine as p9

#: Colours of the two kinds of candidate in every membership figure.
CANDIDATE_COLOURS = {"member": "#D95F02", "non-member": "#1B6CA8"}


def theme_book(width: float = 8.0, height: float = 3.2) -> p9.theme:
    """A minimal plotnine theme at a size that reads well in the book's column.

    Parameters
    ----------
    width, height : float
        Figure size in inches.

    Returns
    -------
    plotnine.theme
        Add it to a ggplot with ``+``.
    """
    return p9.theme_minimal(base_size=10) + p9.theme(
        figure_size=(width, height),
        legend_position="top",
        panel_grid_minor=p9.element_blank(),
        strip_text=p9.element_text(weight="bold"),
    )
