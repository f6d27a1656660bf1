# Optional dependencies are used only once a program that uses them has compiled and linked here:
# a package found but half installed (a library without its headers, a compiler wrapper without
# its development files) is left out with one line saying why, instead of failing the configure or
# the build. Every check's log is kept under <build>/gpubench-checks/<name>/.

# gpubench_link_check(<result> <name> [INCLUDE_DIRS <dir>...] [LIBRARIES <lib>...])
# Sets <result> to TRUE when cmake/checks/<name>.cpp compiles and links with those include folders
# and libraries. Give plain paths for a package found by hand, not an imported target:
# an imported target naming a missing folder is a fatal error inside try_compile, the very case
# this check exists for.
function(gpubench_link_check result name)
  cmake_parse_arguments(arg "" "" "INCLUDE_DIRS;LIBRARIES" ${ARGN})
  set(dir ${CMAKE_BINARY_DIR}/gpubench-checks/${name})
  try_compile(works ${dir}/build SOURCES ${PROJECT_SOURCE_DIR}/cmake/checks/${name}.cpp
    CMAKE_FLAGS "-DINCLUDE_DIRECTORIES:STRING=${arg_INCLUDE_DIRS}"
    LINK_LIBRARIES ${arg_LIBRARIES}
    CXX_STANDARD 17
    OUTPUT_VARIABLE output)
  file(WRITE ${dir}/output.log "${output}")
  set(${result} ${works} PARENT_SCOPE)
endfunction()

# gpubench_probe_mpi(<result> <reason>): whether an MPI C++ program configures, compiles and links,
# tried in a CMake process of its own (cmake/mpi_probe): FindMPI stops the whole configure with an
# error where the wrapper compiler names include folders that do not exist (Debian's openmpi-bin
# without libopenmpi-dev), so it is only called here once that child has succeeded.
function(gpubench_probe_mpi result reason)
  set(dir ${CMAKE_BINARY_DIR}/gpubench-checks/mpi)
  file(REMOVE_RECURSE ${dir})
  set(forwarded -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER})
  foreach(variable MPI_HOME MPI_CXX_COMPILER MPIEXEC_EXECUTABLE CMAKE_PREFIX_PATH)
    if(DEFINED ${variable})
      list(APPEND forwarded "-D${variable}=${${variable}}")
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${PROJECT_SOURCE_DIR}/cmake/mpi_probe -B ${dir} ${forwarded}
    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  file(WRITE ${dir}/output.log "${output}")
  if(status EQUAL 0)
    set(${result} TRUE PARENT_SCOPE)
    set(${reason} "" PARENT_SCOPE)
  elseif(output MATCHES "Could NOT find MPI")
    set(${result} FALSE PARENT_SCOPE)
    set(${reason} "no MPI found" PARENT_SCOPE)
  else()
    set(${result} FALSE PARENT_SCOPE)
    set(${reason} "an MPI was found but a program using it does not build (half installed? Debian/Ubuntu: \
libopenmpi-dev beside openmpi-bin; log: ${dir}/output.log)" PARENT_SCOPE)
  endif()
endfunction()
