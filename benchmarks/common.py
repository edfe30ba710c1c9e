"""Shared pieces of the benchmark scripts: machine description, matmul peak, FLOP counting, data loading, runs in
parallel processes."""
from __future__ import annotations

import multiprocessing
import os
import platform
import time
from collections.abc import Callable, Iterable

import torch
from torch.utils.flop_counter import FlopCounterMode


def machine() -> str:
    """One line: CPU model, cores, torch threads, torch version (and the GPU when there is one)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as file:
            for line in file:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    gpu = f", GPU {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""
    return (f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__} with {torch.get_num_threads()} threads"
            f"{gpu}")


def matmul_peak(device: str = "cpu", size: int = 2048, seconds: float = 2.0) -> float:
    """This machine's measured fp32 matrix-multiply rate in FLOP/s (best of repeated size x size matmuls)."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    best = 0.0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        sync(device)
        start = time.perf_counter()
        a @ b
        sync(device)
        best = max(best, 2 * size ** 3 / (time.perf_counter() - start))
    return best


def sync(device) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def count_flops(function) -> int:
    """Total FLOPs (matmuls, convolutions, attention kernels) that torch's FlopCounterMode sees while running
    `function()`, forward and backward."""
    with FlopCounterMode(display=False) as counter:
        function()
    return counter.get_total_flops()


def load_data():
    from course_utils.data import load_course_data
    return load_course_data(log=None)


def id_pairs(pairs, src_vocab, tgt_vocab) -> list[tuple[list[int], list[int]]]:
    return [(src_vocab.encode(pair.source), tgt_vocab.encode(pair.target)) for pair in pairs]


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain-text table, columns padded to their widest cell."""
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    line = lambda cells: "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths))
    return "\n".join([line(header), line(["-" * width for width in widths])] + [line(row) for row in rows])


def run_jobs(function: Callable, jobs: Iterable, workers: int, on_result: Callable) -> None:
    """Call `function(job)` for every job and hand each result to `on_result` as soon as it arrives: in `workers`
    spawned processes (results in the order they finish; `function` must be importable) when workers > 1, else one
    after the other in this process."""
    if workers > 1:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for result in pool.imap_unordered(function, jobs):
                on_result(result)
    else:
        for job in jobs:
            on_result(function(job))
