"""kiln's Python module without a GPU: graphs, ops and operators, JSON, plans, offline compiles
into a temporary cache, and kiln's error classes with their messages."""
import inspect
import json

import pytest

import kiln


def softmax_graph():
    g = kiln.Graph()
    x = g.input("x", [64, 1000], "bf16")
    mask = g.input("mask", [1000], kiln.DType.bf16)
    g.output(kiln.softmax(x * 0.125 + mask) * 2.0, "y")
    return g


def test_every_catalog_op_is_a_function():
    names = kiln.op_names()
    assert {"add", "softmax", "layer_norm", "fill", "copy", "sum"} <= set(names)
    for name in names:
        assert callable(getattr(kiln, name))


def test_values_carry_shapes_and_dtypes():
    g = kiln.Graph()
    x = g.input("x", [4, 8], "f32")
    b = g.input("b", [8], "f32")
    y = 2.0 - (x + b) / 3.0
    assert y.shape == [4, 8] and y.dtype == kiln.DType.f32
    s = kiln.sum(x, axis="all")
    assert s.shape == []
    r = kiln.sum(x, axis=0, keepdim=True)
    assert r.shape == [1, 8]
    c = kiln.cast(-x, dtype="bf16")
    assert c.dtype == kiln.DType.bf16
    n = kiln.layer_norm(x, None, None, eps=1e-5)  # weight and bias optional
    assert n.shape == [4, 8]
    d = g.input("d", ["?", 8], "f32")  # a dynamic dim
    assert d.shape == [None, 8]


def test_plan_fuses_and_json_round_trips(tmp_path):
    g = softmax_graph()
    kernels = kiln.Plan(g).kernels("sm_90a")
    assert len(kernels) == 1  # prologue, softmax and epilogue in one
    assert kernels[0]["name"] == "mul_add__softmax__mul_bf16__r2v8"
    assert len(kiln.Plan(g, fuse=False).kernels()) == 4
    back = kiln.Graph.parse(g.to_json())
    assert json.loads(back.to_json()) == json.loads(g.to_json())
    g.save(str(tmp_path / "g.json"))
    assert kiln.Graph.load(str(tmp_path / "g.json")).outputs == ["y"]


def test_custom_op_fuses():
    g = kiln.Graph()
    mish = g.define_op("mish", ["x"], "x * tanhf(log1pf(expf(x)))")
    x = g.input("x", [32, 256], "f32")
    g.output(kiln.softmax(mish(x)), "y")
    assert len(kiln.Plan(g).kernels()) == 1


def test_offline_compile_into_a_cache_then_from_it(tmp_path):
    g = softmax_graph()
    e = kiln.Engine(arch="sm_90a", offline=True, cache_dir=str(tmp_path))
    assert not e.has_device and e.arch == "sm_90a"
    first = kiln.Plan(g).compile(e)
    assert [r["source"] for r in first] == ["compiled"]
    assert first[0]["spill_bytes"] == 0
    again = kiln.Engine(arch="sm_90a", offline=True, cache_dir=str(tmp_path))
    assert [r["source"] for r in kiln.Plan(g).compile(again)] == ["disk"]
    assert again.counters()["compiles"] == 0


def test_errors_are_kiln_classes_with_their_messages():
    g = kiln.Graph()
    x = g.input("x", [4, 8], "f32")
    with pytest.raises(kiln.ShapeError, match="add"):
        x + g.input("z", [3], "f32")
    with pytest.raises(kiln.DtypeError):
        kiln.softmax(g.input("m", [4], "bool"))
    with pytest.raises(kiln.DtypeError):
        g.input("w", [4], "f64")
    with pytest.raises(kiln.GraphError, match="unknown op 'nope'"):
        kiln._apply("nope", x)
    with pytest.raises(kiln.ArgumentError, match="attribute"):
        kiln.sum(x, colour=1)
    with pytest.raises(kiln.GraphError):
        kiln.Graph.parse("{")
    with pytest.raises(kiln.GraphError):
        g.define_op("evil", ["x"], "x; system(1)")
    other = kiln.Graph().input("y", [4, 8], "f32")
    with pytest.raises(kiln.GraphError, match="one graph"):
        x + other
    assert issubclass(kiln.CompileError, kiln.Error) and issubclass(kiln.CudaError, kiln.Error)


def test_an_online_engine_without_a_gpu_says_how_to_compile_offline():
    if kiln.gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(kiln.CudaError, match="offline"):
        kiln.Engine()


