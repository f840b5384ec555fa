#!/usr/bin/env python3
"""torch.matmul on one GPU timed several ways, beside the SM clock and board power over each
timed part: which share of PyTorch's GEMM speed is its library and which is how it is timed.

Methods (each after --idle-s of idle GPU, so that only its own load history counts):
  pt         the peers' timing (torch_overlap.py): 5 warm-up calls, 20 timed
  ours       overlap-bench's loop of its own (time_iterations): 5 warm-up calls, 25 ms more
             of them, 30 timed
  sustained  --sustain-s back to back untimed, then 30 timed: the GPU at its power limit
  gap450     as sustained, but every call followed by about 450 us of idle GPU (one-thread
             sleep kernel), only the GEMM timed: the duty cycle of a GEMM-then-collective loop
Backends: cublas (PyTorch's default, cublasGemmEx) and cublaslt
(torch.backends.cuda.preferred_blas_library("cublaslt"); pt and sustained only).

The GEMM is torch_overlap.py's GEMM alone: C[m x n] = A[m x k] @ W[n x k]^T, bf16, A fixed,
W rotated over enough sets to exceed L2 3x; CUDA events per call, median/min/max.
Columns: gpu, driver, torch's CUDA, the cuBLASLt version loaded, backend, method, shape,
calls timed, times (us), TFLOP/s, mean SM clock (MHz) and power (W) sampled by NVML every
5 ms over the timed part, and the CUDA kernels the profiler saw in one call.
stderr: the libraries this process mapped (/proc/self/maps) and their versions.

  python3 benchmarks/peers/torch_gemm_methods.py --shapes 8192x8192x8192 --output t.csv
"""
import argparse
import ctypes
import os
import sys
import threading
import time

import torch
from gpu_info import driver_version

HEADER = ("gpu,driver,torch_cuda,cublaslt_version,backend,method,m,n,k,iterations,time_us,"
          "time_min_us,time_max_us,tflops,sm_clock_mhz,power_w,kernels")


def mapped_libraries(pattern):
    """Paths of the shared objects this process mapped whose name holds `pattern`."""
    paths = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if pattern in os.path.basename(path) and path not in paths:
                paths.append(path)
    return paths


def library_versions():
    """(cuBLASLt version, text naming every cuBLAS library mapped and its version)."""
    lt_version = "unknown"
    lines = []
    for path in mapped_libraries("libcublas"):
        try:
            lib = ctypes.CDLL(path)
            if "libcublasLt" in path:
                lib.cublasLtGetVersion.restype = ctypes.c_size_t
                lt_version = str(lib.cublasLtGetVersion())
                lines.append(f"{path} cublasLtGetVersion {lt_version}")
            else:
                parts = []
                for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
                    value = ctypes.c_int(0)
                    lib.cublasGetProperty(prop, ctypes.byref(value))
                    parts.append(str(value.value))
                lines.append(f"{path} cublasGetProperty {'.'.join(parts)}")
        except (OSError, AttributeError) as error:
            lines.append(f"{path} (version not read: {error})")
    return lt_version, lines


class Sampler:
    """NVML samples (time, SM clock MHz, power W) every `period_s` on a thread."""

    def __init__(self, device_index, period_s=0.005):
        self.samples = []
        self.period_s = period_s
        self.stop_flag = threading.Event()
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        except Exception as error:  # no NVML: no clock columns, the times still count
            print(f"torch_gemm_methods: no NVML samples: {error}", file=sys.stderr)
            self.nvml = None
            return
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        nvml = self.nvml
        while not self.stop_flag.is_set():
            try:
                clock = nvml.nvmlDeviceGetClockInfo(self.handle, nvml.NVML_CLOCK_SM)
                power = nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0
                self.samples.append((time.time(), clock, power))
            except Exception:
                pass
            time.sleep(self.period_s)

    def mean_over(self, start, end):
        inside = [(c, p) for t, c, p in self.samples if start <= t <= end]
        if not inside:
            return float("nan"), float("nan")
        return (sum(c for c, _ in inside) / len(inside), sum(p for _, p in inside) / len(inside))

    def close(self):
        if self.nvml is not None:
            self.stop_flag.set()
            self.thread.join()


