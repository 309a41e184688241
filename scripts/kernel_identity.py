#!/usr/bin/env python3
"""What kiln compiles, recorded so that two builds can be compared kernel by kernel: a refactor
that must not change any kernel (the op-vocabulary and stage-folder redesigns) compares the
record of the tree before with the record after. No GPU needed.

  scripts/kernel_identity.py record BUILD_DIR OUT_DIR [--seeds 0:200]
  scripts/kernel_identity.py compare OLD_DIR NEW_DIR

`record` collects every kernel spec, for sm_80 and for sm_90a, of: the benchmark graphs
(bench/gemm/*.json, bench/dynamic_mlp.json and kiln_bench_rows' grid), the seed apps' graphs
(their --offline --save-graphs), the sanitize graphs (tests/sanitize*/) and the fuzz seeds
(kiln_fuzz --compile-only), through KILN_RECORD manifests; compiles each arch's manifest into a
cache of its own; and writes OUT_DIR/<arch>.specs (name, name expression, options, a line each)
and OUT_DIR/<arch>.code (name, lowered name, spec id, sha256 of the cubin's code sections). `compare`
prints every kernel whose expression, options or code differs, or that only one side has, and
exits 1 if any does.
"""
import argparse
import glob
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

ARCHS = ("sm_80", "sm_90a")
APPS = ("diffusion_step", "gfn", "gaussian_field", "rusty_ops", "spectral_autoencoder")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, env=None):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"kernel_identity: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout


def graph_files(build, scratch):
    files = sorted(glob.glob(f"{ROOT}/bench/gemm/*.json") + glob.glob(f"{ROOT}/tests/sanitize*/*.json"))
    files.append(f"{ROOT}/bench/dynamic_mlp.json")
    rows = os.path.join(scratch, "rows")
    os.makedirs(rows)
    run([f"{build}/bin/kiln_bench_rows", "--save-graphs", rows])
    files += sorted(glob.glob(f"{rows}/*.json"))
    for app in APPS:
        out = os.path.join(scratch, app)
        os.makedirs(out)
        env = dict(os.environ, KILN_CACHE_DIR=os.path.join(scratch, "app-cache"))
        run([f"{build}/bin/{app}", "--offline", "--arch", "sm_90a", "--save-graphs", out], env)
        files += sorted(glob.glob(f"{out}/*.json"))
    return files


def code_hash(cubin):
    """sha256 over the cubin's code sections (.text.*), by section name: what the GPU runs,
    without the ELF's other bytes (symbol order, notes)."""
    if cubin[:4] != b"\x7fELF":
        return hashlib.sha256(cubin).hexdigest()  # PTX: the text itself
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4]
    h = hashlib.sha256()
    found = []
    for s in sections:
        name = cubin[names_at + s[0]:cubin.index(b"\0", names_at + s[0])].decode()
        if name.startswith(".text"):
            found.append((name, cubin[s[4]:s[4] + s[5]]))
    for name, data in sorted(found):
        h.update(name.encode() + b"\0" + data)
    return h.hexdigest()


def read_cache(cache):
    """(name, lowered name, spec id) -> code hash of every entry of a kiln disk cache. The spec
    id (the hash of the kernel's own source, expression and options, without kiln's headers)
    tells apart kernels of one name and instantiation whose fused bodies differ (a fuzz graph's
    "tanh_cos_2_more" and another's), which would otherwise stand for each other."""
    out = {}
    for path in glob.glob(f"{cache}/**/*", recursive=True):
        if not os.path.isfile(path):
            continue
        data = open(path, "rb").read()
        if data[:8] != b"KILNKERN":
            continue
        meta_len, = struct.unpack_from("<I", data, 12)
        payload, = struct.unpack_from("<Q", data, 32)
        meta = json.loads(data[48:48 + meta_len])
        cubin = data[48 + meta_len:48 + meta_len + payload]
        out[f"{meta['name']}\t{meta['lowered_name']}\t{meta['spec']}"] = code_hash(cubin)
    return out


def record(args):
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        files = graph_files(args.build, scratch)
        for arch in ARCHS:
            manifest = os.path.join(scratch, f"{arch}.manifest")
            env = dict(os.environ, KILN_RECORD=manifest, KILN_CACHE_DIR=os.path.join(scratch, "plan"))
            for f in files:
                run([f"{args.build}/bin/kiln", "plan", "--compile", "--arch", arch, f], env)
            run([f"{args.build}/bin/kiln_fuzz", "--compile-only", "--seeds", args.seeds, "--arch", arch,
                 "-j", str(os.cpu_count() or 1)], env)
            specs = set()
            for line in open(manifest):
                s = json.loads(line)
                specs.add(f"{s['name']}\t{s['expression']}\t{' '.join(s.get('options', []))}")
            with open(os.path.join(args.out, f"{arch}.specs"), "w") as f:
                f.write("".join(f"{s}\n" for s in sorted(specs)))
            cache = os.path.join(scratch, f"cache-{arch}")
            run([f"{args.build}/bin/kiln", "precompile", manifest, "--arch", arch, "--cache-dir", cache])
            code = read_cache(cache)
            with open(os.path.join(args.out, f"{arch}.code"), "w") as f:
                f.write("".join(f"{k}\t{v}\n" for k, v in sorted(code.items())))
            print(f"{arch}: {len(specs)} specs, {len(code)} cubins from {len(files)} graph files "
                  f"and fuzz seeds {args.seeds}")


def table(path, key_fields):
    rows = {}
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        rows["\t".join(parts[:key_fields])] = "\t".join(parts[key_fields:])
    return rows


def compare(args):
    differ = 0
    for arch in ARCHS:
        for kind, key_fields in (("specs", 3), ("code", 3)):
            old = table(os.path.join(args.old, f"{arch}.{kind}"), key_fields)
            new = table(os.path.join(args.new, f"{arch}.{kind}"), key_fields)
            for k in sorted(set(old) | set(new)):
                if old.get(k) != new.get(k):
                    differ += 1
                    what = "only before" if k not in new else "only after" if k not in old else "differs"
                    print(f"{arch} {kind} {what}: {k.split(chr(9))[0]}")
            print(f"{arch} {kind}: {len(old)} before, {len(new)} after")
    print(f"kernel_identity: {differ} differences")
    return 1 if differ else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("build")
    r.add_argument("out")
    r.add_argument("--seeds", default="0:200")
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    args = p.parse_args()
    return record(args) or 0 if args.cmd == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