def test_products_and_reshape_plan_as_the_cpp_library_does():
    g = kiln.Graph()
    x = g.input("x", [5, 4, 24], "bf16")
    h = kiln.gelu(kiln.linear(x, g.input("w", [16, 24], "bf16"), g.input("b", [16], "bf16")))
    z = kiln.matmul(kiln.reshape(h, shape=[5, -1]), g.input("basis", [64, 12], "bf16"))
    g.output(kiln.relu(z), "y")
    kernels = kiln.Plan(g).kernels()
    assert [len(k["ops"]) for k in kernels] == [2, 2]  # linear+gelu, matmul+relu; the view shares
    assert '"shape": [5, -1]' in g.to_json() or '"shape":[5,-1]' in g.to_json()
    with pytest.raises(kiln.ShapeError, match="inner dims 24 != 23"):
        kiln.linear(x, g.input("w2", [16, 23], "bf16"))


def test_qkv_slices_are_windows_of_one_product():
    g = kiln.Graph()
    y = kiln.linear(g.input("x", [64, 32], "bf16"), g.input("w", [96, 32], "bf16"))
    for name, (start, stop) in {"q": (0, 32), "k": (32, 64), "v": (-32, 96)}.items():
        g.output(kiln.slice(y, axis=-1, start=start, stop=stop), name)
    kernels = kiln.Plan(g).kernels()
    assert len(kernels) == 1 and kernels[0]["ops"][-3:] == ["q", "k", "v"]
    with pytest.raises(kiln.ShapeError, match="stop 97 is outside axis -1 of extent 96"):
        kiln.slice(y, axis=-1, start=0, stop=97)


def test_a_dynamic_batch_linear_compiles_its_m_buckets(tmp_path):
    # gelu(linear(x, w, b)) over a dynamic token count: before M buckets, a GraphError.
    g = kiln.Graph()
    x = g.input("x", [None, 768], "bfloat16")
    w = g.input("w", [3072, 768], "bfloat16")
    b = g.input("b", [3072], "bfloat16")
    g.output(kiln.gelu(kiln.linear(x, w, b)), "y")
    plan = kiln.Plan(g)
    assert [k["name"] for k in plan.kernels("sm_90a")] == ["linear__gelu_bf16__buckets"]
    # Four few-row kernels (1, 2, 4 and 8 rows), then the buckets' tiles: sm_80's 64x64 and
    # 128x128; sm_90a's widths sized to fill the SMs at each bucket's M (64, 96, 192, 256).
    for arch, kernels in (("sm_80", 6), ("sm_90a", 8)):
        e = kiln.Engine(arch=arch, offline=True, cache_dir=str(tmp_path))
        records = plan.compile(e)
        names = [r["name"] for r in records]
        assert len(names) == kernels, names
        assert any("rows1x" in n for n in names)  # a batch of 1 has its bucket too


def test_reductions_over_several_axes_and_var():
    g = kiln.Graph()
    x = g.input("x", [2, 3, 4, 5], "f32")
    assert kiln.sum(x, axis=[1, 2]).shape == [2, 5]
    assert kiln.var(x, axis=(-1, -2), correction=0, keepdim=True).shape == [2, 3, 1, 1]
    assert kiln.std(x).shape == [2, 3, 4]
    with pytest.raises(kiln.ShapeError, match="leaves a gap between 0 and 2"):
        kiln.mean(x, axis=[0, 2])
    with pytest.raises(kiln.ArgumentError, match="correction"):
        kiln.var(x, correction=-1)


def test_group_norm_and_silu_are_one_kernel():
    g = kiln.Graph()
    x = g.input("x", [2, 64, 9, 7], "f16")
    w, b = g.input("w", [64], "f16"), g.input("b", [64], "f16")
    y = kiln.silu(kiln.group_norm(x, w, b, groups=32, eps=1e-6))
    assert y.shape == [2, 64, 9, 7]
    g.output(y)
    assert len(kiln.Plan(g).kernels("sm_90a")) == 1
    with pytest.raises(kiln.ShapeError, match="does not split into 5 groups"):
        kiln.group_norm(x, groups=5)


def test_concat_takes_operands_or_a_list_and_computes_elementwise_parts_in_place():
    g = kiln.Graph()
    h, u = g.input("h", [2, 64, 8, 8], "f16"), g.input("u", [2, 32, 8, 8], "f16")
    c = kiln.concat(kiln.silu(h), u * 2.0, axis=1)
    assert c.shape == [2, 96, 8, 8]
    assert kiln.concat([h, h], axis=-1).shape == [2, 64, 8, 16]
    assert "*xs" in str(inspect.signature(kiln.concat))
    g.output(kiln.group_norm(c, groups=32), "y")
    names = [k["name"] for k in kiln.Plan(g).kernels("sm_90a")]
    assert len(names) == 3 and all("__concat_f16" in n for n in names[:2])
    with pytest.raises(kiln.ShapeError, match="only axis 1 may differ"):
        kiln.concat(h, g.input("w", [2, 32, 8, 9], "f16"), axis=1)
    assert kiln.concat(xs=[h, u], axis=1).shape == [2, 96, 8, 8]
    assert kiln.stack([h, h, h], axis=-1).shape == [2, 64, 8, 8, 3]
    assert kiln.stack([u], axis=0).shape == [1, 2, 32, 8, 8]
    with pytest.raises(kiln.ShapeError, match="axis 6 is out of range"):
        kiln.stack([u], axis=6)


