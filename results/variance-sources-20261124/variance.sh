#!/bin/bash
# Between-process variance of noisy entries under user-space conditions, interleaved round-robin.
# Usage: variance.sh BUILD_DIR OUT_DIR REPS
B=$1; O=$2; REPS=${3:-4}
mkdir -p $O
declare -A COND
COND[base]=""
COND[noaslr]="setarch $(uname -m) -R"
COND[hugetlb]="env GLIBC_TUNABLES=glibc.malloc.hugetlb=1"
COND[pinned]="env OMP_PROC_BIND=close OMP_PLACES=cores"
COND[threads15]="env OPENBLAS_NUM_THREADS=15 OMP_NUM_THREADS=15"
ORDER="base noaslr hugetlb pinned threads15"
run() { # cond rep tag binary flags...
  local c=$1 r=$2 tag=$3; shift 3
  local st0=$(awk '/^cpu /{print $9}' /proc/stat)
  local t0=$(date +%s.%N)
  OMP_WAIT_POLICY=passive timeout 60 ${COND[$c]} "$@" --measurements-out=$O/m-$c-$r-$tag.jsonl --telemetry-out=$O/t-$c-$r-$tag.json --benchmark_out=$O/g-$c-$r-$tag.json > $O/o-$c-$r-$tag.txt 2>&1
  local rc=$?
  local t1=$(date +%s.%N)
  local st1=$(awk '/^cpu /{print $9}' /proc/stat)
  local mhz=$(awk '/cpu MHz/{s+=$4;n++} END{printf "%.0f", s/n}' /proc/cpuinfo)
  echo -e "$c\t$r\t$tag\t$rc\t$(echo "$t1-$t0"|bc)\t$((st1-st0))\t$mhz" >> $O/runs.tsv
}
for r in $(seq 1 $REPS); do
  for c in $ORDER; do
    run $c $r matmul $B/bench/gpubench_matmul --impls=openblas,blocked_loop --sizes=256,1024 --modes=host
    run $c $r batched $B/bench/gpubench_batched_gemm --impls=openblas_loop,cublas_loop --sizes=32 --batches=16,256 --modes=host,resident
    run $c $r mlp $B/bench/gpubench_mlp_training --impls=openblas_loops,cublas_kernels --sizes=1024 --batches=8,64 --modes=host,resident
  done
  echo "rep $r done $(date +%T)"
done
