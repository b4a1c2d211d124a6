#!/usr/bin/env bash
# Every GPU check in one call, for a machine lent for a few minutes: the CuPy
# test selection (the CuPy executor's numbers among them), the bandwidth, the CuPy
# executor's kernels and the transfer counts (gpu_check.py), the CuPy
# example, and compare.py --device cuda for Rosenbrock and the MLP at
# N = 1e6, 1e7, 1e8. Logs and compare's json/md/png go to $OUT.
#
# Run from the repository root:  OUT=/tmp/gpu bash benchmarks/gpu_run.sh
# Wheels of packages that the machine lacks (array-api-compat, ...) may be put
# in .whl/ beforehand; they are installed into a scratch folder, not the system.
# Each step has its own time limit (TEST_S, COMPARE_S seconds), so a slow step
# cannot starve the next; STEPS names the steps to run (default: all four), WORKERS
# the test processes (default 8) and SIZES compare's Rosenbrock sizes.
set -u
OUT=${OUT:-/tmp/gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD"
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
        && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import sys, numpy, cupy; print('python', sys.version.split()[0], 'numpy', numpy.__version__,
'cupy', cupy.__version__)"

STEPS=${STEPS:-tests check example compare}

if [[ " $STEPS " == *" tests "* ]]; then  # test_docs needs Sphinx, which such machines lack
    timeout "${TEST_S:-200}" python3 -m pytest -m gpu -q -p no:cacheprovider -n "${WORKERS:-8}" --tb=short \
        --ignore=tests/test_docs.py tests > "$OUT/tests.log" 2>&1
    echo "pytest rc=$?"
    grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -40
fi
if [[ " $STEPS " == *" check "* ]]; then
    timeout 60 python3 -m benchmarks.gpu_check 2>&1 | tee "$OUT/check.log"
fi
if [[ " $STEPS " == *" example "* ]]; then
    timeout 60 python3 examples/logistic_regression_gpu.py 2>&1 | tee "$OUT/example.log"
fi
if [[ " $STEPS " == *" compare "* ]]; then
    timeout "${COMPARE_S:-200}" python3 -m benchmarks.compare --device cuda --quick --only rosenbrock mlp \
        --sizes ${SIZES:-1000000 10000000 100000000} --out "$OUT/compare" > "$OUT/compare.log" 2>&1
    echo "compare rc=$?"
    tail -30 "$OUT/compare.log"
fi
