"""What the GPU tests with torch share: an engine for a module's tests, and a CUDA graph capture
of a call replayed on fresh values."""
import pytest

import kiln


@pytest.fixture(scope="module")
def engine():
    return kiln.Engine()


def replayed_on(op, args, fresh):
    """op(*args) captured in a CUDA graph (after a warm-up on a side stream, which compiles and
    sizes the plan's memory), replayed with the values of `fresh` copied into `args`: its result."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        op(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = op(*args)
    for a, f in zip(args, fresh):
        a.copy_(f)
    graph.replay()
    torch.cuda.synchronize()
    return y
