import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from synpmx_lite.pmx.pk import PkModel, _dosing, _phi, _sensitivities, predict_concentrations

TIMES = np.array([[0.0, 0.25, 1.0, 2.5, 6.0, 12.0, 24.0, 48.0]])


def _one_dose(model, theta, amount=100.0, duration=0.0, times=TIMES):
    return predict_concentrations(model, [theta], [[0.0]], [[amount]], [[duration]], times)[0]


def _ode(model, theta, amount, duration, times):
    """Concentrations of the same model by numerical integration of its ODEs."""
    names = dict(zip(model.parameters, theta, strict=True))
    cl, v = names["cl"], names["v"]
    q, vp = names.get("q", 0.0), names.get("vp", 1.0)
    ka = names.get("ka", 0.0)

    def rates(t, y):
        depot, central, peripheral = y
        infusion = amount / duration if duration > 0 and t < duration else 0.0
        return [
            -ka * depot,
            ka * depot + infusion - (cl + q) / v * central + q / vp * peripheral,
            q / v * central - q / vp * peripheral,
        ]

    start = [amount, 0.0, 0.0] if model.route == "oral" else [0.0, 0.0, 0.0]
    if model.route == "iv" and duration == 0:
        start = [0.0, amount, 0.0]
    solution = solve_ivp(
        rates, (0, times.max()), start, t_eval=times, rtol=1e-10, atol=1e-12, max_step=0.05
    )
    return solution.y[1] / v


def test_one_compartment_hand_worked_values():
    t = TIMES[0]
    cl, v, ka = 2.0, 20.0, 1.5
    k = cl / v
    bolus = _one_dose(PkModel(route="iv"), [cl, v])
    np.testing.assert_allclose(bolus, 100 / v * np.exp(-k * t), rtol=1e-12)
    oral = _one_dose(PkModel(route="oral"), [cl, v, ka])
    bateman = 100 * ka / (v * (ka - k)) * (np.exp(-k * t) - np.exp(-ka * t))
    np.testing.assert_allclose(oral, bateman, rtol=1e-10)
    infusion = _one_dose(PkModel(route="iv"), [cl, v], duration=2.0)
    rate = 100 / 2.0
    during = rate / cl * (1 - np.exp(-k * np.minimum(t, 2.0)))
    after = during * np.exp(-k * np.maximum(t - 2.0, 0))
    np.testing.assert_allclose(infusion, after, rtol=1e-10)


def test_absorption_equal_to_elimination_uses_the_limit():
    cl, v = 2.0, 20.0
    t = TIMES[0]
    oral = _one_dose(PkModel(route="oral"), [cl, v, cl / v])
    np.testing.assert_allclose(oral, 100 / v * (cl / v) * t * np.exp(-cl / v * t), rtol=1e-9)


@pytest.mark.parametrize(
    ("model", "theta", "duration"),
    [
        (PkModel(compartments=2, route="iv"), [3.0, 10.0, 5.0, 40.0], 0.0),
        (PkModel(compartments=2, route="iv"), [3.0, 10.0, 5.0, 40.0], 1.5),
        (PkModel(compartments=2, route="oral"), [3.0, 10.0, 5.0, 40.0, 0.8], 0.0),
        (PkModel(compartments=1, route="oral"), [3.0, 10.0, 0.8], 0.0),
    ],
)
def test_closed_forms_match_the_odes(model, theta, duration):
    times = np.array([0.1, 0.5, 1.0, 1.5, 3.0, 8.0, 24.0])
    closed = _one_dose(model, theta, duration=duration, times=times[None])
    np.testing.assert_allclose(closed, _ode(model, theta, 100.0, duration, times), rtol=1e-6)


def test_two_compartment_area_is_dose_over_clearance():
    times = np.linspace(0, 2000, 200001)[None]
    conc = _one_dose(PkModel(compartments=2, route="iv"), [3.0, 10.0, 5.0, 40.0], times=times)
    area = np.trapezoid(conc, times[0])
    assert area == pytest.approx(100 / 3.0, rel=1e-4)


