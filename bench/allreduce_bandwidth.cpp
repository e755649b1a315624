// All-reduce bandwidth through the runtime's process group (NCCL on GPUs, Gloo on CPU),
// reported as nccl-tests does: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n.
//   accelerate launch --num_processes N allreduce_bandwidth [--sizes 1M,16M,1G] [--iters 20] [--warmup 5]
// Each size is an fp32 tensor on accelerator.device(), all-reduced (sum) in place. Every
// size is checked first: process r contributes r + 1 everywhere, so each element must
// become n (n + 1) / 2; a wrong sum makes every process exit with status 1.
// With one process there is no all-reduce (busbw is 0 by definition): the program then
// times a device-memory copy of the same bytes instead, as a baseline (copy_gbs).
// See docs/benchmarks.md.
#include <accelerate/accelerate.h>
#include <accelerate/process_state.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::vector<int64_t> sizes;  // bytes; empty = the device's default list
  int64_t iters = 0;           // 0 = the device's default
  int64_t warmup = -1;
  int64_t corrupt_rank = -1;  // this process contributes a wrong value (tests the check)
};

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "allreduce_bandwidth: " << message
            << "\nusage: allreduce_bandwidth [--sizes S1,S2,...] [--iters N] [--warmup N] [--corrupt-rank R]\n"
               "  sizes in bytes with an optional K, M or G suffix (powers of 1024), multiples of 4 (fp32);\n"
               "  --corrupt-rank R: process R contributes a wrong value, so the check must fail (for tests)\n";
  std::exit(2);
}

int64_t parse_size(const std::string& text) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    usage_error("bad size '" + text + "'");
  }
  int64_t scale = 1;
  const std::string suffix = text.substr(used);
  if (suffix == "K" || suffix == "k") scale = int64_t{1} << 10;
  else if (suffix == "M" || suffix == "m") scale = int64_t{1} << 20;
  else if (suffix == "G" || suffix == "g") scale = int64_t{1} << 30;
  else if (!suffix.empty()) usage_error("bad size suffix in '" + text + "' (expected K, M or G)");
  const int64_t bytes = value * scale;
  if (bytes <= 0 || bytes % 4 != 0) usage_error("size '" + text + "' must be a positive multiple of 4 bytes");
  return bytes;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage_error("missing value for " + k);
    const std::string v = argv[++i];
    if (k == "--sizes") {
      std::stringstream ss(v);
      for (std::string item; std::getline(ss, item, ',');) a.sizes.push_back(parse_size(item));
    } else if (k == "--corrupt-rank") {
      try {
        a.corrupt_rank = std::stoll(v);
      } catch (const std::exception&) {
        usage_error("bad number '" + v + "' for " + k);
      }
    } else if (k == "--iters" || k == "--warmup") {
      int64_t n = 0;
      try {
        n = std::stoll(v);
      } catch (const std::exception&) {
        usage_error("bad number '" + v + "' for " + k);
      }
      if (n < (k == "--iters" ? 1 : 0)) usage_error(k + " must be " + (k == "--iters" ? "positive" : ">= 0"));
      (k == "--iters" ? a.iters : a.warmup) = n;
    } else {
      usage_error("unknown argument " + k);
    }
  }
  return a;
}

