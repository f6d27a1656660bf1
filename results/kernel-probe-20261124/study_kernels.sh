#!/bin/bash
# The kernels the study's cuBLAS precision entries launch at 4096 (ncu, clocks left alone).
ldd build/bench/gpubench_precision | grep -i cublas
cat /usr/local/cuda/version.json 2>/dev/null | grep -A2 '"libcublas"'
for p in fp32 tf32 fp16 bf16 fp8_e4m3; do
  echo "== $p"
  timeout 60 ncu --clock-control none --launch-count 4 --metrics gpu__time_duration.sum \
    build/bench/gpubench_precision --sizes=4096 --impls=cublas --modes=resident --no-telemetry \
    --benchmark_filter="precision/cublas/gpu/resident/$p/n:4096" 2>&1 | grep -E "^  [A-Za-z_].*\(|Context|Stream" | grep -v "==PROF==" | head -8
done
