// Probing primitives the analysis kinds share (core/inspect/analysis/kind_*.cpp): a text run
// through any task's model with a Probe attached (Task's inspection methods, no
// downcasts), and the probe's records looked up by layer and name. Every probe runs
// the model in eval mode, without grad, from a zero state, batch 1, step-wise.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cells/cell.h"
#include "tasks/task.h"

namespace cs {

// The text as the task's tokens (tick labels through display_symbol) and ids.
// UserError when the task does not support it or the text has no tokens.
EncodedText encode_nonempty(Task& task, const std::string& text);

// Symbols of an encoded text that the run's vocabulary lacks (read as <unk>): their
// display symbols, each once, in order of first appearance.
std::vector<std::string> unknown_symbols(const EncodedText& enc);
// A tick label marked as unknown to the run: "«x»".
std::string mark_unknown(const std::string& label);

// The task's model run over `ids` with a probe.
Probe probe_ids(Task& task, const std::vector<int32_t>& ids);

// Gate/zone statistics: `text` a split name on a sentence task = its first 64 sentences as
// one batch; otherwise the text itself.
Probe probe_text_or_split(Task& task, const std::string& text);

// "l<N>/" prefix of the requested layer (layer < 0 counts from the top), from the probe's
// keys. UserError when out of range or when the model records nothing.
std::string layer_of(const Probe& p, int layer);

// The probe's series `key` stacked over time; UserError naming `cell` when it is not recorded.
torch::Tensor recorded(const Probe& p, const std::string& key, const std::string& cell);

// Keys of a probe whose name (the last path component) is in `names`.
std::vector<std::string> keys_named(const Probe& p, const std::set<std::string>& names);

// The gate series the cells record (GRU/CRU "gate" = 1 - z and "reset"; LSTM "gate" =
// input, "forget", "output_gate"; MZU "gate").
const std::set<std::string>& gate_names();

}  // namespace cs
