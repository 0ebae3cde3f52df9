"""synpmx_lite: the computations behind the book on membership inference and PMX model releases.

Modules
-------
membership
    Membership inference against simplified models of a PMX fingerprint (attendance shares and
    population-model estimates), the AUC and its Monte Carlo error.
rounding
    Rounding to significant figures.
"""

from .membership import (
    AttendanceAttack,
    MembershipTables,
    PopulationAttack,
    ScorePiles,
    attendance_attack,
    attendance_score,
    attendance_scores,
    auc,
    auc_standard_error,
    draw_attendance,
    membership_tables,
    population_attack,
    release_shares,
    roc_curve,
    true_positive_rate_at,
)
from .rounding import round_significant

__version__ = "0.1.0"

__all__ = [
    "AttendanceAttack",
    "MembershipTables",
    "PopulationAttack",
    "ScorePiles",
    "attendance_attack",
    "attendance_score",
    "attendance_scores",
    "auc",
    "auc_standard_error",
    "draw_attendance",
    "membership_tables",
    "population_attack",
    "release_shares",
    "roc_curve",
    "round_significant",
    "true_positive_rate_at",
]
