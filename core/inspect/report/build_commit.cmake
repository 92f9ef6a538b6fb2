# Run at every build (core/CMakeLists.txt, target cellscope_build_commit): writes OUT, a one-function
# source that returns the git commit the sources were built from, "-dirty" appended when tracked
# files differ from it, "" outside a git checkout (a source tarball). OUT is rewritten only when
# that string changes, so an unchanged checkout rebuilds nothing.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD OUTPUT_VARIABLE commit
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  set(commit "")
endif()
if(commit)
  execute_process(COMMAND git -C "${SRC}" diff --quiet HEAD -- RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty EQUAL 1)
    set(commit "${commit}-dirty")
  endif()
endif()
set(content "// Generated at build time by core/inspect/report/build_commit.cmake; do not edit.\n#include \"report/build_commit.h\"\n\nnamespace cs {\nconst char* build_git_commit() { return \"${commit}\"; }\n}  // namespace cs\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
