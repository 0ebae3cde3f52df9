"""The seed's four simulated designs: shipped exactly as their script makes them, and read by
the engine with the roles of their design."""

from importlib import resources

import numpy as np
import pytest

from synpmx_lite.pmx.simulated_designs import SIMULATED_DESIGNS, design_csv, simulate_design
from synpmx_lite.pmx.study import DATASETS, load_dataset, prepare_study


@pytest.mark.parametrize("name", list(SIMULATED_DESIGNS))
def test_the_shipped_file_is_what_the_script_makes(name):
    design = SIMULATED_DESIGNS[name]
    shipped = resources.files("synpmx_lite").joinpath("data", design.file).read_bytes()
    assert design_csv(name).encode() == shipped
    assert DATASETS[name][0] == design.file


@pytest.mark.parametrize("name", list(SIMULATED_DESIGNS))
def test_each_design_reads_with_its_roles(name):
    study = prepare_study(*load_dataset(name))
    assert study.n_patients == SIMULATED_DESIGNS[name].patients
    endpoints = set(study.observations["endpoint"].astype(str))
    expected = {"mad_sim": {"cp", "pd"}, "pkpd_sim": {"cp", "pd"}, "onc_sim": {"cp", "sld"}}
    assert endpoints == expected.get(name, {"cp"})


def test_the_designs_are_what_they_claim():
    mad = prepare_study(*load_dataset("mad_sim"))
    # Four ascending cohorts of 15, a dose a day for a week.
    assert mad.arms.value_counts().sort_index().tolist() == [15] * 4
    assert (mad.doses.groupby("patient").size() == 7).all()
    mixed = prepare_study(*load_dataset("mixroute_sim"))
    assert mixed.dose_central is not None and int(mixed.doses["central"].sum()) == 30
    onc = prepare_study(*load_dataset("onc_sim"))
    scans = onc.observations[onc.observations["endpoint"].astype(str) == "sld"]
    attended = scans.groupby("patient").size()
    # Patients leave: fewer scans later, never a scan after a missed one (every six weeks).
    assert attended.max() == 5 and attended.min() >= 1 and attended.mean() < 5
    last = scans.groupby("patient")["visit"].max()
    assert (last == (attended - 1) * 6 * 7 * 24).all()


def test_another_seed_gives_another_study():
    data = simulate_design("mad_sim")
    design = SIMULATED_DESIGNS["mad_sim"]
    other = design.simulate(np.random.default_rng(design.seed + 1))
    assert data.shape == other.shape and not data["DV"].equals(other["DV"])
    with pytest.raises(ValueError, match="name must be one of"):
        simulate_design("mad")
