// CS_IVDEP, before a loop whose iterations do not depend on each other through memory: the
// compiler may vectorise it without a run-time overlap check. GCC: `#pragma GCC ivdep`; clang
// (the sanitizer and fuzz builds) ignores that pragma with -Wunknown-pragmas and has its own
// equivalent, `#pragma clang loop vectorize(assume_safety)`; other compilers: nothing.
#pragma once

#if defined(__clang__)
#define CS_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define CS_IVDEP _Pragma("GCC ivdep")
#else
#define CS_IVDEP
#endif