def test_batch_norm_is_a_scale_and_shift_per_channel():
    g = kiln.Graph()
    x = g.input("x", [2, 8, 5, 3], "f16")
    m, v = g.input("m", [8], "f32"), g.input("v", [8], "f32")
    w, b = g.input("w", [8], "f32"), g.input("b", [8], "f32")
    y = kiln.silu(kiln.batch_norm(x, m, v, w, b, eps=1e-3))
    assert y.shape == [2, 8, 5, 3]
    g.output(y)
    assert len(kiln.Plan(g).kernels("sm_90a")) == 1  # the [8] operands read in place as [8, 1, 1]
    with pytest.raises(kiln.ShapeError, match=r"must be of shape \[8\]"):
        kiln.batch_norm(x, m, g.input("v3", [3], "f32"))


class FakeTensor:
    """What kiln's eager calls read of a tensor without a GPU: its shape, its dtype and that it
    has __dlpack__ (never called here)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    def __dlpack__(self, stream=None):
        raise AssertionError("not read without a GPU")


def test_an_op_on_tensors_is_a_one_op_plan_made_once_per_signature():
    q = FakeTensor([2, 32, 1, 128], "bf16")
    kv = FakeTensor([2, 8, 4096, 128], "bf16")
    step = kiln.eager.plan_for("attention", [q, kv, kv], {})
    assert [k["name"] for k in step.kernels("sm_90a")] == ["attention_bf16__dec32s3w4k2c4_d128"]
    assert kiln.eager.plan_for("attention", [q, kv, kv], {}) is step  # the same signature
    prompt = kiln.eager.plan_for("attention", [FakeTensor([2, 32, 300, 128], "bf16"), kv, kv],
                                 {"causal": True})
    assert prompt is not step
    assert [k["name"] for k in prompt.kernels("sm_90a")] == [
        "attention_bf16__wg128x128s2_d128_causal"]
    assert prompt.inputs == ["x0", "x1", "x2"] and prompt.outputs == ["y"]
    # Numbers and attributes are part of the signature too.
    x = FakeTensor([4, 8], "f32")
    assert kiln.eager.plan_for("add", [x, 1.0], {}) is not kiln.eager.plan_for("add", [x, 2.0], {})
    # Tensors alone are an eager call; with a graph value, the graph op's (an error here).
    assert kiln.eager.takes([q, kv, kv]) and not kiln.eager.takes([1.0])
    g = kiln.Graph()
    assert not kiln.eager.takes([g.input("x", [4, 8], "f32"), x])
    with pytest.raises(kiln.ArgumentError, match="a graph value or a number"):
        kiln.add(g.input("y", [4, 8], "f32"), x)
    if not kiln.gpu_available():  # the call plans, then needs a GPU to run
        with pytest.raises(kiln.CudaError, match="no CUDA driver"):
            kiln.softmax(x)


def test_attention_with_lse_is_two_nodes_and_one_kernel():
    g = kiln.Graph()
    q = g.input("q", [2, 8, 300, 64], "bf16")
    kv = g.input("kv", [2, 2, 500, 64], "bf16")
    out, lse = kiln.attention_with_lse(q, kv, kv, causal=True)
    assert out.shape == [2, 8, 300, 64] and out.dtype == kiln.DType.bf16
    assert lse.shape == [2, 8, 300] and lse.dtype == kiln.DType.f32
    g.output(out, "out")
    g.output(lse, "lse")
    kernels = kiln.Plan(g).kernels("sm_90a")
    assert [k["name"] for k in kernels] == ["attention_bf16__wg128x128s3_d64_causal"]
    # On tensors: a plan of the two, run at once (its outputs y0 and y1).
    kv_t = FakeTensor([2, 2, 500, 64], "bf16")
    step = kiln.eager.plan_for(("attention", "attention_lse"),
                               [FakeTensor([2, 8, 1, 64], "bf16"), kv_t, kv_t], {})
    assert step.outputs == ["y0", "y1"]
    assert len(step.kernels("sm_90a")) == 1
