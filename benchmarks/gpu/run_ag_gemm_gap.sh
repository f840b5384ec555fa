#!/usr/bin/env bash
# One device call, one GPU: is PyTorch's faster GEMM alone in the AllGather+GEMM runs
# (benchmarks/results/h200x4/tilewise_ag4: torch.matmul 1470 us at 8192^3 where our
# interleaved loop's cuBLAS took 1607 us) its library and algorithm, or how it is timed?
# On the same GPU, each timing after 0.5 s of idle GPU:
#   - torch.matmul, backends cublas and cublaslt (benchmarks/peers/torch_gemm_methods.py):
#     PyTorch's peer timing (5 + 20 calls), ours (5 calls + 25 ms, 30 timed), sustained
#     (1 s back to back, then 30) and with 450 us idle after each call, with NVML's SM clock
#     and power over each timed part and the profiler's kernel names;
#   - overlap-bench --op gemm, cuBLASLt (its heuristic's first) and the own GEMM in a loop of
#     their own, one process per shape, design and method: pt (--warmup 5 --iterations 20),
#     ours (--warmup 5 --warmup-ms 25 --iterations 30), sustained (--warmup-ms 1000);
#   - the same cuBLASLt calls with PyTorch's own libcublas/libcublasLt on the library path
#     (the library swapped, nothing else);
#   - the kernels each process launches: ncu (--clock-control none, one metric) of
#     overlap-bench with either library, CUBLASLT_LOG_LEVEL=2 of both processes;
#   - nvidia-smi samples (queries only) over the whole call.
# Back in $OUT: ag_gemm_gap.tar.gz (folder gap/), log.txt, summary.txt.
#   CARRY_DIR=build-ag-gap-carry bash benchmarks/gpu/run_ag_gemm_gap.sh
# SHAPES (MxNxK, space-separated; default the four where PyTorch's fused_all_gather_matmul won
# by time), SUSTAIN_MS (1000). Binaries: $CARRY_DIR/bin/overlap-bench and its yaml-cpp and fmt.
set -uo pipefail
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
carry="$root/${CARRY_DIR:-build-ag-gap-carry}"
use_device_libs "$carry/lib"
bench="$carry/bin/overlap-bench"
SHAPES="${SHAPES:-8192x8192x8192 16384x8192x4096 8192x4608x16384 2048x9216x12288}"
SUSTAIN_MS="${SUSTAIN_MS:-1000}"
d="$OUT/gap"
mkdir -p "$d"
smi_limits="nvidia-smi --query-gpu=power.limit,power.max_limit,clocks.max.sm,clocks.max.mem --format=csv"
log_machine "date +%z" "$smi_limits" \
  "[[ -f $carry/COMMIT ]] && echo binaries of commit \$(cat $carry/COMMIT)"
phases="$d/phases.csv"
echo "lib,method,designs,shapes,start_s,end_s" >"$phases"

step "libraries"
# PyTorch's cuBLAS and cuBLASLt: where its process maps them from, and their versions; a
# folder of links to them alone, for overlap-bench's library path (nothing else swapped).
python3 - >"$d/libraries.txt" 2>&1 <<'PY'
import ctypes, importlib.metadata as md, os, torch
x = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)
(x @ x).sum().item()
print("torch", torch.__version__, "cuda", torch.version.cuda, "preferred_blas_library",
      torch.backends.cuda.preferred_blas_library())
for name in ("nvidia-cublas", "nvidia-cublas-cu13", "nvidia-cuda-runtime", "nvidia-nccl-cu13"):
    try:
        print("package", name, md.version(name))
    except md.PackageNotFoundError:
        pass
seen = []
for line in open("/proc/self/maps"):
    path = line.split()[-1]
    if "libcublas" in os.path.basename(path) and path not in seen:
        seen.append(path)
for path in seen:
    lib = ctypes.CDLL(path)
    if "libcublasLt" in path:
        lib.cublasLtGetVersion.restype = ctypes.c_size_t
        print("torch_maps", path, "cublasLtGetVersion", lib.cublasLtGetVersion())
    else:
        print("torch_maps", path)
sys_lt = "/usr/local/cuda/lib64/libcublasLt.so.13"
if os.path.exists(sys_lt):
    lib = ctypes.CDLL(sys_lt)
    lib.cublasLtGetVersion.restype = ctypes.c_size_t
    print("system", os.path.realpath(sys_lt), "cublasLtGetVersion", lib.cublasLtGetVersion())
PY
cat "$d/libraries.txt" >>"$log"
torch_lib_dir=$(awk '$1 == "torch_maps" && $2 ~ /libcublasLt/ {print $2}' "$d/libraries.txt" |
  head -1)
torch_libs="/tmp/torch-cublas"
mkdir -p "$torch_libs"
if [[ -n $torch_lib_dir ]]; then
  for f in "$(dirname "$torch_lib_dir")"/libcublas*.so*; do ln -sf "$f" "$torch_libs/"; done
fi
{
  echo "overlap-bench, system library path:"
  ldd "$bench" | grep -E "cublas|nccl|not found"
  echo "overlap-bench, PyTorch's cuBLAS first:"
  LD_LIBRARY_PATH="$torch_libs:$LD_LIBRARY_PATH" ldd "$bench" | grep -E "cublas|nccl|not found"
} | tee -a "$d/libraries.txt" >>"$log"

