"""kiln's ops called on tensors: ``kiln.attention(q, k, v, causal=True)`` with torch tensors (or
any with ``__dlpack__``, a shape and a dtype) runs the op at once and returns its result.

Each call is a one-op plan over its operands' shapes and dtypes, made once per signature (op,
shapes, dtypes, numbers, attributes) and kept, so a call of a signature seen before plans
nothing. The operands are read in place as the views they are (strides and offsets), on torch's
current stream, as ``Plan.run`` reads them; the engine is one per device (kiln.torch's where
torch is imported). Several ops in a row are faster as one graph, whose elementwise ops fuse.
"""
import sys

from . import _kiln

_plans = {}
_engines = {}


def takes(args):
    """Whether a call with operands `args` is an eager one: a tensor among them, and no graph
    value (a graph value with a tensor is the graph op's error to give)."""
    return any(_is_tensor(a) for a in args) and not any(isinstance(a, _kiln.Value) for a in args)


def _is_tensor(a):
    return hasattr(a, "__dlpack__") and hasattr(a, "shape") and hasattr(a, "dtype")


def _signature(name, args, kwargs):
    parts = [name]
    for a in args:
        parts.append((tuple(int(d) for d in a.shape), str(a.dtype)) if _is_tensor(a) else repr(a))
    parts.append(repr(sorted(kwargs.items())))
    return tuple(parts)


def plan_for(name, args, kwargs):
    """The one-op plan of op `name` on `args` (tensors, numbers, None) with attributes `kwargs`:
    inputs x0, x1, ... for the tensors by position, output y. `name` may be a tuple of ops on
    the same operands and attributes (attention and attention_lse), outputs y0, y1, ... then.
    Made at the first call of a signature, kept after."""
    import kiln

    key = _signature(name, args, kwargs)
    plan = _plans.get(key)
    if plan is None:
        g = kiln.Graph()
        operands = [g.input(f"x{i}", [int(d) for d in a.shape], kiln._kiln_dtype(a.dtype))
                    if _is_tensor(a) else a for i, a in enumerate(args)]
        if isinstance(name, tuple):
            for i, n in enumerate(name):
                g.output(kiln._apply(n, *operands, **kwargs), f"y{i}")
        else:
            g.output(kiln._apply(name, *operands, **kwargs), "y")
        plan = _plans[key] = kiln.Plan(g)
    return plan


def _engine_for(args):
    torch = sys.modules.get("torch")
    for a in args:
        if torch is not None and isinstance(a, torch.Tensor):
            import kiln.torch

            return kiln.torch.engine(a.device.index or 0)
    if 0 not in _engines:
        import kiln

        _engines[0] = kiln.Engine()
    return _engines[0]


def call(name, args, kwargs):
    """Op `name` run at once on `args`: its result (a torch tensor where torch is imported); for
    a tuple of ops, the tuple of their results."""
    plan = plan_for(name, args, kwargs)
    inputs = {f"x{i}": a for i, a in enumerate(args) if _is_tensor(a)}
    out = plan.run(_engine_for(args), inputs)
    if isinstance(name, tuple):
        return tuple(out[f"y{i}"] for i in range(len(name)))
    return out["y"]
