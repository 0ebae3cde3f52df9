"""Synthetic data pinned: what the generator draws from four released fingerprints, seed 7.

``tests/generator/test_generate.py`` compares the generator with these files, so that a change
in the order of its draws, or in what it draws, fails a test instead of passing unseen into
regenerated stored results. The fingerprints are releases of the warfarin study (PK, a PD
endpoint, covariates and a category), of the simulated mixed IV and oral study, and of a small
simulated study with a graded endpoint (``tests/generator/test_graded.py``'s), and ``mixed``:
warfarin's release given what no shipped release has together, so that every draw counts (a
dose-change rate of 0.3, a correlation of CL and V, and the graded endpoint beside the PD one).
Remake the files, after a change to the draws that is meant, with::

    .venv/bin/python -m tests.generator.golden
"""

import io
import json
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
CASES = ("warfarin", "mixroute_sim", "graded", "mixed")


def fingerprint_path(case: str) -> Path:
    return FOLDER / f"{case}_fingerprint.json"


def synthetic_path(case: str) -> Path:
    return FOLDER / f"{case}_synthetic_seed{SEED}.csv"


def read_synthetic(source: Path | io.StringIO) -> pd.DataFrame:
    """A synthetic table as :func:`write_synthetic` wrote it: empty text stays empty."""
    return pd.read_csv(source, keep_default_na=False, na_values=["NaN"])


def write_synthetic(table: pd.DataFrame, target: Path | io.StringIO) -> None:
    table.to_csv(target, index=False, float_format="%.17g", na_rep="NaN")


def generated(case: str) -> pd.DataFrame:
    """The synthetic data of ``case``'s stored fingerprint, through a CSV round trip."""
    fingerprint = Fingerprint.from_json(fingerprint_path(case).read_text())
    text = io.StringIO()
    write_synthetic(synpmx_model_generate(fingerprint, seed=SEED), text)
    text.seek(0)
    return read_synthetic(text)


def _mixed() -> str:
    """Warfarin's stored release with a dose-change rate, a correlation and a graded endpoint."""
    release = json.loads(fingerprint_path("warfarin").read_text())
    graded = json.loads(fingerprint_path("graded").read_text())
    release["dose_change_rate"] = 0.3
    release["correlation"] = {"cl,v": 0.4}
    release["graded"] = graded["graded"]
    release["endpoints"]["AE"] = graded["endpoints"]["AE"]
    return Fingerprint.from_json(json.dumps(release)).to_json()


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
            release = _mixed() if case == "mixed" else model_fingerprint(_fit(case)).to_json()
            fingerprint_path(case).write_text(release)
            fingerprint = Fingerprint.from_json(fingerprint_path(case).read_text())
            write_synthetic(synpmx_model_generate(fingerprint, seed=SEED), synthetic_path(case))
            print(f"wrote {fingerprint_path(case).name} and {synthetic_path(case).name}")


if __name__ == "__main__":
    main()
