// Helpers shared by the table's translation units (table.cpp: aggregation, the paired view and a
// sweep's table; table_runs.cpp: budgets and what each run reached; table_format.cpp: the
// exports). Not API: include only from core/run/sweep.
#pragma once

#include <string>
#include <vector>

#include "sweep/table.h"

namespace cs::table_internal {

// v with `digits` decimals (fixed).
std::string fixed_num(double v, int digits);
// 3 significant digits ("-" for NaN or infinity).
std::string short_num(double v);
// "12 s", "3.5 s".
std::string seconds_text(double s);
// "n/a (test set 99 < 100)".
std::string refused_text(const TableCell& c);

// Row / column label of a record: its labels on the given axes joined with " / "; with no axes,
// the one column (or row) is named after the metric the table shows (`metric`, which a budget
// view may have changed from test to valid).
std::string label_on(const SweepResults& r, const SweepRunRecord& rec, const std::vector<std::string>& axes,
                     const std::string& metric);
// Every combination of the axes' labels, in grid order.
std::vector<std::string> labels_of(const SweepResults& r, const std::vector<std::string>& axes,
                                   const std::string& metric);

// The inputs of a compute-matched table (`budget` active): every run read at the budget
// (value_at_budget). Updates `budget` (a KIND=common amount), `metric_label` (test -> valid when
// the runs did not track the test split), `note`, `problems` and `missing`. UserError for a FLOPs
// budget over runs without training FLOPs.
std::vector<TableInput> budget_inputs(const SweepResults& r, Budget& budget, std::string& metric_label,
                                      std::string& note, std::vector<std::string>& problems, int& missing);

}  // namespace cs::table_internal
