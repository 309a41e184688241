#!/usr/bin/env python3
"""The layer check: every #include of kiln's host code goes to its own layer or a lower one
(scripts/layers.txt declares the layers, lowest first), and no two folders include each other
through any chain of includes. Includes it lists as known are tolerated until they are gone.

  scripts/layer_check.py [--root DIR] [--layers FILE] [--print-known]

Exits 1, naming each offending include, when one goes up a layer or closes a folder cycle that
the known list does not name, or when the known list names one that is gone; 0 otherwise.
--print-known prints today's offending includes in the known list's format.
"""
import argparse
import os
import re
import sys

SOURCES = (".cpp", ".hpp", ".h", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def read_layers(path):
    layers, known, in_known = [], set(), False
    for raw in open(path, encoding="utf-8"):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line == "known:":
            in_known = True
        elif in_known:
            frm, sep, to = line.partition("->")
            if not sep:
                sys.exit(f"layer_check: {path}: '{line}' is not 'from -> to'")
            known.add((frm.strip(), to.strip()))
        else:
            name, sep, paths = line.partition(":")
            if not sep or not paths.split():
                sys.exit(f"layer_check: {path}: '{line}' is not 'layer: path...'")
            layers.append((name.strip(), paths.split()))
    return layers, known


def layer_of(rel, layers):
    """The index of the layer whose longest path names `rel` (None: no layer: not checked)."""
    best, best_len = None, -1
    for i, (_, paths) in enumerate(layers):
        for p in paths:
            if (rel == p or (p.endswith("/") and rel.startswith(p))) and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def sources(root, layers):
    out = []
    for top in sorted({p.split("/")[0] for _, paths in layers for p in paths}):
        base = os.path.join(root, top)
        if os.path.isfile(base):
            out.append(top)
            continue
        for d, dirs, files in os.walk(base):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            for f in sorted(files):
                if f.endswith(SOURCES):
                    out.append(os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/"))
    return out


def resolve(root, includer, kind, name):
    """The repository file an include names, or None (a system or toolkit header)."""
    candidates = [name, os.path.join("include", name)]
    if kind == '"':
        candidates.insert(0, os.path.join(os.path.dirname(includer), name))
    for c in candidates:
        c = os.path.normpath(c).replace(os.sep, "/")
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def includes(root, files):
    edges = []
    for f in files:
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        for kind, name in INCLUDE.findall(text):
            to = resolve(root, f, kind, name)
            if to and to != f:
                edges.append((f, to))
    return edges


def folder_cycles(edges, _layers):
    """Includes that close a cycle between two folders (of checked files): (from, to) file pairs
    whose folders reach each other."""
    def folder(f):
        return os.path.dirname(f)
    reach = {}
    for a, b in edges:
        if folder(a) != folder(b):
            reach.setdefault(folder(a), set()).add(folder(b))
    def reaches(a, b):
        seen, todo = set(), [a]
        while todo:
            x = todo.pop()
            if x == b:
                return True
            if x not in seen:
                seen.add(x)
                todo.extend(reach.get(x, ()))
        return False
    return {(a, b) for a, b in edges
            if folder(a) != folder(b) and reaches(folder(b), folder(a))}


def offenders(root, layers):
    """Includes that go up a layer, and those that close a folder cycle below the top layer (the
    top one's folders, tests and apps, use the library and nothing uses them)."""
    files = [f for f in sources(root, layers) if layer_of(f, layers) is not None]
    edges = [(a, b) for a, b in includes(root, files) if layer_of(b, layers) is not None]
    up = {(a, b) for a, b in edges if layer_of(b, layers) > layer_of(a, layers)}
    top = len(layers) - 1
    below = [(a, b) for a, b in edges if layer_of(a, layers) < top and layer_of(b, layers) < top]
    return up, folder_cycles(below, layers)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=os.path.dirname(here))
    p.add_argument("--layers", default=None)
    p.add_argument("--print-known", action="store_true")
    a = p.parse_args()
    layers_file = a.layers or os.path.join(a.root, "scripts", "layers.txt")
    layers, known = read_layers(layers_file)
    up, cycles = offenders(a.root, layers)
    if a.print_known:
        for frm, to in sorted(up | cycles):
            print(f"{frm} -> {to}")
        return 0
    bad = []
    for frm, to in sorted(up - known):
        bad.append(f"{frm} includes {to}: layer '{layers[layer_of(to, layers)][0]}' is above "
                   f"'{layers[layer_of(frm, layers)][0]}' ({layers_file})")
    for frm, to in sorted(cycles - up - known):
        bad.append(f"{frm} includes {to}: folders {os.path.dirname(frm)}/ and "
                   f"{os.path.dirname(to)}/ include each other")
    for frm, to in sorted(known - up - cycles):
        bad.append(f"'{frm} -> {to}' is in the known list of {layers_file} but no longer "
                   f"offends: take it out")
    for line in bad:
        print(f"layer_check: {line}", file=sys.stderr)
    print(f"layer_check: {len(bad)} problem(s); {len(known & (up | cycles))} known include(s) "
          f"remain (scripts/layers.txt)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
