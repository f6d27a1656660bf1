#pragma once
#include "core/operations.hpp"

namespace gpubench {
// The primitives of core/operations.hpp in CUB's device API (device pointers, the legacy default
// stream): DeviceReduce::Sum, DeviceScan::InclusiveSum, DeviceRadixSort::SortKeys and SortPairs
// (on a DoubleBuffer whose second half is part of the workspace) and DeviceTransform::Transform.
// Their temporary storage is one workspace kept across calls and grown (cudaMalloc) only by a call
// that needs more than it holds, in practice the first, untimed call of an entry; no call
// synchronises. reduce leaves its sum's copy to the host queued on the stream.
PrimitiveFunctions cub_primitives();
// What the calls asked the workspace for since the last release: one request per call that needs
// temporary storage, its bytes, and the cudaMalloc calls that grew it.
TemporaryStorageUse cub_workspace_use();
// Frees the workspace (cudaFree, which waits for the device) and zeroes its use.
void cub_workspace_release();
}  // namespace gpubench
