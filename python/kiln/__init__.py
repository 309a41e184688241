"""kiln from Python: graphs, plans and engines over kiln's C++ library.

Every op of kiln's catalog (docs/ops.md) is a function here taking graph values and numbers,
its attributes as keywords: ``kiln.softmax(x * 0.125 + mask)``,
``kiln.layer_norm(h, w, b, eps=1e-5)``, ``kiln.sum(x, axis="all")``. An optional operand may be
given as None. ``g.define_op`` and ``g.define_template`` return a graph's own ops as functions.
Called on tensors instead (torch's, or any with ``__dlpack__``), an op runs at once and returns
its result: ``kiln.attention(q, k, v, causal=True)`` (kiln/eager.py).

``plan.run(engine, x=t, ...)`` runs on any tensors with ``__dlpack__`` (torch, CuPy, JAX) in
place, on torch's current stream when torch is imported (CuPy's when only CuPy is), and returns
the outputs by name: torch tensors when torch is imported, else CuPy arrays when CuPy is, else
``kiln.Tensor`` (DLPack). ``kiln.torch.op(plan, name)`` makes a plan a torch custom op.
"""
import inspect
import sys

from ._kiln import *  # noqa: F401,F403
from ._kiln import Graph, Plan, __version__, _apply, _op_schema, _outputs, _run, desc, op_names
from . import eager as _eager


def _signature(schema):
    """The op's signature for help(): operands (optional ones default to None), then its
    attributes as keywords with their defaults (a required one has none)."""
    P = inspect.Parameter
    params = [P(o, P.POSITIONAL_OR_KEYWORD,
                default=P.empty if i < schema["required_operands"] else None)
              for i, o in enumerate(schema["operands"])]
    if schema["variadic"]:  # the last operand repeats: concat(*xs, axis=0)
        params[-1] = P(schema["operands"][-1], P.VAR_POSITIONAL)
    params += [P(a["name"], P.KEYWORD_ONLY,
                 default=P.empty if a["required"] else a["default"])
               for a in schema["attrs"]]
    return inspect.Signature(params)


def _docstring(schema, signature):
    """The op's docstring, every word of it from its definition in kiln's ops/."""
    name = schema["name"]
    operands = [o if i < schema["required_operands"] else f"{o} (optional)"
                for i, o in enumerate(schema["operands"])]
    if schema["variadic"]:
        operands[-1] = f"{operands[-1]} (one or more)"
    lines = [f"{name}{signature}", "", schema["doc"], "",
             f"Operands: {', '.join(operands)}: graph values or numbers."]
    if schema["attrs"]:
        lines.append("Attributes (keywords):")
    for a in schema["attrs"]:
        default = "required" if a["required"] else (
            "default none" if a["default"] is None else f"default {a['default']!r}")
        limits = f", {a['range']}" if a["range"] else ""
        lines.append(f"    {a['name']}: {a['type']}, {default}{limits}: {a['doc']}")
    lines += [f"Dtypes: {schema['dtypes']}", "", "kiln's op (docs/ops.md); adds a node to the "
              "operands' graph and returns its kiln.Value."]
    return "\n".join(lines)


def _op(name):
    """Catalog op `name` as a function: operands by position or name, attributes as keywords,
    checked against the op's schema by kiln (an unknown one gets a hint)."""
    schema = _op_schema(name)
    operands = schema["operands"]

    def op(*args, **kwargs):
        args = list(args)
        if schema["variadic"] and operands[-1] in kwargs:  # concat(xs=[a, b])
            args += list(kwargs.pop(operands[-1]))
        if schema["variadic"] and len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = list(args[0])  # concat([a, b]) as torch.cat takes them
        for i, o in enumerate(operands):
            if o not in kwargs:
                continue
            if i < len(args):
                raise ArgumentError(f"{name}: operand {o} given by position and by name")
            args += [None] * (i - len(args)) + [kwargs.pop(o)]
        if _eager.takes(args):  # on tensors: run at once (kiln/eager.py)
            return _eager.call(name, args, kwargs)
        return _apply(name, *args, **kwargs)

    signature = _signature(schema)
    op.__name__ = op.__qualname__ = name
    op.__signature__ = signature
    op.__doc__ = _docstring(schema, signature)
    return op


for _name in op_names():
    globals()[_name] = _op(_name)
del _name


