#pragma once
// Chrome / Perfetto trace JSON ("traceEvents", https://ui.perfetto.dev opens it) of one
// simulated step: a process per recorded rank, a thread per stream (compute, tp-comm,
// dp-comm, pp-comm, ep-comm; a stream whose ops overlap — sends and receives are not
// serialised — gets extra lanes "pp-comm #2", ...), complete events ("ph": "X") named
// after the ops, and a "fabric" process with one counter track per link class giving
// the bandwidth carried (GB/s) between samples (at most 2,000 points per track), plus
// "<class> utilisation" (% of the class's total link capacity) where that is known.
// Written by hand: sim/ has no JSON library.
#include <string>
#include <string_view>

#include "sim/exec/step_result.hpp"
#include "sim/exec/timeline.hpp"

namespace overlapsim::sim {

// `result` labels the processes (global rank, ranks it stands for); `title` names the run.
std::string chrome_trace_json(const Timeline& timeline, const StepResult& result,
                              std::string_view title);

// JSON string literal contents: escapes quotes, backslashes and control characters.
std::string json_escape(std::string_view text);

}  // namespace overlapsim::sim
