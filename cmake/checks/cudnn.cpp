// Configure's check that cuDNN's header compiles and its library links (CMakeLists.txt). The header
// is cudnn.h, or cudnn_v9.h where the link update-alternatives makes is missing (cmake/FindCUDNN.cmake).
#if __has_include(<cudnn.h>)
#include <cudnn.h>
#else
#include <cudnn_v9.h>
#endif

int main() { return cudnnGetVersion() == 0; }
