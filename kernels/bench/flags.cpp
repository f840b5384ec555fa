#include "kernels/bench/flags.hpp"

#include <sstream>
#include <stdexcept>

#include "config/units.hpp"
#include "kernels/bench/suite.hpp"
#include "kernels/collectives/nccl_collectives.hpp"

namespace overlapsim::kernels::bench {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// `program` starts the message: overlap-bench here, another tool through parse_shape_list.
[[noreturn]] void bad(const std::string& flag, const std::string& value,
                      const std::string& expected, const std::string& program = "overlap-bench") {
  throw std::invalid_argument(program + ": " + flag + ": '" + value + "' is not " + expected);
}

std::int64_t to_int(const std::string& flag, const std::string& text, std::int64_t min,
                    const std::string& program = "overlap-bench") {
  std::size_t used = 0;
  std::int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    bad(flag, text, "an integer", program);
  }
  if (used != text.size() || value < min)
    bad(flag, text, "an integer >= " + std::to_string(min), program);
  return value;
}

PairShape to_shape(const std::string& text, const std::string& program = "overlap-bench") {
  const auto dims = split(text, 'x');
  if (dims.size() != 3) bad("--shapes", text, "of the form MxNxK (e.g. 4096x4096x4096)", program);
  return {to_int("--shapes", dims[0], 1, program), to_int("--shapes", dims[1], 1, program),
          to_int("--shapes", dims[2], 1, program), 0};
}

}  // namespace

std::vector<PairShape> parse_shape_list(const std::string& text, const std::string& program) {
  std::vector<PairShape> shapes;
  for (const auto& s : split(text, ',')) shapes.push_back(to_shape(s, program));
  if (shapes.empty()) bad("--shapes", text, "a list of MxNxK", program);
  return shapes;
}

std::string usage() {
  return "usage: overlap-bench --suite FILE | --op OP [--shapes MxNxK,...] [--bytes SIZE,...]\n"
         "         [--designs D,...] [--chunks 2,4,8] [--dtype bf16|fp16|fp8] [--table-rows N]\n"
         "         [--no-parts] [--collectives C,...] [--ctas 4,8,16,32,0]\n"
         "         [--iterations N] [--warmup N] [--min-time-ms T] [--warmup-ms W]\n"
         "         [--world N] [--mpi] [--nonblocking] [--timeout 120s] [--seed S] [--output "
         "FILE]\n"
         "ops: allreduce reducescatter allgather alltoall gemm gemv embedding gemm+allreduce\n"
         "     gemm+reducescatter allgather+gemm gemm+alltoall gemv+allreduce embedding+alltoall\n"
         "     interference\n"
         "--op interference: per cuBLAS GEMM shape x collective (--collectives, default "
         "allreduce)\n"
         "  x size (--bytes) x NCCL CTA limit (--ctas; a communicator split with maxCTAs = c and\n"
         "  cgaClusterSize 1, 0 = NCCL's default config), times in one interleaved loop the GEMM\n"
         "  alone, the GEMM while the collective runs back to back on the high-priority stream,\n"
         "  the collective alone and the collective while GEMMs run back to back. Rows: op\n"
         "  interference, design <victim>|<other>:<alone|beside> (e.g. gemm|allreduce:beside,\n"
         "  allreduce|gemm:alone), m n k = the GEMM, bytes = the collective, chunks = the CTA "
         "limit.\n"
         "--min-time-ms T: time at least T ms of work per measurement (and >= --iterations);\n"
         "--warmup-ms W: run the work W ms untimed first (GPU at its steady, power-limited "
         "clock).\n"
         "CSV (nccl-tests style) on stdout; --output writes the same CSV atomically at the end.\n";
}

