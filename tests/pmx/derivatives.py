"""Central differences of the FOCE-I objective, beside its exact gradient and mode sensitivity."""

import numpy as np

from synpmx_lite.pmx import _foce


def assert_exact_derivatives(problem, x: np.ndarray, keep: np.ndarray | None = None) -> None:
    """The exact gradient of the OFV and the modes' sensitivity at outer point ``x`` agree
    with central differences (step 1e-4) in the coordinates ``keep`` (default every one)."""
    keep = np.ones(x.size, dtype=bool) if keep is None else keep
    base = _foce._modes(problem, x[None], np.zeros((1, problem.n_patients, problem.p)))
    _, gradient = _foce._ofv_and_gradient(problem, base)
    sensitivity = _foce._mode_sensitivity(problem, base)[0]
    step = 1e-4
    points = np.vstack([x + step * np.eye(x.size), x - step * np.eye(x.size)])
    shifted = _foce._modes(problem, points, np.repeat(base.eta, len(points), axis=0))
    total = _foce._ofv_and_gradient(problem, shifted)[0].sum(axis=1)
    numeric = (total[: x.size] - total[x.size :]) / (2 * step)
    np.testing.assert_allclose(gradient[0].sum(axis=0)[keep], numeric[keep], rtol=1e-5, atol=1e-4)
    moved = np.moveaxis((shifted.eta[: x.size] - shifted.eta[x.size :]) / (2 * step), 0, -1)
    np.testing.assert_allclose(sensitivity[..., keep], moved[..., keep], atol=1e-5)
