#!/usr/bin/env python3
"""The layer check's own test (scripts/test.sh runs it): on small trees, a planted upward include
and a folder cycle fail it, a known include that is gone fails it, and a clean tree passes."""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layer_check.py")
LAYERS = "low: low/ other/\nhigh: high/ app/\n"


def run(files, layers=LAYERS):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        with open(os.path.join(root, "layers.txt"), "w") as f:
            f.write(layers)
        r = subprocess.run([sys.executable, CHECK, "--root", root, "--layers",
                            os.path.join(root, "layers.txt")], capture_output=True, text=True)
        return r.returncode, r.stderr


def main():
    clean = {"low/a.hpp": "#include <vector>\n", "high/b.cpp": '#include "low/a.hpp"\n',
             "app/main.cpp": '#include "high/b.cpp"\n#include "low/a.hpp"\n'}
    rc, err = run(clean)
    assert rc == 0, f"a clean tree fails: {err}"
    rc, err = run({**clean, "low/up.cpp": '#include "high/b.cpp"\n'})
    assert rc == 1 and "low/up.cpp includes high/b.cpp" in err, f"an upward include passes: {err}"
    cycle = {**clean, "low/c.hpp": '#include "other/d.hpp"\n', "other/d.hpp": '#include "low/a.hpp"\n'}
    rc, err = run(cycle)
    assert rc == 1 and "include each other" in err, f"a folder cycle passes: {err}"
    rc, err = run(clean, LAYERS + "known:\nlow/a.hpp -> high/b.cpp\n")
    assert rc == 1 and "no longer offends" in err, f"a stale known include passes: {err}"
    rc, err = run({**clean, "low/up.cpp": '#include "high/b.cpp"\n'},
                  LAYERS + "known:\nlow/up.cpp -> high/b.cpp\n")
    assert rc == 0, f"a known include fails: {err}"
    print("test_layer_check: 5 cases passed")


if __name__ == "__main__":
    main()
