// Configure's check that NCCL's header compiles and its library links (CMakeLists.txt).
#include <nccl.h>

int main() {
  int version = 0;
  return ncclGetVersion(&version) != ncclSuccess;
}
