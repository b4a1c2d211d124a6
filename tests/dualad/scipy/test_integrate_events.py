"""dualad.scipy.integrate.solve_ivp with events: the events' times and states, and y where a
terminal event ends the solve, differentiated in forward and reverse mode, against closed
forms and central differences of SciPy's own solve (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si

import dualad
import reverse
from dualad.scipy.integrate import solve_ivp

TIGHT = {"rtol": 1e-12, "atol": 1e-14}


def central(f, p, h=1e-4):
    """Columns ``(f(p + h e_i) - f(p - h e_i)) / 2h``, with ``h`` relative to ``|p_i|``."""
    p = np.asarray(p, dtype=float)
    cols = []
    for i in range(p.size):
        step = h * max(1.0, abs(p[i]))
        e = np.zeros_like(p)
        e[i] = step
        cols.append((np.asarray(f(p + e)) - np.asarray(f(p - e))) / (2 * step))
    return np.stack(cols, axis=-1)


def close(got, want, rtol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(np.abs(want).max(), 1e-3))


def both_modes(f, p):
    """jacfwd and reverse.jacrev of ``f`` at ``p``."""
    return dualad.jacfwd(f)(p), reverse.jacrev(f)(p)


# -- the problems ------------------------------------------------------------------------------
def falling(solve, t_eval=None, **kw):
    """A ball thrown up from height p0 at speed p1, gravity p2, quadratic drag p3; the terminal
    event: it hits the ground (h = 0, falling). y0 and the closure are traced."""
    def ground(t, y):
        return y[0]
    ground.terminal, ground.direction = True, -1.0

    def run(p):
        return solve(lambda t, y: np.stack([y[1], -p[2] - p[3] * y[1] * np.abs(y[1])]),
                     (0.0, 10.0), p[:2], t_eval=t_eval, events=ground, **TIGHT, **kw)
    return run


def oscillator(solve, **kw):
    """x'' = -q0 x - q1 x' through args, two events: x crosses q2 downwards (its threshold a
    parameter), and x' = 0 (every turning point), neither terminal."""
    def below(t, y, q):
        return y[0] - q[2]
    below.direction = -1.0

    def turning(t, y, q):
        return y[1]

    def run(p):
        return solve(lambda t, y, q: np.stack([y[1], -q[0] * y[0] - q[1] * y[1]]), (0.0, 6.0),
                     np.array([1.0, 0.0]), args=(p,), events=[below, turning], **TIGHT, **kw)
    return run


P_FALLING = np.array([1.0, 3.0, 9.81, 0.05])
P_OSCILLATOR = np.array([4.0, 0.3, 0.2])


def test_a_terminal_event_in_closed_form():
    """y' = -k y from c until y = 1/2: t_e = log(2 c) / k; y_e = 1/2 whatever k and c."""
    def half(t, y):
        return y[0] - 0.5
    half.terminal = True

    def res(p):
        return solve_ivp(lambda t, y: -p[0] * y, (0.0, 5.0), p[1] * np.ones(1), events=half,
                         **TIGHT)
    p = np.array([0.7, 2.0])
    want = np.array([-np.log(2 * p[1]) / p[0] ** 2, 1.0 / (p[0] * p[1])])
    for got in both_modes(lambda q: res(q).t_events[0][0], p):
        close(got, want, rtol=1e-9)
    for f in (lambda q: res(q).y_events[0][0], lambda q: res(q).y[:, -1]):  # at the event: 1/2
        for got in both_modes(f, p):
            assert got.shape == (1, 2) and np.abs(got).max() < 1e-12


FALLING_FIELDS = {"t_event": lambda r: r.t_events[0], "y_event": lambda r: r.y_events[0][0],
                  "y_last": lambda r: r.y[:, -1]}


