"""``reverse.optim``'s machinery: in-place steps, parameter groups, state dicts, errors.

The update rules themselves are checked in test_rev_optim_rules.py (against NumPy
references of PyTorch's documented algorithms) and test_rev_optim_torch.py (against
PyTorch's own numbers)."""

import numpy as np
import pytest
from _support.optim_problem import U0, X0, grad_np, joint_loss, loss

from dualad import ops
from reverse import Tensor, no_grad
from reverse.optim import LBFGS, SGD, Adagrad, Adam, AdamW, RMSprop


@pytest.mark.parametrize("opt_cls, kw", [(SGD, dict(lr=0.1, momentum=0.5)), (Adam, dict(lr=0.1)),
                                         (AdamW, dict(lr=0.1, weight_decay=1e-3))])
def test_converges_to_the_minimum(opt_cls, kw):
    x = Tensor(X0.copy(), requires_grad=True)
    opt = opt_cls({"x": x}, **kw)
    for _ in range(400):
        opt.zero_grad()
        loss(x).backward()
        opt.step()
    np.testing.assert_allclose(grad_np(x.value), 0.0, atol=2e-3)


def test_updates_in_place_and_bumps_the_version():
    x = Tensor(X0.copy(), requires_grad=True)
    array = x.value
    y = ops.exp(x * 1.0) * x  # saves x
    y.sum().backward(retain_graph=True)
    SGD([x], lr=0.1).step()
    assert x.value is array, "step() must update the parameter's array in place"
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


def test_step_leaves_the_users_array_alone():
    # Was: Tensor(a) shared a's memory, so step() rewrote the array the user passed in.
    a = X0.copy()
    x = Tensor(a, requires_grad=True)
    loss(x).backward()
    SGD([x], lr=0.1).step()
    np.testing.assert_array_equal(a, X0)
    assert not np.array_equal(x.value, X0)


def test_step_updates_an_array_shared_by_from_numpy():
    a = X0.copy()
    x = Tensor.from_numpy(a).requires_grad_()
    loss(x).backward()
    SGD([x], lr=0.1).step()
    np.testing.assert_allclose(a, X0 - 0.1 * grad_np(X0))


def test_float_parameters_and_dict_params():
    a, b = Tensor(2.0, requires_grad=True), Tensor(np.array([1.0, 1.0]), requires_grad=True)
    opt = SGD({"a": a, "b": b}, lr=0.5)
    (a * a + (b * b).sum()).backward()
    opt.step()
    assert a.item() == 0.0
    np.testing.assert_array_equal(b.value, [0.0, 0.0])


def test_parameters_without_grad_are_skipped_and_zero_grad_clears():
    a, b = Tensor(1.0, requires_grad=True), Tensor(1.0, requires_grad=True)
    opt = Adam([a, b], lr=0.1)
    (a * 3.0).backward()
    opt.step()
    assert a.item() == pytest.approx(0.9) and b.item() == 1.0
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    (a * 3.0).backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad == 0.0 and b.grad is None


