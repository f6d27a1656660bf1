// Configure's check that GCC's parallel algorithms build and link on TBB (baselines/CMakeLists.txt).
#include <algorithm>
#include <execution>
#include <vector>

int main() {
  std::vector<int> values(1000, 1);
  std::sort(std::execution::par, values.begin(), values.end());
  return values[0] != 1;
}
