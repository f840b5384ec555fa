#!/usr/bin/env bash
# A/B of two own-gemm-bench builds on one GPU: BASE (build-carry/bin/own-gemm-bench-base,
# copied there by hand from the build before the change) and the current one, run in turn
# BASE, NEW, BASE, NEW over the same shapes, each interleaving the own GEMM with cuBLAS and
# then timing each alone for SUSTAIN_MS (--sustain-ms): cuBLAS is the common yardstick, so
# clock drift between runs cancels in own/cuBLAS. First the GEMM's GPU tests on the new
# build; last (NCU_SHAPES, default 8192x8192x2048,4096x4096x4096) ncu's executed
# instructions per opcode of the own GEMM kernel in each build (--clock-control none).
# Outputs under $OUT: tests.txt, ab_<i>_<base|new>.csv / .err (run_ab, device_env.sh),
# ab_log.txt, smi.csv, ab_summary.txt,
# ncu_opcodes.txt (also all packed into ab.tar.gz).
# Usage: CARRY_DIR=build-carry bash benchmarks/gpu/run_gemm_ab.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_carried_binaries
shapes="${SHAPES:-8192x8192x2048,4096x4096x4096,16384x7168x2048,8192x8192x8192}"
sustain_ms="${SUSTAIN_MS:-2000}"

timeout -s KILL 300 "$bin_dir/own_gemm_test" >"$OUT/tests.txt" 2>&1
echo "own_gemm_test rc=$?" | tee -a "$OUT/tests.txt"
timeout -s KILL 300 "$bin_dir/tilewise_test" >>"$OUT/tests.txt" 2>&1
echo "tilewise_test rc=$? (multi-GPU cases skip on one GPU)" | tee -a "$OUT/tests.txt"
grep -E "PASSED|FAILED|SKIPPED \[" "$OUT/tests.txt" | head -20

start_smi_sampling "$OUT/smi.csv"
run_ab ab "$bin_dir/own-gemm-bench-base" "$bin_dir/own-gemm-bench" --shapes "$shapes" \
  --versions 2 --iters 30 --sustain-ms "$sustain_ms"
cat "$OUT/ab_log.txt" >>"$OUT/ab_summary.txt"
stop_smi_sampling
python3 - "$OUT" >>"$OUT/ab_summary.txt" <<'PY'
import csv, glob, math, os, sys
out = sys.argv[1]
ratios = {}  # (which, shape, kind) -> [own/cublas]
for path in sorted(glob.glob(os.path.join(out, "ab_*_*.csv"))):
    which = path.rsplit("_", 1)[1][:-4]
    t = {}
    for r in csv.DictReader(open(path)):
        t[(f"{r['m']}x{r['n']}x{r['k']}", r["design"])] = float(r["time_us"])
    for (shape, design), us in t.items():
        for kind, own, ref in (("interleaved", "own_v2", "cublas"),
                               ("sustained", "own_v2_sustained", "cublas_first_sustained")):
            if design == own and (shape, ref) in t:
                ratios.setdefault((which, shape, kind), []).append(us / t[(shape, ref)])
print("shape,kind,base_own_over_cublas,new_own_over_cublas,new_over_base")
for (which, shape, kind) in sorted(ratios):
    if which != "base" or ("new", shape, kind) not in ratios:
        continue
    b = sum(ratios[("base", shape, kind)]) / len(ratios[("base", shape, kind)])
    n = sum(ratios[("new", shape, kind)]) / len(ratios[("new", shape, kind)])
    print(f"{shape},{kind},{b:.4f},{n:.4f},{n / b:.4f}")
PY
cat "$OUT/ab_summary.txt"
for which in base new; do
  bin="$bin_dir/own-gemm-bench"
  [[ $which == base ]] && bin="$bin_dir/own-gemm-bench-base"
  for shape in ${NCU_SHAPES:-8192x8192x2048 4096x4096x4096}; do
    echo "== $which $shape" >>"$OUT/ncu_opcodes.txt"
    timeout -s KILL 120 ncu --clock-control none --kernel-name regex:own_gemm_kernel --launch-skip 2 \
      --launch-count 1 --metrics gpu__time_duration.sum,sm__inst_executed.sum,sass__inst_executed_per_opcode \
      --print-metric-instances details "$bin" --shapes "$shape" --iters 3 --warmup 1 --versions 2 \
      --cublas-algo 0 2>&1 | sed -n '/gpu__time_duration/,$p' | tr ';' '\n' | tr -s ' \n' ' ' \
      | sed 's/\([A-Z0-9_.]*\): /\n  \1: /g' >>"$OUT/ncu_opcodes.txt"
    echo >>"$OUT/ncu_opcodes.txt"
  done
done
grep -E "^==|inst_executed.sum|duration|  (HGMMA|R2UR|IMAD|UIADD3|SEL|LOP3):" "$OUT/ncu_opcodes.txt"
tar -C "$OUT" -czf "$OUT/ab.tar.gz" $(cd "$OUT" && ls ab_* smi.csv tests.txt ncu_opcodes.txt)