def test_superposition_lag_and_periods():
    model = PkModel(route="oral", lag=True)
    theta = [[2.0, 20.0, 1.0, 0.5]]
    times = np.array([[1.0, 5.0, 13.0, 30.0]])
    both = predict_concentrations(model, theta, [[0.0, 12.0]], [[100.0, 50.0]], [[0, 0]], times)
    first = predict_concentrations(model, theta, [[0.0]], [[100.0]], [[0]], times)
    second = predict_concentrations(model, theta, [[12.0]], [[50.0]], [[0]], times)
    np.testing.assert_allclose(both, first + second, rtol=1e-12)
    no_lag = predict_concentrations(
        PkModel(route="oral"), [[2.0, 20.0, 1.0]], [[0.0]], [[100.0]], [[0]], times - 0.5
    )
    np.testing.assert_allclose(first, no_lag, rtol=1e-12)
    # A dose of period 0 does not reach observations of period 1.
    separate = predict_concentrations(
        model,
        theta,
        [[0.0, 0.0]],
        [[100.0, 50.0]],
        [[0, 0]],
        times,
        dose_period=[[0, 1]],
        time_period=[[1, 1, 1, 1]],
    )
    half = predict_concentrations(model, theta, [[0.0]], [[50.0]], [[0]], times)
    np.testing.assert_allclose(separate, half, rtol=1e-12)


def test_batches_of_parameter_sets_match_one_at_a_time():
    model = PkModel(compartments=2, route="iv")
    rng = np.random.default_rng(3)
    theta = np.exp(rng.normal(np.log([3.0, 10.0, 5.0, 40.0]), 0.3, size=(4, 3, 4)))
    doses = np.array([[0.0, 24.0]] * 3)
    amounts = np.array([[100.0, 100.0], [50.0, 0.0], [80.0, 20.0]])
    durations = np.array([[1.0, 0.0], [0.0, 0.0], [2.0, 2.0]])
    times = np.tile([0.5, 3.0, 25.0, 40.0], (3, 1))
    batch = predict_concentrations(model, theta, doses, amounts, durations, times)
    assert batch.shape == (4, 3, 4)
    for b in range(4):
        single = predict_concentrations(model, theta[b], doses, amounts, durations, times)
        np.testing.assert_allclose(batch[b], single, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    st.floats(0.1, 20),
    st.floats(1, 100),
    st.floats(0.05, 5),
    st.floats(0.1, 10),
    st.floats(1, 500),
)
def test_concentrations_are_linear_in_dose_and_never_negative(cl, v, ka, scale, amount):
    model = PkModel(route="oral")
    times = np.array([[0.0, 0.5, 2.0, 10.0, 100.0]])
    base = predict_concentrations(model, [[cl, v, ka]], [[0.0]], [[amount]], [[0.0]], times)
    scaled = predict_concentrations(
        model, [[cl, v, ka]], [[0.0]], [[amount * scale]], [[0.0]], times
    )
    assert np.all(base >= 0)
    np.testing.assert_allclose(scaled, scale * base, rtol=1e-9, atol=1e-300)


def test_model_description_and_bad_input():
    assert PkModel(compartments=2, route="oral", lag=True).parameters == (
        "cl",
        "v",
        "q",
        "vp",
        "ka",
        "tlag",
    )
    assert "two-compartment" in str(PkModel(compartments=2, route="iv"))
    with pytest.raises(ValueError, match="compartments"):
        PkModel(compartments=3)
    with pytest.raises(ValueError, match="route"):
        PkModel(route="sc")
    with pytest.raises(ValueError, match="lag"):
        PkModel(route="iv", lag=True)
    model = PkModel(route="oral")
    with pytest.raises(ValueError, match="parameters"):
        predict_concentrations(model, [[1.0, 2.0]], [[0.0]], [[1.0]], [[0.0]], [[1.0]])
    with pytest.raises(ValueError, match="positive"):
        predict_concentrations(model, [[1.0, -2.0, 1.0]], [[0.0]], [[1.0]], [[0.0]], [[1.0]])
    with pytest.raises(ValueError, match="infusions"):
        predict_concentrations(model, [[1.0, 2.0, 1.0]], [[0.0]], [[1.0]], [[1.0]], [[1.0]])
    with pytest.raises(ValueError, match="dose_amount"):
        predict_concentrations(model, [[1.0, 2.0, 1.0]], [[0.0]], [[1.0, 2.0]], [[0.0]], [[1.0]])
    with pytest.raises(TypeError, match="model"):
        predict_concentrations("oral", [[1.0, 2.0, 1.0]], [[0.0]], [[1.0]], [[0.0]], [[1.0]])


DERIVATIVE_CASES = [
    (PkModel(route="iv"), [2.0, 20.0]),
    (PkModel(compartments=2, route="iv"), [3.0, 10.0, 5.0, 40.0]),
    (PkModel(route="oral"), [2.0, 20.0, 1.2]),
    (PkModel(route="oral"), [2.0, 20.0, 0.1]),  # ka equal to CL / V: the limit's series
    (PkModel(route="oral", lag=True), [2.0, 20.0, 1.2, 0.4]),
    (PkModel(compartments=2, route="oral"), [3.0, 10.0, 5.0, 40.0, 0.8]),
    (PkModel(compartments=2, route="oral", lag=True), [3.0, 10.0, 5.0, 40.0, 0.8, 0.3]),
]


