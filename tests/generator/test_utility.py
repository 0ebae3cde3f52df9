"""Usefulness measures: precisions, refits on synthetic data, rounding against RSE, the store."""

import importlib.metadata
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synpmx_lite.generator.estimate import model_fingerprint, synpmx_model_estimate
from synpmx_lite.generator.frontier import (
    DEFAULT_SETTINGS,
    PUBLISHED_ENROLMENT,
    SOURCES,
    UsefulnessResults,
    _digest,
    _keyed,
    _mean_and_se,
    _work,
    frontier_figure,
    frontier_table,
    published_groups,
    recovered_share,
    usefulness_results,
)
from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.utility import (
    PRECISIONS,
    covariate_summaries,
    design_rates,
    fingerprint_at,
    model_estimates,
    pd_bands,
    refit_estimates,
    refit_summary,
    rounding_against_rse,
    synthetic_studies,
    synthetic_study,
    vpc_bands,
    vpc_bands_by_arm,
)
from synpmx_lite.pmx.population import FitWarning
from synpmx_lite.pmx.study import DATASETS, load_dataset
from synpmx_lite.stored import StoredResult, read_stored, sources_digest

from ..simulated import SIMULATED_ROLES, known_fingerprint

DATA = Path(__file__).parents[2] / "synpmx_lite" / "data"


@pytest.fixture
def warfarin(warfarin_fit):
    """The session's warfarin fit (tests/conftest.py)."""
    return warfarin_fit


def test_one_figure_is_the_ordinary_release(warfarin):
    assert fingerprint_at(warfarin, 1) == model_fingerprint(warfarin)


def test_precisions_round_the_model_estimates_only(warfarin):
    unrounded, two = fingerprint_at(warfarin, None), fingerprint_at(warfarin, 2)
    assert unrounded.typical["cl"] == pytest.approx(warfarin.pk.typical["cl"], rel=1e-15)
    assert two.typical["cl"] == pytest.approx(0.13)
    assert two.pd["pca"]["baseline"] == pytest.approx(100.0)
    assert two.covariates == unrounded.covariates == model_fingerprint(warfarin).covariates


