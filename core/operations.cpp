#include "core/operations.hpp"

namespace gpubench {

MlpLayout mlp_layout(MlpShape s) {
  const auto elements = [](int rows, int columns) { return static_cast<std::size_t>(rows) * columns; };
  MlpLayout layout;
  std::size_t offset = 0;
  const auto place = [&offset](std::size_t size) {
    const MlpTensor tensor{offset, size};
    offset += size;
    return tensor;
  };
  layout.w1 = place(elements(s.hidden, s.inputs));
  layout.b1 = place(s.hidden);
  layout.w2 = place(elements(s.hidden, s.hidden));
  layout.b2 = place(s.hidden);
  layout.w3 = place(elements(s.outputs, s.hidden));
  layout.b3 = place(s.outputs);
  layout.parameters = offset;
  return layout;
}

const char* layout_name(TensorLayout layout) { return layout == TensorLayout::nchw ? "nchw" : "nhwc"; }

}  // namespace gpubench
