#include "kernels/gemm/gemm_bench_flags.hpp"

#include <cctype>
#include <stdexcept>

#include "kernels/harness/flag_parse.hpp"

namespace overlapsim::kernels::gemm {
namespace {

const std::string kProgram = "own-gemm-bench";

int to_int(const std::string& flag, const std::string& text, std::int64_t min,
           std::int64_t max = 1 << 30) {
  return static_cast<int>(flag_int(kProgram, flag, text, min, max));
}

std::vector<GemmBenchShape> to_shapes(const std::string& flag, const std::string& text) {
  std::vector<GemmBenchShape> shapes;
  for (const std::string& item : split_list(text)) {
    const std::vector<std::string> dims = split_list(item, 'x');
    if (dims.size() != 3) bad_flag(kProgram, flag, item, "of the form MxNxK");
    shapes.push_back({flag_int(kProgram, flag, dims[0], 1), flag_int(kProgram, flag, dims[1], 1),
                      flag_int(kProgram, flag, dims[2], 1)});
  }
  if (shapes.empty()) bad_flag(kProgram, flag, text, "a list of MxNxK");
  return shapes;
}

}  // namespace

bool parse_gemm_variant(const std::string& text, GemmBenchVariant* v) {
  if (text.empty() || (text[0] != '2' && text[0] != '3')) return false;
  *v = GemmBenchVariant{};
  v->version = text[0] - '0';
  v->name = "own_v" + text;
  std::size_t i = 1;
  if (i < text.size() && text[i] == 's') {
    std::size_t end = i + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    const std::string steps = text.substr(i + 1, end - i - 1);
    if (steps != "1" && steps != "2" && steps != "4" && steps != "8") return false;
    v->store_steps = std::stoi(steps);
    i = end;
  }
  if (i < text.size() && text[i] == 'v') {
    v->vector_stores = 1;
    ++i;
  }
  if (i < text.size() && text[i] == 'n') {  // scalar 4-byte stores
    v->vector_stores = 0;
    ++i;
  }
  if (i < text.size() && text[i] == 'i') {  // immediate (v1) stores instead of deferred
    v->immediate = true;
    ++i;
  }
  if (i + 1 < text.size() && text[i] == 'k' && text[i + 1] >= '2' && text[i + 1] <= '8') {
    v->split_k_tail = text[i + 1] - '0';  // split last wave, k2 .. k8
    i += 2;
  }
  return i == text.size();
}

GemmBenchOptions parse_gemm_bench_flags(const std::vector<std::string>& args) {
  GemmBenchOptions o;
  FlagCursor cursor(kProgram, args);
  std::string flag;
  while (cursor.next(&flag)) {
    if (flag == "--shapes") {
      o.shapes = to_shapes(flag, cursor.value());
    } else if (flag == "--dtype") {
      const std::string d = cursor.value();
      if (d != "bf16" && d != "fp16") bad_flag(kProgram, flag, d, "bf16 or fp16");
      o.dtype = d == "bf16" ? DType::kBf16 : DType::kFp16;
    } else if (flag == "--iters") {
      o.iters = to_int(flag, cursor.value(), 1);
    } else if (flag == "--warmup") {
      o.warmup = to_int(flag, cursor.value(), 0);
    } else if (flag == "--group-m") {
      o.group_m = to_int(flag, cursor.value(), 1);
    } else if (flag == "--num-ctas") {
      o.num_ctas = to_int(flag, cursor.value(), 0);
    } else if (flag == "--cublas-candidates") {
      o.cublas_candidates = to_int(flag, cursor.value(), 1);
    } else if (flag == "--defer-stores") {
      o.defer_stores = to_int(flag, cursor.value(), 0, 1) != 0;
    } else if (flag == "--versions") {
      const std::string text = cursor.value();
      o.versions.clear();
      for (const std::string& item : split_list(text)) {
        GemmBenchVariant v;
        if (!parse_gemm_variant(item, &v))
          bad_flag(kProgram, flag, item, "a version 2|3[s1|s2|s4|s8][v|n][i][k2..k8]");
        o.versions.push_back(v);
      }
      if (o.versions.empty()) bad_flag(kProgram, flag, text, "a list of versions such as 3,2");
    } else if (flag == "--driver") {
      o.driver = cursor.value();
    } else if (flag == "--cublas-algo") {
      o.cublas_algo = to_int(flag, cursor.value(), -1);
    } else if (flag == "--gaps-us") {
      const std::string text = cursor.value();
      o.gaps_us.clear();
      for (const std::string& item : split_list(text)) {
        const double gap = flag_double(kProgram, flag, item, 0, 1e6, "a gap in us in (0, 1e6]");
        if (!(gap > 0)) bad_flag(kProgram, flag, item, "a gap in us in (0, 1e6]");
        o.gaps_us.push_back(gap);
      }
      if (o.gaps_us.empty()) bad_flag(kProgram, flag, text, "a list of gaps in us");
    } else if (flag == "--sustain-ms") {
      o.sustain_ms = flag_double(kProgram, flag, cursor.value(), 0, 60000, "0 to 60000 (ms)");
    } else {
      throw std::invalid_argument(kProgram + ": unknown flag '" + flag + "'");
    }
  }
  if (!o.gaps_us.empty() && !(o.sustain_ms > 0))
    throw std::invalid_argument(kProgram + ": --gaps-us needs --sustain-ms > 0");
  return o;
}

}  // namespace overlapsim::kernels::gemm
