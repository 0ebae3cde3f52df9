"""The stored counts of what each public study releases, against the fits that make them."""

from importlib import resources

import numpy as np
import pandas as pd
import pytest

import synpmx_lite.attacks.public_releases as public_releases_module
from synpmx_lite.attacks.public_releases import (
    PUBLIC_COLUMNS,
    _release_arrays,
    public_digest,
    public_releases,
    public_studies,
)
from synpmx_lite.stored import read_stored


def shipped():
    return read_stored(resources.files("synpmx_lite") / "data" / "public_releases.npz")


def test_shipped_public_releases_are_current():
    # Fails after a change to the engine, the generator or a study's data: rerun
    # `python -m synpmx_lite.attacks.public_releases` and commit the file it writes.
    stored = shipped()
    settings = {"studies": public_studies(), "seed": 1}
    assert stored.matches(settings, public_digest(settings["studies"]))


def test_stored_counts_match_a_recomputation():
    stored = shipped()
    index = list(stored.arrays["study"]).index("theo_sd")  # the cheapest study to fit
    fresh = _release_arrays({"studies": ["theo_sd"], "seed": 1}, lambda done, total: None)
    for column in PUBLIC_COLUMNS:
        assert fresh[column][0] == stored.arrays[column][index], column


def test_the_table_reads_back_typed_and_in_the_studies_order():
    table = public_releases()
    assert list(table.columns) == list(PUBLIC_COLUMNS)
    assert table["study"].tolist() == public_studies()
    assert (table["pd_random_effects"] <= table["random_effects"]).all()
    assert np.issubdtype(table["patients"].dtype, np.integer)


def test_a_refused_study_is_refused_not_counted_as_releasing_nothing(monkeypatch):
    # A study the generator refuses has a row but no fit (whichever studies that is today).
    def refusing(names, seed, return_fits):
        return pd.DataFrame({"study": names, "fit": "refused: a stand-in"}), {}

    monkeypatch.setattr(public_releases_module, "privacy_checks_across_studies", refusing)
    with pytest.raises(ValueError, match="warfarin is refused"):
        _release_arrays({"studies": ["warfarin"], "seed": 1}, lambda done, total: None)


def test_public_releases_refuses_a_seed_that_is_not_an_integer():
    with pytest.raises(TypeError, match="seed"):
        public_releases(seed="1")
