// accelerate-selftest: started by `accelerate test` on every process of the configured
// setup. Each check must agree on all processes; any failure exits non-zero, which makes
// the launcher stop the others and report the failing rank.
#include <ATen/Version.h>
#include <accelerate/accelerate.h>
#include <accelerate/precision/precision.h>  // precision().type()
#include <torch/torch.h>
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>

namespace {

struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void expect(bool ok, const std::string& what) {
  if (!ok) throw CheckFailed(what);
}

std::string show(const torch::Tensor& t) {
  std::ostringstream os;
  os << t.to(torch::kCPU).flatten();
  return os.str();
}

// Processes start and see each other: every rank reports its index.
void check_processes(accelerate::Accelerator& acc) {
  const int64_t n = acc.num_processes();
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(acc.device());
  auto mine = torch::full({1}, static_cast<double>(acc.process_index()), opts);
  auto all = acc.gather(mine).to(torch::kCPU);
  expect(all.numel() == n,
         "gather returned " + std::to_string(all.numel()) + " values for " + std::to_string(n) + " processes");
  expect(torch::equal(all, torch::arange(n, torch::kFloat)), "gather of process indices gave " + show(all));
}

void check_collectives(accelerate::Accelerator& acc) {
  const int64_t n = acc.num_processes();
  const double rank = static_cast<double>(acc.process_index());
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(acc.device());
  auto value = torch::full({3}, rank + 1, opts);
  auto sum = acc.reduce(value, accelerate::ReduceOp::Sum).to(torch::kCPU);
  expect(torch::allclose(sum, torch::full({3}, n * (n + 1) / 2.0)), "reduce(sum) gave " + show(sum));
  auto mean = acc.reduce(value, accelerate::ReduceOp::Mean).to(torch::kCPU);
  expect(torch::allclose(mean, torch::full({3}, (n + 1) / 2.0)), "reduce(mean) gave " + show(mean));
  auto max = acc.reduce(value, accelerate::ReduceOp::Max).to(torch::kCPU);
  expect(torch::allclose(max, torch::full({3}, static_cast<double>(n))), "reduce(max) gave " + show(max));
  const int64_t root = n - 1;
  auto sent = acc.process_index() == root ? torch::arange(4, opts) * 7 : torch::zeros({4}, opts);
  auto got = acc.broadcast(sent, root).to(torch::kCPU);
  expect(torch::equal(got, torch::arange(4, torch::kFloat) * 7), "broadcast from the last process gave " + show(got));
  // Uneven sizes: process i has i+1 rows; padding makes them gatherable.
  auto rows = torch::full({acc.process_index() + 1, 2}, rank, opts);
  auto padded = acc.pad_across_processes(rows, 0, -1);
  expect(padded.size(0) == n, "pad_across_processes gave " + std::to_string(padded.size(0)) + " rows");
  acc.wait_for_everyone();
}

// The data loader gives each process its share; together they cover the data once.
struct Indices : torch::data::datasets::Dataset<Indices> {
  int64_t n;
  explicit Indices(int64_t size) : n(size) {}
  torch::data::Example<> get(size_t i) override {
    auto v = torch::full({1}, static_cast<float>(i));
    return {v, v};
  }
  c10::optional<size_t> size() const override { return static_cast<size_t>(n); }
};

void check_data_sharding(accelerate::Accelerator& acc) {
  const int64_t items = 3 * acc.num_processes() + 1;  // not a multiple: exercises padding
  auto loader = acc.prepare_data_loader(Indices(items).map(torch::data::transforms::Stack<>()),
                                        torch::data::DataLoaderOptions().batch_size(2));
  std::vector<torch::Tensor> seen;
  for (auto& batch : *loader) seen.push_back(acc.gather_for_metrics(batch.data.flatten()));
  auto all = torch::cat(seen).to(torch::kCPU);
  auto sorted = std::get<0>(all.sort());
  expect(torch::equal(sorted, torch::arange(items, torch::kFloat)),
         "the processes' shards do not cover the dataset exactly once: " + show(sorted));
}

// --print-weights: the trained weights, so that runs under different launchers (ours,
// torchrun) can be compared digit for digit.
bool g_print_weights = false;

// A data-parallel step on shards equals one step on the whole batch in one process.
void check_training(accelerate::Accelerator& acc) {
  const int64_t n = acc.num_processes();
  const int64_t rows = 4 * n;
  torch::manual_seed(1234);  // the same data and initial weights on every process
  auto x = torch::randn({rows, 5});
  auto y = x.matmul(torch::randn({5, 1})) + 0.1 * torch::randn({rows, 1});
  torch::nn::Linear reference(5, 1);
  torch::nn::Linear model(5, 1);
  {
    torch::NoGradGuard no_grad;
    model->weight.copy_(reference->weight);
    model->bias.copy_(reference->bias);
  }
  reference->to(acc.device());
  torch::optim::SGD ref_opt(reference->parameters(), torch::optim::SGDOptions(0.1));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  acc.prepare(model, opt);

  x = x.to(acc.device());
  y = y.to(acc.device());
  auto my_x = x.chunk(n)[acc.process_index()];
  auto my_y = y.chunk(n)[acc.process_index()];
  for (int step = 0; step < 5; ++step) {
    ref_opt.zero_grad();
    torch::mse_loss(reference(x), y).backward();
    ref_opt.step();
    opt.zero_grad();
    acc.backward(torch::mse_loss(model(my_x), my_y));
    opt.step();
  }
  const double tolerance = acc.precision().type() == accelerate::PrecisionType::No ? 1e-5 : 5e-2;
  auto diff = (model->weight - reference->weight).abs().max().item<double>();
  expect(diff < tolerance,
         "training on " + std::to_string(n) + " processes differs from one process by " + std::to_string(diff));
  auto first = acc.broadcast(model->weight.detach(), 0);
  expect(torch::equal(first, model->weight.detach()), "the processes' weights differ after training");
  if (g_print_weights && acc.is_main_process()) {
    auto w = model->weight.detach().to(torch::kCPU).flatten();
    std::string line = "weights:";
    char buf[32];
    for (int64_t i = 0; i < w.numel(); ++i) {
      std::snprintf(buf, sizeof(buf), " %.9g", w[i].item<double>());
      line += buf;
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
}

}  // namespace

// --show-config: what this LibTorch offers, for `accelerate env` (no process group).
int show_config() {
  std::printf("version %s, CUDA available: %s, CUDA devices: %d\n", TORCH_VERSION,
              torch::cuda::is_available() ? "yes" : "no", static_cast<int>(torch::cuda::device_count()));
  // The compiler flags LibTorch was built with are long and say nothing about the setup.
  std::string config = at::show_config();
  config = std::regex_replace(config, std::regex("CXX_FLAGS=.*?, ([A-Z_]+=)"), "$1");
  std::printf("%s", config.c_str());
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--show-config") return show_config();
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--print-weights") {
      g_print_weights = true;
    } else {
      std::fprintf(stderr, "usage: accelerate-selftest [--print-weights] | --show-config\n");
      return 2;
    }
  }
  try {
    accelerate::Accelerator acc;
    acc.print("accelerate-selftest: ", acc.num_processes(), " process(es), device ", acc.device().str(),
              ", mixed precision ", acc.mixed_precision());
    const std::pair<const char*, void (*)(accelerate::Accelerator&)> checks[] = {
        {"processes start and see each other", check_processes},
        {"collectives agree (gather, reduce, broadcast, pad)", check_collectives},
        {"data loader shards cover the dataset once", check_data_sharding},
        {"data-parallel training equals single-process training", check_training},
    };
    for (const auto& [name, check] : checks) {
      check(acc);
      acc.print("  ok: ", name);
    }
    acc.wait_for_everyone();
    acc.print("accelerate-selftest: all checks passed");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "accelerate-selftest: FAILED: %s\n", e.what());
    return 1;
  }
}
