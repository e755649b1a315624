// All-reduce bandwidth through the runtime (NCCL on GPUs; on CPU shared memory among the
// processes of a host, Gloo between hosts), reported as nccl-tests does:
// algbw = bytes / time, busbw = algbw * 2 (n - 1) / n.
//   accelerate launch --num_processes N allreduce_bandwidth [--sizes 1M,16M,1G] [--iters 20] [--warmup 5]
//                                                            [--compare-gloo 1]
// --compare-gloo 1 times, for each size, the runtime's all-reduce and the process group's
// own (Gloo) in alternating rounds (--rounds, 3), and prints a line for each (path=runtime,
// path=gloo) with the medians: bench/run.py's shared-memory / Gloo bandwidth ratios.
// Each size is an fp32 tensor on accelerator.device(), all-reduced (sum) in place. Every
// size is checked first: process r contributes r + 1 everywhere, so each element must
// become n (n + 1) / 2; a wrong sum makes every process exit with status 1.
// With one process there is no all-reduce (busbw is 0 by definition): the program then
// times a device-memory copy of the same bytes instead, as a baseline (copy_gbs).
// See docs/benchmarks.md.
#include <accelerate/accelerate.h>
#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/comm/detail/process_state.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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
  bool compare_gloo = false;  // also time the process group's own all-reduce (Gloo)
  int64_t rounds = 3;         // alternating rounds of the comparison
};

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "allreduce_bandwidth: " << message
            << "\nusage: allreduce_bandwidth [--sizes S1,S2,...] [--iters N] [--warmup N] [--corrupt-rank R]\n"
               "                           [--compare-gloo 1 [--rounds N]]\n"
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
  if (suffix == "K" || suffix == "k")
    scale = int64_t{1} << 10;
  else if (suffix == "M" || suffix == "m")
    scale = int64_t{1} << 20;
  else if (suffix == "G" || suffix == "g")
    scale = int64_t{1} << 30;
  else if (!suffix.empty())
    usage_error("bad size suffix in '" + text + "' (expected K, M or G)");
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
    } else if (k == "--compare-gloo") {
      a.compare_gloo = v == "1";
    } else if (k == "--rounds") {
      try {
        a.rounds = std::max<int64_t>(1, std::stoll(v));
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

// All threads of this process (the communication threads included): what an all-reduce
// costs in CPU, whatever else runs on the machine.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
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

  bool gloo = false;  // the process group's own all-reduce instead of the runtime's

  // In place, as the runtime's collectives do (shared memory among the processes of a host),
  // without the copy that Accelerator::reduce makes (nccl-tests times in-place all-reduces
  // too); with `gloo`, through the process group itself.
  void allreduce(std::vector<torch::Tensor>& t) {
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::SUM;
    if (gloo) {
      ps.run("all_reduce (allreduce_bandwidth, gloo)",
             [&](accelerate::detail::CommGroup& g) { return g.allreduce(t, o); });
    } else {
      ps.run("all_reduce (allreduce_bandwidth)", [&](accelerate::detail::CommGroup&) { return ps.allreduce(t, o); });
    }
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
                << " bytes: element " << at << " is " << (at >= 0 ? t[0][at].item<double>() : 0.0) << ", expected "
                << expected << "\n";
    }
    auto all_ok = acc.reduce(torch::tensor({ok ? 1 : 0}, torch::kInt32), accelerate::ReduceOp::Min);
    return all_ok.item<int>() == 1;
  }

  double cpu_seconds = 0;  // of the last time_per_iter: CPU time per iteration, all threads, mean over processes

  // Seconds per iteration of `body`, on the slowest process.
  template <typename F>
  double time_per_iter(int64_t warmup, int64_t iters, F&& body) {
    for (int64_t i = 0; i < warmup; ++i) body();
    sync_device(device);
    acc.wait_for_everyone();
    const auto t0 = Clock::now();
    const double c0 = process_cpu_seconds();
    for (int64_t i = 0; i < iters; ++i) body();
    sync_device(device);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(iters);
    const double cpu = (process_cpu_seconds() - c0) / static_cast<double>(iters);
    cpu_seconds = acc.reduce(torch::tensor({cpu}, torch::kFloat64), accelerate::ReduceOp::Mean).item<double>();
    return acc.reduce(torch::tensor({seconds}, torch::kFloat64), accelerate::ReduceOp::Max).item<double>();
  }
};

int run(const Args& args) {
  accelerate::Accelerator acc;
  auto& ps = accelerate::detail::AcceleratorAccess::process_state(acc);
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
  // What the runtime's own all-reduce goes through here.
  const std::string path_name = ps.shm ? "shm" : n > 1 ? ps.backend : "none";
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
      const std::vector<bool> paths = args.compare_gloo ? std::vector<bool>{false, true} : std::vector<bool>{false};
      std::vector<std::vector<double>> times(paths.size()), cpu(paths.size());
      for (int64_t round = 0; round < (args.compare_gloo ? args.rounds : 1); ++round) {
        for (size_t i = 0; i < paths.size(); ++i) {
          const size_t p = round % 2 ? paths.size() - 1 - i : i;  // alternate which path goes first
          r.gloo = paths[p];
          if (!r.verified_allreduce(t, bytes)) {
            acc.print("allreduce_bandwidth: the all-reduce of ", bytes, " bytes gave a wrong sum (see stderr)");
            return 1;
          }
          times[p].push_back(r.time_per_iter(warmup, iters, [&] { r.allreduce(t); }));
          cpu[p].push_back(r.cpu_seconds);
          // The timed loop leaves growing sums in the buffer: check a fresh all-reduce after it too.
          if (!r.verified_allreduce(t, bytes)) {
            acc.print("allreduce_bandwidth: the all-reduce of ", bytes, " bytes gave a wrong sum after timing");
            return 1;
          }
        }
      }
      for (size_t p = 0; p < paths.size(); ++p) {
        std::sort(times[p].begin(), times[p].end());
        std::sort(cpu[p].begin(), cpu[p].end());
        const double s = times[p][times[p].size() / 2];
        const double algbw = static_cast<double>(bytes) / s / 1e9;
        const double busbw = algbw * 2.0 * static_cast<double>(n - 1) / static_cast<double>(n);
        std::ostringstream row;
        row << line.str() << " algbw_gbs=" << format_gbs(algbw) << " busbw_gbs=" << format_gbs(busbw)
            << " time_us=" << s * 1e6 << " cpu_us=" << cpu[p][cpu[p].size() / 2] * 1e6 << " processes=" << n
            << " backend=" << backend << " device=" << device.str() << " iters=" << iters
            << " path=" << (paths[p] ? "gloo" : path_name);
        acc.print(row.str());
      }
      continue;
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
