"""The membership audit refuses a release it cannot score (chosen random effects, covariate
effects, a correlated pair) rather than scoring it against estimates it does not hold."""

import dataclasses

import pytest

from synpmx_lite.attacks import membership_generator, shadow_releases
from synpmx_lite.pmx.study import load_dataset


@pytest.mark.parametrize(
    "options, named",
    [
        ({"random": ("cl", "v")}, "random=('cl', 'v')"),
        ({"effects": ("cl ~ wt/70",)}, "effects=('cl ~ wt/70',)"),
        ({"correlated": ("cl", "v")}, "correlated=('cl', 'v')"),
    ],
)
def test_the_attack_and_the_shadow_releases_refuse_a_fit_option(monkeypatch, options, named):
    data, roles = load_dataset("warfarin")
    chosen = dataclasses.replace(roles, **options)
    for module in (membership_generator, shadow_releases):
        monkeypatch.setattr(module, "load_dataset", lambda name: (data, chosen))
    with pytest.raises(ValueError, match="cannot audit this release") as refused:
        membership_generator.generator_membership_attack("warfarin", replicates=4)
    assert named in str(refused.value)
    with pytest.raises(ValueError, match="cannot audit this release"):
        shadow_releases.shadow_settings("warfarin", replicates=10)


def test_a_shipped_study_with_default_roles_is_audited():
    _, roles = load_dataset("warfarin")
    membership_generator.refuse_unauditable("warfarin", roles)  # no error
    assert shadow_releases.shadow_settings("warfarin", replicates=10)["study"] == "warfarin"
