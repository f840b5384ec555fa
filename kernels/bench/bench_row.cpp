#include "kernels/bench/bench_row.hpp"

#include <cuda_runtime.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "kernels/harness/comm.hpp"

namespace overlapsim::kernels::bench {
namespace {

std::string without_commas(std::string text) {
  for (char& c : text)
    if (c == ',') c = ' ';
  return text;
}

std::string version_text(int code) {  // 13000 -> "13.0"
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

// The kernel module's version line ("NVRM version: NVIDIA UNIX Open Kernel Module for
// x86_64  580.159.04  Release Build ...") names the driver: the first dotted number after
// "Module". Without it, fall back to the CUDA version the driver supports.
std::string driver_version() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string word;
  bool after_module = false;
  while (file >> word) {
    if (word == "Module") after_module = true;
    if (after_module && std::isdigit(static_cast<unsigned char>(word[0])) &&
        word.find('.') != std::string::npos)
      return word;
  }
  int code = 0;
  cudaDriverGetVersion(&code);
  return "cuda-driver-" + version_text(code);
}

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

}  // namespace

RowBuilder::RowBuilder(std::string op, std::string design, std::string dtype) {
  row_.op = std::move(op);
  row_.design = std::move(design);
  row_.dtype = std::move(dtype);
}

RowBuilder& RowBuilder::shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  row_.m = m;
  row_.n = n;
  row_.k = k;
  return *this;
}

RowBuilder& RowBuilder::bytes(std::uint64_t bytes) {
  row_.bytes = bytes;
  return *this;
}

RowBuilder& RowBuilder::chunks(int chunks) {
  row_.chunks = chunks;
  return *this;
}

RowBuilder& RowBuilder::time(const Timing& t) { return times(t.median_s, t.min_s, t.max_s); }

RowBuilder& RowBuilder::times(double median_s, double min_s, double max_s) {
  row_.time_s = median_s;
  row_.time_min_s = min_s;
  row_.time_max_s = max_s;
  return *this;
}

RowBuilder& RowBuilder::flops(double flops) {
  row_.flops = flops;
  return *this;
}

RowBuilder& RowBuilder::busbw_factor(double factor) {
  row_.busbw_factor = factor;
  return *this;
}

RowBuilder& RowBuilder::wrong(std::uint64_t wrong) {
  row_.wrong = wrong;
  return *this;
}

DeviceTags read_device_tags(int world) {
  DeviceTags tags;
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaGetDeviceProperties(&prop, device) == cudaSuccess)
    tags.gpu = without_commas(prop.name);
  else
    tags.gpu = "unknown";
  tags.driver = driver_version();
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  tags.cuda = version_text(runtime);
  tags.nccl = nccl_version_string();
  tags.world = world;
  return tags;
}

std::string csv_header() {
  return "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
         "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong";
}

std::string csv_line(const DeviceTags& tags, const BenchRow& row) {
  const double tflops = row.flops > 0 && row.time_s > 0 ? row.flops / row.time_s / 1e12 : 0.0;
  const double algbw =
      row.bytes > 0 && row.time_s > 0 ? static_cast<double>(row.bytes) / row.time_s / 1e9 : 0.0;
  std::ostringstream line;
  line << tags.gpu << ',' << tags.driver << ',' << tags.cuda << ',' << tags.nccl << ','
       << tags.world << ',' << row.op << ',' << row.design << ',' << row.dtype << ',' << row.m
       << ',' << row.n << ',' << row.k << ',' << row.bytes << ',' << row.chunks << ','
       << fixed(row.time_s * 1e6, 2) << ',' << fixed(row.time_min_s * 1e6, 2) << ','
       << fixed(row.time_max_s * 1e6, 2) << ',' << fixed(tflops, 2) << ',' << fixed(algbw, 2) << ','
       << fixed(algbw * row.busbw_factor, 2) << ',' << row.wrong;
  return line.str();
}

}  // namespace overlapsim::kernels::bench
