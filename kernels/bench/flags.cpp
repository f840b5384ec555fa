#include "kernels/bench/flags.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "config/units.hpp"
#include "kernels/bench/suite.hpp"
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/harness/flag_parse.hpp"

namespace overlapsim::kernels::bench {
namespace {

const std::string kProgram = "overlap-bench";

// `program` starts the message: overlap-bench here, another tool through parse_shape_list.
[[noreturn]] void bad(const std::string& flag, const std::string& value,
                      const std::string& expected, const std::string& program = kProgram) {
  bad_flag(program, flag, value, expected);
}

std::int64_t to_int(const std::string& flag, const std::string& text, std::int64_t min,
                    const std::string& program = kProgram) {
  return flag_int(program, flag, text, min);
}

PairShape to_shape(const std::string& text, const std::string& program = kProgram) {
  const auto dims = split_list(text, 'x');
  if (dims.size() != 3) bad("--shapes", text, "of the form MxNxK (e.g. 4096x4096x4096)", program);
  return {to_int("--shapes", dims[0], 1, program), to_int("--shapes", dims[1], 1, program),
          to_int("--shapes", dims[2], 1, program), 0};
}

// A comma list flag: each item through `item`, at least one.
template <class T, class Parse>
std::vector<T> to_list(const std::string& flag, const std::string& text, const std::string& noun,
                       Parse&& item) {
  std::vector<T> out;
  for (const std::string& v : split_list(text)) out.push_back(item(v));
  if (out.empty()) bad(flag, text, "a list of " + noun);
  return out;
}

// The tile-wise flags and the environment variables that give their defaults.
struct TilewiseFlag {
  const char* flag;
  const char* env;
};
constexpr TilewiseFlag kTilewiseFlags[] = {
    {"--tilewise-transport", "OVERLAPSIM_TILEWISE_TRANSPORT"},
    {"--tilewise-phase2", "OVERLAPSIM_TILEWISE_CE_PHASE2"},
    {"--tilewise-groups", "OVERLAPSIM_TILEWISE_CE_GROUPS"},
    {"--tilewise-slabs", "OVERLAPSIM_TILEWISE_CE_SLABS"},
    {"--tilewise-slab-skew", "OVERLAPSIM_TILEWISE_CE_SLAB_SKEW"},
    {"--tilewise-split-tail", "OVERLAPSIM_TILEWISE_SPLIT_TAIL"},
    {"--tilewise-comm-sms", "OVERLAPSIM_TILEWISE_COMM_SMS"},
    {"--tilewise-wait", "OVERLAPSIM_TILEWISE_WAIT"},
    {"--tilewise-keep", "OVERLAPSIM_TILEWISE_KEEP"},
    {"--tilewise-exhaustive", "OVERLAPSIM_TILEWISE_EXHAUSTIVE"},
    {"--tilewise-cache", "OVERLAPSIM_TILEWISE_CACHE"},
    {"--tilewise-detail", "OVERLAPSIM_TILEWISE_DETAIL"},
    {"--tilewise-timeline", "OVERLAPSIM_TILEWISE_TIMELINE"},
    {"--tilewise-ag-chunks", "OVERLAPSIM_TILEWISE_AG_CHUNKS"},
    {"--tilewise-ag-push", "OVERLAPSIM_TILEWISE_AG_PUSH"},
    {"--tilewise-vendor-chunks", "OVERLAPSIM_TILEWISE_VENDOR_CHUNKS"},
    {"--tilewise-vendor-streams", "OVERLAPSIM_TILEWISE_VENDOR_STREAMS"},
    {"--tilewise-ag-align", "OVERLAPSIM_TILEWISE_AG_ALIGN"},
    {"--tilewise-ag-finalists", "OVERLAPSIM_TILEWISE_AG_FINALISTS"},
    {"--tilewise-clock-states", "OVERLAPSIM_TILEWISE_CLOCK_STATES"}};

bool is_tilewise_flag(const std::string& flag) {
  for (const TilewiseFlag& f : kTilewiseFlags)
    if (flag == f.flag) return true;
  return false;
}

// One tile-wise setting; `name` is the flag (or the variable it came from) for messages.
void set_tilewise(const std::string& flag, const std::string& name, const std::string& value,
                  TilewiseSettings* s) {
  namespace tw = overlapsim::kernels::tilewise;
  if (flag == "--tilewise-transport") {
    s->nccl = s->copy_engine = false;
    for (const std::string& v :
         to_list<std::string>(name, value, "transports", [](auto v) { return v; })) {
      if (v == "nccl") {
        s->nccl = true;
      } else if (v == "copy_engine") {
        s->copy_engine = true;
      } else {
        bad(name, v, "a transport (expected nccl and/or copy_engine)");
      }
    }
  } else if (flag == "--tilewise-phase2") {
    s->phase2_modes.clear();
    for (const auto mode :
         to_list<tw::CopyEnginePhase2>(name, value, "phase-2 modes", [&](const std::string& v) {
           const auto m = tw::parse_owner_phase2(v);
           if (!m)
             bad(name, v, "a phase-2 mode (expected copy_engine, epilogue and/or tail_kernel)");
           return *m;
         }))
      if (std::find(s->phase2_modes.begin(), s->phase2_modes.end(), mode) == s->phase2_modes.end())
        s->phase2_modes.push_back(mode);
  } else if (flag == "--tilewise-groups") {
    s->ce_groups = to_list<int>(name, value, "group counts", [&](const std::string& v) {
      return static_cast<int>(flag_int(kProgram, name, v, 1, 1024));
    });
  } else if (flag == "--tilewise-slabs") {
    s->ce_slabs = to_list<int>(name, value, "slab counts", [&](const std::string& v) {
      return static_cast<int>(flag_int(kProgram, name, v, 1, 64));
    });
  } else if (flag == "--tilewise-split-tail") {
    s->split_tail = to_list<int>(name, value, "split counts", [&](const std::string& v) {
      return static_cast<int>(flag_int(kProgram, name, v, 1, 8));
    });
  } else if (flag == "--tilewise-slab-skew") {
    s->ce_slab_skew = to_list<int>(name, value, "slab orders", [&](const std::string& v) {
      return static_cast<int>(flag_int(kProgram, name, v, 0, 1));
    });
  } else if (flag == "--tilewise-comm-sms") {
    s->comm_sms = to_list<int>(name, value, "SM counts", [&](const std::string& v) {
      return static_cast<int>(flag_int(kProgram, name, v, 0, 64));
    });
  } else if (flag == "--tilewise-wait") {
    s->waits = to_list<tw::WaitMode>(name, value, "wait modes", [&](const std::string& v) {
      const auto m = tw::parse_wait_mode(v);
      if (!m) bad(name, v, "a wait mode (expected kernel and/or stream_memop)");
      return *m;
    });
  } else if (flag == "--tilewise-keep") {
    s->keep = static_cast<int>(flag_int(kProgram, name, value, 1, 1 << 20));
  } else if (flag == "--tilewise-exhaustive") {
    s->exhaustive_limit = static_cast<int>(flag_int(kProgram, name, value, 1, 1 << 20));
  } else if (flag == "--tilewise-cache") {
    s->cache_path = value;
  } else if (flag == "--tilewise-detail") {
    s->detail_path = value;
  } else if (flag == "--tilewise-timeline") {
    s->timeline_path = value;
  } else if (flag == "--tilewise-ag-chunks") {
    s->ag_chunks = to_list<int>(name, value, "chunk counts", [&](const std::string& v) {
      return static_cast<int>(flag_int(kProgram, name, v, 1, 64));
    });
  } else if (flag == "--tilewise-vendor-chunks") {
    s->vendor_chunks.clear();
    for (const int c : to_list<int>(name, value, "chunk counts", [&](const std::string& v) {
           return static_cast<int>(flag_int(kProgram, name, v, 0, 64));
         }))
      if (c > 0) s->vendor_chunks.push_back(c);
  } else if (flag == "--tilewise-vendor-streams") {
    s->vendor_streams = to_list<int>(name, value, "stream counts", [&](const std::string& v) {
      return static_cast<int>(flag_int(kProgram, name, v, 1, 2));
    });
  } else if (flag == "--tilewise-ag-align") {
    s->ag_align = to_list<int>(name, value, "start modes", [&](const std::string& v) {
      return static_cast<int>(flag_int(kProgram, name, v, 0, 1));
    });
  } else if (flag == "--tilewise-ag-finalists") {
    s->ag_finalists = static_cast<int>(flag_int(kProgram, name, value, 0, 16));
  } else if (flag == "--tilewise-clock-states") {
    s->clock_states = flag_int(kProgram, name, value, 0, 1) != 0;
  } else if (flag == "--tilewise-ag-push") {
    s->ag_push = to_list<tw::AllGatherPush>(name, value, "push modes", [&](const std::string& v) {
      const auto m = tw::parse_allgather_push(v);
      if (!m) bad(name, v, "a push mode (expected rotated and/or per_peer)");
      return *m;
    });
  }
}

// Defaults from the environment, so scripts that set the variables keep working.
void tilewise_from_env(const EnvLookup& env, TilewiseSettings* s) {
  for (const TilewiseFlag& f : kTilewiseFlags)
    if (const auto value = env(f.env)) set_tilewise(f.flag, f.env, *value, s);
}

}  // namespace

std::optional<std::string> process_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::vector<PairShape> parse_shape_list(const std::string& text, const std::string& program) {
  std::vector<PairShape> shapes;
  for (const auto& s : split_list(text)) shapes.push_back(to_shape(s, program));
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
         "         [--trace] [--tilewise-* ...] [--shaped-algos FILE] [--shaped-paired FILE]\n"
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
         "--trace: every stream wait and rendezvous logs its rank on stderr (where a hung run\n"
         "  waits; default from OVERLAPSIM_TRACE).\n"
         "--shaped-algos FILE: design shaped appends, per shape and grid point, the tile,\n"
         "  cluster and split-K cuBLASLt chose for the chunk GEMM (CSV, rank 0).\n"
         "--shaped-paired FILE: design shaped appends, per shape and round of its paired loop,\n"
         "  the times of sequential, decomposed and its choice (CSV, rank 0).\n"
         "design tilewise (defaults from the OVERLAPSIM_TILEWISE_* variables of older scripts):\n"
         "  --tilewise-transport nccl,copy_engine  transports to tune and time\n"
         "  --tilewise-phase2 copy_engine,epilogue,tail_kernel  all-reduce phase-2 modes of the\n"
         "      copy-engine transport the tuner may time\n"
         "  --tilewise-groups 2,4,8,16  copy-engine groups per part to time\n"
         "  --tilewise-slabs 1,2,4  copy-engine ring all-reduce: slab counts to time\n"
         "  --tilewise-slab-skew 0,1  with slabs: plain and/or skewed slab order\n"
         "  --tilewise-split-tail 1,2,4  copy-engine and AllGather+GEMM: the own GEMM's last wave\n"
         "      split in this many ranges of K, tried on the best candidate (1: unsplit)\n"
         "  --tilewise-comm-sms 16  SM counts left to NCCL to search (0..64)\n"
         "  --tilewise-wait kernel,stream_memop  the NCCL transport's wait modes\n"
         "  --tilewise-keep 6 / --tilewise-exhaustive 16  predicted partitions timed / waves up\n"
         "      to which every partition is timed\n"
         "  --tilewise-cache FILE  tuning cache YAML (a hit skips the search)\n"
         "  --tilewise-detail FILE  every candidate's predicted and measured time (CSV)\n"
         "  --tilewise-timeline FILE  the chosen copy-engine call's step times over 5 calls\n"
         "  --tilewise-ag-chunks 1,2,4  allgather+gemm: chunks a row block is pushed in\n"
         "  --tilewise-ag-push rotated,per_peer  allgather+gemm: one stream or one a peer\n"
         "  --tilewise-vendor-chunks 1  allgather+gemm and gemm+reducescatter: per-chunk cuBLASLt\n"
         "      candidates on the copy engines, chunks a row block is cut into (0: none)\n"
         "  --tilewise-vendor-streams 1  allgather+gemm: the vendor candidates' GEMMs on 1\n"
         "      and/or 2 alternating streams\n"
         "  --tilewise-ag-align 1  allgather+gemm: candidates with (1) and/or without (0) the\n"
         "      start barrier\n"
         "  --tilewise-ag-finalists 0  allgather+gemm: time up to this many of the search's\n"
         "      best back to back steady and burst and choose the best in its worse state\n"
         "  --tilewise-clock-states 0  gemm+reducescatter: also time sequential, the GEMM\n"
         "      and each family's choice steady and burst (torch_overlap.py --warmup-ms/--idle-s)\n"
         "CSV (nccl-tests style) on stdout; --output writes the same CSV atomically at the end.\n";
}

BenchOptions parse_flags(const std::vector<std::string>& args, const EnvLookup& env) {
  BenchOptions o;
  BenchCase c;
  bool have_op = false;
  std::vector<std::string> designs;
  std::int64_t table_rows = 0;
  tilewise_from_env(env, &o.tilewise);
  if (const auto trace = env("OVERLAPSIM_TRACE")) o.trace = *trace != "0";
  FlagCursor cursor(kProgram, args);
  std::string flag;
  while (cursor.next(&flag)) {
    const auto value = [&] { return cursor.value(); };
    if (is_tilewise_flag(flag)) {
      set_tilewise(flag, flag, value(), &o.tilewise);
    } else if (flag == "--trace") {
      o.trace = true;
    } else if (flag == "--help" || flag == "-h") {
      o.help = true;
    } else if (flag == "--suite") {
      o.suite = value();
    } else if (flag == "--op") {
      c.op = value();
      if (!case_kind_of(c.op, &c.kind)) bad(flag, c.op, "a known op (see --help)");
      have_op = true;
    } else if (flag == "--designs" || flag == "--design") {
      designs = split_list(value());
    } else if (flag == "--shapes") {
      for (const auto& s : split_list(value())) c.shapes.push_back(to_shape(s));
    } else if (flag == "--bytes") {
      for (const auto& s : split_list(value())) {
        const auto bytes = config::parse_bytes(s);
        if (!bytes) bad(flag, s, config::kExpectedBytes);
        c.bytes.push_back(*bytes);
      }
    } else if (flag == "--chunks") {
      c.chunks.clear();
      for (const auto& s : split_list(value()))
        c.chunks.push_back(static_cast<int>(to_int(flag, s, 1)));
    } else if (flag == "--collectives") {
      c.collectives.clear();
      for (const auto& s : split_list(value())) {
        if (!parse_collective_op(s))
          bad(flag, s, "allreduce, reducescatter, allgather or alltoall");
        c.collectives.push_back(s);
      }
      if (c.collectives.empty()) bad(flag, "", "a list of collectives");
    } else if (flag == "--ctas") {
      c.ctas.clear();
      for (const auto& s : split_list(value()))
        c.ctas.push_back(static_cast<int>(to_int(flag, s, 0)));
      if (c.ctas.empty()) bad(flag, "", "a list of CTA limits such as 4,8,16,32,0");
    } else if (flag == "--min-time-ms" || flag == "--warmup-ms") {
      const double ms =
          flag_double(kProgram, flag, value(), 0, 600000, "milliseconds in [0, 600000]");
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
    } else if (flag == "--shaped-algos") {
      o.shaped_algos = value();
    } else if (flag == "--shaped-paired") {
      o.shaped_paired = value();
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
