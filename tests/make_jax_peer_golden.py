"""Record JAX's answers for the tests of dualad and mixed that compare with JAX,
in jax_peer_golden.json beside this file, with the inputs JAX was given.

Regenerate (from the repository root, with the JAX version the JSON file
names; it must see this checkout, for ``tests/_support``)::

    python -m pip install jax==0.10.2 jaxlib==0.10.2
    PYTHONPATH=. python tests/make_jax_peer_golden.py

The cases' lists and shared functions are in ``tests/_support/jax_peer_cases.py``.
Each section of the file belongs to one test (its name says which); the tests
read the inputs from the file, compute dualad's answer, and compare shape,
dtype and values with JAX's, so they need neither JAX nor this script.
"""

import functools
import json
import pathlib
import sys
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "jax_peer_golden.json"


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def main() -> None:
    sys.path.insert(0, str(HERE))  # for _support
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.special as jsp
    from _support import jax_peer_cases as c
    from _support.golden import encode

    def enc_tree(tree):
        """JAX's pytree as JSON: dicts stay dicts, tuples and lists become {"tuple": [...]}."""
        if isinstance(tree, dict):
            return {k: enc_tree(v) for k, v in tree.items()}
        if isinstance(tree, (tuple, list)):
            return {"tuple": [enc_tree(v) for v in tree]}
        return encode(tree)

    data = {"jax": jax.__version__}

    # tests/dualad/primitives/test_fft.py: the gradient of sum(|F(x)|^2)
    data["fft"] = {}
    for name, kw in c.FFT_TRANSFORMS:
        x = c.fft_input(name)
        grad = jax.grad(lambda z, name=name, kw=kw: jnp.sum(jnp.abs(getattr(jnp.fft, name)(z, **kw)) ** 2))
        data["fft"][c.fft_id(name, kw)] = {"x": encode(x), "grad": encode(grad(jnp.asarray(x)))}

    # tests/dualad/primitives/test_special.py: second derivatives, elementwise
    data["special"] = {}
    for name in c.SPECIAL_JAX:
        x = c.special_point(name)
        second = jax.vmap(jax.grad(jax.grad(getattr(jsp, name))))(jnp.asarray(x))
        data["special"][name] = {"x": encode(x), "second": encode(second)}

    # tests/dualad/primitives/test_linalg.py: eig's gradient, lu's JVP, VJP and gradient
    data["eig"] = {}
    for complex_input in (False, True):
        r = _rng("eig-jax", complex_input)
        a = r.standard_normal((4, 4)) + (1j * r.standard_normal((4, 4)) if complex_input else 0)

        def eig_loss(m):
            w, v = jax.lax.linalg.eig(m, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
            return jnp.sum(jnp.real(w * w) + jnp.imag(w)) + jnp.sum(jnp.abs(v) ** 3)
        data["eig"]["complex" if complex_input else "real"] = {
            "a": encode(a), "grad": encode(jax.grad(eig_loss)(jnp.asarray(a)))}

    def lu(x):
        f = jax.scipy.linalg.lu  # one matrix at a time: vmap over the batch
        for _ in range(x.ndim - 2):
            f = jax.vmap(f)
        return f(x)

    data["lu"] = {}
    for shape in c.LU_SHAPES:
        for complex_input in (False, True):
            r = _rng("lu-jax", shape, complex_input)

            def draw(r=r, shape=shape, complex_input=complex_input):
                x = r.standard_normal(shape)
                return x + 1j * r.standard_normal(shape) if complex_input else x
            a, t = draw(), draw()
            (_, low, up), (_, dl, du) = jax.jvp(lu, (jnp.asarray(a),), (jnp.asarray(t),))
            gl, gu = draw()[..., :, : low.shape[-1]], draw()[..., : up.shape[-2], :]
            _, pullback = jax.vjp(lambda x: lu(x)[1:], jnp.asarray(a))
            (ga,) = pullback((jnp.asarray(gl), jnp.asarray(gu)))
            case = {"a": encode(a), "t": encode(t), "dl": encode(dl), "du": encode(du),
                    "gl": encode(gl), "gu": encode(gu), "ga": encode(ga)}
            if not complex_input:
                w1, w2 = r.standard_normal(low.shape), r.standard_normal(up.shape)

                def lu_loss(x, w1=w1, w2=w2):
                    _, lo, u = lu(x)
                    return jnp.sum(jnp.sin(lo) * w1) + jnp.sum(u * u * w2)
                case.update(w1=encode(w1), w2=encode(w2), grad=encode(jax.grad(lu_loss)(jnp.asarray(a))))
            data["lu"][c.lu_id(shape, complex_input)] = case

    # tests/dualad/primitives/test_complex.py: JAX's gradient convention, df/dx - i df/dy
    z = c.COMPLEX_POINT
    holomorphic = jax.grad(lambda z: jnp.sum(jnp.exp(z) * z), holomorphic=True)(jnp.asarray(z))
    data["complex"] = {"z": encode(z), "holomorphic": encode(holomorphic),
                       "grad": {name: encode(jax.grad(functools.partial(f, xp=jnp))(jnp.asarray(z)))
                                for name, f in c.REAL_VALUED.items()}}

    # tests/dualad/batching/test_vmap.py: in_axes/out_axes, linearize and linear_transpose
    r = np.random.default_rng(0)
    data["vmap_semantics"] = []
    for f, in_axes, out_axes in c.VMAP_SEMANTICS:
        x, w = r.standard_normal((3, 3)), r.standard_normal(3)
        out = jax.vmap(f, in_axes, out_axes)(jnp.asarray(x), jnp.asarray(w))
        data["vmap_semantics"].append({"x": encode(x), "w": encode(w),
                                       "leaves": [encode(v) for v in jax.tree_util.tree_leaves(out)]})
    a, x, y, cot = r.standard_normal((3, 4)), r.standard_normal(4), r.standard_normal(4), r.standard_normal(3)
    _, f_jvp = jax.linearize(lambda x: jnp.tanh(a @ x), jnp.asarray(x))
    (transposed,) = jax.linear_transpose(lambda x: a @ x, jnp.zeros(4))(jnp.asarray(cot))
    data["vmap_linearize"] = {"a": encode(a), "x": encode(x), "t": encode(y), "cotangent": encode(cot),
                              "jvp": encode(f_jvp(jnp.asarray(y))), "transpose": encode(transposed)}

    # tests/dualad/numpy/test_conv.py: conv_general_dilated in PyTorch's layout, value and gradients
    data["conv"] = {}
    r = np.random.default_rng(2)
    for xs, ws, kw, name in c.CONV_CONFIGS:
        d = len(ws) - 2
        stride = kw.get("stride", 1)
        stride = (stride,) * d if isinstance(stride, int) else stride
        dilation = kw.get("dilation", 1)
        dilation = (dilation,) * d if isinstance(dilation, int) else dilation
        pad = kw.get("padding", 0)
        pad = "SAME" if pad == "same" else [(pad, pad)] * d if isinstance(pad, int) else list(pad)
        layout = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}[d]

        def conv(x, w, stride=stride, pad=pad, dilation=dilation, layout=layout, kw=kw):
            return jax.lax.conv_general_dilated(x, w, stride, pad, rhs_dilation=dilation,
                                                dimension_numbers=layout,
                                                feature_group_count=kw.get("groups", 1))
        x, w = r.normal(size=xs), r.normal(size=ws)
        gx, gw = jax.grad(lambda x, w, conv=conv: jnp.sum(jnp.sin(conv(x, w))), argnums=(0, 1))(x, w)
        data["conv"][name] = {"x": encode(x), "w": encode(w), "value": encode(conv(x, w)),
                              "grad_x": encode(gx), "grad_w": encode(gw)}

    # tests/dualad/numpy/test_polynomials.py: gradients through polyfit and roots
    r = np.random.default_rng(7)
    x, y, w = np.sort(r.uniform(-2.0, 2.0, 7)), r.normal(size=7), r.uniform(0.5, 2.0, 7)

    def fit_loss(x, y, w):
        coefficients = jnp.polyfit(x, y, 2, w=w)
        return (coefficients * coefficients).sum() + (jnp.polyval(coefficients, x) ** 2).sum()
    grads = jax.grad(fit_loss, argnums=(0, 1, 2))(jnp.asarray(x), jnp.asarray(y), jnp.asarray(w))
    data["polyfit"] = {"x": encode(x), "y": encode(y), "w": encode(w), "grads": [encode(g) for g in grads]}
    data["roots"] = []
    for p in (np.poly([-2.0, 0.5, 2.5]), np.poly([1.5j, -1.5j, 2.0]).real, r.normal(size=5)):
        def roots_loss(p):
            roots = jnp.roots(p, strip_zeros=False)
            return (roots * roots.conj()).real.sum() + (roots.real ** 3).sum()
        data["roots"].append({"p": encode(p), "grad": encode(jax.grad(roots_loss)(jnp.asarray(p)))})

    # tests/dualad/base/test_calling.py: how jacfwd nests a pytree of outputs and arguments
    r = np.random.default_rng(11)
    x, y = r.standard_normal(3), r.standard_normal((2, 3))[0]
    data["jacfwd_nesting"] = {"x": encode(x), "y": encode(y)}
    for argnums in (0, (0, 1)):
        jac = jax.jacfwd(lambda x, y: {"p": x * y[0], "q": jnp.sum(x ** 2) * y}, argnums=argnums)(x, y)
        data["jacfwd_nesting"][str(argnums)] = enc_tree(jac)

    # tests/dualad/forward/test_forward.py: the derivative chosen at a kink (exact floats)
    data["kinks"] = {
        "maximum": [float(jax.grad(jnp.maximum)(x, y)) for x, y in c.KINK_PAIRS],
        "minimum": [float(jax.grad(jnp.minimum)(x, y)) for x, y in c.KINK_PAIRS],
        "relu": [float(jax.grad(jax.nn.relu)(x)) for x in c.KINK_POINTS],
        "softplus": [float(jax.grad(jax.nn.softplus)(x)) for x in c.KINK_POINTS]}

    def rosen(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    # tests/dualad/staging/test_linearize.py: linearize of a gradient
    r = np.random.default_rng(9)
    x, t = r.standard_normal(9), r.standard_normal(9)
    g, hvp = jax.linearize(jax.grad(rosen), jnp.asarray(x))
    data["linearize_grad"] = {"x": encode(x), "t": encode(t), "g": encode(g),
                              "hvp": encode(hvp(jnp.asarray(t)))}

    # tests/mixed/test_mixed_linearize.py: the gradient and a Hessian-vector product
    x, p = r.standard_normal(9), r.standard_normal(9)
    g, hp = jax.jvp(jax.grad(rosen), (jnp.asarray(x),), (jnp.asarray(p),))
    data["mixed_linearize"] = {"x": encode(x), "p": encode(p), "g": encode(g), "hp": encode(hp)}

    # tests/mixed/test_mixed_calling.py: jvp(grad(f, argnums)) at the recorded point
    r = np.random.default_rng(12)
    point, direction = (r.standard_normal(3), 0.3, r.standard_normal((5, 3))), (r.standard_normal(3), -0.7)

    def mixed_loss(w, b, data):
        res = data @ w + b
        return jnp.sum(jnp.tanh(res) ** 2) + jnp.sum(w ** 4) * b ** 2

    data["mixed_argnums"] = {"w": encode(point[0]), "b": point[1], "data": encode(point[2]),
                             "vw": encode(direction[0]), "vb": direction[1], "cases": {}}
    for name, argnums in c.MIXED_ARGNUMS.items():
        picked = argnums if isinstance(argnums, tuple) else (argnums,)

        def grad_at(*selected, picked=picked, argnums=argnums):
            full = list(point)
            for n, value in zip(picked, selected):
                full[n % 3] = value
            return jax.grad(mixed_loss, argnums)(*full)
        g, hv = jax.jvp(grad_at, tuple(jnp.asarray(point[n % 3]) for n in picked),
                        tuple(jnp.asarray(direction[n % 3]) for n in picked))
        g, hv = (g, hv) if isinstance(argnums, tuple) else ((g,), (hv,))
        data["mixed_argnums"]["cases"][name] = {"argnums": argnums, "g": [encode(v) for v in g],
                                                "hv": [encode(v) for v in hv]}

    # tests/dualad/test_implicit_jax.py: custom_root and custom_linear_solve on the same problems
    def cube_root(a):
        return c.cube_root(jax.lax.custom_root, a, jnp, jax.jacfwd)

    data["cube_root"] = []
    for a, dtype in c.CUBE_ROOT_POINTS:
        a = jnp.asarray(a, dtype)
        data["cube_root"].append({"a": encode(a), "x": encode(cube_root(a)),
                                  "first": encode(jax.grad(cube_root)(a)),
                                  "second": encode(jax.grad(jax.grad(cube_root))(a))})

    n = c.SYSTEM_SIZE
    r = _rng("system-root")
    m, s, p = 3.0 * np.eye(n) + 0.4 * r.standard_normal((n, n)), 0.7, r.standard_normal(n)
    g, w, v = r.standard_normal(n), r.standard_normal(n), r.standard_normal(n)

    def system_root(m, s, p):
        return c.system_root(jax.lax.custom_root, m, s, p, jnp, jax.jacfwd)

    def system_loss(p):
        return c.implicit_loss(system_root(m, s, p), w)
    x, pull = jax.vjp(system_root, jnp.asarray(m), jnp.asarray(s), jnp.asarray(p))
    data["system_root"] = {
        "m": encode(m), "s": encode(s), "p": encode(p), "g": encode(g), "w": encode(w), "v": encode(v),
        "x": encode(x), "jac_p": encode(jax.jacfwd(system_root, argnums=2)(m, s, p)),
        "jac_s": encode(jax.jacfwd(system_root, argnums=1)(m, s, p)),
        "vjp": [encode(t) for t in pull(jnp.asarray(g))],
        "hessian_p": encode(jax.hessian(system_loss)(jnp.asarray(p))),
        "hvp_p": encode(jax.jvp(jax.grad(system_loss), (jnp.asarray(p),), (jnp.asarray(v),))[1]),
        "second_s": encode(jax.grad(jax.grad(lambda s: c.implicit_loss(system_root(m, s, p), w)))(s))}

    data["linear_solve"] = {}
    for name, size in (("symmetric", 4), ("general", 5)):
        r = _rng("linear-solve", name)
        a = r.standard_normal((size, size))
        a = a @ a.T + size * np.eye(size) if name == "symmetric" else a + size * np.eye(size)
        b, da, db, w = r.standard_normal(size), r.standard_normal(a.shape), r.standard_normal(size), \
            r.standard_normal(size)

        def solution(a, b, name=name):
            return c.linear_solution(jax.lax.custom_linear_solve, a, b, name == "symmetric", jnp, jax.jacfwd)

        def loss(a, b, solution=solution, w=w):
            return c.implicit_loss(solution(a, b), w)
        a_, b_ = jnp.asarray(a), jnp.asarray(b)
        x, jvp_b = jax.jvp(lambda b, solution=solution, a_=a_: solution(a_, b), (b_,), (jnp.asarray(db),))
        _, jvp_a = jax.jvp(lambda a, solution=solution, b_=b_: solution(a, b_), (a_,), (jnp.asarray(da),))
        _, jvp_ab = jax.jvp(solution, (a_, b_), (jnp.asarray(da), jnp.asarray(db)))
        grad_a, grad_b = jax.grad(loss, argnums=(0, 1))(a_, b_)
        data["linear_solve"][name] = {
            "a": encode(a), "b": encode(b), "da": encode(da), "db": encode(db), "w": encode(w),
            "x": encode(x), "jvp_b": encode(jvp_b), "jvp_a": encode(jvp_a), "jvp_ab": encode(jvp_ab),
            "grad_a": encode(grad_a), "grad_b": encode(grad_b)}

    # tests/dualad/scipy/test_triangular_solves.py: scipy.linalg's triangular solves, by jax.scipy.linalg
    import jax.scipy.linalg as jsl
    data["triangular"] = {}
    for trans, lower, unit, b_ndim in c.TRIANGULAR_CASES:
        a, b, w, da, db = c.triangular_inputs(_rng("triangular", trans, lower, unit, b_ndim), b_ndim)

        def solution(a, b, trans=trans, lower=lower, unit=unit):
            return jsl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)

        def loss(a, b, solution=solution, w=w):
            return jnp.sum(solution(a, b) ** 2 * w)
        x, jvp = jax.jvp(solution, (jnp.asarray(a), jnp.asarray(b)), (jnp.asarray(da), jnp.asarray(db)))
        grad_a, grad_b = jax.grad(loss, argnums=(0, 1))(jnp.asarray(a), jnp.asarray(b))
        data["triangular"][c.triangular_id(trans, lower, unit, b_ndim)] = {
            "a": encode(a), "b": encode(b), "w": encode(w), "da": encode(da), "db": encode(db),
            "x": encode(x), "jvp": encode(jvp), "grad_a": encode(grad_a), "grad_b": encode(grad_b)}
    data["cholesky_solve"] = {}
    for lower in (False, True):
        a, b, w, da, db = c.triangular_inputs(_rng("cholesky-solve", lower), 2)
        a, da = a @ a.T + np.eye(len(a)), da + da.T  # positive definite, a symmetric direction

        def solution(a, b, lower=lower):
            return jsl.cho_solve(jsl.cho_factor(a, lower=lower), b)

        def loss(a, b, solution=solution, w=w):
            return jnp.sum(solution(a, b) ** 2 * w)
        x, jvp = jax.jvp(solution, (jnp.asarray(a), jnp.asarray(b)), (jnp.asarray(da), jnp.asarray(db)))
        grad_a, grad_b = jax.grad(loss, argnums=(0, 1))(jnp.asarray(a), jnp.asarray(b))
        data["cholesky_solve"][str(lower)] = {
            "a": encode(a), "b": encode(b), "w": encode(w), "da": encode(da), "db": encode(db),
            "x": encode(x), "jvp": encode(jvp), "grad_a": encode(grad_a), "grad_b": encode(grad_b)}

    text = json.dumps(data, separators=(",", ":"))
    GOLDEN.write_text(text + "\n")
    print(f"wrote {len(data) - 1} sections from jax {jax.__version__} to {GOLDEN} ({len(text)} characters)")


if __name__ == "__main__":
    main()
