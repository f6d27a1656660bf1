// How every study runs one GPU entry: a failure becomes the entry's skip or error, never the
// end of the process, so the rest of the sweep goes on.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <new>
#include <string>

#include "core/cuda_check.hpp"

namespace gpubench {

// Runs `body`. Out of device memory (or host memory: std::bad_alloc) is "skipped: does not fit:
// ...", a GpuEntrySkipped "skipped: ...", anything else an error with its message; `forget` first
// drops what the entry kept for its next call, and the CUDA error a failed allocation leaves as
// the thread's last error is cleared, so the next entry's launch checks do not report it again.
template <typename Body, typename Forget>
void guard_gpu_entry(benchmark::State& state, Body&& body, Forget&& forget) {
  try {
    body();
  } catch (const GpuOutOfMemory& e) {
    forget();
    static_cast<void>(cudaGetLastError());
    state.SkipWithError((std::string("skipped: does not fit: ") + e.what()).c_str());
  } catch (const std::bad_alloc&) {
    forget();
    state.SkipWithError("skipped: does not fit: host memory could not be allocated");
  } catch (const GpuEntrySkipped& e) {
    forget();
    state.SkipWithError((std::string("skipped: ") + e.what()).c_str());
  } catch (const std::exception& e) {
    forget();
    state.SkipWithError(e.what());
  }
}

}  // namespace gpubench
