#!/bin/sh
# A stand-in for overlap-bench in the calibrate tests (no GPU needed): takes the same flags,
# writes one CSV row per size / shape / design to --output with made-up times.
# --op interference writes, per shape x collective x size x CTA limit, the four rows of
# overlap-bench's interference runner (op interference, design <victim>|<other>:<half>,
# chunks = the CTA limit) with the GEMM 10 % and the collective 20 % slower beside.
#   FAKE_BENCH_NO_GPU=1        fail like overlap-bench on a machine without GPUs
#   FAKE_BENCH_CALLS=FILE      append each call's flags (and NCCL_MAX_CTAS) to FILE
#   FAKE_BENCH_FAIL_AFTER=N    fail every call after the N-th (counted in FAKE_BENCH_CALLS)
#   FAKE_BENCH_FAIL_OP=OP      fail every call of --op OP
#   FAKE_BENCH_PIDS=FILE       append "<pid of this shell> <pid of its sleep>" to FILE
#   FAKE_BENCH_SLEEP=S         sleep S seconds (a child process) before writing --output,
#                              like a call that is still measuring when calibrate dies
op=""; bytes=""; shapes=""; designs=""; world=1; output=""; collectives="allreduce"; ctas="0"
steady=""
while [ $# -gt 0 ]; do
  case "$1" in
    --op) op="$2"; shift 2 ;;
    --bytes) bytes="$2"; shift 2 ;;
    --shapes) shapes="$2"; shift 2 ;;
    --designs) designs="$2"; shift 2 ;;
    --world) world="$2"; shift 2 ;;
    --output) output="$2"; shift 2 ;;
    --collectives) collectives="$2"; shift 2 ;;
    --ctas) ctas="$2"; shift 2 ;;
    --min-time-ms|--warmup-ms|--timeout) steady="$steady $1=$2"; shift 2 ;;
    *) shift ;;
  esac
done
if [ -n "$FAKE_BENCH_NO_GPU" ]; then
  echo "overlap-bench: harness: no GPU is visible" >&2
  exit 1
fi
if [ -n "$FAKE_BENCH_CALLS" ]; then
  echo "$op $bytes $shapes $designs ctas=${NCCL_MAX_CTAS:-0}$steady" >> "$FAKE_BENCH_CALLS"
  calls=$(wc -l < "$FAKE_BENCH_CALLS")
  if [ -n "$FAKE_BENCH_FAIL_AFTER" ] && [ "$calls" -gt "$FAKE_BENCH_FAIL_AFTER" ]; then
    echo "overlap-bench: NCCL error: remote process exited" >&2
    exit 1
  fi
fi
if [ -n "$FAKE_BENCH_FAIL_OP" ] && [ "$op" = "$FAKE_BENCH_FAIL_OP" ]; then
  echo "overlap-bench: rank 1: interference: timed out after 120 s (communicator aborted)" >&2
  exit 1
fi
if [ -n "$FAKE_BENCH_SLEEP" ]; then
  sleep "$FAKE_BENCH_SLEEP" &
  sleeper=$!
  [ -z "$FAKE_BENCH_PIDS" ] || echo "$$ $sleeper" >> "$FAKE_BENCH_PIDS"
  wait "$sleeper"
elif [ -n "$FAKE_BENCH_PIDS" ]; then
  echo "$$" >> "$FAKE_BENCH_PIDS"
fi
[ -n "$designs" ] || designs="default"
tags="NVIDIA H200,580.159.04,13.0,2.28.3,$world"
# Lists split at commas by the shell itself: no process per list keeps a call at ~1 ms,
# which the calibrate kill test's 50 trials need.
set -f
IFS=,
{
  echo "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,time_max_us,tflops,algbw_GBps,busbw_GBps,wrong"
  if [ "$op" = "interference" ]; then
    for s in $shapes; do
      m=${s%%x*}; rest=${s#*x}; n=${rest%%x*}; k=${rest#*x}
      for coll in $collectives; do
        for b in $bytes; do
          for c in $ctas; do
            echo "$tags,interference,gemm|$coll:alone,bf16,$m,$n,$k,$b,$c,100.00,99.00,101.00,0,0,0,0"
            echo "$tags,interference,gemm|$coll:beside,bf16,$m,$n,$k,$b,$c,110.00,109.00,111.00,0,0,0,0"
            echo "$tags,interference,$coll|gemm:alone,bf16,$m,$n,$k,$b,$c,50.00,49.00,51.00,0,0,0,0"
            echo "$tags,interference,$coll|gemm:beside,bf16,$m,$n,$k,$b,$c,60.00,59.00,61.00,0,0,0,0"
          done
        done
      done
    done
    exit 0
  fi
  for b in $bytes; do
    echo "$tags,$op,nccl,bf16,0,0,0,$b,1,$((b / 100000 + 10)).50,$((b / 100000 + 10)).00,$((b / 100000 + 11)).00,0,0,0,0"
  done
  for s in $shapes; do
    m=${s%%x*}; rest=${s#*x}; n=${rest%%x*}; k=${rest#*x}
    for d in $designs; do
      echo "$tags,$op,$d,bf16,$m,$n,$k,0,1,123.25,122.00,125.00,0,0,0,0"
    done
  done
} > "$output"
