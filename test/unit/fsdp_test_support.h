#pragma once
// What the FSDP tests' driver and their worker processes share: the model, the data, the
// training configurations, and the single-process reference they must reproduce.
#include <accelerate/accelerate.h>

#include <torch/torch.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fsdp_test {

// Sizes that do not divide by 2 or 3, so every shard boundary falls inside a parameter and
// the last shards carry padding.
struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t in, int64_t out) : fc(register_module("fc", torch::nn::Linear(in, out))) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::tanh(fc(x)); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Block);

struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : b1(register_module("b1", Block(16, 33))),
        b2(register_module("b2", Block(33, 17))),
        head(register_module("head", torch::nn::Linear(17, 3))) {}
  // Submodules called directly, as user code does.
  torch::Tensor forward(const torch::Tensor& x) { return head->forward(b2->forward(b1->forward(x))); }
  Block b1, b2;
  torch::nn::Linear head;
};
TORCH_MODULE(Mlp);

constexpr int64_t kGlobalBatch = 12;  // divides by 1, 2, 3

// One training run: optimizer, steps, gradient accumulation, clipping, wrap policy, and
// whether the loop is a plain LibTorch one (loss.backward(), optimizer.step()).
struct Config {
  std::string name;
  std::string optimizer = "sgd";  // sgd (momentum 0.9) | adamw | rmsprop | adagrad
  int steps = 4;
  int accumulate = 1;
  double clip = 0;              // max norm; 0: none
  std::string policy = "size";  // size (units b1.fc, b2.fc, root) | block (b1, b2, root) | none (one unit)
  bool plain_loop = false;
  bool offload = false;
  bool model_zero_grad = false;   // model->zero_grad() rather than optimizer.zero_grad()
  int passes = 1;                 // backward passes per micro-batch (halves of it), no zeroing between
  bool eval_before_step = false;  // a forward without gradients between backward and step (changes nothing)

  // "name:key=value,key=value"
  static Config parse(const std::string& text) {
    Config c;
    const auto colon = text.find(':');
    c.name = text.substr(0, colon);
    std::stringstream rest(colon == std::string::npos ? "" : text.substr(colon + 1));
    for (std::string kv; std::getline(rest, kv, ',');) {
      const auto eq = kv.find('=');
      const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "opt")
        c.optimizer = v;
      else if (k == "steps")
        c.steps = std::stoi(v);
      else if (k == "accum")
        c.accumulate = std::stoi(v);
      else if (k == "clip")
        c.clip = std::stod(v);
      else if (k == "policy")
        c.policy = v;
      else if (k == "plain")
        c.plain_loop = v == "1";
      else if (k == "offload")
        c.offload = v == "1";
      else if (k == "model_zero")
        c.model_zero_grad = v == "1";
      else if (k == "passes")
        c.passes = std::stoi(v);
      else if (k == "eval")
        c.eval_before_step = v == "1";
      else
        throw std::invalid_argument("unknown config key " + k);
    }
    return c;
  }
};

inline std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Config& c, std::vector<torch::Tensor> params) {
  if (c.optimizer == "adamw") {
    return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(1e-2).weight_decay(0.05));
  }
  if (c.optimizer == "rmsprop") {
    return std::make_unique<torch::optim::RMSprop>(params, torch::optim::RMSpropOptions(1e-2).momentum(0.5));
  }
  if (c.optimizer == "adagrad")
    return std::make_unique<torch::optim::Adagrad>(params, torch::optim::AdagradOptions(0.1));
  return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1).momentum(0.9));
}

struct Data {
  torch::Tensor x, y;
  explicit Data(const Config& c) {
    torch::manual_seed(99);
    const int64_t rows = c.steps * c.accumulate * kGlobalBatch;
    x = torch::randn({rows, 16});
    y = torch::sin(x.narrow(1, 0, 3) * 2) + 0.1 * torch::randn({rows, 3});
  }
  // Part `pass` of `passes` of micro-batch `m` of the global batch: the rows of process
  // `rank` of `world`.
  std::pair<torch::Tensor, torch::Tensor> batch(int64_t m, int64_t rank, int64_t world, int pass = 0,
                                                int passes = 1) const {
    const int64_t part = kGlobalBatch / passes, local = part / world;
    const int64_t begin = m * kGlobalBatch + pass * part + rank * local;
    return {x.narrow(0, begin, local), y.narrow(0, begin, local)};
  }
};

inline Mlp make_model() {
  torch::manual_seed(1234);
  return Mlp();
}

// What a run produces: the global loss of every micro-batch, the clipping norms, the final
// parameters (in named_parameters() order).
struct Result {
  std::vector<double> losses, norms;
  std::vector<torch::Tensor> params;

  std::vector<torch::Tensor> to_tensors() const {
    std::vector<torch::Tensor> out{torch::tensor(losses, torch::kDouble), torch::tensor(norms, torch::kDouble)};
    for (const auto& p : params) out.push_back(p);
    return out;
  }
  static Result from_tensors(const std::vector<torch::Tensor>& t) {
    Result r;
    auto vec = [](const torch::Tensor& x) {
      auto c = x.to(torch::kDouble).contiguous();
      return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
    };
    r.losses = vec(t.at(0));
    r.norms = vec(t.at(1));
    r.params.assign(t.begin() + 2, t.end());
    return r;
  }
};

// The single-process run with the whole global batch: plain LibTorch, no Accelerator.
inline Result reference(const Config& c) {
  Data data(c);
  Mlp model = make_model();
  auto opt = make_optimizer(c, model->parameters());
  Result r;
  for (int step = 0; step < c.steps; ++step) {
    opt->zero_grad();
    for (int m = 0; m < c.accumulate; ++m) {
      for (int pass = 0; pass < c.passes; ++pass) {
        auto [x, y] = data.batch(step * c.accumulate + m, 0, 1, pass, c.passes);
        auto loss = torch::mse_loss(model->forward(x), y);
        (loss / c.accumulate).backward();
        r.losses.push_back(loss.item<double>());
      }
    }
    if (c.clip > 0) r.norms.push_back(torch::nn::utils::clip_grad_norm_(model->parameters(), c.clip));
    opt->step();
  }
  for (const auto& p : model->parameters()) r.params.push_back(p.detach().clone());
  return r;
}

}  // namespace fsdp_test
