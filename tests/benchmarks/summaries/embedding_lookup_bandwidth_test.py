#!/usr/bin/env python3
"""benchmarks/gpu/embedding_lookup_bandwidth.py on hand-made embedding_bag rows whose bytes
follow by hand from the DCNv2 tables' placement."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "benchmarks", "gpu", "embedding_lookup_bandwidth.py")
HEADER = ("gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
          "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong").split(",")


def row(world, m, k, us, design="fused_local", op="embedding_bag", gpu="NVIDIA H100 80GB HBM3"):
    return dict(gpu=gpu, driver="1", cuda="13.0", nccl="2", world=world, op=op,
                design=design, dtype="bf16", m=m, n=128, k=k, bytes=0, chunks=1, time_us=us,
                time_min_us=us, time_max_us=us, tflops=0, algbw_GBps=0, busbw_GBps=0, wrong=0)


def run(args):
    return subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True)


class WholeLookup(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.csv = os.path.join(self.dir.name, "ours.csv")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, rows):
        with open(self.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=HEADER)
            w.writeheader()
            w.writerows(rows)

    def test_four_ranks_busiest_rank_holds_the_pooling_100_table(self):
        # 4 ranks: the pooling-100 table (40M rows) goes first to rank 0, and the other 114
        # lookups spread over ranks 1-3 (38 each), so rank 0 holds that one table alone.
        # Global batch 1024 x 4 = 4096 bags: rows 4096 x 100 x 256 B, indices x 4 B, output
        # 4096 x 256 B = 104,857,600 + 1,638,400 + 1,048,576 = 107,544,576 bytes; in 100 us,
        # 1.0754 TB/s, 0.321 of 3.35 TB/s.
        self.write([row(4, 1024, 214, 100.0), row(4, 1024, 214, 100.0, op="embedding+alltoall")])
        done = run([self.csv])
        self.assertEqual(done.returncode, 0, done.stderr)
        rows = list(csv.DictReader(done.stdout.splitlines()))
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertEqual((r["rank"], r["rank_tables"], r["rank_lookups_per_sample"]), ("0", "1", "100"))
        self.assertEqual(int(r["bytes"]), 107544576)
        self.assertEqual(int(r["hbm_bytes"]), 107544576)
        self.assertEqual(r["achieved_TBps"], "1.075")
        self.assertEqual(r["of_datasheet"], "0.321")
        self.assertEqual(r["mlperf_batch"], "")

    def test_l2_sized_tables_are_left_out_of_hbm_bytes(self):
        # 2 ranks at MLPerf's global batch (32768 x 2 = 65536): rank 0 (107 lookups on 7
        # tables) holds tables whose rows fit in L2; only the big tables' rows count as HBM.
        self.write([row(2, 32768, 214, 1000.0)])
        done = run([self.csv])
        self.assertEqual(done.returncode, 0, done.stderr)
        r = next(csv.DictReader(done.stdout.splitlines()))
        self.assertEqual(r["mlperf_batch"], "yes")
        self.assertLess(int(r["hbm_bytes"]), int(r["bytes"]))
        # H200 rows take its datasheet's 4.8 TB/s.
        self.write([row(2, 32768, 214, 1000.0, gpu="NVIDIA H200")])
        r2 = next(csv.DictReader(run([self.csv]).stdout.splitlines()))
        self.assertAlmostEqual(float(r2["of_datasheet"]) * 4.8, float(r["of_datasheet"]) * 3.35,
                               places=2)

    def test_bad_input_exits_two(self):
        done = run([os.path.join(self.dir.name, "missing.csv")])
        self.assertEqual(done.returncode, 2)
        self.assertIn("missing.csv", done.stderr)
        self.write([row(4, 1024, 215, 100.0)])  # not a multiple of the 214 lookups
        done = run([self.csv])
        self.assertEqual(done.returncode, 2)
        self.assertIn("k=215", done.stderr)

    def test_output_written_whole(self):
        self.write([row(4, 1024, 214, 100.0)])
        out = os.path.join(self.dir.name, "bw.csv")
        self.assertEqual(run([self.csv, "--output", out]).returncode, 0)
        with open(out) as f:
            self.assertEqual(len(list(csv.DictReader(f))), 1)
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["bw.csv", "ours.csv"])


if __name__ == "__main__":
    unittest.main()
