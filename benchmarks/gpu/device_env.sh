# Sourced by the benchmarks/gpu device scripts: the
# environment every device run needs (NVLink multicast off: KINDS.md), the system NCCL the
# results are reported against, and a kernels-only build of chosen targets into build-gpu/
# for when carried binaries do not run there. Sourcing it also moves to the repository root
# (`root`) and sets OUT (the device tool's output folder there, else /tmp/overlapsim-out),
# created: every script starts with `source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"`.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root" || exit 1
OUT="${OUT:-/tmp/overlapsim-out}"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# The system NCCL first for our binaries. PyTorch does not follow the library path: it loads its
# wheel's own NCCL (2.28.9 beside the system's 2.28.3 on the 4 x H200 of
# benchmarks/results/h200x4/redistribution_4gpu/), so the PyTorch peers name the version they ran.
nccl_lib="$(find /usr/lib/x86_64-linux-gnu /usr/local/cuda*/lib* /usr/local/lib /opt -name 'libnccl.so.2*' 2>/dev/null | head -1)"
nccl_header="$(find /usr/local/cuda*/include /usr/include /opt -name nccl.h 2>/dev/null | head -1)"

# The run's log: step NAME marks each step in $OUT/log.txt (and on stdout); log_machine
# [CMD...] records the GPUs, their topology and the CUDA toolkit there first (then what
# the CMDs print: other versions a script wants on record).
log="$OUT/log.txt"
step() { echo "=== $(date +%T) $*" | tee -a "$log"; }
log_machine() {
  step "machine"
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    nvidia-smi topo -m
    nvcc --version | tail -2
    local cmd
    for cmd in "$@"; do eval "$cmd"; done
  } >>"$log" 2>&1
}

# use_device_libs [DIR...]: NCCL's folder, CUDA's, then DIRs (carried yaml-cpp and fmt).
use_device_libs() {
  local extra=""
  for dir in "$@"; do extra+="$dir:"; done
  export LD_LIBRARY_PATH="$(dirname "${nccl_lib:-/x/x}"):/usr/local/cuda/lib64:${extra}${LD_LIBRARY_PATH:-}"
}

