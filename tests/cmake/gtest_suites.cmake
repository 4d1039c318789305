# Writes one ctest test per GoogleTest suite of EXE (run with --gtest_filter=Suite.*) into OUT, labelled
# LABEL. For tests whose fixture is expensive to set up once per process (the BPF packet tables load the
# whole BPF object): gtest_discover_tests would start one process, and one load, per case.
#   cmake -D EXE=... -D OUT=... -D LABEL=... -D WORKDIR=... -P gtest_suites.cmake
execute_process(COMMAND "${EXE}" --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${status})")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
foreach(line IN LISTS lines)
  # Suite lines start in column 0 and end with '.', optionally followed by "  # TypeParam = ...".
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    set(name "${LABEL}.${suite}")
    string(APPEND script "add_test([=[${name}]=] [==[${EXE}]==] [==[--gtest_filter=${suite}.*]==])\n")
    string(APPEND script
           "set_tests_properties([=[${name}]=] PROPERTIES LABELS ${LABEL} WORKING_DIRECTORY [==[${WORKDIR}]==])\n")
  endif()
endforeach()
file(WRITE "${OUT}" "${script}")
