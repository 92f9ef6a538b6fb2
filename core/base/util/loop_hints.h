// CS_IVDEP, before a loop whose iterations do not depend on each other through memory: GCC may
// vectorise it without a run-time overlap check (`#pragma GCC ivdep`). Other compilers get
// nothing: clang ignores GCC's pragma with -Wunknown-pragmas, and its own equivalent
// (`#pragma clang loop vectorize(assume_safety)`) warns with -Wpass-failed wherever it cannot
// vectorise, as in the -O1 sanitizer and fuzz builds, the only builds clang makes here.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#define CS_IVDEP _Pragma("GCC ivdep")
#else
#define CS_IVDEP
#endif
