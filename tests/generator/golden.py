"""Synthetic data pinned: what the generator draws from three released fingerprints, seed 7.

``tests/generator/test_generate.py`` compares the generator with these files, so that a change
in the order of its draws, or in what it draws, fails a test instead of passing unseen into
regenerated stored results. The fingerprints are releases of the warfarin study (PK, a PD
endpoint, covariates and a category), of the simulated mixed IV and oral study, and of a small
simulated study with a graded endpoint (``tests/generator/test_graded.py``'s). Remake the files,
after a change to the draws that is meant, with::

    .venv/bin/python -m tests.generator.golden
"""

import warnings
from pathlib import Path

import pandas as pd

from synpmx_lite.generator.estimate import model_fingerprint, synpmx_model_estimate
from synpmx_lite.generator.generate import synpmx_model_generate
from synpmx_lite.generator.release import Fingerprint
from synpmx_lite.pmx.population import FitWarning
from synpmx_lite.pmx.study import load_dataset

FOLDER = Path(__file__).resolve().parent / "data"
SEED = 7
CASES = ("warfarin", "mixroute_sim", "graded")


def fingerprint_path(case: str) -> Path:
    return FOLDER / f"{case}_fingerprint.json"


def synthetic_path(case: str) -> Path:
    return FOLDER / f"{case}_synthetic_seed{SEED}.csv"


def read_synthetic(path: Path) -> pd.DataFrame:
    """A synthetic table as :func:`write_synthetic` wrote it: empty text stays empty."""
    return pd.read_csv(path, keep_default_na=False, na_values=["NaN"])


def write_synthetic(table: pd.DataFrame, path: Path) -> None:
    table.to_csv(path, index=False, float_format="%.17g", na_rep="NaN")


def generated(case: str) -> pd.DataFrame:
    """The synthetic data of ``case``'s stored fingerprint, through a CSV round trip."""
    fingerprint = Fingerprint.from_json(fingerprint_path(case).read_text())
    scratch = FOLDER / f".{case}.csv"
    try:
        write_synthetic(synpmx_model_generate(fingerprint, seed=SEED), scratch)
        return read_synthetic(scratch)
    finally:
        scratch.unlink(missing_ok=True)


def _fit(case: str):
    if case == "graded":
        from tests.generator.test_graded import ROLES, with_grades
        from tests.simulated import small_study

        return synpmx_model_estimate(with_grades(small_study(12, seed=1))[0], ROLES)
    return synpmx_model_estimate(*load_dataset(case), seed=1)


def main() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        for case in CASES:
            fingerprint_path(case).write_text(model_fingerprint(_fit(case)).to_json())
            fingerprint = Fingerprint.from_json(fingerprint_path(case).read_text())
            write_synthetic(synpmx_model_generate(fingerprint, seed=SEED), synthetic_path(case))
            print(f"wrote {fingerprint_path(case).name} and {synthetic_path(case).name}")


if __name__ == "__main__":
    main()