// Device work is asynchronous: a timing must wait for it (a no-op on CPU).
void sync_device(const torch::Device& device) {
  // torch::cuda::synchronize(int64_t device_index) is in <torch/cuda.h> in LibTorch 1.13 and 2.x.
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// Fixed-point (no exponent, for simple parsers), with enough digits for the tiny CPU sizes.
std::string format_gbs(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.1f" : v >= 1 ? "%.3f" : "%.6f", v);
  return buf;
}

struct Runner {
  accelerate::Accelerator& acc;
  accelerate::detail::ProcessState& ps;
  torch::Device device;
  int64_t n;
  int64_t corrupt_rank;

  // In place, through the same process group the gradient synchronisation uses, without
  // the copy that Accelerator::reduce makes (nccl-tests times in-place all-reduces too).
  void allreduce(std::vector<torch::Tensor>& t) {
    ps.run("all_reduce (allreduce_bandwidth)", [&](accelerate::detail::CommGroup& g) {
      c10d::AllreduceOptions o;
      o.reduceOp = c10d::ReduceOp::SUM;
      return g.allreduce(t, o);
    });
  }

  // Fills with rank + 1, all-reduces once, and checks every element on every process.
  // The verdict is itself all-reduced so that all processes stop together on a wrong sum.
  bool verified_allreduce(std::vector<torch::Tensor>& t, int64_t bytes) {
    t[0].fill_(static_cast<double>(acc.process_index() + 1));
    if (acc.process_index() == corrupt_rank) t[0][t[0].numel() - 1].fill_(-1.0);
    allreduce(t);
    const double expected = static_cast<double>(n * (n + 1) / 2);
    const bool ok = t[0].eq(expected).all().item<bool>();
    if (!ok) {
      const auto wrong = t[0].ne(expected).nonzero();
      const int64_t at = wrong.size(0) > 0 ? wrong[0][0].item<int64_t>() : -1;
      std::cerr << "allreduce_bandwidth: WRONG SUM on process " << acc.process_index() << " for " << bytes
                << " bytes: element " << at << " is " << (at >= 0 ? t[0][at].item<double>() : 0.0)
                << ", expected " << expected << "\n";
    }
    auto all_ok = acc.reduce(torch::tensor({ok ? 1 : 0}, torch::kInt32), accelerate::ReduceOp::Min);
    return all_ok.item<int>() == 1;
  }

  // Seconds per iteration of `body`, on the slowest process.
  template <typename F>
  double time_per_iter(int64_t warmup, int64_t iters, F&& body) {
    for (int64_t i = 0; i < warmup; ++i) body();
    sync_device(device);
    acc.wait_for_everyone();
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < iters; ++i) body();
    sync_device(device);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(iters);
    return acc.reduce(torch::tensor({seconds}, torch::kFloat64), accelerate::ReduceOp::Max).item<double>();
  }
};

int run(const Args& args) {
  accelerate::Accelerator acc;
  auto& ps = acc.process_state();
  const torch::Device device = acc.device();
  const int64_t n = acc.num_processes();
  const bool gpu = device.is_cuda();
  std::vector<int64_t> sizes = args.sizes;
  if (sizes.empty()) {
    // 1 MiB .. 1 GiB on a GPU (nccl-tests' range for bandwidth); up to 16 MiB on CPU.
    for (int64_t s = int64_t{1} << 20; s <= (gpu ? int64_t{1} << 30 : int64_t{16} << 20); s *= 4) sizes.push_back(s);
  }
  const int64_t iters = args.iters > 0 ? args.iters : gpu ? 20 : 5;
  const int64_t warmup = args.warmup >= 0 ? args.warmup : gpu ? 5 : 1;
  const std::string backend = n > 1 ? ps.backend : "none";
  acc.print("allreduce_bandwidth: ", n, " process(es), backend ", backend, ", device ", device.str(),
            ", fp32, in-place sum; ", warmup, " warm-up and ", iters, " timed iterations per size",
            n > 1 ? "" : "; one process: no all-reduce (busbw 0 by definition), device copy timed instead");

  Runner r{acc, ps, device, n, args.corrupt_rank};
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  for (const int64_t bytes : sizes) {
    std::vector<torch::Tensor> t{torch::empty({bytes / 4}, options)};
    std::ostringstream line;
    line << "bench: size_bytes=" << bytes;
    if (n > 1) {
      if (!r.verified_allreduce(t, bytes)) {
        acc.print("allreduce_bandwidth: the all-reduce of ", bytes, " bytes gave a wrong sum (see stderr)");
        return 1;
      }
      const double s = r.time_per_iter(warmup, iters, [&] { r.allreduce(t); });
      // The timed loop leaves growing sums in the buffer: check a fresh all-reduce after it too.
      if (!r.verified_allreduce(t, bytes)) {
        acc.print("allreduce_bandwidth: the all-reduce of ", bytes, " bytes gave a wrong sum after timing");
        return 1;
      }
      const double algbw = static_cast<double>(bytes) / s / 1e9;
      const double busbw = algbw * 2.0 * static_cast<double>(n - 1) / static_cast<double>(n);
      line << " algbw_gbs=" << format_gbs(algbw) << " busbw_gbs=" << format_gbs(busbw) << " time_us=" << s * 1e6;
    } else {
      auto dst = torch::empty_like(t[0]);
      t[0].fill_(1.0);
      const double s = r.time_per_iter(warmup, iters, [&] { dst.copy_(t[0]); });
      if (!dst.eq(1.0).all().item<bool>()) {
        std::cerr << "allreduce_bandwidth: the device copy of " << bytes << " bytes is wrong\n";
        return 1;
      }
      line << " algbw_gbs=0 busbw_gbs=0 copy_gbs=" << format_gbs(static_cast<double>(bytes) / s / 1e9)
           << " time_us=" << s * 1e6;
    }
    line << " processes=" << n << " backend=" << backend << " device=" << device.str() << " iters=" << iters;
    acc.print(line.str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "allreduce_bandwidth: " << e.what() << "\n";
    return 1;
  }
}
