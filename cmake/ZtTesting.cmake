# Test helpers: GoogleTest discovery, multi-rank tests under mpirun, and GPU tests that skip.
include(GoogleTest)
find_package(GTest REQUIRED)

# Exit code a test returns to tell CTest it was skipped (no GPU, no MPI, ...).
set(ZT_SKIP_CODE 77)

# zt_add_unit_test(NAME src... [LIBS lib...]) — one GoogleTest binary, label "unit".
function(zt_add_unit_test name)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE zt_options GTest::gtest_main ${ARG_LIBS})
  # One OpenMP thread per test unless the test sets its own (the thread-count tests do): CTest runs
  # tests side by side with multi-rank jobs, and tiny ops in oversubscribed OpenMP teams waited on
  # descheduled threads at every barrier (two 0.2 s tests took 120 s in a CI run). Results never
  # depend on the thread count.
  gtest_discover_tests(${name} PROPERTIES LABELS unit ENVIRONMENT OMP_NUM_THREADS=1 DISCOVERY_TIMEOUT 60)
endfunction()

# zt_mpirun_flags(VAR) — the flags of every mpirun a test starts itself, as one string for a script
# argument: oversubscribe on a machine with fewer cores than ranks, no binding, and as root
# --allow-run-as-root.
function(zt_mpirun_flags var)
  set(flags "--oversubscribe --bind-to none")
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(uid STREQUAL "0")
    string(APPEND flags " --allow-run-as-root")
  endif()
  set(${var} "${flags}" PARENT_SCOPE)
endfunction()

# zt_add_mpi_test(NAME TARGET NP [ARGS ...]) — runs TARGET under mpirun with NP ranks, label "mpi".
function(zt_add_mpi_test name target np)
  if(NOT ZT_MPI)
    return()
  endif()
  set(flags --oversubscribe --bind-to none)
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(uid STREQUAL "0")
    list(APPEND flags --allow-run-as-root)
  endif()
  add_test(NAME ${name} COMMAND ${MPIEXEC_EXECUTABLE} ${flags} -np ${np} $<TARGET_FILE:${target}> ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS mpi PROCESSORS ${np} TIMEOUT 300
    ENVIRONMENT "OMP_NUM_THREADS=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_mpi_yield_when_idle=1")
endfunction()

# zt_add_gpu_test(NAME TARGET [ARGS ...]) — label "gpu"; the binary exits ZT_SKIP_CODE without a GPU.
function(zt_add_gpu_test name target)
  add_test(NAME ${name} COMMAND $<TARGET_FILE:${target}> ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS gpu SKIP_RETURN_CODE ${ZT_SKIP_CODE} TIMEOUT 600)
endfunction()
