"""Whether bf16 matrix products are fast on a device, timed once per process."""

from __future__ import annotations

import time
from functools import cache

import torch


@cache
def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 matrix products beat float32 here (GPUs; CPUs where a timed product says so).

    Timed once per process: AMX and AMD Zen 4 CPUs run bf16 products faster than float32, some
    AVX512-BF16 Xeons slower (measured: Results page, extract).
    """
    if device.type != "cpu":
        return device.type == "cuda"
    gen = torch.Generator().manual_seed(0)  # leaves the global RNG as it was
    a, b = torch.rand(128, 384, generator=gen), torch.rand(384, 1024, generator=gen)

    def best(x: torch.Tensor, y: torch.Tensor, give_up: float) -> float:
        times: list[float] = []
        for _ in range(5):
            t0 = time.perf_counter()
            x @ y
            times.append(time.perf_counter() - t0)
            if times[-1] > give_up:  # clearly slow (bf16 emulated): no need to time it further
                break
        return min(times)

    f32 = best(a, b, float("inf"))
    return best(a.bfloat16(), b.bfloat16(), 5 * f32) < 0.8 * f32
