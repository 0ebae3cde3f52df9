"""A release with a parameter without eta: no variance released, none drawn, P5 reads it."""

import json

import numpy as np
import pytest

from synpmx_lite.generator.checks import release_checks
from synpmx_lite.generator.estimate import model_fingerprint, synpmx_model_estimate
from synpmx_lite.pmx.study import load_dataset


@pytest.fixture(scope="module")
def fit():
    return synpmx_model_estimate(*load_dataset("theo_sd"), random=("cl", "v"))


def test_no_variance_is_released_for_ka_and_its_typical_value_is_read(fit):
    fingerprint = model_fingerprint(fit)
    assert set(fingerprint.omega) == {"cl", "v"}
    assert "DV: ka typical value" in fit.privacy.moves.columns
    assert np.isfinite(fit.privacy.moves["DV: ka typical value"]).all()


def test_p5_refuses_a_released_variance_without_a_random_effect(fit):
    released = json.loads(model_fingerprint(fit).to_json())
    released["omega"]["ka"] = 0.1
    table = release_checks(json.dumps(released), fit.study, pk=fit.pk, privacy=fit.privacy)
    p5 = table.set_index("check").loc["P5"]
    assert p5["verdict"] == "FAIL"
    assert "no random effect behind it" in " ".join(map(str, p5.to_numpy()))
