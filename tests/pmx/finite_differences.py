"""The FOCE-I objective's exact derivatives against central differences, shared by the tests."""

import numpy as np

from synpmx_lite.pmx import _foce


def assert_exact_derivatives(
    problem, x, *, rtol=1e-5, atol=1e-4, eta_atol=1e-5, keep=None, step=1e-4
) -> None:
    """The OFV's gradient (envelope and implicit-function terms) and d eta_hat / dx at ``x``
    against central differences, in the coordinates ``keep`` (default every one)."""
    keep = np.ones(x.size, dtype=bool) if keep is None else keep
    n = problem.n_patients
    base = _foce._modes(problem, x[None], np.zeros((1, n, problem.p)))
    assert base.converged.all()
    _, gradient = _foce._ofv_and_gradient(problem, base)
    sensitivity = _foce._mode_sensitivity(problem, base)[0]
    points = np.vstack([x + step * np.eye(x.size), x - step * np.eye(x.size)])
    shifted = _foce._modes(problem, points, np.repeat(base.eta, len(points), axis=0))
    total = _foce._ofv_and_gradient(problem, shifted)[0].sum(axis=1)
    numeric = (total[: x.size] - total[x.size :]) / (2 * step)
    np.testing.assert_allclose(gradient[0].sum(axis=0)[keep], numeric[keep], rtol=rtol, atol=atol)
    moved = np.moveaxis((shifted.eta[: x.size] - shifted.eta[x.size :]) / (2 * step), 0, -1)
    np.testing.assert_allclose(sensitivity[..., keep], moved[..., keep], atol=eta_atol)