def test_float32_stays_float32():
    x = Tensor(X0.astype(np.float32), requires_grad=True)
    opt = AdamW([x], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        (x * x).sum().backward()
        opt.step()
    assert x.value.dtype == np.float32
    assert opt.state[x]["exp_avg"].dtype == np.float32


def test_momentum_buffer_does_not_alias_grad():
    x = Tensor(np.array([1.0]), requires_grad=True)
    opt = SGD([x], lr=0.1, momentum=0.9)
    (x * 2.0).sum().backward()
    opt.step()
    x.grad[...] = 100.0  # a user mutating .grad in place must not change the optimizer state
    np.testing.assert_array_equal(opt.state[x]["momentum_buffer"], [2.0])


def test_step_records_nothing():
    x = Tensor(X0.copy(), requires_grad=True)
    opt = Adam([x], lr=0.1)
    loss(x).backward()
    opt.step()
    assert x.is_leaf and x.requires_grad and x.grad_fn is None


@pytest.mark.parametrize("make, match", [
    (lambda p: SGD(p, lr=-0.1), r"lr must be >= 0.*-0.1"),
    (lambda p: SGD(p, lr=0.1, momentum=-1.0), r"momentum must be >= 0"),
    (lambda p: SGD(p, lr=0.1, weight_decay=-1.0), r"weight_decay must be >= 0"),
    (lambda p: SGD(p, lr=0.1, dampening=2.0), r"dampening must be >= 0.0 and <= 1.0"),
    (lambda p: SGD(p, lr=0.1, nesterov=True), r"nesterov=True needs momentum > 0"),
    (lambda p: Adam(p, lr=-1e-3), r"lr must be >= 0"),
    (lambda p: Adam(p, betas=(1.0, 0.9)), r"betas\[0\] must be >= 0.0 and < 1.0, got 1.0"),
    (lambda p: Adam(p, betas=(0.9, -0.1)), r"betas\[1\] must be >= 0.0"),
    (lambda p: Adam(p, betas=0.9), r"betas must be a pair"),
    (lambda p: Adam(p, eps=-1.0), r"eps must be >= 0"),
    (lambda p: AdamW(p, weight_decay=-0.01), r"weight_decay must be >= 0"),
    (lambda p: SGD(p, lr=float("nan")), r"lr must be >= 0.*nan"),
])
def test_invalid_hyperparameters_name_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make([Tensor(1.0, requires_grad=True)])


def test_invalid_params():
    with pytest.raises(ValueError, match="empty"):
        SGD([], lr=0.1)
    with pytest.raises(TypeError, match="single Tensor"):
        SGD(Tensor(1.0, requires_grad=True), lr=0.1)
    with pytest.raises(TypeError, match=r"params\[1\] must be a reverse.Tensor, got ndarray"):
        SGD([Tensor(1.0, requires_grad=True), np.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match=r"params\['w'\] must be a leaf Tensor that requires grad"):
        SGD({"w": Tensor(1.0)}, lr=0.1)
    x = Tensor(1.0, requires_grad=True)
    with pytest.raises(ValueError, match=r"params\[1\] is the same Tensor as params\[0\]"):
        SGD([x, x], lr=0.1)
    with pytest.raises(TypeError, match=r"lr must be a number"):
        SGD([x], lr="0.1")


def test_a_parameter_updated_under_no_grad_by_hand_still_works():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with no_grad():
        x -= 0.5
    opt = SGD([x], lr=1.0)
    (x * x).sum().backward()
    opt.step()
    np.testing.assert_array_equal(x.value, [-0.5, -1.5])


# -- parameter groups -------------------------------------------------------------------

def two_params():
    return Tensor(X0.copy(), requires_grad=True), Tensor(U0.copy(), requires_grad=True)


def train(opt, params, steps):
    for _ in range(steps):
        opt.zero_grad()
        joint_loss(*params).backward()
        opt.step()
    return [p.value.copy() for p in params]


@pytest.mark.parametrize("opt_cls, kw", [(SGD, dict(momentum=0.9)), (Adam, dict(amsgrad=True)),
                                         (AdamW, dict(weight_decay=0.1))], ids=str)
def test_a_group_is_an_optimizer_of_its_own(opt_cls, kw):
    """Two groups with their own lr step as two optimizers would (the loss couples them)."""
    w, u = two_params()
    opt = opt_cls([{"params": [w]}, {"params": {"u": u}, "lr": 0.01}], lr=0.05, **kw)
    assert [g["lr"] for g in opt.param_groups] == [0.05, 0.01]
    assert opt.param_groups[1]["params"] == [u] and opt.defaults["lr"] == 0.05
    w2, u2 = two_params()
    apart = opt_cls([w2], lr=0.05, **kw), opt_cls([u2], lr=0.01, **kw)
    for _ in range(4):
        opt.zero_grad()
        joint_loss(w, u).backward()
        opt.step()
        for o in apart:
            o.zero_grad()
        joint_loss(w2, u2).backward()
        for o in apart:
            o.step()
    np.testing.assert_array_equal(w.value, w2.value)
    np.testing.assert_array_equal(u.value, u2.value)


def test_changing_a_groups_lr_changes_the_next_step():
    x = Tensor(np.array([1.0]), requires_grad=True)
    opt = SGD([x], lr=0.1)
    (x * x).sum().backward()
    opt.param_groups[0]["lr"] = 0.25
    opt.step()
    np.testing.assert_allclose(x.value, [0.5])


def test_add_param_group_takes_the_defaults_it_does_not_set():
    w, u = two_params()
    opt = Adam([w], lr=0.1, betas=(0.8, 0.9))
    opt.add_param_group({"params": u, "eps": 1e-3})  # one Tensor, as PyTorch allows in a group
    assert opt.param_groups[1]["params"] == [u]
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["betas"] == (0.8, 0.9)
    assert opt.param_groups[1]["eps"] == 1e-3 and len(opt.state) == 0
    joint_loss(w, u).backward()
    opt.step()
    assert opt.state[u]["step"] == 1 and list(opt.state) == [w, u]  # keyed by parameter, as PyTorch


@pytest.mark.parametrize("make, error, match", [
    (lambda w, u: SGD([{"params": [w]}, {"params": [u], "lrr": 0.1}]), ValueError,
     r"params\[1\]: unknown option\(s\) 'lrr'; SGD takes 'lr', 'momentum'"),
    (lambda w, u: SGD([{"params": [w]}, {"params": [u, w]}]), ValueError,
     r"params\[1\]\['params'\]\[1\] is the same Tensor as params\[0\]\['params'\]\[0\]"),
    (lambda w, u: SGD([{"params": [w]}, {"params": [u], "lr": -1.0}]), ValueError,
     r"params\[1\]\['lr'\] must be >= 0.0, got -1.0"),
    (lambda w, u: Adam([{"params": [w], "betas": (0.9, 1.5)}]), ValueError,
     r"params\[0\]\['betas'\]\[1\] must be >= 0.0 and < 1.0, got 1.5"),
    (lambda w, u: SGD([{"params": [w]}, [u]]), TypeError,
     r"params\[1\] must be a dict with the group's parameters under 'params', got a list"),
    (lambda w, u: SGD([{"params": [w]}, {"lr": 0.1}]), TypeError, r"params\[1\] must be a dict"),
    (lambda w, u: SGD([{"params": [w], "nesterov": True}], momentum=0.0), ValueError,
     r"params\[0\]: nesterov=True needs momentum > 0"),
    (lambda w, u: SGD([{"params": [w], "nesterov": 1}], momentum=0.9), TypeError,
     r"params\[0\]\['nesterov'\] must be True or False, got int 1"),
    (lambda w, u: Adam([w], amsgrad="yes"), TypeError, r"amsgrad must be True or False"),
    (lambda w, u: SGD([{"params": 3.0}]), TypeError,
     r"params\[0\]\['params'\] must be a list or dict of Tensors, got float 3.0"),
    (lambda w, u: LBFGS([Tensor(np.array([1j]), requires_grad=True)]), TypeError,
     r"params\[0\] is complex \(complex128\); LBFGS updates real parameters only \(SGD, Adam"),
    (lambda w, u: Adam([w], maximize=1), TypeError, r"maximize must be True or False, got int 1"),
    (lambda w, u: SGD([{"params": [w], "maximize": "no"}]), TypeError,
     r"params\[0\]\['maximize'\] must be True or False, got a str"),
], ids=range(13))
def test_bad_groups_name_what_is_wrong(make, error, match):
    with pytest.raises(error, match=match):
        make(*two_params())


def test_add_param_group_refuses_a_parameter_already_in_a_group():
    w, u = two_params()
    opt = SGD({"w": w, "u": u}, lr=0.1)
    with pytest.raises(ValueError, match=r"param_group\['params'\]\[0\] is the same Tensor as "
                                         r"params\['u'\]"):
        opt.add_param_group({"params": [u]})
    with pytest.raises(ValueError, match=r"param_group: unknown option\(s\) 'betas'"):
        opt.add_param_group({"params": [Tensor(1.0, requires_grad=True)], "betas": (0.9, 0.99)})
    assert len(opt.param_groups) == 1 and "2 parameter(s)" in repr(opt)  # nothing half-added


# -- state dicts ------------------------------------------------------------------------

STATEFUL = [(SGD, dict(lr=0.05, momentum=0.9, nesterov=True)), (Adam, dict(lr=0.1, amsgrad=True)),
            (AdamW, dict(lr=0.1, weight_decay=0.2))]


@pytest.mark.parametrize("opt_cls, kw", STATEFUL, ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_fresh_optimizer_loaded_from_a_state_dict_continues_identically(opt_cls, kw, dtype):
    w, u = (Tensor(p.value.astype(dtype), requires_grad=True) for p in two_params())
    opt = opt_cls([{"params": [w]}, {"params": [u], "lr": 0.02}], **kw)
    train(opt, (w, u), 3)
    saved = opt.state_dict()
    w2, u2 = (Tensor(p.value, requires_grad=True) for p in (w, u))
    fresh = opt_cls([{"params": [w2]}, {"params": [u2]}], **kw)  # group 1's lr comes from the dict
    fresh.load_state_dict(saved)
    assert fresh.param_groups[1]["lr"] == 0.02
    np.testing.assert_array_equal(np.concatenate(train(opt, (w, u), 3)),
                                  np.concatenate(train(fresh, (w2, u2), 3)))
    assert all(a.dtype == dtype for s in fresh.state.values() for a in s.values() if hasattr(a, "dtype"))


def test_a_state_dict_is_a_snapshot():
    w, u = two_params()
    opt = Adam([w, u], lr=0.1)
    train(opt, (w, u), 2)
    saved = opt.state_dict()
    m = saved["state"][0]["exp_avg"].copy()
    train(opt, (w, u), 2)
    np.testing.assert_array_equal(saved["state"][0]["exp_avg"], m)
    assert saved["state"][0]["step"] == 2 and opt.state[w]["step"] == 4
    w2 = Tensor(w.value, requires_grad=True)
    fresh = Adam([w2, Tensor(u.value, requires_grad=True)])
    fresh.load_state_dict(saved)
    fresh.state[w2]["exp_avg"] *= 2.0  # the loaded state does not share the dict's arrays
    np.testing.assert_array_equal(saved["state"][0]["exp_avg"], m)


def test_load_state_dict_casts_the_state_to_the_parameters_dtype():
    w = Tensor(X0.copy(), requires_grad=True)
    opt = Adam([w], lr=0.1)
    loss(w).backward()
    opt.step()
    w32 = Tensor(w.value.astype(np.float32), requires_grad=True)
    fresh = Adam([w32])
    fresh.load_state_dict(opt.state_dict())
    assert fresh.state[w32]["exp_avg"].dtype == np.float32


def test_a_state_dict_from_an_optimizer_with_more_parameters_is_refused():
    w, u = two_params()
    opt = SGD([{"params": [w, u]}], lr=0.1, momentum=0.9)
    train(opt, (w, u), 1)
    saved = opt.state_dict()
    with pytest.raises(ValueError, match=r"state_dict\['param_groups'\] must hold 2 group\(s\), as this "
                                         r"optimizer has, got 1"):
        SGD([{"params": [w]}, {"params": [u]}], lr=0.1).load_state_dict(saved)
    with pytest.raises(ValueError, match=r"state_dict\['param_groups'\]\[0\] must hold 1 parameter\(s\), "
                                         r"as param_groups\[0\] of this optimizer does, got 2"):
        SGD([w], lr=0.1).load_state_dict(saved)
    other = Tensor(np.ones(4), requires_grad=True)
    with pytest.raises(ValueError, match=r"state_dict\['state'\]\[1\]\['momentum_buffer'\] must be an "
                                         r"array of shape \(4,\), got an array of shape \(3,\)"):
        SGD([w, other], lr=0.1).load_state_dict(saved)


@pytest.mark.parametrize("edit, error, match", [
    (lambda sd: sd["param_groups"][0].update(lr=-0.1), ValueError,
     r"state_dict\['param_groups'\]\[0\]\['lr'\] must be >= 0.0, got -0.1"),
    (lambda sd: sd["param_groups"][0].update(betas=(0.9, 0.99)), ValueError,
     r"state_dict\['param_groups'\]\[0\]: unknown option\(s\) 'betas'"),
    (lambda sd: sd["state"].update({7: {}}), ValueError,
     r"state_dict\['state'\] has an entry 7 that no group"),
    (lambda sd: sd.pop("state"), ValueError, r"state_dict must be a dict with keys 'state' and "
                                             r"'param_groups'"),
], ids=range(4))
def test_a_bad_state_dict_is_refused_and_changes_nothing(edit, error, match):
    w = Tensor(X0.copy(), requires_grad=True)
    opt = SGD([w], lr=0.1, momentum=0.5)
    train_one = SGD([Tensor(X0.copy(), requires_grad=True)], lr=0.3, momentum=0.5)
    saved = train_one.state_dict()
    edit(saved)
    with pytest.raises(error, match=match):
        opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.1


def test_step_returns_the_closures_loss():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    opt = SGD([x], lr=0.1)

    def closure():
        opt.zero_grad()
        out = (x * x).sum()
        out.backward()
        return out
    with no_grad():  # the closure runs with gradients enabled all the same, as in PyTorch
        got = opt.step(closure)
    assert got.item() == 5.0
    np.testing.assert_allclose(x.value, [0.8, 1.6])


# -- complex parameters and maximize ----------------------------------------------------

@pytest.mark.parametrize("opt_cls, kw", [(Adam, dict(lr=0.1, amsgrad=True)), (AdamW, dict(lr=0.1)),
                                         (RMSprop, dict(lr=0.01, centered=True, momentum=0.5)),
                                         (Adagrad, dict(lr=0.1, initial_accumulator_value=0.5))], ids=str)
def test_complex_parameters_step_as_pairs_of_reals_and_keep_complex_state(opt_cls, kw):
    """PyTorch's view_as_real: the complex step equals the step of the (real, imag) pair."""
    z0 = np.array([1.0 + 2.0j, -0.5 + 0.3j])
    z, pair = Tensor(z0, requires_grad=True), Tensor(np.stack([z0.real, z0.imag], -1), requires_grad=True)
    opt_z, opt_pair = opt_cls([z], **kw), opt_cls([pair], **kw)
    for _ in range(3):
        g = z.value ** 3
        z.grad, pair.grad = g, np.stack([g.real, g.imag], -1)
        opt_z.step()
        opt_pair.step()
        np.testing.assert_allclose(np.stack([z.value.real, z.value.imag], -1), pair.value, rtol=1e-14)
    state = opt_z.state_dict()["state"][0]
    assert all(v.dtype == np.complex128 and v.shape == (2,) for k, v in state.items() if k != "step")
    fresh = opt_cls([Tensor(z.value, requires_grad=True)], **kw)
    fresh.load_state_dict(opt_z.state_dict())
    for opt in (opt_z, fresh):
        p = opt.param_groups[0]["params"][0]
        p.grad = np.array([0.3 - 0.1j, 0.2j])
        opt.step()
    np.testing.assert_array_equal(fresh.param_groups[0]["params"][0].value, z.value)


@pytest.mark.parametrize("opt_cls, kw", [(SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
                                         (Adam, dict(lr=0.1)), (RMSprop, dict(lr=0.01, momentum=0.5)),
                                         (Adagrad, dict(lr=0.1))], ids=str)
def test_maximize_is_the_rule_on_the_negated_gradient(opt_cls, kw):
    w, v = (Tensor(np.array([1.0, -2.0]), requires_grad=True) for _ in range(2))
    up, down = opt_cls([w], maximize=True, **kw), opt_cls([v], **kw)
    for _ in range(3):
        w.grad, v.grad = -np.sin(w.value) - 0.1 * w.value, np.sin(v.value) + 0.1 * v.value
        up.step()
        down.step()
    assert np.array_equal(w.value, v.value) and up.state_dict()["param_groups"][0]["maximize"]