class Gemm:
    def __init__(self, m, n, k, device, l2_bytes):
        gen = torch.Generator(device=device)
        gen.manual_seed(m * 7 + n * 3 + k)
        make = lambda r, c: (torch.rand(r, c, generator=gen, device=device) * 2 - 1).to(
            torch.bfloat16)
        self.a = make(m, k)
        sets = int(min(8, max(1, -(-3 * l2_bytes // (n * k * 2)))))
        self.w = [make(n, k) for _ in range(sets)]
        self.c = torch.empty(m, n, dtype=torch.bfloat16, device=device)
        self.flops = 2.0 * m * n * k

    def __call__(self, i):
        torch.matmul(self.a, self.w[i % len(self.w)].t(), out=self.c)


def sleep_cycles_for(us):
    """Cycles of torch.cuda._sleep that take about `us` microseconds now (measured)."""
    probe = 1_000_000
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(probe)
    stop.record()
    torch.cuda.synchronize()
    per_us = probe / (start.elapsed_time(stop) * 1e3)
    return int(us * per_us)


def run_for(gemm, seconds, first, gap_cycles=0):
    """Back to back (or with gaps) for about `seconds`, untimed; returns the next index."""
    i = first
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    gemm(i)
    if gap_cycles:
        torch.cuda._sleep(gap_cycles)
    stop.record()
    torch.cuda.synchronize()
    i += 1
    one_s = max(start.elapsed_time(stop) * 1e-3, 1e-6)
    for _ in range(int(seconds / one_s)):
        gemm(i)
        if gap_cycles:
            torch.cuda._sleep(gap_cycles)
        i += 1
    torch.cuda.synchronize()
    return i


def timed(gemm, sampler, warmup, warmup_s, iterations, gap_cycles=0):
    i = 0
    for _ in range(warmup):
        gemm(i)
        i += 1
    torch.cuda.synchronize()
    if warmup_s > 0:
        i = run_for(gemm, warmup_s, i, gap_cycles)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
    t0 = time.time()
    for j in range(iterations):
        starts[j].record()
        gemm(i)
        stops[j].record()
        if gap_cycles:
            torch.cuda._sleep(gap_cycles)
        i += 1
    torch.cuda.synchronize()
    t1 = time.time()
    times = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, stops))
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    clock, power = sampler.mean_over(t0, t1)
    return median, times[0], times[-1], clock, power


def kernel_names(gemm):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        gemm(0)
        torch.cuda.synchronize()
    names = []
    for event in prof.events():
        kind = str(getattr(event, "device_type", ""))
        if "CUDA" in kind and event.name not in names:
            names.append(event.name)
    return " | ".join(names) if names else "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", nargs="+", required=True, help="MxNxK")
    parser.add_argument("--methods", nargs="+", default=["pt", "ours", "sustained", "gap450"])
    parser.add_argument("--backends", nargs="+", default=["cublas", "cublaslt"])
    parser.add_argument("--idle-s", type=float, default=0.5)
    parser.add_argument("--sustain-s", type=float, default=1.0)
    parser.add_argument("--output", default="")
    args = parser.parse_args()

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    props = torch.cuda.get_device_properties(device)
    l2_bytes = getattr(props, "L2_cache_size", 60 << 20)
    torch.matmul(torch.ones(64, 64, device=device, dtype=torch.bfloat16),
                 torch.ones(64, 64, device=device, dtype=torch.bfloat16))
    torch.cuda.synchronize()
    lt_version, lines = library_versions()
    print(f"torch {torch.__version__} cuda {torch.version.cuda} preferred_blas_library "
          f"{torch.backends.cuda.preferred_blas_library()} CUBLAS_WORKSPACE_CONFIG="
          f"{os.environ.get('CUBLAS_WORKSPACE_CONFIG', '')}", file=sys.stderr)
    for line in lines:
        print(f"library {line}", file=sys.stderr)
    tags = [props.name.replace(",", " "), driver_version(), str(torch.version.cuda), lt_version]

    methods = {  # warm-up calls, untimed seconds after them, timed calls, gap (us)
        "pt": (5, 0.0, 20, 0),
        "ours": (5, 0.025, 30, 0),
        "sustained": (5, args.sustain_s, 30, 0),
        "gap450": (5, args.sustain_s, 30, 450),
    }
    sampler = Sampler(device.index)
    rows = []
    print(HEADER, flush=True)
    for text in args.shapes:
        m, n, k = (int(x) for x in text.split("x"))
        gemm = Gemm(m, n, k, device, l2_bytes)
        for backend in args.backends:
            torch.backends.cuda.preferred_blas_library(backend)
            gemm(0)
            torch.cuda.synchronize()
            names = kernel_names(gemm).replace(",", ";")
            for method in args.methods:
                if backend != "cublas" and method in ("ours", "gap450"):
                    continue
                warmup, warmup_s, iterations, gap_us = methods[method]
                gap_cycles = sleep_cycles_for(gap_us) if gap_us else 0
                time.sleep(args.idle_s)
                median, low, high, clock, power = timed(gemm, sampler, warmup, warmup_s,
                                                        iterations, gap_cycles)
                line = ",".join(tags + [backend, method, str(m), str(n), str(k),
                                        str(iterations), f"{median:.2f}", f"{low:.2f}",
                                        f"{high:.2f}", f"{gemm.flops / median / 1e6:.1f}",
                                        f"{clock:.0f}", f"{power:.0f}", names])
                print(line, flush=True)
                rows.append(line)
        torch.backends.cuda.preferred_blas_library("cublas")
        del gemm
        torch.cuda.empty_cache()
    sampler.close()
    # The libraries again: the cublaslt backend may have loaded more.
    for line in library_versions()[1]:
        print(f"library (end) {line}", file=sys.stderr)
    if args.output:
        with open(args.output, "w") as f:
            f.write(HEADER + "\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
