#!/usr/bin/env bash
# One device call for GPU kernels I on 2 x H200: build kernels/ (kernels-only),
# run the GPU tests, the overlap-bench suite, the PyTorch peers and the summary.
# Results land in $OUT (at most 8 files): log.txt, tests.txt, kernels_i.csv, torch.csv,
# summary.csv, nonblocking.csv (a few rows repeated with non-blocking communicators). Every step has its own time limit so the call ends inside its lease.
#   benchmarks/gpu/run_kernels_i.sh [suite.yaml]
# Falls back to binaries carried in .carry/ (built on the workstation) when this machine
# lacks the build dependencies (yaml-cpp, fmt, GoogleTest headers).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
suite="${1:-benchmarks/suites/kernels_i.yaml}"
log_machine "cmake --version | head -1" \
  "python3 -c 'import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"nccl\", torch.cuda.nccl.version(), \"gpus\", torch.cuda.device_count())'"

# NCCL: the system's (header and library from the same install), else the toolkit's, else
# PyTorch's wheel.
nccl_header=""; nccl_lib=""
for pair in "/usr/include:/usr/lib/x86_64-linux-gnu" "/usr/local/cuda/include:/usr/local/cuda/lib64" \
            "/usr/local/cuda/include:/usr/local/cuda/lib"; do
  inc="${pair%%:*}"; lib="${pair##*:}"
  if [[ -f $inc/nccl.h ]] && ls "$lib"/libnccl.so* >/dev/null 2>&1; then
    nccl_header="$inc/nccl.h"; nccl_lib="$(ls "$lib"/libnccl.so* | sort | head -1)"; break
  fi
done
if [[ -z $nccl_lib ]]; then
  nccl_header="$(find / -name nccl.h -path '*nccl*' 2>/dev/null | head -1)"
  nccl_lib="$(find / -name 'libnccl.so*' 2>/dev/null | sort | head -1)"
fi
echo "nccl header: $nccl_header ($(grep -E 'define NCCL_(MAJOR|MINOR|PATCH) ' "$nccl_header" 2>/dev/null | awk '{print $3}' | paste -sd.))  lib: $nccl_lib" >>"$log"
nccl_libdir="$(dirname "${nccl_lib:-/nonexistent/x}")"
export LD_LIBRARY_PATH="$nccl_libdir:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

bin=""
have_deps=1
for header in yaml-cpp/yaml.h fmt/core.h gtest/gtest.h; do
  [[ -f /usr/include/$header || -f /usr/local/include/$header ]] || { have_deps=0; echo "missing $header" >>"$log"; }
done
if [[ $have_deps == 1 && -n $nccl_header && -n $nccl_lib ]]; then
  step "build (kernels only)"
  if timeout 200 cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DOVERLAPSIM_KERNELS_ONLY=ON -DOVERLAPSIM_NCCL_INCLUDE="$(dirname "$nccl_header")" \
       -DOVERLAPSIM_NCCL_LIB="$nccl_lib" >>"$log" 2>&1 &&
     timeout 200 cmake --build build-gpu -j "$(nproc)" >>"$log" 2>&1; then
    bin=build-gpu
  else
    echo "device build failed; falling back to carried binaries" | tee -a "$log"
  fi
fi
if [[ -z $bin ]]; then
  bin=.carry
  export LD_LIBRARY_PATH="$root/.carry/lib:$LD_LIBRARY_PATH"
  step "using carried binaries"
fi
find_bin() { find "$bin" -type f -name "$1" -perm -u+x 2>/dev/null | head -1; }

step "GPU tests"
for t in harness_test collectives_test gemm_cublaslt_test embedding_bag_test designs_test \
         harness_abort_test own_gemm_test random_values_test pair_op_test bench_suite_test; do
  exe="$(find_bin "$t")"
  [[ -n $exe ]] || { echo "MISSING $t" | tee -a "$OUT/tests.txt"; continue; }
  (cd "$root" && timeout 90 "$exe" --gtest_brief=1) >>"$OUT/tests.txt" 2>&1
  echo "$t rc=$?" | tee -a "$OUT/tests.txt" "$log"
done

step "overlap-bench $suite"
bench="$(find_bin overlap-bench)"
timeout 300 "$bench" --suite "$suite" --timeout 60s --output "$OUT/kernels_i.csv" \
  >"$OUT/bench_stdout.txt" 2>>"$log"
echo "overlap-bench rc=$?" | tee -a "$log"
[[ -f $OUT/kernels_i.csv ]] || cp "$OUT/bench_stdout.txt" "$OUT/kernels_i_partial.csv"
rm -f "$OUT/bench_stdout.txt"

step "non-blocking communicators (same binary, --nonblocking), for comparison"
timeout 60 "$bench" --op allreduce --bytes 1MiB,64MiB,1GiB --iterations 50 --nonblocking \
  --output "$OUT/nonblocking.csv" >/dev/null 2>>"$log"
timeout 60 "$bench" --op gemm+allreduce --shapes 4096x4096x4096,16384x8192x4096 --chunks 2,4,8 \
  --designs sequential,decomposed --iterations 50 --nonblocking >>"$OUT/nonblocking.csv" 2>>"$log"
echo "nonblocking rc=$?" | tee -a "$log"

step "torch peers"
PYTHONUNBUFFERED=1 timeout 240 torchrun --standalone --nproc-per-node 2 \
  benchmarks/peers/torch_overlap.py --output "$OUT/torch.csv" >>"$log" 2>&1
echo "torch rc=$?" | tee -a "$log"

step "summary"
csvs=()
for f in "$OUT/kernels_i.csv" "$OUT/kernels_i_partial.csv" "$OUT/torch.csv"; do
  [[ -f $f ]] && csvs+=("$f")
done
python3 benchmarks/gpu/summarize_overlap.py "${csvs[@]}" --output "$OUT/summary.csv" 2>&1 | tee -a "$log"
step "done"