# sanitize_in_parallel TEST_BIN FILTER TIMEOUT_S SYNCCHECK_GPUS: compute-sanitizer racecheck
# on GPUs 0,1 and synccheck on SYNCCHECK_GPUS at once, on the tests FILTER selects, each
# within TIMEOUT_S; their outputs in $run_dir/sanitizer_<tool>.txt, a summary of each in the
# log and in $run_dir/tests.txt.
sanitize_in_parallel() {
  local bin="$1" filter="$2" t="$3" sync_gpus="$4" sanitizer pair tool rc i
  local pids=()
  step "compute-sanitizer racecheck (GPUs 0,1) and synccheck (GPUs $sync_gpus), ${filter#*.}"
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
  for pair in racecheck:0,1 "synccheck:$sync_gpus"; do
    tool=${pair%%:*}
    CUDA_VISIBLE_DEVICES=${pair#*:} timeout -k 5 "$t" "$sanitizer" --tool "$tool" \
      --print-limit 20 "$bin" --gtest_filter="$filter" >"$run_dir/sanitizer_$tool.txt" 2>&1 &
    pids+=($!)
  done
  for i in 0 1; do
    wait "${pids[$i]}"
    rc=$?
    tool=$([[ $i == 0 ]] && echo racecheck || echo synccheck)
    { echo "### compute-sanitizer --tool $tool (rc=$rc)"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|Error|PASSED|FAILED|tests ran" \
        "$run_dir/sanitizer_$tool.txt" | head -20; } | tee -a "$log" >>"$run_dir/tests.txt"
  done
}

# build_kernels_only TIMEOUT_S [TARGET...]: configure (kernels only, this NCCL) and build
# the targets (all when none) into build-gpu/, each step within TIMEOUT_S.
build_kernels_only() {
  local limit="$1"
  shift
  timeout "$limit" cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DOVERLAPSIM_KERNELS_ONLY=ON -DOVERLAPSIM_NCCL_INCLUDE="$(dirname "$nccl_header")" \
    -DOVERLAPSIM_NCCL_LIB="$nccl_lib" &&
    timeout "$limit" cmake --build build-gpu -j "$(nproc)" ${1:+--target "$@"}
}

# select_tilewise_binaries CARRY BUILD_TIMEOUT_S LOG: sets bench, test_bin and gemm_test to
# the carried binaries in CARRY/bin when they run on this machine, else builds them here
# (kernels only) and points there; then logs their libraries and the GEMM's instruction mix
# (HGMMA present, no local-memory spills LDL/STL, the signaller's BAR.ARV).
select_tilewise_binaries() {
  local carry="$1" limit="$2" log="$3"
  use_device_libs "$carry/lib"
  bench="$carry/bin/overlap-bench"
  test_bin="$carry/bin/tilewise_test"
  gemm_test="$carry/bin/own_gemm_test"
  if ! "$test_bin" --gtest_list_tests >/dev/null 2>>"$log"; then
    echo "carried binaries do not run here: building" | tee -a "$log"
    build_kernels_only "$limit" overlap-bench tilewise_test own_gemm_test >>"$log" 2>&1
    echo "build rc=$?" | tee -a "$log"
    bench=build-gpu/kernels/bench/overlap-bench
    test_bin=build-gpu/tests/kernels/tilewise_test
    gemm_test=build-gpu/tests/kernels/own_gemm_test
  fi
  ldd "$bench" | grep -E "not found|nccl|yaml|fmt" >>"$log" 2>&1
  local pat
  for pat in HGMMA 'LDL|STL' BAR.ARV; do
    echo "sass $pat: $(cuobjdump -sass "$test_bin" 2>/dev/null | grep -cE "$pat")" >>"$log"
  done
}

# start_tilewise_run CARRY BUILD_TIMEOUT_S: how every tile-wise device run starts: the
# machine and its NCCL into the log, the binaries (select_tilewise_binaries), then eager
# module loading for what follows (a lazy load while a stream waits on a device counter can
# deadlock; the cold-start test unsets it itself).
start_tilewise_run() {
  log_machine
  echo "nccl lib: $nccl_lib" >>"$log"
  select_tilewise_binaries "$1" "$2" "$log"
  export CUDA_MODULE_LOADING=EAGER
}

# sanitize_tilewise FILTER TIMEOUT_S TOOL...: compute-sanitizer with each TOOL over the
# tile-wise tests FILTER ($test_bin); each tool's summary lines into the log and
# $OUT/tests.txt.
sanitize_tilewise() {
  local filter="$1" limit="$2" tool rc
  shift 2
  for tool in "$@"; do
    timeout "$limit" compute-sanitizer --tool "$tool" --print-limit 20 "$test_bin" \
      --gtest_filter="$filter" --gtest_brief=1 >"$OUT/sanitizer_$tool.tmp" 2>&1
    rc=$?
    { echo "### compute-sanitizer --tool $tool (rc=$rc)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|Error|PASSED|FAILED|tests ran" "$OUT/sanitizer_$tool.tmp" | head -40; } | tee -a "$log" >>"$OUT/tests.txt"
    rm -f "$OUT/sanitizer_$tool.tmp"
  done
}

# start_smi_sampling FILE: nvidia-smi samples SM and memory clock, power, temperature and
# throttle reasons every 50 ms into FILE (queries only; no GPU setting is touched) until
# stop_smi_sampling.
start_smi_sampling() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv,nounits -lms 50 >"$1" 2>"$1.err" &
  smi_pid=$!
  sleep 1
}
stop_smi_sampling() {
  kill "${smi_pid:-}" 2>/dev/null
  wait "${smi_pid:-}" 2>/dev/null
}

# own_gemm_phases ERR: the timed windows own-gemm-bench printed to stderr (`# phase MxNxK
# design start_s end_s`, --sustain-ms) as the phases.csv summarize_gemm_power.py reads.
own_gemm_phases() {
  echo "shape,design,start_s,end_s"
  awk '$1 == "#" && $2 == "phase" {print $3 "," $4 "," $5 "," $6}' "$1"
}

# use_carried_binaries: bin_dir = the carried binaries ($CARRY_DIR, default build-carry/,
# what pack_carry.sh fills) and their libraries on the library path.
use_carried_binaries() {
  bin_dir="$root/${CARRY_DIR:-build-carry}/bin"
  use_device_libs "$root/${CARRY_DIR:-build-carry}/lib"
}

# append_csv ROWS DEST: appends the CSV file ROWS to DEST, its header only if DEST is new.
append_csv() {
  if [[ -s $2 ]]; then tail -n +2 "$1" >>"$2"; else cat "$1" >"$2"; fi
}

# run_ab PREFIX BASE NEW ARGS...: runs the binaries BASE and NEW in turn base, new, base,
# new with ARGS (each within 300 s), stdout to $OUT/PREFIX_<i>_<base|new>.csv and stderr to
# .err beside it, and logs each exit code to $OUT/PREFIX_log.txt: drift between the runs
# then falls on both builds alike.
run_ab() {
  local prefix="$1" base="$2" new="$3" i=0 which bin
  shift 3
  for which in base new base new; do
    i=$((i + 1))
    bin="$new"
    [[ $which == base ]] && bin="$base"
    timeout -s KILL 300 "$bin" "$@" >"$OUT/${prefix}_${i}_$which.csv" 2>"$OUT/${prefix}_${i}_$which.err"
    echo "run $i $which rc=$?" | tee -a "$OUT/${prefix}_log.txt"
  done
}

# limit STEP_LIMIT: a step's limit cut to what is left of TOTAL_BUDGET (s, counted from when
# this file was sourced; each script sets its own) less LIMIT_MARGIN_S (the steps and the
# archive after it); 0 when under 10 s are left (the caller skips the step).
run_start=$(date +%s)
limit() {
  local left=$((${TOTAL_BUDGET:?set by the script} - ($(date +%s) - run_start) - ${LIMIT_MARGIN_S:-20}))
  ((left > $1)) && left=$1
  ((left < 10)) && left=0
  echo "$left"
}
