"""Record JAX's numbers for ADBench's GMM, BA and LSTM in adbench_golden.json, beside this file.

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
``BaTests.cpp``); without it, the ``published`` section already in the file is kept.
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

    from benchmarks.adbench import ba, gmm, lstm
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

    data = {
        "jax": jax.__version__,
        "gmm": {"inputs": tolist(g._asdict()),
                "objective": float(g_objective(*g_args)),
                "gradient": tolist(jax.grad(g_objective, argnums=(0, 1, 2))(*g_args))},
        "ba": {"inputs": tolist(b._asdict()),
               "reproj_err": tolist(reproj), "w_err": tolist(w_err),
               "jacobian_blocks": tolist((*reproj_blocks(cams[obs[:, 0]], points[obs[:, 1]], w, feats),
                                          jax.vmap(jax.grad(ba.compute_w_err))(w)))},
        "lstm": {"inputs": tolist(s._asdict()),
                 "objective": float(s_objective(*s_args)),
                 "gradient": tolist(jax.grad(s_objective, argnums=(0, 1))(*s_args))},
    }
    if args.adbench is not None:
        data["published"] = published(args.adbench)
    elif GOLDEN.exists() and "published" in json.loads(GOLDEN.read_text()):
        data["published"] = json.loads(GOLDEN.read_text())["published"]
    GOLDEN.write_text(json.dumps(data, indent=None) + "\n")
    print(f"wrote JAX {jax.__version__}'s numbers for gmm, ba, lstm"
          + (" and ADBench's published ones" if "published" in data else "") + f" to {GOLDEN}")


if __name__ == "__main__":
    main()
