"""Users' templates from Python without a GPU: examples/custom_kernel's window.cuh compiled for
sm_80 and sm_90a into a temporary cache, as a graph node, and refused with kiln's errors."""
import pathlib

import pytest

import kiln

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "custom_kernel"
K = kiln.ParamKind


def window():
    t = kiln.Template.from_file(str(EXAMPLE / "window.cuh"))
    t.header("window_math.cuh", (EXAMPLE / "window_math.cuh").read_text())
    t.params([("x", K.tensor), ("y", K.tensor), ("n", K.i64), ("alpha", K.f32), ("beta", K.f32)])
    t.instance("gauss_window<{x}, {BLOCK}, {ITEMS}>").tunable("BLOCK", [256, 128])
    t.tunable("ITEMS", [4, 1]).launch(["ceilf(n / (BLOCK * ITEMS))"], ["BLOCK"])
    return t


def args(n, dtype):
    v = kiln.desc([n], dtype)
    return [v, v, n, 0.5, 0.25]


def test_a_template_compiles_offline_once(tmp_path):
    for arch in ("sm_80", "sm_90a"):
        e = kiln.Engine(arch=arch, offline=True, cache_dir=str(tmp_path))
        r = kiln.precompile(e, window(), args(1000, "bf16"))
        assert r["source"] == "compiled"
        assert r["name"] == "gauss_window_bf16_bf16_BLOCK256_ITEMS4"
        again = kiln.Engine(arch=arch, offline=True, cache_dir=str(tmp_path))
        assert kiln.precompile(again, window(), args(77, "bf16"))["source"] == "disk"
        tuned = kiln.precompile(again, window(), args(77, "bf16"), {"BLOCK": 128})
        assert tuned["name"] == "gauss_window_bf16_bf16_BLOCK128_ITEMS4"


def test_a_template_node_in_a_plan():
    g = kiln.Graph()
    window_op = g.define_template("window", window().output("y", "x"))
    x = g.input("x", [64, 1000], "f32")
    w = window_op(kiln.silu(x) * 2.0, 64000, 0.5, 0.25)
    g.output(kiln.softmax(w), "out")
    kernels = kiln.Plan(g).kernels("sm_90a")
    assert [k["name"] for k in kernels][1] == "gauss_window_f32_f32_BLOCK256_ITEMS4"
    assert kernels[1]["grid"] == 63 and kernels[1]["block"] == 256


def test_bad_templates_are_kiln_errors(tmp_path):
    e = kiln.Engine(arch="sm_90a", offline=True, cache_dir=str(tmp_path))
    with pytest.raises(kiln.ArgumentError, match="arguments"):
        kiln.precompile(e, window(), args(10, "f32")[:3])
    with pytest.raises(kiln.ArgumentError, match="tunable"):
        kiln.precompile(e, window(), args(10, "f32"), {"WIDTH": 2})
    with pytest.raises(kiln.ArgumentError):
        kiln.precompile(e, window().instance("gauss_window<{x}, {Q}>"), args(10, "f32"))
    broken = kiln.Template("broken.cuh", "template <class T> __global__ void k(T* x) { x[0] = }")
    broken.params([("x", K.tensor)]).instance("k<{x}>")
    with pytest.raises(kiln.CompileError, match="broken.cuh"):
        kiln.precompile(e, broken, [kiln.desc([4], "f32")])
    assert list(tmp_path.rglob("*.kiln")) == []  # nothing reached the cache
