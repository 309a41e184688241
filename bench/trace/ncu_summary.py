"""A summary of ncu exports of one kernel launch (bench/trace/profile.sh writes them): from the
details page (NAME.details.csv) the duration, warp instructions and issue figures; from the
per-instruction source page (NAME.sass.csv, `--page source --print-source sass --csv`) the warp
stall samples and instructions split at the kernel's last `WARPGROUP.DEPBAR.LE gsb0, 0x0` (a
wgmma kernel's products before it, its epilogue after), each part's stall reasons, the
epilogue's instructions by opcode (barrier waits and mbarrier polls apart from the work), and
the hottest instructions after it; with --whole, the whole kernel's stall reasons and instructions
by opcode instead of the split (a kernel whose products and epilogue interleave: attention), and
its launch and occupancy figures.
Usage: python3 bench/trace/ncu_summary.py [--whole] DIR NAME...   (DIR holding
NAME.details.csv and NAME.sass.csv)"""
import csv
import os
import sys

DETAILS = ("Duration", "Executed Instructions", "Issue Slots Busy", "Issued Ipc Active",
           "Eligible Warps Per Scheduler", "Warp Cycles Per Issued Instruction",
           "Compute (SM) Throughput", "Memory Throughput", "L1/TEX Hit Rate", "Registers Per Thread",
           "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")  # profile.sh adds it
LAUNCH = ("Grid Size", "Block Size", "Cluster Size", "Dynamic Shared Memory Per Block",
          "Achieved Occupancy", "DRAM Throughput", "L2 Hit Rate", "SM Frequency")


def rows_of(path, header_at):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for i, r in enumerate(rows):  # the header is the first row naming header_at
        if header_at in r:
            return [dict(zip(r, x)) for x in rows[i + 1:] if x]
    raise SystemExit(f"{path}: no header with '{header_at}' (not an ncu CSV export?)")


def number(text):
    try:
        return int(text.replace(",", "")) if text else 0
    except ValueError:
        return 0


def details(path, names=DETAILS):
    out = {}
    for d in rows_of(path, "Metric Name"):
        name = d.get("Metric Name", "")
        if name in names and name not in out:
            out[name] = f"{d.get('Metric Value', '')} {d.get('Metric Unit', '')}".strip()
    return out


def reasons(part, top=6):
    """The `top` stall reasons of `part` (source rows), by samples."""
    keys = [k for k in part[0] if k.startswith("stall_") and "Not Issued" not in k] if part else []
    totals = {k[6:]: sum(number(d[k]) for d in part) for k in keys}
    best = sorted(((v, k) for k, v in totals.items() if v), reverse=True)[:top]
    return ", ".join(f"{k} {v}" for v, k in best)


def opcode(source):
    """The opcode of a SASS line (`@!P0 FFMA.FTZ R1, ...` -> `FFMA`)."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def opcodes(part, top=12):
    totals = {}
    for d in part:
        op = opcode(d.get("Source", ""))
        totals[op] = totals.get(op, 0) + number(d.get("Instructions Executed", ""))
    best = sorted(((v, k) for k, v in totals.items() if v), reverse=True)[:top]
    return ", ".join(f"{k} {v / 1e6:.2f} M" for v, k in best)


def summary(directory, name, whole=False):
    base = os.path.join(directory, name)
    for ext in (".details.csv", ".sass.csv"):
        if not os.path.isfile(base + ext):
            print(f"{base + ext}: missing (bench/trace/profile.sh writes it)")
            return False
    print(f"{name}:")
    for k, v in details(base + ".details.csv", DETAILS + (LAUNCH if whole else ())).items():
        print(f"  {k}: {v}")
    sass = rows_of(base + ".sass.csv", "Source")
    samples = "Warp Stall Sampling (All Samples)"
    if whole:
        n = sum(number(d.get(samples, "")) for d in sass)
        inst = sum(number(d.get("Instructions Executed", "")) for d in sass)
        print(f"  whole kernel: {n} samples, {inst / 1e6:.2f} M warp instructions; "
              f"{reasons(sass, top=10)}")
        print(f"  warp instructions by opcode: {opcodes(sass, top=16)}")
        return True
    waits = [i for i, d in enumerate(sass) if "DEPBAR.LE gsb0, 0x0" in d.get("Source", "")]
    cut = waits[-1] + 1 if waits else len(sass)
    total = sum(number(d.get(samples, "")) for d in sass) or 1
    for label, part in (("products (to the last wgmma wait)", sass[:cut]),
                        ("after it (the epilogue)", sass[cut:])):
        n = sum(number(d.get(samples, "")) for d in part)
        inst = sum(number(d.get("Instructions Executed", "")) for d in part)
        print(f"  {label}: {n} samples ({100 * n / total:.0f} %), {inst / 1e6:.2f} M warp "
              f"instructions; {reasons(part)}")
    print(f"  the epilogue's warp instructions by opcode: {opcodes(sass[cut:])}")
    hot = sorted(sass[cut:], key=lambda d: -number(d.get(samples, "")))[:8]
    for d in hot:
        print(f"    {number(d.get(samples, '')):6d} {number(d.get('Instructions Executed', '')):9d}  "
              f"{d.get('Source', '').strip()[:70]}")
    return True


def main():
    args = sys.argv[1:]
    whole = bool(args) and args[0] == "--whole"
    args = args[1:] if whole else args
    if len(args) < 2:
        print(__doc__)
        return 2
    ok = True
    for name in args[1:]:
        ok = summary(args[0], name, whole) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
