"""On a CUDA GPU: the device's copy bandwidth, the CuPy executor's kernels, and the
host transfers of a derivative.

Three measurements that ``compare.py --device cuda`` does not make:

- ``bandwidth``: a device-to-device copy of 4 GiB, timed with CUDA events
  (bytes read plus bytes written over the fastest of 20 copies). It is the
  ceiling that a memory-bound derivative (Rosenbrock's ``f``, ``grad``,
  ``H v``) is held against in ``benchmarks/README.md``.
- ``kernels``: the Rosenbrock gradient and H v compiled on CuPy arrays with
  ``executor="cupy"`` (one CUDA kernel each: ``dualad._program.executors.cupy``)
  and with ``executor="numpy"`` (a CuPy call per primitive): the fastest of 20
  calls each, the bytes the kernel must move (read x, and v, write the result)
  over its time, and the largest difference between the two results. A
  program whose first replay differed from eager evaluation runs eagerly and
  shows as such (``eager`` > 0): that is a failure of the executor.
- ``transfers``: the device-to-host and host-to-device copies made while
  ``dualad.jvp``, ``reverse.grad`` and ``mixed.hvp`` (both modes) run on CuPy
  arrays, counted by CUPTI through ``torch.profiler`` (CuPy and torch share the
  device's primary context). A control, one explicit ``.get()``, must count
  at least one copy, or the counts are void and say so.

Run from the repository root on a machine with CuPy, an NVIDIA GPU and (for
the transfer counts) PyTorch with CUDA::

    python -m benchmarks.gpu_check
"""

from __future__ import annotations

import functools
import sys
import time
import traceback
from typing import Callable

N_TRANSFER = 1_000_000
N_KERNELS = (1_000_000, 100_000_000)
COPY_BYTES = 4 << 30


def _fastest(cupy, call: Callable[[], object]) -> float:
    """Seconds of the fastest of 20 calls (after three that warm up), by CUDA events."""
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    best = float("inf")
    for _ in range(23):
        start.record()
        call()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return best


def bandwidth(cupy) -> float:
    """Bytes read and written per second by the fastest of 20 device-to-device copies."""
    a = cupy.ones(COPY_BYTES // 8)
    b = cupy.empty_like(a)
    return 2 * a.nbytes / _fastest(cupy, lambda: b.__setitem__(Ellipsis, a))


def kernels(cupy) -> list[tuple]:
    """``(what, n, seconds as kernels, seconds a call per primitive, bytes moved, largest
    difference, the kernels' stats, seconds of the kernels' first call)`` of the
    Rosenbrock gradient and H v on CuPy. The first call traces, builds the kernels by
    NVRTC (or loads them from CuPy's disk cache) and checks them against eager calls."""
    import dualad
    import reverse
    from benchmarks.common import rosenbrock
    from mixed import hvp

    rows = []
    for n in N_KERNELS:
        rs = cupy.random.RandomState(0)
        x, v = rs.uniform(-1, 1, n), rs.standard_normal(n)
        for what, f, args in (("gradient", reverse.grad(rosenbrock), (x,)),
                              ("H v", lambda x, v: hvp(rosenbrock, x, v), (x, v))):
            out, seconds, stats, first = {}, {}, {}, {}
            for executor in ("cupy", "numpy"):
                compiled = dualad.compile(f, executor=executor)
                start = time.perf_counter()
                compiled(*args)  # the trace; on CuPy, the kernels built and checked against eager
                compiled(*args)  # a replay
                cupy.cuda.Device().synchronize()
                first[executor] = time.perf_counter() - start
                out[executor] = compiled(*args)
                seconds[executor] = _fastest(cupy, functools.partial(compiled, *args))
                stats[executor] = dict(compiled.stats)
            moved = 8 * n * (len(args) + 1)
            difference = float(cupy.max(cupy.abs(out["cupy"] - out["numpy"])))
            rows.append((what, n, seconds["cupy"], seconds["numpy"], moved, difference, stats["cupy"],
                         first["cupy"]))
    return rows


def _copies(profiled: Callable[[], object]) -> dict[str, int]:
    """How many memcpy events of each direction CUPTI records while ``profiled`` runs."""
    import cupy
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        profiled()
        cupy.cuda.Device().synchronize()
    counts = {"DtoH": 0, "HtoD": 0}
    for event in prof.events():
        for kind in counts:
            if "Memcpy" in event.name and kind in event.name:
                counts[kind] += 1
    return counts


def transfers(cupy) -> list[tuple[str, dict[str, int]]]:
    """The copies each derivative makes at N = 1e6 on CuPy, after a warm-up call."""
    import torch

    import dualad
    import reverse
    from benchmarks.common import rosenbrock
    from mixed import hvp

    torch.cuda.init()
    rs = cupy.random.RandomState(0)
    x, v = rs.uniform(-1, 1, N_TRANSFER), rs.standard_normal(N_TRANSFER)
    gradient = reverse.grad(rosenbrock)
    calls = {
        "control: x[:8].get()": lambda: x[:8].get(),
        "rosenbrock f": lambda: rosenbrock(x),
        "dualad.jvp": lambda: dualad.jvp(rosenbrock, (x,), (v,)),
        "reverse.grad": lambda: gradient(x),
        "mixed.hvp forward-over-reverse": lambda: hvp(rosenbrock, x, v),
        "mixed.hvp reverse-over-reverse": lambda: hvp(rosenbrock, x, v, mode="reverse-over-reverse"),
    }
    rows = []
    for name, call in calls.items():
        call()  # warm-up: kernels compiled, memory pooled
        rows.append((name, _copies(call)))
    return rows


def main() -> int:
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no CuPy, no driver
        print(f"needs CuPy and an NVIDIA GPU: {type(exc).__name__}: {exc}")
        return 1
    props = cupy.cuda.runtime.getDeviceProperties(0)
    print(f"device: {props['name'].decode()}, CuPy {cupy.__version__}, "
          f"CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}")
    copy = bandwidth(cupy)
    print(f"device-to-device copy: {copy / 1e12:.2f} TB/s (bytes read + written)")
    try:
        rows = kernels(cupy)
    except Exception:  # printed, so that the transfer counts still run
        print("the CuPy executor's check failed:")
        traceback.print_exc(file=sys.stdout)
        rows = []
    for what, n, ours, primitives, moved, difference, stats, first in rows:
        print(f"  rosenbrock {what:8s} n={n:.0e}: kernels {ours * 1e3:8.3f} ms "
              f"({moved / ours / 1e12:.2f} TB/s, {moved / ours / copy:.2f} of the copy), "
              f"a call per primitive {primitives * 1e3:8.3f} ms; "
              f"largest difference {difference:.1e}; executor {stats['executor']}, eager {stats['eager']}; "
              f"first two calls {first:.2f} s")
    try:
        rows = transfers(cupy)
    except ImportError as exc:
        print(f"transfer counts need PyTorch with CUDA: {exc}")
        return 0
    for name, counts in rows:
        print(f"  {name:34s} device-to-host {counts['DtoH']:3d}   host-to-device {counts['HtoD']:3d}")
    if rows[0][1]["DtoH"] < 1:
        print("the control counted no copy: the profiler does not see CuPy's copies; counts void")
    return 0


if __name__ == "__main__":
    sys.exit(main())