def test_refits_recover_a_known_model():
    """Synthetic studies drawn from a known fingerprint, refitted: the typical values come
    back within their sampling spread."""
    truth = known_fingerprint(n=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fit = synpmx_model_estimate(_event_table(truth), SIMULATED_ROLES, drop_influential=False)
    refits = refit_estimates(fingerprint_at(fit, None), fit, replicates=6, seed=2)
    summary = refit_summary(refits, model_estimates(fit.pk, fit.pd)).table
    assert summary.loc["typical cl", "ratio"] == pytest.approx(1.0, abs=0.15)
    assert summary.loc["typical v", "ratio"] == pytest.approx(1.0, abs=0.15)
    assert summary["converged"].min() > 0.5


def _event_table(fingerprint):
    table = synpmx_model_generate(fingerprint, seed=7)
    return table.assign(id=table["id"].str.replace("syn-", "", regex=False).astype(int) + 100)


def test_replicate_r_does_not_depend_on_the_number_of_replicates(warfarin):
    two = refit_estimates(fingerprint_at(warfarin, 1), warfarin, replicates=2, seed=9)
    one = refit_estimates(fingerprint_at(warfarin, 1), warfarin, replicates=1, seed=9)
    pd.testing.assert_frame_equal(two.iloc[:1], one)


def test_refit_summary_covers_and_refuses():
    source = pd.Series({"a": 1.0, "b": 2.0})
    refits = pd.DataFrame({"a": np.linspace(0.8, 1.2, 41), "b": np.linspace(3.0, 4.0, 41)})
    table = refit_summary(refits, source).table
    assert table["covered"].tolist() == [True, False]
    assert table.loc["b", "ratio"] == pytest.approx(1.75)
    # The bias's Monte Carlo SE: the refits' SD over the root of their number, over the source.
    expected = 100 * refits["b"].std(ddof=1) / math.sqrt(41) / 2.0
    assert table.loc["b", "bias_se_percent"] == pytest.approx(expected)
    # A negative estimate (a PD plateau) has a positive SE all the same (found in review).
    negative = refit_summary(-refits, -source).table
    assert negative.loc["b", "bias_se_percent"] == pytest.approx(expected)
    with pytest.raises(ValueError, match="same estimates"):
        refit_summary(refits[["b", "a"]], source)


def test_rounding_step_against_rse(warfarin):
    table = rounding_against_rse(warfarin)
    # cl 0.134 on a one-figure grid of 0.1: a step of 0.1 / 0.134.
    assert table.loc["typical cl", "step_1_percent"] == pytest.approx(
        100 * 0.1 / warfarin.pk.typical["cl"]
    )
    assert table.loc["typical cl", "moved_1_percent"] == pytest.approx(
        100 * abs(0.1 / warfarin.pk.typical["cl"] - 1)
    )
    rse_sd = warfarin.pk.summary().loc[("omega_sd", "cl"), "rse_percent"]
    assert table.loc["omega cl", "rse_percent"] == pytest.approx(2 * rse_sd)


def test_vpc_rates_and_covariates_of_the_source_against_itself(warfarin):
    study = warfarin.study
    bands = vpc_bands(study, [study, study])
    assert np.allclose(bands["observed"], bands["median"], equal_nan=True)
    assert len(synthetic_study(model_fingerprint(warfarin), warfarin.roles, seed=1).ids) == 32
    rates = design_rates(study)
    assert rates["dose_change"] == 0.0
    assert 0 < rates["attendance cp"] < 1
    summaries = covariate_summaries(study, warfarin.continuous)
    assert summaries["sex = male"] + summaries["sex = female"] == pytest.approx(1.0)
    assert summaries["wt geometric mean"] == pytest.approx(
        np.exp(np.log(study.covariates["wt"]).mean())
    )


def test_stored_refits_are_current_and_a_recomputation_matches(warfarin_fit):
    """The shipped results match the current settings and sources; two replicates of
    warfarin's one-figure release refitted afresh equal the stored ones, and so do the refits
    of a stored private release."""
    shipped = read_stored(DATA / "usefulness_refits.npz")
    # A stale file fails here, before usefulness_results() would spend minutes recomputing.
    assert shipped.matches(_keyed(DEFAULT_SETTINGS), _digest(DEFAULT_SETTINGS))
    results = usefulness_results()
    fit = warfarin_fit
    labels = list(PRECISIONS)
    seed = DEFAULT_SETTINGS["seed"] + labels.index("1 figure")
    fresh = refit_estimates(fingerprint_at(fit, 1), fit, replicates=2, seed=seed)
    # Fits are optimiser results: another numpy, scipy or BLAS build moves their last digits
    # (3e-9 relative seen), a changed engine moves them by far more.
    np.testing.assert_allclose(
        fresh.to_numpy(), results.refits("warfarin", "1 figure")[:2], rtol=1e-6
    )
    # The predictive check of the same synthetic studies, drawn again from their streams.
    studies = synthetic_studies(
        fingerprint_at(fit, 1), fit.roles, replicates=DEFAULT_SETTINGS["replicates"], seed=seed
    )
    bands = vpc_bands(fit.study, studies)[["observed", "low", "high"]]
    stored = results.predictive_checks("warfarin", "1 figure")
    np.testing.assert_allclose(stored["vpc"].to_numpy(), bands.to_numpy(), rtol=1e-12)
    assert set(stored) == {"vpc", "pd pca"}
    # Within arms: mad_sim's four arms of 8 bins of 3 percentiles, not one pooled check.
    assert len(results.predictive_checks("mad_sim", "1 figure")["vpc"]) == 4 * 8 * 3
    epsilon = DEFAULT_SETTINGS["epsilons"][-1]
    release = results.private_release("warfarin", epsilon)
    e = DEFAULT_SETTINGS["epsilons"].index(epsilon)
    again = refit_estimates(
        release.fingerprint, fit, replicates=1, seed=DEFAULT_SETTINGS["seed"] + 100 * (e + 1)
    )
    np.testing.assert_allclose(
        again.to_numpy(), results.private_refits("warfarin", epsilon).iloc[:1].to_numpy(), rtol=1e-6
    )


def test_the_stored_refits_are_keyed_by_the_studies_data_and_opendp():
    """A changed study file or another OpenDP (whose noise the private releases draw) is
    another result, not the stored one."""
    files = [f"data/{DATASETS[study][0]}" for study in DEFAULT_SETTINGS["studies"]]
    assert _digest(DEFAULT_SETTINGS) == sources_digest([*SOURCES, *files])
    assert _digest(DEFAULT_SETTINGS) != sources_digest(SOURCES)
    assert _keyed(DEFAULT_SETTINGS) == {
        **DEFAULT_SETTINGS,
        "opendp": importlib.metadata.version("opendp"),
    }


def test_frontier_table_reads_every_release():
    table = frontier_table(UsefulnessResults(read_stored(DATA / "usefulness_refits.npz")))
    assert set(table["release"]) == {*PRECISIONS, "DP"}
    assert table["usefulness"].between(0, 1).all()
    private = table[table["release"] == "DP"]
    assert sorted(set(private["epsilon"])) == DEFAULT_SETTINGS["epsilons"]


def test_studies_in_parallel_give_the_serial_arrays():
    """At a tiny setting (the infinite budget: no unseeded noise), two processes give the
    very arrays one gives, in the same order, and a private release's refits are clustered
    by draw."""
    settings = {
        **DEFAULT_SETTINGS,
        "studies": ["theo_sd", "theo_md"],
        "replicates": 1,
        "epsilons": [math.inf],
        "dp_draws": 2,
        "dp_replicates": 1,
    }
    serial = _work(settings, workers=1)(lambda done, total: None)
    parallel = _work(settings, workers=2)(lambda done, total: None)
    assert list(serial) == list(parallel)
    for key, value in serial.items():
        np.testing.assert_array_equal(value, parallel[key], err_msg=key)
    assert "theo_md|epsilon=inf|draw=1" in serial


def test_frontier_standard_error_is_over_draws():
    shares = np.array([1.0, 0.0, 0.5, 0.5])  # two draws of two synthetic studies each
    mean, se = _mean_and_se(shares, 2)
    assert mean == pytest.approx(0.5)
    assert se == pytest.approx(0.0)  # the draws' means agree, whatever their studies do
    assert _mean_and_se(shares, 4)[1] == pytest.approx(shares.std(ddof=1) / 2)


def test_pd_bands_of_the_source_against_itself(warfarin):
    """With the source as its only replicate, every band is the observed percentile itself."""
    bands = pd_bands(warfarin, [warfarin.study], endpoint="pca", bins=4)
    assert set(bands["arm"]) == {"arm 1"}
    assert len(bands) == 4 * 3
    for column in ("low", "median", "high"):
        np.testing.assert_allclose(bands[column], bands["observed"])
    rows = warfarin.study.observations
    pca = rows.loc[rows["endpoint"].astype(str) == "pca", "dv"]
    median = bands.loc[bands["percentile"] == 50, "observed"]
    assert median.between(pca.min(), pca.max()).all()
    with pytest.raises(ValueError, match="endpoint 'cp' has no PD model"):
        pd_bands(warfarin, [warfarin.study], endpoint="cp")
    with pytest.raises(ValueError, match="at least one synthetic study"):
        pd_bands(warfarin, [], endpoint="pca")


@pytest.fixture(scope="module")
def mad_fit():
    """The builder's fit of the simulated multiple ascending dose study (four arms, a PD
    endpoint), made once for this module."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return synpmx_model_estimate(*load_dataset("mad_sim"))


def test_vpc_bands_by_arm(mad_fit, warfarin):
    """Concentrations within each of mad_sim's four arms, from the arm's own patients; one arm
    (warfarin) gives the pooled check."""
    synthetic = [synthetic_study(fingerprint_at(mad_fit, None), mad_fit.roles, seed=1)]
    bands = vpc_bands_by_arm(mad_fit, synthetic, bins=4)
    assert sorted(set(bands["arm"])) == ["arm 1", "arm 2", "arm 3", "arm 4"]
    # An arm's observed percentiles are its own patients': the arms' medians follow the dose.
    medians = bands[bands["percentile"] == 50].groupby("arm")["observed"].max()
    assert medians.is_monotonic_increasing, medians
    # And each arm's band is its own synthetic patients' (pooled, they would be one band).
    synthetic_medians = bands[bands["percentile"] == 50].groupby("arm")["median"].max()
    assert synthetic_medians.is_monotonic_increasing, synthetic_medians
    pooled = [synthetic_study(fingerprint_at(warfarin, 1), warfarin.roles, seed=2)]
    by_arm = vpc_bands_by_arm(warfarin, pooled)
    assert set(by_arm["arm"]) == {"arm 1"}
    pd.testing.assert_frame_equal(
        by_arm.drop(columns="arm"), vpc_bands(warfarin.study, pooled), check_dtype=False
    )


def test_pd_bands_by_arm(mad_fit):
    """Four arms: each gets its own bins, observed from its own patients, and the synthetic
    patients are grouped by the arm the release gives them."""
    released = fingerprint_at(mad_fit, None)
    synthetic = [synthetic_study(released, mad_fit.roles, seed=1)]
    bands = pd_bands(mad_fit, synthetic, endpoint="pd", bins=4)
    assert sorted(set(bands["arm"])) == ["arm 1", "arm 2", "arm 3", "arm 4"]
    assert bands.notna().all().all()
    assert (bands["low"] <= bands["median"]).all() and (bands["median"] <= bands["high"]).all()
    # Each arm's observed baseline percentiles are those of its own patients at time 0 (the
    # release names an arm by its order; its first planned dose says which source arm it is).
    study = mad_fit.study
    first_dose = study.doses.sort_values("time").groupby("patient")["amount"].first()
    rows = study.observations
    rows = rows[(rows["endpoint"].astype(str) == "pd") & (rows["time"] == 0)]
    baseline = bands[bands["time"] == 0]
    for arm in released.arms:
        values = rows.loc[rows["patient"].map(first_dose) == arm["doses"][0]["amount"], "dv"]
        assert values.size == arm["patients"]
        got = baseline.loc[baseline["arm"] == arm["arm"]].sort_values("percentile")["observed"]
        np.testing.assert_allclose(got, values.quantile([0.1, 0.5, 0.9]).to_numpy())


def _observed(study: str, endpoint: str) -> pd.DataFrame:
    data = pd.read_csv(DATA / f"{study}.csv")
    return data[(data["EVID"] == 0) & (data["DVID"] == endpoint)]


@pytest.mark.parametrize("study", ["mad_sim", "pkpd_sim"])
def test_simulated_designs_respond_to_the_dose(study):
    """The shipped files of the two dose-ranging designs: exposure rises in proportion to the
    dose (linear PK), and the PD falls further from each patient's baseline the higher the
    dose, which a release without a dose term in its PD model cannot keep."""
    cp = _observed(study, "cp").groupby("DOSE")["DV"].median()
    assert cp.is_monotonic_increasing and cp.index.is_monotonic_increasing
    per_mg = cp / cp.index
    assert (per_mg / per_mg.median()).between(0.75, 1.25).all(), per_mg
    pd_rows = _observed(study, "pd")
    baseline = pd_rows[pd_rows["TIME"] == 0].set_index("ID")["DV"]
    later = pd_rows[pd_rows["TIME"] > 0]
    change = (later["DV"] - later["ID"].map(baseline)).groupby(later["DOSE"]).mean()
    assert change.is_monotonic_decreasing and (change < 0).all(), change


def test_the_groups_come_from_the_published_enrolment_not_the_cohort(monkeypatch):
    import synpmx_lite.generator.frontier as frontier

    for study in PUBLISHED_ENROLMENT:  # the published number is the shipped file's
        data, roles = load_dataset(study)
        assert PUBLISHED_ENROLMENT[study] == data[roles.id].nunique()

    def refuse(*_):
        raise AssertionError("the cohort was read")

    monkeypatch.setattr(frontier, "load_dataset", refuse)
    assert published_groups("warfarin") == 3
    assert published_groups("theo_sd") == 2
    assert published_groups("pheno_sd") == 5
    with pytest.raises(ValueError, match="published enrolment"):
        published_groups("nimoData")


def test_the_frontier_draws_a_bound_as_a_floor_and_clips_its_band():
    table = pd.DataFrame(
        {
            "study": "s",
            "release": "DP",
            "epsilon": [0.1, 1.0, 10.0],
            "usefulness": [0.05, 0.5, 0.99],
            "se": [0.1, 0.05, 0.1],
        }
    )
    references = pd.DataFrame(
        {
            "study": "s",
            "release": ["1 figure", "2 figures"],
            "usefulness": [0.9, 0.95],
            "epsilon": [1.06, math.nan],
        }
    )
    figure = frontier_figure(table, references)
    layers = {type(layer.geom).__name__: layer for layer in figure.layers}
    segment = layers["geom_segment"].geom.data
    assert segment[["epsilon", "right"]].values.tolist() == [[1.06, 10.0]]
    assert layers["geom_hline"].geom.data["release"].tolist() == ["2 figures"]
    band = figure.data
    assert band["low"].min() == 0.0 and band["high"].max() == 1.0


def test_frontier_table_counts_the_independent_releases():
    results = UsefulnessResults(read_stored(DATA / "usefulness_refits.npz"))
    table = frontier_table(results)
    private = table["release"] == "DP"
    assert (table.loc[private, "releases"] == DEFAULT_SETTINGS["dp_draws"]).all()
    assert (table.loc[~private, "releases"] == DEFAULT_SETTINGS["replicates"]).all()
    # A private row's standard error is over its releases, each release's studies averaged.
    row = table[private].iloc[-1]
    share = recovered_share(
        results.private_refits(row["study"], row["epsilon"]), results.source(row["study"]), 0.25
    )
    means = share.reshape(DEFAULT_SETTINGS["dp_draws"], -1).mean(axis=1)
    assert row["se"] == pytest.approx(means.std(ddof=1) / math.sqrt(means.size))


def test_frontier_table_clusters_a_private_releases_studies():
    # Two synthetic studies per private release and three releases, beside four ordinary
    # refits: a standard error over the six studies, or a count of them, is the bug.
    names, source = ["typical CL", "omega CL"], np.array([1.0, 0.5])
    shares = {0: [1.0, 0.0], 1: [1.0, 1.0], 2: [0.5, 0.0]}  # per release, per study

    def refits(recovered: list[float]) -> np.ndarray:
        # Share 1: both estimates at the source; 0.5: the first; 0: neither (twice the source).
        return np.array([source * [1 if r > 0 else 2, 1 if r == 1 else 2] for r in recovered])

    arrays = {"s|names": np.array(names), "s|source": source}
    arrays |= {f"s|{label}": refits([1.0, 0.5, 0.5, 0.0]) for label in PRECISIONS}
    arrays |= {f"s|epsilon=1|draw={d}": refits(r) for d, r in shares.items()}
    settings = {"studies": ["s"], "epsilons": [1.0], "dp_draws": 3, "dp_replicates": 2}
    table = frontier_table(UsefulnessResults(StoredResult(arrays, settings, "", "", 0.0)))
    private = table[table["release"] == "DP"].iloc[0]
    means = np.array([np.mean(r) for r in shares.values()])
    flat = np.concatenate(list(shares.values()))
    assert private["releases"] == 3
    assert (table.loc[table["release"] != "DP", "releases"] == 4).all()
    assert private["usefulness"] == pytest.approx(flat.mean())
    assert private["se"] == pytest.approx(means.std(ddof=1) / math.sqrt(3))
    assert abs(private["se"] - flat.std(ddof=1) / math.sqrt(6)) > 0.01
