// Threads a program had to leave running: work that did not return within its time limit (a
// TorchScript cell's trial call stuck in an endless loop, cells/script_cell.h) and that no thread
// can be made to stop. Such a process ends with std::_Exit after its output is flushed (app/cli
// main.cpp): exit()'s static destructors would tear down what the abandoned thread still uses.
#pragma once

namespace cs {

void note_abandoned_thread();
int abandoned_threads();

}  // namespace cs
