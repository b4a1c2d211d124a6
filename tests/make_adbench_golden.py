"""Record JAX's numbers for ADBench's GMM, BA, hand tracking and LSTM in adbench_golden.json,
beside this file.

The inputs are ``benchmarks/adbench``'s generators at small sizes, stored in the file
with the results, so that test_adbench.py compares dualad with JAX on exactly these
numbers wherever it runs (without JAX, and whatever NumPy's generators draw).
Regenerate (from the repository root, in a virtual environment, never in the system
Python, with the JAX version the JSON file names)::

    python3 -m venv --system-site-packages /tmp/peers
    /tmp/peers/bin/pip install jax==0.10.2 jaxlib==0.10.2
    /tmp/peers/bin/python tests/make_adbench_golden.py [--adbench PATH]

With ``--adbench PATH`` (a checkout of github.com/microsoft/ADBench) it also records
ADBench's own test inputs for GMM and BA (``data/gmm/test.txt``, ``data/ba/test.txt``)
and the values its module tests expect for them (``test/cpp/modules/common/GmmTests.cpp``,
``BaTests.cpp``), and for hand tracking the objective and Jacobian of ADBench's PyTorch
reference (``src/python/modules/PyTorch/hand_objective.py``, run with PyTorch in float64)
on the hand inputs recorded here; and it checks dualad's hand objective and Jacobians on
ADBench's own hand model and test inputs (``data/hand``) against the values
``HandTests.cpp`` expects, raising if they differ (that model is not recorded: it is
ADBench's data). Without it, the ``published`` section already in the file is kept.
"""

import argparse
import functools
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "adbench_golden.json"

GMM_SIZE = (3, 4, 20)  # d, k, n
BA_SIZE = (3, 5, 12)  # cameras, points, observations
LSTM_SIZE = (2, 8)  # layers, characters
HAND_SIZE = (5, 40, 30)  # correspondences, vertices, triangles (ADBench's 22 bones)


def _numbers(text: str, name: str) -> list:
    """The numbers of the C++ initializer list ``name { ... }`` in ``text``."""
    body = re.search(name + r"\s*\{([^}]*)\}", text).group(1)
    return [float(v) for v in body.replace("\n", " ").split(",") if v.strip()]


