"""A release with a parameter without eta: no variance released, none drawn, P5 reads it."""

import dataclasses
import json

import numpy as np
import pytest

from synpmx_lite.generator import generate
from synpmx_lite.generator.checks import release_checks
from synpmx_lite.generator.estimate import model_fingerprint, synpmx_model_estimate
from synpmx_lite.pmx.study import load_dataset


@pytest.fixture(scope="module")
def fit():
    return synpmx_model_estimate(*load_dataset("theo_sd"), random=("cl", "v"))


@pytest.fixture(scope="module")
def fingerprint(fit):
    return model_fingerprint(fit)


def test_no_variance_is_released_for_ka_and_its_typical_value_is_read(fit, fingerprint):
    assert set(fingerprint.omega) == {"cl", "v"}
    assert "DV: ka typical value" in fit.privacy.moves.columns
    assert np.isfinite(fit.privacy.moves["DV: ka typical value"]).all()


def test_p5_refuses_a_released_variance_without_a_random_effect(fit, fingerprint):
    released = json.loads(fingerprint.to_json())
    released["omega"]["ka"] = 0.1
    table = release_checks(json.dumps(released), fit.study, pk=fit.pk, privacy=fit.privacy)
    p5 = table.set_index("check").loc["P5"]
    assert p5["verdict"] == "FAIL"
    assert "no random effect behind it" in " ".join(map(str, p5.to_numpy()))


def test_synthetic_patients_draw_no_random_effect_for_ka(fingerprint, monkeypatch):
    """Every synthetic patient gets the released ka (theo_sd has no effect on ka), while CL
    and V vary from patient to patient by their released variances."""
    drawn = {}
    real = generate._pk_observations

    def kept(fingerprint, theta, *args):
        drawn["theta"] = theta
        return real(fingerprint, theta, *args)

    monkeypatch.setattr(generate, "_pk_observations", kept)
    generate.synpmx_model_generate(fingerprint, seed=3)
    names = list(fingerprint.pk_model.parameters)
    theta = drawn["theta"]
    np.testing.assert_allclose(theta[:, names.index("ka")], fingerprint.typical["ka"], rtol=1e-12)
    for name in ("cl", "v"):
        spread = np.log(theta[:, names.index(name)]).std()
        assert spread > 0.3 * np.sqrt(fingerprint.omega[name])


def test_p5_fails_a_released_typical_value_that_no_reading_covers(fit, fingerprint):
    """Before the jackknife reading, ka's typical value had no move read at all: P5 judges
    the release against the readings it is given, and fails one that lacks it."""
    unread = dataclasses.replace(
        fit.privacy, moves=fit.privacy.moves.drop(columns="DV: ka typical value")
    )
    table = release_checks(fingerprint.to_json(), fit.study, pk=fit.pk, privacy=unread)
    p5 = table.set_index("check").loc["P5"]
    assert p5["verdict"] == "FAIL"
    assert "DV: ka typical value has no reading" in " ".join(map(str, p5.to_numpy()))
