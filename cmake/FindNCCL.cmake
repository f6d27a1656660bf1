# FindNCCL: NCCL's header, library and version, found where they are installed (never downloaded).
# Looks under NCCL_ROOT (CMake variable or environment), then beside the CUDA toolkit (CUDA 13's
# include/nccl.h and lib64/libnccl.so), then in the system directories, then in the nvidia/nccl
# folder of GPUBENCH_PYTHON's site-packages, where PyTorch's wheels ship NCCL (only the versioned
# libnccl.so.2 there).
#
# Sets NCCL_FOUND, NCCL_VERSION (e.g. 2.28.9), NCCL_INCLUDE_DIR, NCCL_LIBRARY and the imported
# target NCCL::nccl.

set(nccl_roots ${NCCL_ROOT} $ENV{NCCL_ROOT})
if(GPUBENCH_PYTHON)
  # nvidia is a namespace package: its folder comes from the spec's search locations.
  execute_process(
    COMMAND ${GPUBENCH_PYTHON} -c
      "import importlib.util as u; s = u.find_spec('nvidia.nccl'); print(list(s.submodule_search_locations)[0] if s else '')"
    OUTPUT_VARIABLE nccl_python_root OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE nccl_python_result)
  if(nccl_python_result EQUAL 0 AND nccl_python_root)
    list(APPEND nccl_wheel_roots ${nccl_python_root})
  endif()
endif()
if(nccl_roots)
  find_path(NCCL_INCLUDE_DIR NAMES nccl.h PATHS ${nccl_roots} PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR PATHS ${nccl_roots}
    PATH_SUFFIXES lib64 lib NO_DEFAULT_PATH)
endif()
find_path(NCCL_INCLUDE_DIR NAMES nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATHS ${nccl_wheel_roots}
  PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR HINTS ${CUDAToolkit_LIBRARY_DIR}
  PATHS ${nccl_wheel_roots} PATH_SUFFIXES lib64 lib)

unset(NCCL_VERSION)
if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" nccl_version_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  if(nccl_version_lines MATCHES "NCCL_MAJOR +([0-9]+).*NCCL_MINOR +([0-9]+).*NCCL_PATCH +([0-9]+)")
    set(NCCL_VERSION "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}.${CMAKE_MATCH_3}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR NCCL_VERSION
  VERSION_VAR NCCL_VERSION)
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