def stack(xs, axis=0):
    """The values xs (one shape) stacked along a new dim `axis` (torch.stack): each reshaped with
    a dim of 1 there, then concatenated (kiln.concat), as C++'s kiln::stack."""
    xs = list(xs)
    if not xs:
        raise GraphError("stack: needs at least one graph value")
    rank = len(xs[0].shape) + 1
    if not -rank <= axis < rank:
        raise ShapeError(f"stack: axis {axis} is out of range for the result's rank {rank}")
    at = axis + rank if axis < 0 else axis
    return concat([reshape(x, shape=x.shape[:at] + [1] + x.shape[at:]) for x in xs],  # noqa: F821
                  axis=at)


def batch_norm(x, mean, var, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.batch_norm(x, mean, var, weight, bias, training=False, eps=eps) over
    x [N, C, *]: (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c] for channel c (dim 1),
    the statistics and affine of shape [C]. As C++'s kiln::batch_norm (<kiln/norms.hpp>): one
    elementwise chain, scale and shift computed per element from the [C] operands seen as
    [C, 1, ...], then x * scale + shift; it fuses with its neighbours (a convolution's
    epilogue)."""
    C = x.shape[1] if len(x.shape) >= 2 else None
    if C is None:
        raise ShapeError(f"batch_norm: x {x.shape} must be [N, C, *] with a static C")
    for name, v in (("mean", mean), ("var", var), ("weight", weight), ("bias", bias)):
        if v is not None and v.shape != [C]:
            raise ShapeError(f"batch_norm: {name} {v.shape} must be of shape [{C}] (C, dim 1 of "
                             f"x {x.shape})")
    if len(x.shape) > 2:  # [C, 1, ...]: unit dims added, read in place; one chain per element
        along = [C] + [1] * (len(x.shape) - 2)
        mean, var = reshape(mean, shape=along), reshape(var, shape=along)  # noqa: F821
        weight = None if weight is None else reshape(weight, shape=along)  # noqa: F821
        bias = None if bias is None else reshape(bias, shape=along)  # noqa: F821
    scale = rsqrt(var + eps)  # noqa: F821 (a catalog op, defined above)
    if weight is not None:
        scale = scale * weight
    shift = bias - mean * scale if bias is not None else -(mean * scale)
    y = x * scale + shift  # in f32, rounded once to x's dtype as torch keeps it
    return y if y.dtype == x.dtype else cast(y, dtype=x.dtype)  # noqa: F821


def attention_with_lse(q, k, v, mask=None, kv_lens=None, **attrs):
    """(attention(q, k, v, mask, kv_lens, **attrs), attention_lse(q, k, v, mask, kv_lens,
    **attrs)): the result and each query row's log-sum-exp ([..., Hq, Sq], f32), which one
    kernel writes together. On graph values, the two nodes; on tensors, run at once."""
    args = [q, k, v, mask, kv_lens]
    while args[-1] is None:
        args.pop()
    if _eager.takes(args):
        return _eager.call(("attention", "attention_lse"), args, attrs)
    return (_apply("attention", *args, **attrs), _apply("attention_lse", *args, **attrs))


def _graph_op(name, operands, doc):
    """A graph's own op as a function with its operands' names as parameters (help() shows
    them), each a graph value or a number."""
    signature = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in operands])

    def op(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise ArgumentError(f"{name}({', '.join(operands)}): {e}") from None
        return _apply(name, *bound.args)

    op.__name__ = op.__qualname__ = name
    op.__signature__ = signature
    op.__doc__ = doc
    return op


def _define_op(self, name, operands, expr):
    """Declares custom elementwise op `name` of this graph: `expr` over `operands`
    (docs/ops.md, "Custom ops"), fused like kiln's own. Returns it as a function of its
    operands: ``mish = g.define_op("mish", ["x"], "x * tanhf(log1pf(expf(x)))")``, then
    ``mish(x)``."""
    self._define_op(name, operands, expr)
    return _graph_op(name, list(operands), f"custom op {name!r}: {expr}")


def _define_template(self, name, template):
    """Declares user template `template` (its output named by Template.output) as op `name` of
    this graph, a kernel of its own. Returns it as a function of the template's other
    parameters, in order: ``window = g.define_template("window", t)``, then
    ``window(x, n, alpha, beta)``."""
    self._define_template(name, template)
    operands = [p for p in template.param_names if p != template.output_param]
    return _graph_op(name, operands, f"template op {name!r} ({template.name})")


Graph.define_op = _define_op
Graph.define_template = _define_template

_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "bool": "bool",
                 "i32": "int32", "i64": "int64"}


def _handle(stream):
    """A CUstream as an integer: an int as it is, a torch stream's cuda_stream, a CuPy's ptr."""
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


_torch_state = {}  # device index -> (torch.device, alloc, (torch.Tensor, dtype map))


def _torch_for(torch, index):
    """What a call on device `index` needs of torch, made once."""
    if index not in _torch_state:
        device = torch.device("cuda", index)
        to_torch = {DType.__members__[k]: getattr(torch, v) for k, v in _TORCH_DTYPES.items()}

        def alloc(shape, dtype, strides):  # strides: empty for row-major
            if strides:
                return torch.empty_strided(shape, strides, dtype=to_torch[dtype], device=device)
            return torch.empty(shape, dtype=to_torch[dtype], device=device)

        types = (torch.Tensor, {v: k for k, v in to_torch.items()})
        _torch_state[index] = (device, alloc, types)
    return _torch_state[index]


def _torch_call(torch, plan, engine, inputs, out, stream, replay):
    # torch tensors are read through their attributes, with no stream synchronization: kiln
    # runs on torch's current stream, the one their pending work is on.
    device, alloc, types = _torch_for(torch, engine.device)
    if stream is None:
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # no Stream object made
        engine.set_stream(raw(engine.device) if raw else torch.cuda.current_stream(device).cuda_stream)
        return _run(plan, engine, inputs, out, alloc, replay, types)
    if not isinstance(stream, torch.cuda.Stream):
        stream = torch.cuda.ExternalStream(_handle(stream), device=device)
    with torch.cuda.stream(stream):  # torch's allocator then owns the outputs on that stream
        engine.set_stream(stream.cuda_stream)
        return _run(plan, engine, inputs, out, alloc, replay, types)


def _call(plan, engine, inputs, out, stream, replay):
    torch = sys.modules.get("torch")
    if torch is not None:
        return _torch_call(torch, plan, engine, inputs, out or {}, stream, replay)
    cupy = sys.modules.get("cupy")
    if stream is None and cupy is not None:
        stream = cupy.cuda.get_current_stream()
    if stream is not None:
        engine.set_stream(_handle(stream))
    made = _run(plan, engine, inputs, out or {}, None, replay, None)
    if cupy is not None:
        return {k: v if k in (out or {}) else cupy.from_dlpack(v) for k, v in made.items()}
    return made


def _plan_run(self, engine, inputs=None, *, out=None, stream=None, **named):
    """Runs the plan on `inputs` (a dict, or keywords: graph input name -> tensor), read in
    place. `out` names output tensors to write into; the others are allocated. `stream`: a
    torch or CuPy stream or a CUstream handle (default: torch's current stream). Returns every
    output by name."""
    return _call(self, engine, {**(inputs or {}), **named}, out, stream, False)


def _plan_replay(self, engine, inputs=None, *, out=None, stream=None, **named):
    """As run, through a CUDA graph built at the first call and replayed after."""
    return _call(self, engine, {**(inputs or {}), **named}, out, stream, True)


def _plan_output_descs(self, inputs=None, **named):
    """The outputs a run on `inputs` (name -> kiln.desc, or a tensor's shape and dtype) makes,
    as kiln.desc by name; needs no GPU."""
    descs = {}
    for name, v in {**(inputs or {}), **named}.items():
        descs[name] = v if isinstance(v, TensorDesc) else desc(list(v.shape), _kiln_dtype(v.dtype))
    return _outputs(self, descs)


def _kiln_dtype(dtype):
    """A kiln.DType from a torch or NumPy-like dtype, or a kiln name."""
    if isinstance(dtype, (DType, str)):
        return dtype
    name = str(dtype).replace("torch.", "")
    for kiln_name, torch_name in _TORCH_DTYPES.items():
        if name == torch_name:
            return kiln_name
    raise DtypeError(f"a tensor of dtype {dtype}; kiln takes f32, f16, bf16, bool, i32 and i64")


Plan.run = _plan_run
Plan.replay = _plan_replay
Plan.output_descs = _plan_output_descs
