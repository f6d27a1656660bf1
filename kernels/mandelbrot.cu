#include "mandelbrot.cuh"

#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

template <typename Ops, typename Real, typename Count>
__global__ void escape_counts(PixelGrid<Real> grid, int width, int height, int max_iterations, Count* counts) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const Real cr = pixel_coordinate<Ops>(grid.x_min, grid.dx, x);
  const Real ci = pixel_coordinate<Ops>(grid.y_min, grid.dy, y);
  counts[static_cast<std::size_t>(y) * width + x] = static_cast<Count>(escape_count<Ops>(cr, ci, max_iterations));
}

unsigned blocks_over(int pixels) { return static_cast<unsigned>((pixels + kBlockSide - 1) / kBlockSide); }

template <typename Ops>
void launch(Precision precision, const MandelbrotImage& image, void* counts) {
  if (image.pixels() == 0) return;  // a grid of zero blocks is a launch error
  with_mandelbrot_types(precision, image, [&](auto real, auto count) {
    using Real = decltype(real);
    using Count = decltype(count);
    const dim3 block(kBlockSide, kBlockSide);
    const dim3 grid(blocks_over(image.width), blocks_over(image.height));
    escape_counts<Ops, Real, Count><<<grid, block>>>(image.grid<Real>(), image.width, image.height,
                                                     image.max_iterations, static_cast<Count*>(counts));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void mandelbrot_kernel(Precision precision, const MandelbrotImage& image, void* counts) {
  launch<SeparateRounding>(precision, image, counts);
}

void mandelbrot_kernel_fma(Precision precision, const MandelbrotImage& image, void* counts) {
  launch<CompilerRounding>(precision, image, counts);
}

}  // namespace gpubench
