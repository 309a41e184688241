"""What the Python examples share: kiln's module from the build tree, one engine, and timing on
torch's current stream."""
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
for build in ("build", "build-device"):  # a checkout's build tree, unless PYTHONPATH names one
    if (REPO / build / "python" / "kiln").is_dir() and not os.environ.get("PYTHONPATH"):
        sys.path.insert(0, str(REPO / build / "python"))

import torch  # noqa: E402

import kiln  # noqa: E402

ENGINE = kiln.Engine()


def time_us(fn, reps=50, warmup=5):
    """Median microseconds of fn() over back-to-back calls, timed with CUDA events."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return sorted(times)[len(times) // 2]


def report(name, kiln_us, peers, error, tol):
    """One row: kiln's time, each peer's and kiln's ratio to it, the check."""
    cells = [f"{name}: kiln {kiln_us:8.1f} us"]
    cells += [f"{peer} {us:8.1f} us ({kiln_us / us:.2f}x)" for peer, us in peers.items()]
    cells.append(f"max error {error:.2e} (tol {tol:.0e}) {'ok' if error <= tol else 'FAILED'}")
    print(" | ".join(cells), flush=True)
    return error <= tol
