"""Timing a side stream with CUDA events."""
import torch

torch.manual_seed(0)
x = torch.randn(64, 64, device="cuda")
w = torch.randn(64, 64, device="cuda")  # bug: w = torch.randn(64, 64)
side = torch.cuda.Stream()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    y = x @ w
    y.record_stream(side)
torch.cuda.current_stream().wait_stream(side)
end.record()
torch.cuda.synchronize()
_ms = start.elapsed_time(end)  # wall time: differs between runs, so not compared
result = y.sum(0)
