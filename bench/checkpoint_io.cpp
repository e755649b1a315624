// Checkpoint cost: accelerator.save_state + load_state of a model with AdamW state against
// torch::save + torch::load of the same tensors (one file), in the same process, interleaved
// rounds, medians of per-round ratios; also the bytes each writes. save_state flushes every
// file to disk (fsync) so that a checkpoint survives a crash; plain torch::save does not, so
// the baseline is also timed with one fsync of its file (the like-for-like durable save).
//   checkpoint_io [--params_m 100] [--repeats 3] [--dir DIR]
#include <accelerate/accelerate.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

uint64_t bytes_under(const fs::path& p) {
  if (fs::is_regular_file(p)) return fs::file_size(p);
  uint64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(p)) {
    if (e.is_regular_file()) n += e.file_size();
  }
  return n;
}

void fsync_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd >= 0) {
    (void)::fsync(fd);
    ::close(fd);
  }
}

// The baseline saves the same tensors (parameters, AdamW's two moments) in one torch::save.
std::vector<torch::Tensor> baseline_tensors(torch::nn::Module& model, torch::optim::AdamW& opt) {
  std::vector<torch::Tensor> tensors;
  for (auto& p : model.parameters()) tensors.push_back(p.detach());
  for (auto& entry : opt.state()) {  // keyed by a string in LibTorch 1.13, a pointer in 2.x
    auto& s = static_cast<torch::optim::AdamWParamState&>(*entry.second);
    tensors.push_back(s.exp_avg());
    tensors.push_back(s.exp_avg_sq());
  }
  return tensors;
}

int run(int64_t params_m, int repeats, const fs::path& dir) {
  accelerate::Accelerator acc;
  // Square layers of width 4096 (16.8M parameters each); one narrower layer for small sizes.
  const int64_t width = std::min<int64_t>(4096, static_cast<int64_t>(std::sqrt(static_cast<double>(params_m) * 1e6)));
  const int64_t layers = std::max<int64_t>(1, (params_m * 1000000 + width * width / 2) / (width * width + width));
  torch::nn::Sequential model;
  for (int64_t i = 0; i < layers; ++i) model->push_back(torch::nn::Linear(width, width));
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-4));
  acc.prepare(model, opt);
  for (auto& p : model->parameters()) p.mutable_grad() = torch::randn_like(p);
  opt.step();  // AdamW now holds exp_avg and exp_avg_sq for every parameter
  int64_t numel = 0;
  for (auto& p : model->parameters()) numel += p.numel();
  const std::vector<torch::Tensor> tensors = baseline_tensors(*model, opt);
  fs::create_directories(dir);
  const fs::path state_dir = dir / "state", baseline = dir / "baseline.pt";
  std::vector<double> r_plain, r_durable, r_save, r_load, t_save, t_load, t_bsave, t_bsync, t_bload;
  uint64_t state_bytes = 0, baseline_bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    fs::remove_all(state_dir);
    fs::remove(baseline);
    // Alternate which goes first, so that neither always finds the page cache as the other left it.
    double save = 0, load = 0, bsave = 0, bsync = 0, bload = 0;
    auto ours = [&] {
      auto t0 = Clock::now();
      acc.save_state(state_dir.string());
      save = ms_since(t0);
      t0 = Clock::now();
      acc.load_state(state_dir.string());
      load = ms_since(t0);
    };
    auto theirs = [&] {
      auto t0 = Clock::now();
      torch::save(tensors, baseline.string());
      bsave = ms_since(t0);
      t0 = Clock::now();
      fsync_file(baseline);
      bsync = ms_since(t0);
      std::vector<torch::Tensor> loaded;
      t0 = Clock::now();
      torch::load(loaded, baseline.string());
      bload = ms_since(t0);
    };
    if (r % 2 == 0) {
      theirs();
      ours();
    } else {
      ours();
      theirs();
    }
    state_bytes = bytes_under(state_dir);
    baseline_bytes = bytes_under(baseline);
    t_save.push_back(save), t_load.push_back(load), t_bsave.push_back(bsave), t_bsync.push_back(bsync),
        t_bload.push_back(bload);
    r_plain.push_back((save + load) / (bsave + bload));
    r_durable.push_back((save + load) / (bsave + bsync + bload));
    r_save.push_back(save / bsave);
    r_load.push_back(load / bload);
    std::printf(
        "  round %d: save_state %.0f ms, load_state %.0f ms | torch::save %.0f ms (+fsync %.0f ms), "
        "torch::load %.0f ms\n",
        r + 1, save, load, bsave, bsync, bload);
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  std::printf(
      "checkpoint_io: %lld parameters (%lld layers of %lldx%lld), AdamW state, %lld tensor elements in all; "
      "%d rounds\n",
      static_cast<long long>(numel), static_cast<long long>(layers), static_cast<long long>(width),
      static_cast<long long>(width), static_cast<long long>(3 * numel), repeats);
  std::printf(
      "bench: checkpoint ratio=%.3f durable_ratio=%.3f save_ratio=%.3f load_ratio=%.3f save_ms=%.1f "
      "load_ms=%.1f baseline_save_ms=%.1f baseline_fsync_ms=%.1f baseline_load_ms=%.1f bytes=%llu "
      "baseline_bytes=%llu bytes_ratio=%.4f\n",
      median(r_plain), median(r_durable), median(r_save), median(r_load), median(t_save), median(t_load),
      median(t_bsave), median(t_bsync), median(t_bload), static_cast<unsigned long long>(state_bytes),
      static_cast<unsigned long long>(baseline_bytes),
      static_cast<double>(state_bytes) / static_cast<double>(baseline_bytes));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t params_m = 100;
  int repeats = 3;
  fs::path dir = fs::temp_directory_path() / ("accel-checkpoint-io-" + std::to_string(::getpid()));
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--params_m")
      params_m = std::stoll(argv[i + 1]);
    else if (k == "--repeats")
      repeats = std::stoi(argv[i + 1]);
    else if (k == "--dir")
      dir = argv[i + 1];
    else {
      std::cerr << "checkpoint_io: unknown argument " << k << "\n";
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0 || params_m < 1 || repeats < 1) {
    std::cerr << "usage: checkpoint_io [--params_m 100] [--repeats 3] [--dir DIR]\n";
    return 2;
  }
  try {
    return run(params_m, repeats, dir);
  } catch (const std::exception& e) {
    std::cerr << "checkpoint_io: " << e.what() << "\n";
    fs::remove_all(dir);
    return 1;
  }
}
