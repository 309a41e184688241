"""The wgmma block's consumer groups in turns against the shared tiles, on issue 51's
convolutions and issue 52's conv blocks (`bench/trace/run.sh wgmma_turns [VARIANT...]` runs it on
a build with bench/trace/wgmma_turns.patch applied: each consumer group its own tiles, the
block's tiles in turn, so that one group's epilogue runs under the other's products).

The patch's build reads KILN_EXP_CONV_BM when it specializes a wgmma convolution: set, every such
convolution runs in turns on tiles of that many rows, unsplit (128 rows: at most 128 wide, two
accumulators a group). Variants: shared (the default kernels), turns64, turns128. Each variant
is one run of bench/conv.py and bench/conv_block.py (bn silu affine) in a process of its own,
cuDNN and PyTorch beside it as those scripts time them."""
import os
import subprocess
import sys

VARIANTS = {"shared": None, "turns64": "64", "turns128": "128"}


def run(variant):
    env = dict(os.environ)
    env.pop("KILN_EXP_CONV_BM", None)
    if VARIANTS[variant]:
        env["KILN_EXP_CONV_BM"] = VARIANTS[variant]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), "bench"]))
    ok = True
    for cmd in (["bench/conv.py"], ["bench/conv_block.py", "bn", "silu", "affine"]):
        out = subprocess.run([sys.executable] + cmd, env=env, capture_output=True, text=True)
        for line in (out.stdout + out.stderr).splitlines():
            if "us" in line or "Error" in line:
                print(f"{variant:9s} {line.strip()}", flush=True)
        ok = ok and out.returncode == 0
    return ok


def main():
    names = sys.argv[1:] or list(VARIANTS)
    ok = True
    for name in names:
        if name not in VARIANTS:
            print(f"unknown variant {name}: {', '.join(VARIANTS)}")
            return 2
        ok = run(name) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
