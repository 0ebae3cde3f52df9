import dataclasses
import json

import pytest

from synpmx_lite.generator.estimate import model_fingerprint
from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.release import (
    FINGERPRINT_FIELDS,
    Fingerprint,
    arm_label,
    engine_label_clashes,
    release_problems,
    synthetic_id,
)
from tests.simulated import known_fingerprint


def _json(**changes):
    released = json.loads(known_fingerprint(20).to_json())
    released.update(changes)
    return json.dumps(released)


def test_a_valid_fingerprint_has_no_problems_and_reads_back():
    fingerprint = known_fingerprint(20)
    assert release_problems(json.loads(fingerprint.to_json())) == []
    assert Fingerprint.from_json(fingerprint.to_json()) == fingerprint
    assert set(json.loads(fingerprint.to_json())) == set(FINGERPRINT_FIELDS)


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        # Wrong types: before, these were read and generation failed inside numpy.
        ({"cohort_size": "20"}, TypeError, "cohort_size must be an integer"),
        ({"typical": {"cl": "1", "v": 10.0}}, TypeError, "typical.cl must be a number"),
        ({"arms": {"arm": "all"}}, TypeError, "arms must be a list"),
        ({"omega": [0.09, 0.04]}, TypeError, "omega must be an object"),
        ({"log_dv": "no"}, TypeError, "log_dv must be true or false"),
        ({"categories": {"SEX": [["F", 0.5, 1]]}}, TypeError, r"categories.SEX\[0\] must be"),
        # Values out of range or outside the allowlist.
        ({"dose_change_rate": 1.5}, ValueError, "dose_change_rate must lie in"),
        ({"typical": {"cl": 1.0}}, ValueError, r"typical lacks \['v'\]"),
        ({"typical": {"cl": 1.0, "v": 10.0, "ka": 1.0}}, ValueError, "keys outside"),
        ({"error": "exponential"}, ValueError, "error must be one of"),
        ({"pk_endpoint": "cp"}, ValueError, "pk_endpoint is not one of the endpoints"),
        ({"patients": [1, 2]}, ValueError, "fields outside the allowlist: patients"),
        ({"checks": {"P4": "ok", "P5": "pass"}}, ValueError, "checks.P4 must be one of"),
        # An ordinary release stripped of its verdicts, or claiming a guarantee it keeps
        # verdicts beside; a guarantee out of range.
        ({"checks": {}}, ValueError, r"checks lacks \['P4', 'P5'\]"),
        ({"checks": {"P5": "pass"}}, ValueError, r"checks lacks \['P4'\]"),
        ({"guarantee": {"epsilon": 1.0, "subsets": 4}}, ValueError, "checks must be empty"),
        ({"guarantee": {"epsilon": 0.0, "subsets": 4}, "checks": {}}, ValueError, "epsilon"),
        ({"guarantee": {"epsilon": 1.0, "subsets": 1}, "checks": {}}, ValueError, "subsets"),
        ({"guarantee": {"epsilon": 1.0}, "checks": {}}, ValueError, r"lacks \['subsets'\]"),
        ({"guarantee": {"epsilon": "1", "subsets": 4}, "checks": {}}, TypeError, "a number"),
    ],
)
def test_from_json_refuses_what_is_not_a_fingerprint(changes, error, message):
    with pytest.raises(error, match=message):
        Fingerprint.from_json(_json(**changes))


def test_from_json_refuses_text_that_is_not_json():
    with pytest.raises(ValueError, match="text is not JSON"):
        Fingerprint.from_json("{cohort_size: 3")
    with pytest.raises(TypeError, match="text must be a JSON string"):
        Fingerprint.from_json({"cohort_size": 3})
    with pytest.raises(TypeError, match="must be a JSON object"):
        Fingerprint.from_json("[]")


def test_a_fingerprint_is_checked_when_made():
    with pytest.raises(TypeError, match=r"arms\[0\].patients must be an integer"):
        dataclasses.replace(
            known_fingerprint(), arms=[dict(known_fingerprint().arms[0], patients=12.5)]
        )


def test_a_fingerprint_read_back_generates():
    text = known_fingerprint(30).to_json()
    assert len(synpmx_model_generate(Fingerprint.from_json(text), seed=1)["id"].unique()) == 30


def test_engine_labels():
    assert [arm_label(i) for i in range(3)] == ["arm 1", "arm 2", "arm 3"]
    assert [synthetic_id(i) for i in (0, 41)] == ["syn-0001", "syn-0042"]
    clashes = engine_label_clashes([1, "syn-7", " SYN-0001", "arm 3", "ARM 12", "arm", "armada 1"])
    assert clashes == ["syn-7", " SYN-0001", "arm 3", "ARM 12"]


def test_a_printed_fingerprint_fits_its_output_box_and_keeps_every_number(warfarin_fit):
    levels = [[f"a category level with a long name {i}", 0.25] for i in range(4)]
    long_levels = known_fingerprint(20, categories={"SEX": levels})
    warfarin = model_fingerprint(warfarin_fit)
    for fingerprint in (warfarin, long_levels):
        assert max(map(len, str(fingerprint).splitlines())) <= 72
    # Wrapping moves words onto continuation lines; none is lost or cut.
    words = " ".join(str(long_levels).split())
    assert all(f"{level} 0.25" in words for level, _ in levels)
    pd_model = warfarin.pd["pca"]
    shown = str(warfarin)
    assert all(f"{name} {value:g}" in shown for name, value in pd_model["parameters"].items())
    assert f"residual SD: {pd_model['residual']:g}" in shown


def test_a_release_stating_a_guarantee_without_verdicts_reads_back():
    # The schema reads the claim; it cannot verify it, and the checks do not pass it
    # (tests/generator/test_private_release.py, a guarantee forged onto an ordinary release).
    fields = json.loads(known_fingerprint(20).to_json())
    fields.update(checks={}, guarantee={"epsilon": 1.0, "subsets": 4})
    private = Fingerprint.from_json(json.dumps(fields))
    assert private.guarantee == {"epsilon": 1.0, "subsets": 4}
    assert "guarantee: epsilon 1, 4 subsets" in str(private)
    assert "checks:" not in str(private)
    assert Fingerprint.from_json(private.to_json()) == private