@pytest.mark.parametrize(("model", "theta"), DERIVATIVE_CASES)
def test_exact_derivatives_match_central_differences(model, theta):
    """First and second derivatives in the log parameters, for bolus, infusion and oral doses,
    several doses and patients (central differences of the predictions and of the gradient)."""
    dose_time = np.array([[0.0, 12.0, 24.0], [0.0, 0.0, 0.0], [0.0, 6.0, 0.0]])
    amount = np.array([[100.0, 50.0, 0.0], [80.0, 0.0, 0.0], [30.0, 30.0, 0.0]])
    times = np.array(
        [
            [0, 0.25, 0.5, 1, 3, 12, 12.3, 30],
            [0, 0.1, 0.2, 1, 2, 4, 8, 48],
            [0.3, 1, 2, 5, 6, 7, 9, 11],
        ]
    )
    durations = [np.zeros((3, 3))]
    if model.route == "iv":  # infusions of 1 h, and a mix of infusions and boluses
        durations += [np.ones((3, 3)), np.array([[1.0, 0.0, 0.0]] * 3)]
    # Equal ka and CL / V at the typical values: the derivatives' series near the limit too.
    spread = 0.0 if theta == [2.0, 20.0, 0.1] else 0.2
    log_theta = np.log(theta) + spread * np.random.default_rng(1).standard_normal(
        (2, 3, len(theta))
    )
    for duration in durations:
        dosing = _dosing(dose_time, amount, duration, times)
        f, g, second = _sensitivities(model, dosing, log_theta, 2)
        np.testing.assert_allclose(
            f, predict_concentrations(
                model, np.exp(log_theta), dose_time, amount, duration, times
            ).reshape(f.shape), rtol=1e-12
        )  # fmt: skip
        step = 1e-5
        for k in range(len(theta)):
            shift = np.zeros(len(theta))
            shift[k] = step
            up, g_up, _ = _sensitivities(model, dosing, log_theta + shift, 1)
            down, g_down, _ = _sensitivities(model, dosing, log_theta - shift, 1)
            scale = np.abs(g).max()
            np.testing.assert_allclose(g[..., k], (up - down) / (2 * step), atol=1e-7 * scale)
            np.testing.assert_allclose(
                second[..., k], (g_up - g_down) / (2 * step), atol=1e-6 * np.abs(second).max()
            )


def test_dose_and_period_arrays_are_checked():
    model = PkModel(route="oral")
    theta = [[1.0, 2.0, 1.0]]
    with pytest.raises(ValueError, match="dose_amount must not be negative"):
        predict_concentrations(model, theta, [[0.0]], [[-10.0]], [[0.0]], [[1.0]])
    with pytest.raises(ValueError, match="dose_period must have shape"):
        predict_concentrations(
            model, theta, [[0.0, 1.0]], [[10.0, 5.0]], [[0, 0]], [[1.0]], dose_period=[[0]]
        )
    with pytest.raises(ValueError, match="time_period must have shape"):
        predict_concentrations(
            model, theta, [[0.0]], [[10.0]], [[0.0]], [[1.0, 2.0]], time_period=[[0, 0, 0]]
        )


def test_phi_and_its_derivatives_are_accurate_across_the_series_switch():
    """phi(x) = (1 - exp(-x)) / x and two derivatives, against a 20-term Taylor series in
    extended precision (long double), on both sides of the switch at x = 0.01."""
    x = np.array([0.0, 1e-8, 1e-4, 5e-3, 0.0099, 0.0101, 0.05, 0.3])
    wide = x.astype(np.longdouble)
    reference = [np.zeros_like(wide) for _ in range(3)]
    term = np.ones_like(wide)  # (-x)^n / (n + 1)!
    for n in range(20):
        reference[0] += term
        if n >= 1:
            reference[1] += n * term / np.where(wide == 0, 1, wide)
        if n >= 2:
            reference[2] += n * (n - 1) * term / np.where(wide == 0, 1, wide) ** 2
        term = term * -wide / (n + 2)
    reference[1][0], reference[2][0] = -0.5, 1 / 3
    for value, exact in zip(_phi(x, 2), reference, strict=True):
        np.testing.assert_allclose(value, exact.astype(float), rtol=1e-11)