BenchOptions parse_flags(const std::vector<std::string>& args) {
  BenchOptions o;
  BenchCase c;
  bool have_op = false;
  std::vector<std::string> designs;
  std::int64_t table_rows = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= args.size())
        throw std::invalid_argument("overlap-bench: " + flag + " needs a value");
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") {
      o.help = true;
    } else if (flag == "--suite") {
      o.suite = value();
    } else if (flag == "--op") {
      c.op = value();
      if (!case_kind_of(c.op, &c.kind)) bad(flag, c.op, "a known op (see --help)");
      have_op = true;
    } else if (flag == "--designs" || flag == "--design") {
      designs = split(value(), ',');
    } else if (flag == "--shapes") {
      for (const auto& s : split(value(), ',')) c.shapes.push_back(to_shape(s));
    } else if (flag == "--bytes") {
      for (const auto& s : split(value(), ',')) {
        const auto bytes = config::parse_bytes(s);
        if (!bytes) bad(flag, s, config::kExpectedBytes);
        c.bytes.push_back(*bytes);
      }
    } else if (flag == "--chunks") {
      c.chunks.clear();
      for (const auto& s : split(value(), ','))
        c.chunks.push_back(static_cast<int>(to_int(flag, s, 1)));
    } else if (flag == "--collectives") {
      c.collectives.clear();
      for (const auto& s : split(value(), ',')) {
        if (!parse_collective_op(s))
          bad(flag, s, "allreduce, reducescatter, allgather or alltoall");
        c.collectives.push_back(s);
      }
      if (c.collectives.empty()) bad(flag, "", "a list of collectives");
    } else if (flag == "--ctas") {
      c.ctas.clear();
      for (const auto& s : split(value(), ','))
        c.ctas.push_back(static_cast<int>(to_int(flag, s, 0)));
      if (c.ctas.empty()) bad(flag, "", "a list of CTA limits such as 4,8,16,32,0");
    } else if (flag == "--min-time-ms" || flag == "--warmup-ms") {
      const std::string text = value();
      std::size_t used = 0;
      double ms = -1;
      try {
        ms = std::stod(text, &used);
      } catch (const std::exception&) {
      }
      if (used != text.size() || !(ms >= 0) || ms > 600000)
        bad(flag, text, "milliseconds in [0, 600000]");
      (flag == "--min-time-ms" ? o.min_time_s : o.warmup_s) = ms * 1e-3;
    } else if (flag == "--dtype") {
      const std::string name = value();
      const auto dtype = parse_dtype(name);
      if (!dtype) bad(flag, name, "bf16, fp16 or fp8 (fp8: --op gemm --designs cublas)");
      c.dtype = *dtype;
    } else if (flag == "--table-rows") {
      table_rows = to_int(flag, value(), 1);
    } else if (flag == "--no-parts") {
      c.parts = false;
    } else if (flag == "--iterations") {
      o.iterations = static_cast<int>(to_int(flag, value(), 1));
    } else if (flag == "--warmup") {
      o.warmup = static_cast<int>(to_int(flag, value(), 0));
    } else if (flag == "--world") {
      o.world = static_cast<int>(to_int(flag, value(), 1));
    } else if (flag == "--mpi") {
      o.use_mpi = true;
    } else if (flag == "--nonblocking") {
      o.blocking_comms = false;
    } else if (flag == "--timeout") {
      const std::string text = value();
      const auto seconds = config::parse_duration_s(text);
      if (!seconds || *seconds <= 0) bad(flag, text, config::kExpectedDuration);
      o.timeout_s = *seconds;
    } else if (flag == "--seed") {
      o.seed = static_cast<std::uint64_t>(to_int(flag, value(), 0));
    } else if (flag == "--output") {
      o.output = value();
    } else {
      throw std::invalid_argument("overlap-bench: unknown flag '" + flag + "' (see --help)");
    }
  }
  if (o.help) return o;
  if (have_op == !o.suite.empty())
    throw std::invalid_argument("overlap-bench: give either --suite FILE or --op OP");
  if (have_op) {
    const auto& allowed = designs_for(c.kind, c.op);
    c.designs =
        designs.empty()
            ? (c.kind == CaseKind::Compute ? std::vector<std::string>{allowed.front()} : allowed)
            : designs;
    for (const auto& d : c.designs) {
      bool known = false;
      for (const auto& a : allowed) known = known || a == d;
      if (!known) bad("--designs", d, "a design of " + c.op);
    }
    for (auto& s : c.shapes) s.table_rows = table_rows;
    if (c.kind == CaseKind::Collective && c.bytes.empty())
      throw std::invalid_argument("overlap-bench: --op " + c.op + " needs --bytes");
    if (c.kind == CaseKind::Interference && c.bytes.empty())
      throw std::invalid_argument("overlap-bench: --op interference needs --bytes");
    if (c.kind != CaseKind::Collective && c.shapes.empty())
      throw std::invalid_argument("overlap-bench: --op " + c.op + " needs --shapes");
    try {
      validate_case(c);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("overlap-bench: ") + e.what());
    }
    o.flag_case = c;
  }
  return o;
}

}  // namespace overlapsim::kernels::bench
