"""On a CUDA GPU: the device's copy bandwidth, and the host transfers of a derivative.

Two measurements that ``compare.py --device cuda`` does not make:

- ``bandwidth``: a device-to-device copy of 4 GiB, timed with CUDA events
  (bytes read plus bytes written over the fastest of 20 copies). It is the
  ceiling that a memory-bound derivative (Rosenbrock's ``f``, ``grad``,
  ``H v``) is held against in ``benchmarks/README.md``.
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

import sys
from typing import Callable

N_TRANSFER = 1_000_000
COPY_BYTES = 4 << 30


def bandwidth(cupy) -> float:
    """Bytes read and written per second by the fastest of 20 device-to-device copies."""
    a = cupy.ones(COPY_BYTES // 8)
    b = cupy.empty_like(a)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    best = float("inf")
    for _ in range(23):  # the first three warm up
        start.record()
        b[...] = a
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return 2 * a.nbytes / best


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
    print(f"device-to-device copy: {bandwidth(cupy) / 1e12:.2f} TB/s (bytes read + written)")
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
