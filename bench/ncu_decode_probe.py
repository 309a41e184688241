import sys, torch, kiln
sys.path.insert(0, "bench")
from attention_decode import decode_graph, HQ, HKV, D
E = kiln.Engine()
for b, s in ((8, 4096), (64, 2048), (1, 32768)):
    q = torch.randn(b, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, HKV, s, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, HKV, s, D, device="cuda", dtype=torch.bfloat16)
    p = kiln.Plan(decode_graph(b, s))
    o = torch.empty(b, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
    for _ in range(2): p.run(E, out={"o": o}, q=q, k=k, v=v)
    torch.cuda.synchronize()