@pytest.mark.parametrize("field", FALLING_FIELDS)
@pytest.mark.parametrize("sensitivity", ["forward", "adjoint"])
def test_a_terminal_event_ends_y_at_its_time(sensitivity, field):
    """The ball's flight: the time it lands, its state there, and y at the solver's steps, the
    last of them the landing, with respect to y0 and the closure."""
    ours, scipys, of = falling(solve_ivp, sensitivity=sensitivity), falling(si.solve_ivp), \
        FALLING_FIELDS[field]
    want = central(lambda q: of(scipys(q)), P_FALLING)
    for got in both_modes(lambda q: of(ours(q)), P_FALLING):
        close(got, want)


def test_y_at_t_eval_does_not_move_with_the_terminal_event():
    t_eval = np.linspace(0.0, 0.6, 4)
    ours, scipys = falling(solve_ivp, t_eval), falling(si.solve_ivp, t_eval)
    want = central(lambda q: scipys(q).y, P_FALLING)
    assert ours(P_FALLING).y.shape == (2, 4)
    for got in both_modes(lambda q: ours(q).y, P_FALLING):
        close(got, want)
    close(dualad.jacfwd(lambda q: ours(q).t_events[0])(P_FALLING),
          central(lambda q: scipys(q).t_events[0], P_FALLING))


@pytest.mark.parametrize("field", ["t_events", "y_events"])
@pytest.mark.parametrize("j", [0, 1])
def test_events_that_do_not_end_the_solve_and_depend_on_the_parameters(j, field):
    """Every crossing of a threshold that is a parameter, and every turning point."""
    ours, scipys = oscillator(solve_ivp), oscillator(si.solve_ivp)
    assert [len(te) for te in scipys(P_OSCILLATOR).t_events] == [2, 4]   # more than once each
    want = central(lambda q: getattr(scipys(q), field)[j], P_OSCILLATOR)
    for got in both_modes(lambda q: getattr(ours(q), field)[j], P_OSCILLATOR):
        close(got, want)


def test_the_numbers_are_scipy_s():
    for ours, scipys, p in ((falling(solve_ivp), falling(si.solve_ivp), P_FALLING),
                            (oscillator(solve_ivp), oscillator(si.solve_ivp), P_OSCILLATOR)):
        got = dualad.jvp(lambda q, f=ours: (f(q).y, f(q).t_events, f(q).y_events), (p,),
                         (np.ones(p.size),))[0]
        ref = scipys(p)
        for mine, theirs in zip([got[0], *got[1], *got[2]], [ref.y, *ref.t_events, *ref.y_events]):
            assert np.array_equal(mine, theirs)


def test_an_event_whose_rate_is_zero_has_no_derivative():
    def step(t, y):   # piecewise constant in t: it changes sign at t = 1/2, at the rate 0
        return np.floor(1.5 - t) - 0.5

    def res(k):
        return solve_ivp(lambda t, y: -k * y, (0.0, 2.0), np.ones(1), events=step, **TIGHT)
    with pytest.raises(ValueError, match="event 0 at t = .* has no derivative"):
        dualad.derivative(lambda k: res(k).t_events[0][0])(1.0)


def test_under_jit_the_calls_with_events_run_eagerly_with_the_reason():
    """SciPy locates the events on the numbers at hand: a program would replay the located
    times as constants, so jit runs such a function eagerly, warning why, and each call's
    event time and its gradient are those of its own point."""
    def hit(p):
        return falling(solve_ivp)(p).t_events[0][0]
    q = P_FALLING * np.array([1.2, 0.8, 1.1, 1.5])
    for f, want in ((hit, hit), (reverse.grad(hit), reverse.grad(hit))):
        compiled = dualad.jit(f)
        with pytest.warns(RuntimeWarning, match="runs eagerly.*events.*replay them as constants"):
            close(compiled(P_FALLING), want(P_FALLING), rtol=1e-14)
        close(compiled(q), want(q), rtol=1e-14)
    assert abs(hit(q) - hit(P_FALLING)) > 0.05


def test_under_vmap_events_are_refused_naming_the_loop():
    with pytest.raises(NotImplementedError, match="events under vmap.*loop over the batch"):
        dualad.vmap(lambda p: falling(solve_ivp)(p).t_events[0][0])(np.stack([P_FALLING] * 2))
