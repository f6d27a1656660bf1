// The parallel primitives of core/operations.hpp in the C++ standard library: std::reduce,
// std::inclusive_scan, std::sort and std::transform, called as a program calls them (host pointers).
#pragma once

#include "core/operations.hpp"

namespace gpubench {

// The plain calls, no execution policy: one thread. The pairs are sorted as 64-bit words (key in
// the high half, value in the low), which orders equal keys by value: still sorted by key.
PrimitiveFunctions std_seq_primitives();

// The same with std::execution::par, which GCC's library runs on TBB's threads. Built only where
// CMake found TBB: without it GCC would run them on one thread under the parallel name, so the
// study skips them and says why.
PrimitiveFunctions std_par_primitives();
// "" where the parallel calls are built, else why not.
const char* std_par_unavailable_reason();
// The threads std::execution::par runs on (TBB's default concurrency); 1 without TBB.
int std_par_threads();

// The same algorithms in libstdc++'s parallel mode (__gnu_parallel, on OpenMP's threads): a parallel
// CPU baseline in every GCC build, where TBB (and so std_par) is missing.
PrimitiveFunctions gnu_parallel_primitives();
int gnu_parallel_threads();

}  // namespace gpubench
