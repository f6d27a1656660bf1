#!/usr/bin/env bash
# cuDNN's engine choice between processes: the convolution study's GPU entries (the default suite's
# layers 7 and 56, batches 1 and 32) in processes that each autotune ("free") against processes that
# hold the first one's engines ("held"), interleaved; two repeats, each with a fresh held-choices file.
set -u
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > $OUT/build.log 2>&1 && ninja -C build gpubench_conv2d >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
B=build/bench/gpubench_conv2d
mkdir -p $OUT/held-experiment
S=$(date +%s)
for rep in 1 2; do
  rm -f $OUT/held-experiment/held_choices_r$rep.tsv
  for t in 1 2 3 4; do
    for cfg in held free; do
      extra=""; [ $cfg = held ] && extra="--held-choices=$OUT/held-experiment/held_choices_r$rep.tsv"
      $B --sizes=7,56 --batches=1,32 --impls=cudnn_nchw,cudnn_nhwc $extra --no-telemetry \
        --benchmark_out_format=json --benchmark_out=$OUT/held-experiment/r${rep}_t${t}_${cfg}.json > /dev/null 2>$OUT/held-experiment/r${rep}_t${t}_${cfg}.err
      echo "rep $rep trial $t $cfg rc=$? $(( $(date +%s) - S )) s"
    done
  done
done
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/held-experiment/gpu.csv
git rev-parse HEAD > $OUT/held-experiment/revision.txt 2>/dev/null
tar czf $OUT/held-experiment.tar.gz -C $OUT held-experiment
