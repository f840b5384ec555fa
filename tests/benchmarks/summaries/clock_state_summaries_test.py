#!/usr/bin/env python3
"""The clock-state comparisons of benchmarks/gpu/summarize_ag4.py (overlap-bench's
<design>_steady / _burst rows against torch_overlap.py --warmup-ms / --idle-s) and
benchmarks/gpu/summarize_ag_gemm_gap.py (the GEMM alone by method and library), on small
hand-made CSVs whose ratios can be checked by hand."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
GPU = os.path.join(ROOT, "benchmarks", "gpu")
HEADER = ("gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
          "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong").split(",")


def row(op, design, shape, us, chunks=1, world=4):
    m, n, k = shape
    return dict(gpu="GPU", driver="1", cuda="13.0", nccl="2", world=world, op=op, design=design,
                dtype="bf16", m=m, n=n, k=k, bytes=0, chunks=chunks, time_us=us, time_min_us=us,
                time_max_us=us, tflops=0, algbw_GBps=0, busbw_GBps=0, wrong=0)


def write(path, rows, header=HEADER):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows(rows)


def run(args):
    done = subprocess.run([sys.executable] + args, capture_output=True, text=True, check=True)
    return done.stdout


class SummarizeAg4ClockStates(unittest.TestCase):
    def test_steady_and_burst_bars(self):
        big, small = (8192, 8192, 8192), (4096, 4096, 4096)
        ag = "allgather+gemm"
        bench = []
        for shape, gemm in ((big, 1600.0), (small, 200.0)):
            bench += [row(ag, "sequential_tw_loop", shape, gemm * 1.3),
                      row(ag, "op_alone_tw_loop", shape, gemm),
                      row(ag, "collective_alone_tw_loop", shape, gemm * 0.3),
                      row(ag, "decomposed_tw_loop", shape, gemm * 1.4, chunks=2),
                      row(ag, "tilewise_ag", shape, gemm * 1.01),
                      row(ag, "tilewise_tuned", shape, gemm * 1.01),
                      row(ag, "tilewise_ag_own_loop", shape, gemm * 1.02),
                      row(ag, "op_alone_steady", shape, gemm),
                      row(ag, "op_alone_burst", shape, gemm * 0.84)]
        # 8192^3: steady 1640 against the peer's 1600 (+2.5 %), burst 1350 against 1400.
        bench += [row(ag, "tilewise_ag_steady", big, 1640.0),
                  row(ag, "tilewise_ag_burst", big, 1350.0),
                  row(ag, "tilewise_ag_steady", small, 205.0),
                  row(ag, "tilewise_ag_burst", small, 180.0)]
        steady = [row("gemm", "torch", big, 1600.0), row(ag, "torch_symm_mem", big, 1600.0),
                  row("gemm", "torch", small, 200.0), row(ag, "torch_symm_mem", small, 400.0)]
        burst = [row("gemm", "torch", big, 1344.0), row(ag, "torch_symm_mem", big, 1400.0),
                 row("gemm", "torch", small, 168.0), row(ag, "torch_symm_mem", small, 500.0)]
        with tempfile.TemporaryDirectory() as d:
            paths = {name: os.path.join(d, name + ".csv")
                     for name in ("bench", "steady", "burst")}
            write(paths["bench"], bench)
            write(paths["steady"], steady)
            write(paths["burst"], burst)
            out = run([os.path.join(GPU, "summarize_ag4.py"), paths["bench"], "--torch-steady",
                       paths["steady"], "--torch-burst", paths["burst"], "--output",
                       os.path.join(d, "summary.csv")])
            with open(os.path.join(d, "summary.csv")) as f:
                summary = {r["m"]: r for r in csv.DictReader(f)}
        self.assertIn("steady (both 1 s back to back untimed, then 30 timed): 1 of 2; slower: "
                      "8192x8192x8192 +2.5 %", out)
        self.assertIn("burst (both after 0.5 s of idle GPU, 5 + 20 calls): 2 of 2; slower: none",
                      out)
        self.assertIn("GEMM alone, steady: our cuBLAS / torch.matmul 1.000-1.000 over 2 shapes", out)
        self.assertIn("GEMM alone, burst: our cuBLAS / torch.matmul 1.000-1.000 over 2 shapes", out)
        self.assertAlmostEqual(float(summary["8192"]["tw_burst_us"]), 1350.0)
        self.assertAlmostEqual(float(summary["4096"]["torch_symm_mem_steady_us"]), 400.0)

    def test_without_clock_state_files_nothing_is_compared(self):
        shape = (8192, 8192, 8192)
        ag = "allgather+gemm"
        bench = [row(ag, "sequential_tw_loop", shape, 2000.0),
                 row(ag, "op_alone_tw_loop", shape, 1600.0),
                 row(ag, "collective_alone_tw_loop", shape, 400.0),
                 row(ag, "tilewise_ag", shape, 1620.0)]
        with tempfile.TemporaryDirectory() as d:
            write(os.path.join(d, "bench.csv"), bench)
            out = run([os.path.join(GPU, "summarize_ag4.py"), os.path.join(d, "bench.csv"),
                       "--output", os.path.join(d, "summary.csv")])
        self.assertIn("steady (both 1 s back to back untimed, then 30 timed): 0 of 0", out)


class SummarizeAgGemmGap(unittest.TestCase):
    def test_library_and_method_ratios(self):
        torch_header = ("gpu,driver,torch_cuda,cublaslt_version,backend,method,m,n,k,iterations,"
                        "time_us,time_min_us,time_max_us,tflops,sm_clock_mhz,power_w,kernels")
        ob_header = ["lib", "method"] + HEADER
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "torch_methods.csv"), "w") as f:
                f.write(torch_header + "\n")
                f.write("G,1,13.0,130100,cublas,pt,8192,8192,8192,20,1380,1,1,796,1980,400,k_a\n")
                f.write("G,1,13.0,130100,cublas,sustained,8192,8192,8192,30,1640,1,1,670,1400,"
                        "700,k_a\n")
            ob = []
            for lib, method, us in (("system", "pt", 1380.0), ("torch", "pt", 1380.0),
                                    ("system", "sustained", 1640.0),
                                    ("torch", "sustained", 1656.4)):
                r = row("gemm", "cublas", (8192, 8192, 8192), us, world=1)
                ob.append(dict(r, lib=lib, method=method))
            write(os.path.join(d, "overlap_bench.csv"), ob, ob_header)
            with open(os.path.join(d, "phases.csv"), "w") as f:
                f.write("lib,method,designs,shapes,start_s,end_s\n")
            out = run([os.path.join(GPU, "summarize_ag_gemm_gap.py"), d])
        self.assertIn("- library: ours system / ours torch-lib, pt: 8192x8192x8192 1.000", out)
        self.assertIn("- library: ours system / ours torch-lib, sustained: 8192x8192x8192 0.990",
                      out)
        self.assertIn("- binary: ours cuBLAS / torch cuBLAS, sustained: 8192x8192x8192 1.000", out)
        self.assertIn("- method: torch sustained / torch pt: 8192x8192x8192 1.188", out)
        self.assertIn("- torch_cublas 8192x8192x8192: k_a", out)


if __name__ == "__main__":
    unittest.main()