def published(root: pathlib.Path) -> dict:
    """ADBench's GMM and BA test inputs and the values its C++ tests expect."""
    tokens = (root / "data/gmm/test.txt").read_text().split()
    d, k, n = map(int, tokens[:3])
    values = [float(v) for v in tokens[3:]]
    sizes = [k, k * d, k * d * (d + 1) // 2, n * d]
    parts, at = [], 0
    for size in sizes:
        parts.append(values[at:at + size])
        at += size
    gmm_tests = (root / "test/cpp/modules/common/GmmTests.cpp").read_text()
    gmm = {"d": d, "k": k, "n": n, "alphas": parts[0], "means": parts[1], "icf": parts[2],
           "x": parts[3], "wishart_gamma": values[at], "wishart_m": int(values[at + 1]),
           "objective": float(re.search(r"EXPECT_NEAR\(([-0-9.e+]+), output\.objective", gmm_tests).group(1)),
           "gradient": _numbers(gmm_tests, "expected_gradient")}
    lines = (root / "data/ba/test.txt").read_text().splitlines()
    n_cams, n_points, n_obs = map(int, lines[0].split())
    ba_tests = (root / "test/cpp/modules/common/BaTests.cpp").read_text()
    expect = r"EXPECT_NEAR\(([-0-9.e+]+), output\.(?:reproj_err|w_err)"
    near = [float(v) for v in re.findall(expect, ba_tests)]
    ba = {"n": n_cams, "m": n_points, "p": n_obs, "camera": [float(v) for v in lines[1].split()],
          "point": [float(v) for v in lines[2].split()], "weight": float(lines[3]),
          "feature": [float(v) for v in lines[4].split()],
          "reproj_err": near[:2], "w_err": near[2], "jacobian_values": _numbers(ba_tests, "expected_J_vals")}
    return {"source": "github.com/microsoft/ADBench (data/*/test.txt, test/cpp/modules/common)",
            "gmm": gmm, "ba": ba}


def read_hand_model(root: pathlib.Path, hand):
    """ADBench's hand model (``data/hand/model``), as its Python reader reads it."""
    bones = [line.split(":") for line in (root / "data/hand/model/bones.txt").read_text().splitlines()]
    vertices = [line.split(":") for line in (root / "data/hand/model/vertices.txt").read_text().splitlines()]
    triangles = (root / "data/hand/model/triangles.txt").read_text().splitlines()
    import numpy as np
    positions, weights = np.ones((len(vertices), 4)), np.zeros((len(vertices), len(bones)))
    for i, atoms in enumerate(vertices):
        positions[i, :3] = [float(v) for v in atoms[:3]]
        for j in range(int(atoms[8])):
            weights[i, int(atoms[9 + 2 * j])] = float(atoms[10 + 2 * j])
    transforms = np.array([[float(v) for v in b[2:34]] for b in bones]).reshape(len(bones), 2, 4, 4)
    return hand.HandModel(tuple(int(b[1]) for b in bones), transforms[:, 0], transforms[:, 1], positions,
                          weights, np.array([[int(v) for v in t.split(":")] for t in triangles]))


def compact(full, n: int):
    """A whole complicated hand Jacobian ``(3 n, 2 n + 26)`` in ADBench's compact form: each
    row's two ``us`` columns, then ``theta``'s."""
    import numpy as np
    rows = np.arange(3 * n)
    return np.concatenate([full[rows, 2 * (rows // 3) + [[0], [1]]].T, full[:, 2 * n:]], axis=1)


def check_hand_published(root: pathlib.Path, hand) -> str:
    """dualad's hand objective and Jacobians (eager, ``dualad.jit``, ``sparse_jacfwd``) on
    ADBench's model and test inputs against ``HandTests.cpp``'s values; raise if any
    differs by more than 1e-12."""
    import numpy as np
    model = read_hand_model(root, hand)
    tests = (root / "test/cpp/modules/common/HandTests.cpp").read_text()
    objectives = [float(v) for v in re.findall(r"EXPECT_NEAR\(([-0-9.e+]+), output\.objective", tests)]
    expected = re.findall(r"expectedJ\s*\{([^}]*)\}", tests)
    worst = 0.0
    for k, name in enumerate(["test.txt", "hand_complicated.txt"]):
        tokens = (root / "data/hand" / name).read_text().split()
        n, n_theta = int(tokens[0]), int(tokens[1])
        rows = np.array(tokens[2:2 + 4 * n], dtype=float).reshape(n, 4)
        at = 2 + 4 * n + (2 * n if k else 0)
        us = np.array(tokens[2 + 4 * n:at], dtype=float).reshape(n, 2) if k else None
        inp = hand.HandInput(us, np.array(tokens[at:at + n_theta], dtype=float), model, rows[:, 1:],
                             rows[:, 0].astype(int))
        want = np.array([float(v) for v in re.sub(r"//[^\n]*", "", expected[k]).split(",") if v.strip()])
        want = want.reshape(-1, 3 * n).T  # HandTests lists it column by column
        ways = [(functools.partial(hand.objective, inp), hand.jacobian(inp)),
                (hand.compiled_objective(inp), hand.jacobian(inp, compiled=True))]
        if k:
            ways.append((functools.partial(hand.objective, inp), hand.sparse_jacobian(inp)))
        for objective, jacobian in ways:
            for _ in range(2):  # a trace, then a replay
                got = jacobian()
                if k:  # a CSR matrix (sparse_jacfwd), or the compact blocks
                    got = compact((got if hasattr(got, "toarray") else hand.to_csr(got)).toarray(), n)
                else:
                    got = got.reshape(3 * n, -1)
                worst = max(worst, np.abs(np.ravel(objective()) - objectives[6 * k:6 * k + 6]).max(),
                            np.abs(got - want).max())
    if not worst <= 1e-12:
        raise SystemExit(f"dualad's hand tracking differs from HandTests.cpp's values by {worst:.3g}")
    return f"dualad's hand tracking equals HandTests.cpp's values on ADBench's model to {worst:.2g}"


def adbench_hand_reference(root: pathlib.Path, cases: dict) -> dict:
    """The objective and Jacobian of ADBench's PyTorch hand reference on ``cases``' inputs."""
    import importlib.util

    import numpy as np
    import torch
    torch.set_default_dtype(torch.float64)  # its rotations are built in torch.eye(3)
    spec = importlib.util.spec_from_file_location(
        "adbench_hand_objective", root / "src/python/modules/PyTorch/hand_objective.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    m = {k: torch.tensor(np.array(v)) for k, v in cases["model"].items()}
    out = {"source": "github.com/microsoft/ADBench src/python/modules/PyTorch/hand_objective.py, "
                     "in float64, on the hand inputs recorded beside"}
    for kind in ("simple", "complicated"):
        inputs = cases[kind]["inputs"]
        theta, points = torch.tensor(inputs["theta"]), torch.tensor(inputs["points"])
        fixed = (len(cases["model"]["parents"]), m["parents"], m["base_relatives"],
                 m["inverse_base_absolutes"], m["base_positions"], m["weights"], False, points,
                 torch.tensor(inputs["correspondences"]))
        if kind == "simple":
            params = theta

            def f(p, fixed=fixed):
                return reference.hand_objective(p, *fixed)
        else:
            params = torch.cat([torch.tensor(inputs["us"]).ravel(), theta])

            def f(p, fixed=fixed):
                return reference.hand_objective_complicated(p, *fixed, m["triangles"])
        out[kind] = {"objective": f(params).tolist(),
                     "jacobian": torch.autograd.functional.jacobian(f, params).tolist()}
    return out


def tolist(tree):
    import jax
    return jax.tree_util.tree_map(lambda a: a.tolist() if hasattr(a, "tolist") else a, tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adbench", type=pathlib.Path, help="a checkout of microsoft/ADBench")
    args = parser.parse_args()
    sys.path[:0] = [str(HERE.parent)]  # for benchmarks
    import jax
    import jax.numpy as jnp

    from benchmarks.adbench import ba, gmm, hand, lstm
    jax.config.update("jax_enable_x64", True)

    g = gmm.data(*GMM_SIZE)
    g_args = [jnp.asarray(a) for a in g[:4]]
    g_objective = functools.partial(gmm.gmm_objective, wishart_gamma=g.wishart_gamma,
                                    wishart_m=g.wishart_m, xp=jnp)

    b = ba.data(*BA_SIZE)
    cams, points, w, obs, feats = (jnp.asarray(a) for a in b)
    reproj_blocks = jax.vmap(jax.jacfwd(functools.partial(ba.compute_reproj_err, xp=jnp), argnums=(0, 1, 2)))
    reproj, w_err = ba.ba_objective(cams, points, w, obs, feats, xp=jnp)

    s = lstm.data(*LSTM_SIZE)
    s_args = [jnp.asarray(a) for a in s]
    s_objective = functools.partial(lstm.lstm_objective, xp=jnp)

    hand_simple, hand_compact = hand.jacobians(jax.jacfwd, jax.vmap, jnp)

    def hand_case(complicated):
        inp = hand.data(HAND_SIZE[0], complicated, *HAND_SIZE[1:])
        m = hand.HandModel(inp.model.parents, *(jnp.asarray(a) for a in inp.model[1:]))
        args = (*(() if inp.us is None else (jnp.asarray(inp.us),)), jnp.asarray(inp.theta), m,
                jnp.asarray(inp.points), jnp.asarray(inp.correspondences))
        objective = hand.hand_objective_complicated if complicated else hand.hand_objective
        return {"inputs": tolist({k: v for k, v in inp._asdict().items() if k != "model"}),
                "objective": tolist(objective(*args, xp=jnp)),
                "jacobian": tolist((hand_compact if complicated else hand_simple)(*args))}

    data = {
        "jax": jax.__version__,
        "gmm": {"inputs": tolist(g._asdict()),
                "objective": float(g_objective(*g_args)),
                "gradient": tolist(jax.grad(g_objective, argnums=(0, 1, 2))(*g_args))},
        "ba": {"inputs": tolist(b._asdict()),
               "reproj_err": tolist(reproj), "w_err": tolist(w_err),
               "jacobian_blocks": tolist((*reproj_blocks(cams[obs[:, 0]], points[obs[:, 1]], w, feats),
                                          jax.vmap(jax.grad(ba.compute_w_err))(w)))},
        "hand": {"model": tolist(hand.hand_model(*HAND_SIZE[1:])._asdict()),
                 "simple": hand_case(False), "complicated": hand_case(True)},
        "lstm": {"inputs": tolist(s._asdict()),
                 "objective": float(s_objective(*s_args)),
                 "gradient": tolist(jax.grad(s_objective, argnums=(0, 1))(*s_args))},
    }
    if args.adbench is not None:
        data["published"] = published(args.adbench)
        data["published"]["hand"] = adbench_hand_reference(args.adbench, data["hand"])
        print(check_hand_published(args.adbench, hand))
    elif GOLDEN.exists() and "published" in json.loads(GOLDEN.read_text()):
        data["published"] = json.loads(GOLDEN.read_text())["published"]
    GOLDEN.write_text(json.dumps(data, indent=None) + "\n")
    print(f"wrote JAX {jax.__version__}'s numbers for gmm, ba, hand, lstm"
          + (" and ADBench's published ones" if "published" in data else "") + f" to {GOLDEN}")


if __name__ == "__main__":
    main()
