// Corpus: a class that owns its loaders (spelled-out unique_ptr types over a `using`
// alias for the dataset), its model as a shared_ptr member and its device as a member.
// Idioms: class member device initialised in the constructor's init list,
//   `std::shared_ptr<ClassifierImpl>` model member, `(*model_).to(device_)`,
//   std::unique_ptr<torch::data::StatelessDataLoader<...>> members, `*loader_` passed to a
//   template helper, c10::InferenceMode evaluation, accuracy over the dataset size.
// Expected: fully migratable.
#include <torch/torch.h>

#include <cstdio>
#include <memory>

struct ClassifierImpl : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr};
  ClassifierImpl() {
    l1 = register_module("l1", torch::nn::Linear(5, 20));
    l2 = register_module("l2", torch::nn::Linear(20, 3));
  }
  torch::Tensor forward(torch::Tensor x) { return l2(torch::relu(l1(x))); }
};

struct Clusters : torch::data::datasets::Dataset<Clusters> {
  torch::Tensor x, y;
  explicit Clusters(int64_t n) {
    y = torch::arange(n) % 3;
    x = torch::randn({n, 5}) + y.unsqueeze(1).to(torch::kFloat) * 1.5;
  }
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

using Stacked = torch::data::datasets::MapDataset<Clusters, torch::data::transforms::Stack<>>;

template <typename Loader, typename Fn>
void for_each_batch(Loader& loader, Fn&& fn) {
  for (auto& batch : loader) fn(batch);
}

class Experiment {
 public:
  Experiment()
      : device_(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU),
        model_(std::make_shared<ClassifierImpl>()) {
    (*model_).to(device_);
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), 0.1);
    train_loader_ = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
        Clusters(300).map(torch::data::transforms::Stack<>()), 30);
    auto test = Clusters(150).map(torch::data::transforms::Stack<>());
    test_size_ = test.size().value();
    test_loader_ = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        std::move(test), 50);
  }

  void run(int epochs) {
    for (int e = 0; e < epochs; ++e) {
      for_each_batch(*train_loader_, [this](auto& batch) {
        optimizer_->zero_grad();
        auto loss = torch::nn::functional::cross_entropy(model_->forward(batch.data.to(device_)),
                                         batch.target.to(device_));
        loss.backward();
        optimizer_->step();
      });
      std::printf("epoch %d accuracy %.4f\n", e, accuracy());
    }
  }

 private:
  double accuracy() {
    c10::InferenceMode guard;
    int64_t correct = 0;
    for (auto& batch : *test_loader_) {
      auto pred = model_->forward(batch.data.to(device_)).argmax(1);
      correct += (pred == batch.target.to(device_)).sum().item<int64_t>();
    }
    return static_cast<double>(correct) / test_size_;
  }

  torch::Device device_;
  std::shared_ptr<ClassifierImpl> model_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::unique_ptr<torch::data::StatelessDataLoader<Stacked, torch::data::samplers::RandomSampler>>
      train_loader_;
  std::unique_ptr<torch::data::StatelessDataLoader<Stacked, torch::data::samplers::SequentialSampler>>
      test_loader_;
  size_t test_size_ = 0;
};

int main() {
  torch::manual_seed(12);
  Experiment experiment;
  experiment.run(3);
  return 0;
}
