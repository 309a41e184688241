"""What the Python examples share: kiln's module from the build tree, one engine, and timing on
torch's current stream."""
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
for build in ("build", "build-device"):  # a checkout's build tree, unless PYTHONPATH names one
    if (REPO / build / "python" / "kiln").is_dir() and not os.environ.get("PYTHONPATH"):
        sys.path.insert(0, str(REPO / build / "python"))

sys.path.insert(0, str(REPO / "bench"))

import torch  # noqa: E402
from run import median_us  # noqa: E402

import kiln  # noqa: E402

ENGINE = kiln.Engine()


def time_us(fn):
    """Microseconds per call of fn(), back to back (bench/run.py's median_us: one call per
    event pair would time the host's latency, not the work)."""
    return median_us(fn, inner=10)


def report(name, kiln_us, peers, error, tol):
    """One row: kiln's time, each peer's and kiln's ratio to it, the check."""
    cells = [f"{name}: kiln {kiln_us:8.1f} us"]
    cells += [f"{peer} {us:8.1f} us ({kiln_us / us:.2f}x)" for peer, us in peers.items()]
    cells.append(f"max error {error:.2e} (tol {tol:.0e}) {'ok' if error <= tol else 'FAILED'}")
    print(" | ".join(cells), flush=True)
    return error <= tol