start_smi_sampling "$d/smi.csv"

step "torch.matmul, every method, both backends"
start=$(date +%s.%N)
PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/peers/torch_gemm_methods.py --shapes $SHAPES \
  --sustain-s "$(awk -v ms="$SUSTAIN_MS" 'BEGIN {print ms / 1000}')" \
  --output "$d/torch_methods.csv" >"$d/torch_methods.out" 2>"$d/torch_methods.err"
echo "torch_gemm_methods rc=$?" | tee -a "$log"
echo "torch_script,all,-,-,$start,$(date +%s.%N)" >>"$phases"

# ob LIB METHOD DESIGNS SHAPES ARGS...: one overlap-bench process after 0.5 s idle, its rows
# appended to overlap_bench.csv with the library and method in front.
ob_csv="$d/overlap_bench.csv"
ob() {
  local lib="$1" method="$2" designs="$3" shapes="$4" path="$LD_LIBRARY_PATH" start
  shift 4
  [[ $lib == torch ]] && path="$torch_libs:$LD_LIBRARY_PATH"
  sleep 0.5
  start=$(date +%s.%N)
  LD_LIBRARY_PATH="$path" timeout 120 "$bench" --op gemm --designs "$designs" --shapes "$shapes" \
    --world 1 --timeout 60 --output /tmp/ob.csv "$@" >/dev/null 2>>"$d/overlap_bench.err"
  local rc=$?
  echo "$lib,$method,${designs//,/;},${shapes//,/;},$start,$(date +%s.%N)" >>"$phases"
  [[ $rc -eq 0 ]] || echo "overlap-bench $lib $method $designs $shapes rc=$rc" | tee -a "$log"
  if [[ -s /tmp/ob.csv ]]; then
    if [[ -s $ob_csv ]]; then
      tail -n +2 /tmp/ob.csv | sed "s/^/$lib,$method,/" >>"$ob_csv"
    else
      head -1 /tmp/ob.csv | sed "s/^/lib,method,/" >"$ob_csv"
      tail -n +2 /tmp/ob.csv | sed "s/^/$lib,$method,/" >>"$ob_csv"
    fi
  fi
  rm -f /tmp/ob.csv
}

all_shapes=$(tr ' ' ',' <<<"$SHAPES")
# Per shape and method, the two libraries' cuBLASLt and the own GEMM in turn: drift over the
# call falls on all three alike.
step "overlap-bench GEMM alone: pt, ours and sustained; system and PyTorch's cuBLAS; own GEMM"
for shape in $SHAPES; do
  for method in pt ours sustained; do
    case $method in
      pt) args=(--warmup 5 --warmup-ms 0 --iterations 20) ;;
      ours) args=(--warmup 5 --warmup-ms 25 --iterations 30) ;;
      sustained) args=(--warmup 5 --warmup-ms "$SUSTAIN_MS" --iterations 30) ;;
    esac
    ob system "$method" cublas "$shape" "${args[@]}"
    [[ -n $torch_lib_dir ]] && ob torch "$method" cublas "$shape" "${args[@]}"
    ob system "$method" own "$shape" "${args[@]}"
  done
done
stop_smi_sampling

step "kernel names: ncu of overlap-bench (either library), cuBLASLt logs of both processes"
for lib in system torch; do
  [[ $lib == torch && -z $torch_lib_dir ]] && continue
  path="$LD_LIBRARY_PATH"
  [[ $lib == torch ]] && path="$torch_libs:$LD_LIBRARY_PATH"
  LD_LIBRARY_PATH="$path" CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$d/cublaslt_log_ours_$lib.txt" \
    timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    "$bench" --op gemm --designs cublas,own --shapes "$all_shapes" --world 1 --warmup 1 \
    --iterations 1 >"$d/ncu_ours_$lib.csv" 2>"$d/ncu_ours_$lib.err"
  echo "ncu $lib rc=$?" | tee -a "$log"
done
CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$d/cublaslt_log_torch.txt" timeout 120 \
  python3 benchmarks/peers/torch_gemm_methods.py --shapes $SHAPES --methods pt --idle-s 0 \
  --output "$d/torch_logged.csv" >/dev/null 2>"$d/torch_logged.err"
echo "torch logged rc=$?" | tee -a "$log"
for f in "$d"/cublaslt_log_*.txt; do
  [[ -f $f ]] || continue
  # Per distinct algorithm line, how often (the logs repeat every call).
  grep -oE "algo=\[[^]]*\]|tile=[A-Za-z0-9_x]+|algoId=[0-9]+" "$f" | sort | uniq -c | sort -rn |
    head -20 >"${f%.txt}_algos.txt"
  gzip -f "$f"
done

step "summary"
python3 benchmarks/gpu/summarize_ag_gemm_gap.py "$d" >"$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt" >>"$log"
cp "$log" "$d/"
tar czf "$OUT/ag_gemm_gap.tar.gz" -C "$OUT" gap && rm -rf "$d"
step "done"
tail -n 60 "$OUT/summary.txt"
