// The translation unit that builds the core's one precompiled header (core/CMakeLists.txt,
// cellscope_pch); it has no code of its own.
