"""kiln on torch tensors, on a GPU: results against torch's, inputs read in place and outputs from
torch's allocator, order on torch's streams with no synchronize, CuPy and kiln.Tensor by DLPack,
and a plan as a torch op under torch.compile and in a CUDA graph capture (attention's in
test_attention_gpu.py). Skipped (visibly) without torch or a GPU."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import kiln  # noqa: E402
from conftest import replayed_on  # noqa: E402

if not (torch.cuda.is_available() and kiln.gpu_available()):
    pytest.skip("no GPU", allow_module_level=True)


def affine_plan(shape, dtype="f32"):
    """y = x * 2 + 1"""
    g = kiln.Graph()
    g.output(g.input("x", shape, dtype) * 2.0 + 1.0, "y")
    return kiln.Plan(g)


def test_a_fused_plan_on_torch_tensors_matches_torch(engine):
    g = kiln.Graph()
    x = g.input("x", ["?", 1000], "bf16")
    mask = g.input("mask", [1000], "bf16")
    g.output(kiln.softmax(x * 0.125 + mask) * 2.0, "y")
    plan = kiln.Plan(g)
    for rows in (1, 37, 64):
        x = torch.randn(rows, 1000, device="cuda", dtype=torch.bfloat16)
        mask = torch.randn(1000, device="cuda", dtype=torch.bfloat16)
        y = plan.run(engine, x=x, mask=mask)["y"]
        assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16
        assert y.shape == (rows, 1000) and y.device == x.device
        ref = torch.softmax(x.double() * 0.125 + mask.double(), -1) * 2
        torch.testing.assert_close(y.double(), ref, atol=1e-2, rtol=1e-2)
    x.requires_grad_()  # read as it is; autograd is the caller's
    torch.testing.assert_close(plan.run(engine, x=x, mask=mask)["y"], y)


def test_strided_and_offset_views_are_read_as_they_are(engine):
    g = kiln.Graph()
    a = g.input("a", [33, 65], "f32")
    b = g.input("b", [33, 65], "f32")
    g.output(kiln.relu(a) * b, "y")
    plan = kiln.Plan(g)
    base = torch.randn(65, 33, device="cuda")
    a = base.t()  # transposed
    b = torch.randn(33 * 65 + 1, device="cuda")[1:].view(33, 65)  # 4 bytes past an allocation
    y = plan.run(engine, a=a, b=b)["y"]
    torch.testing.assert_close(y, torch.relu(a) * b)


def test_inputs_are_read_in_place_and_outputs_come_from_torch(engine):
    plan = affine_plan([8192, 16384])  # 512 MiB each
    x = torch.randn(8192, 16384, device="cuda")
    plan.run(engine, x=x)  # compiles
    torch.cuda.synchronize()
    out = torch.full_like(x, float("nan"))
    free = torch.cuda.mem_get_info()[0]
    got = plan.run(engine, x=x, out={"y": out})
    torch.cuda.synchronize()
    assert got["y"] is out
    assert free - torch.cuda.mem_get_info()[0] < 64 << 20  # no copy of x or y anywhere
    torch.testing.assert_close(out, x * 2 + 1)
    before = torch.cuda.memory_allocated()
    y = plan.run(engine, x=x)["y"]
    assert torch.cuda.memory_allocated() - before == y.numel() * 4  # torch's allocator owns it
    del out
    torch.testing.assert_close(y, x * 2 + 1)


def test_kiln_work_is_ordered_on_torchs_stream_with_no_synchronize(engine):
    plan = affine_plan([2048, 2048])
    src = torch.randn(2048, 2048, device="cuda")
    x = torch.zeros_like(src)
    plan.run(engine, x=x)  # compiles
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # the copy below lands long after kiln's launch returns
        x.copy_(src)
        y = plan.run(engine, x=x)["y"]  # on `side`, after the copy
        z = y - 1  # torch, after kiln
    w = plan.run(engine, x=src, stream=side)["y"]  # an explicit stream, outside the scope
    side.synchronize()
    torch.testing.assert_close(z, src * 2)
    torch.testing.assert_close(w, src * 2 + 1)


def test_cupy_arrays_and_kiln_tensors_by_dlpack(engine):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    plan = affine_plan([3, 5])
    x = cupy.arange(15, dtype=cupy.float32).reshape(3, 5)
    made = kiln._run(plan, engine, {"x": x}, {}, None, False)["y"]  # kiln's own memory
    assert isinstance(made, kiln.Tensor) and made.shape == [3, 5]
    expect = cupy.arange(15, dtype=cupy.float32).reshape(3, 5) * 2 + 1
    assert bool((cupy.from_dlpack(made) == expect).all())
    as_torch = torch.from_dlpack(made)
    assert as_torch.data_ptr() == made.data_ptr  # shared, not copied
    torch.testing.assert_close(as_torch, torch.arange(15.0, device="cuda").view(3, 5) * 2 + 1)


def test_integer_tensors_compute_as_torch_does(engine):
    g = kiln.Graph()
    a = g.input("a", [1000], "i32")
    b = g.input("b", [1000], "i64")
    g.output(a * b + 7, "mul_add")
    g.output(kiln.div(a, b), "floordiv")
    g.output(a % b, "rem")
    g.output(kiln.cast(a, dtype="f32") * 0.5, "half")
    plan = kiln.Plan(g)
    a = torch.randint(-2**31, 2**31, (1000,), device="cuda", dtype=torch.int32)
    b = torch.randint(-100, 100, (1000,), device="cuda", dtype=torch.int64)
    b[b == 0] = 3  # torch refuses an integer division by zero; kiln gives 0
    out = plan.run(engine, a=a, b=b)
    assert out["mul_add"].dtype == torch.int64
    torch.testing.assert_close(out["mul_add"], a.long() * b + 7, rtol=0, atol=0)
    torch.testing.assert_close(out["floordiv"], torch.floor_divide(a.long(), b), rtol=0, atol=0)
    torch.testing.assert_close(out["rem"], torch.remainder(a.long(), b), rtol=0, atol=0)
    torch.testing.assert_close(out["half"], a.float() * 0.5)


def test_embedding_gather_and_argmax_match_torch_and_a_bad_id_is_an_error(engine):
    g = kiln.Graph()
    w, ids = g.input("w", [100, 64], "bf16"), g.input("ids", [4, 9], "i64")
    pos = g.input("pos", [9, 64], "bf16")
    g.output(kiln.layer_norm(kiln.embedding(w, ids) + pos, eps=1e-5), "y")
    x, i = g.input("x", [7, 5], "f32"), g.input("i", [7, 3], "i32")
    g.output(kiln.gather(x, i, axis=1) * 2.0, "picked")
    g.output(kiln.argmax(x, axis=0), "best")
    plan = kiln.Plan(g)
    assert len(plan.kernels()) == 3
    t = dict(w=torch.randn(100, 64, device="cuda", dtype=torch.bfloat16),
             ids=torch.randint(0, 100, (4, 9), device="cuda"),
             pos=torch.randn(9, 64, device="cuda", dtype=torch.bfloat16),
             x=torch.randn(7, 5, device="cuda"),
             i=torch.randint(0, 5, (7, 3), device="cuda", dtype=torch.int32))
    out = plan.run(engine, **t)
    ref = torch.nn.functional.layer_norm(
        torch.nn.functional.embedding(t["ids"], t["w"].float()) + t["pos"].float(), (64,))
    torch.testing.assert_close(out["y"].float(), ref, atol=3e-2, rtol=2e-2)
    torch.testing.assert_close(out["picked"], torch.gather(t["x"], 1, t["i"].long()) * 2.0)
    assert torch.equal(out["best"], torch.argmax(t["x"], 0))
    t["ids"][2, 3] = 100
    with pytest.raises(kiln.ArgumentError, match="holds index 100, outside"):
        plan.run(engine, **t)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", ["f16", "f32", "i32"])
def test_pad_and_upsample_nearest_match_torch_read_in_place(engine, channels_last, dtype):
    tdt = {"f16": torch.float16, "f32": torch.float32, "i32": torch.int32}[dtype]
    F = torch.nn.functional
    n, c, h, w = 2, 6, 5, 7
    g = kiln.Graph()

    def nchw(name, shape):  # a channels_last tensor is an [n, h, w, c] input permuted
        if not channels_last:
            return g.input(name, shape, dtype)
        return kiln.permute(g.input(name, [shape[0], shape[2], shape[3], shape[1]], dtype),
                            dims=[0, 3, 1, 2])

    x = nchw("x", [n, c, h, w])
    cases = {"p0": [1, 2], "p1": [0, 3, 2, 1], "p2": [3, 3, 1, 0, 1, 1], "crop": [-1, 2, 1, -2]}
    for name, pads in cases.items():
        g.output(kiln.pad(x, pads=pads, value=3.0) + kiln.pad(x, pads=pads, value=3.0), name)
    for scale in (2, 3):
        up = kiln.upsample_nearest(x, scale=scale)
        skip = nchw(f"s{scale}", [n, c, h * scale, w * scale])
        g.output(up + skip, f"up{scale}")
        g.output(kiln.concat(up, skip, axis=1), f"cat{scale}")
    plan = kiln.Plan(g)
    # Each output one kernel (each concat two): no padded or upsampled copy.
    assert len(plan.kernels()) == len(cases) + 3 * 2
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    rnd = (lambda *s: torch.randint(-50, 50, s, device="cuda", dtype=tdt)) if dtype == "i32" else (
        lambda *s: torch.randn(*s, device="cuda", dtype=tdt))
    xt = rnd(n, c, h, w).to(memory_format=fmt)
    skips = {k: rnd(n, c, h * k, w * k).to(memory_format=fmt) for k in (2, 3)}
    feed = (lambda t: t.permute(0, 2, 3, 1)) if channels_last else (lambda t: t)
    out = plan.run(engine, x=feed(xt), s2=feed(skips[2]), s3=feed(skips[3]))
    for name, pads in cases.items():
        ref = F.pad(xt, pads, value=3.0)
        torch.testing.assert_close(out[name], ref + ref)
    for k in (2, 3):
        up = F.interpolate(xt, scale_factor=k, mode="nearest") if dtype != "i32" else (
            xt.repeat_interleave(k, 2).repeat_interleave(k, 3))
        torch.testing.assert_close(out[f"up{k}"], up + skips[k])
        torch.testing.assert_close(out[f"cat{k}"], torch.cat([up, skips[k]], 1))


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_conv2d_matches_torch_read_in_place_and_keeps_channels_last(engine, channels_last, dtype):
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    F = torch.nn.functional
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    cases = [  # (N, C, H, W, K, R, S, stride, padding, dilation, groups)
        (2, 64, 33, 17, 32, 3, 3, 1, 1, 1, 1),
        (1, 16, 9, 9, 8, 3, 3, 2, 1, 1, 1),
        (2, 32, 7, 7, 16, 1, 1, 1, 0, 1, 1),
        (1, 16, 12, 12, 16, 3, 3, 1, 2, 2, 2),
        (1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1),
        (2, 32, 10, 13, 32, 3, 3, 1, 1, 1, 32),  # depthwise
        (1, 24, 11, 9, 24, 5, 5, 2, 2, 1, 24),   # depthwise 5x5, stride 2
    ]
    for n, c, h, w, k, r, s, stride, padding, dilation, groups in cases:
        g = kiln.Graph()

        def stored(name, shape):  # a channels_last tensor is an [n, h, w, c] input permuted
            if not channels_last:
                return g.input(name, shape, dtype)
            return kiln.permute(g.input(name, [shape[0], shape[2], shape[3], shape[1]], dtype),
                                dims=[0, 3, 1, 2])

        y = kiln.conv2d(stored("x", [n, c, h, w]), stored("w", [k, c // groups, r, s]),
                        g.input("b", [k], dtype), stride=stride, padding=padding,
                        dilation=dilation, groups=groups, exact=True)
        g.output(kiln.silu(y), "y")
        x = torch.randn(n, c, h, w, device="cuda", dtype=tdt).to(memory_format=fmt)
        wt = torch.randn(k, c // groups, r, s, device="cuda", dtype=tdt).to(memory_format=fmt)
        b = torch.randn(k, device="cuda", dtype=tdt)
        feed = (lambda t: t.permute(0, 2, 3, 1)) if channels_last else (lambda t: t)
        out = kiln.Plan(g).run(engine, x=feed(x), w=feed(wt), b=b)["y"]
        # torch's memory format: channels_last in, channels_last out
        assert out.is_contiguous(memory_format=fmt)
        ref = F.silu(F.conv2d(x.double(), wt.double(), b.double(), stride=stride, padding=padding,
                              dilation=dilation, groups=groups))
        tol = {"f16": 1e-2, "bf16": 6e-2, "f32": 1e-4}[dtype]
        torch.testing.assert_close(out.double(), ref, rtol=tol, atol=tol * (c * r * s) ** 0.5)
    g = kiln.Graph()
    with pytest.raises(kiln.ShapeError, match="empty convolution"):
        kiln.conv2d(g.input("x", [1, 4, 2, 2], "f32"), g.input("w", [4, 4, 3, 3], "f32"))


def test_tensors_kiln_cannot_take_are_clear_errors(engine):
    plan = affine_plan([4, 4])
    with pytest.raises(kiln.ArgumentError, match="host memory"):
        plan.run(engine, x=torch.ones(4, 4))
    with pytest.raises(kiln.DtypeError, match="f32, f16, bf16"):
        plan.run(engine, x=torch.ones(4, 4, device="cuda", dtype=torch.float64))
    with pytest.raises(kiln.DtypeError, match="input 'x'"):
        plan.run(engine, x=torch.ones(4, 4, device="cuda", dtype=torch.float16))
    with pytest.raises(kiln.ShapeError, match="input 'x'"):
        plan.run(engine, x=torch.ones(4, 5, device="cuda"))
    with pytest.raises(kiln.ArgumentError, match="__dlpack__"):
        plan.run(engine, x=[[1.0] * 4] * 4)


def block_plan():
    """layer_norm(x + r) * w + b, then gelu: one fused kernel"""
    g = kiln.Graph()
    x = g.input("x", [128, 256], "f32")
    r = g.input("r", [128, 256], "f32")
    w = g.input("w", [256], "f32")
    b = g.input("b", [256], "f32")
    g.output(kiln.gelu(kiln.layer_norm(x + r, w, b, eps=1e-5)), "y")
    return kiln.Plan(g)


def block_ref(x, r, w, b):
    h = torch.nn.functional.layer_norm((x + r).double(), (256,), w.double(), b.double(), 1e-5)
    return torch.nn.functional.gelu(h).float()


def block_args():
    return [torch.randn(128, 256, device="cuda") for _ in range(2)] + [
        torch.randn(256, device="cuda") for _ in range(2)]


def test_a_registered_op_under_torch_compile_matches_eager():
    import kiln.torch

    op = kiln.torch.op(block_plan(), "test_block")

    def model(x, r, w, b):
        return op(torch.sin(x), r, w, b) * 0.5

    args = block_args()
    eager = model(*args)
    torch.testing.assert_close(eager, block_ref(torch.sin(args[0]), *args[1:]) * 0.5,
                               atol=1e-5, rtol=1e-5)
    with pytest.raises(kiln.ArgumentError, match="registered already"):
        kiln.torch.op(block_plan(), "test_block")
    compiled = torch.compile(model, fullgraph=True)
    torch.testing.assert_close(compiled(*args), eager)
    args2 = block_args()
    torch.testing.assert_close(compiled(*args2), model(*args2))


def test_a_registered_op_in_a_cuda_graph_capture():
    import kiln.torch

    op = kiln.torch.op(block_plan(), "test_block_captured")
    fresh = block_args()
    y = replayed_on(op, block_args(), fresh)
    torch.testing.assert_close(y, block_ref(*fresh), atol=1e-5, rtol=1e-5)


def test_tuning_from_python_saves_records_a_new_engine_applies(tmp_path):
    g = kiln.Graph()
    g.output(kiln.softmax(g.input("x", [512, 3000], "bf16")), "y")
    tuned = kiln.tune(kiln.Engine(cache_dir=str(tmp_path)), [g], budget_s=120)
    assert len(tuned) == 1 and tuned[0]["skipped"] == "" and tuned[0]["candidates"] > 1
    assert 0 < tuned[0]["tuned_us"] <= tuned[0]["default_us"]
    assert len(list((tmp_path / "tuning").glob("*.json"))) == 1
    x = torch.randn(512, 3000, device="cuda", dtype=torch.bfloat16)
    y = kiln.Plan(g).run(kiln.Engine(cache_dir=str(tmp_path)), x=x)["y"]  # the tuned kernel
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), atol=1e-2, rtol=1e-2)
