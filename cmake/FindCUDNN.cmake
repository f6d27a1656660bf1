# FindCUDNN: cuDNN's header, library and version, found where they are installed (never
# downloaded). Looks first under CUDNN_ROOT (CMake variable or environment), then beside the
# CUDA toolkit, then in the system directories, including /usr/include/<arch> and
# /usr/lib/<arch>, where Ubuntu's and NVIDIA's packages put cuDNN 9 under versioned header
# names (cudnn_v9.h, cudnn_version_v9.h) with unversioned links made by update-alternatives,
# which may be missing.
#
# Sets CUDNN_FOUND, CUDNN_VERSION (e.g. 9.1.0), CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, CUDNN_HEADER
# (cudnn.h, or cudnn_v9.h where the link is missing) and the imported target CUDNN::cudnn. Code
# using it includes the header through the macro GPUBENCH_CUDNN_HEADER that the target defines,
# so it compiles whichever of the two names is installed.

set(cudnn_header_names cudnn.h cudnn_v9.h)
set(cudnn_library_names cudnn libcudnn.so.9)  # the unversioned link comes with the -dev package
set(cudnn_include_suffixes include include/${CMAKE_LIBRARY_ARCHITECTURE})
set(cudnn_library_suffixes lib64 lib lib/${CMAKE_LIBRARY_ARCHITECTURE})
# CUDNN_ROOT on its own first: find_path tries one name at a time in every directory, so a
# cudnn.h anywhere else would win over a cudnn_v9.h under CUDNN_ROOT.
set(cudnn_roots ${CUDNN_ROOT} $ENV{CUDNN_ROOT})
if(cudnn_roots)
  find_path(CUDNN_INCLUDE_DIR NAMES ${cudnn_header_names} PATHS ${cudnn_roots}
    PATH_SUFFIXES ${cudnn_include_suffixes} NO_DEFAULT_PATH)
  find_library(CUDNN_LIBRARY NAMES ${cudnn_library_names} NAMES_PER_DIR PATHS ${cudnn_roots}
    PATH_SUFFIXES ${cudnn_library_suffixes} NO_DEFAULT_PATH)
endif()
find_path(CUDNN_INCLUDE_DIR NAMES ${cudnn_header_names}
  HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES ${cudnn_include_suffixes})
find_library(CUDNN_LIBRARY NAMES ${cudnn_library_names} NAMES_PER_DIR
  HINTS ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES ${cudnn_library_suffixes})

# The version lives in cudnn_version.h since cuDNN 8; packages may only have the versioned name.
unset(CUDNN_VERSION)
if(CUDNN_INCLUDE_DIR)
  if(EXISTS "${CUDNN_INCLUDE_DIR}/cudnn.h")
    set(CUDNN_HEADER cudnn.h)
  else()
    set(CUDNN_HEADER cudnn_v9.h)
  endif()
  foreach(version_header cudnn_version.h cudnn_version_v9.h)
    if(NOT CUDNN_VERSION AND EXISTS "${CUDNN_INCLUDE_DIR}/${version_header}")
      file(STRINGS "${CUDNN_INCLUDE_DIR}/${version_header}" cudnn_version_lines
           REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
      if(cudnn_version_lines MATCHES "CUDNN_MAJOR +([0-9]+).*CUDNN_MINOR +([0-9]+).*CUDNN_PATCHLEVEL +([0-9]+)")
        set(CUDNN_VERSION "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}.${CMAKE_MATCH_3}")
      endif()
    endif()
  endforeach()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR CUDNN_VERSION
  VERSION_VAR CUDNN_VERSION)
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "GPUBENCH_CUDNN_HEADER=\"${CUDNN_HEADER}\"")
endif()
