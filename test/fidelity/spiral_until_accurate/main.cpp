// A personal project: classify two interleaved spirals, and keep training "until it is good
// enough" -- the epoch loop runs while the training accuracy is below a target, and an epoch
// is cut short as soon as a batch's loss is tiny (no point in finishing it).
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

namespace {

constexpr int64_t kPointsPerArm = 384;  // 768 points: 12 batches of 64
constexpr int64_t kBatchSize = 64;
constexpr double kTargetAccuracy = 0.95;
constexpr double kGoodBatchLoss = 0.05;
constexpr int kMaxEpochs = 60;

class Spirals : public torch::data::datasets::Dataset<Spirals> {
 public:
  Spirals(int64_t per_arm, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    auto r = torch::linspace(0.2, 1.0, per_arm);
    std::vector<torch::Tensor> xs, ys;
    for (int64_t arm = 0; arm < 2; ++arm) {
      auto theta = r * 1.5 * M_PI + arm * M_PI + 0.15 * torch::randn({per_arm}, gen);
      xs.push_back(torch::stack({r * torch::cos(theta), r * torch::sin(theta)}, 1));
      ys.push_back(torch::full({per_arm}, arm, torch::kLong));
    }
    // Interleave the arms so that every batch holds both classes.
    points_ = torch::stack(xs, 1).reshape({-1, 2});
    labels_ = torch::stack(ys, 1).reshape({-1});
  }
  torch::data::Example<> get(size_t i) override { return {points_[i], labels_[i]}; }
  torch::optional<size_t> size() const override { return points_.size(0); }

 private:
  torch::Tensor points_, labels_;
};

}  // namespace

int main() {
  torch::manual_seed(5);
  torch::Device device(torch::kCPU);
  if (torch::cuda::is_available())
    device = torch::Device(torch::kCUDA);

  torch::nn::Sequential model(torch::nn::Linear(2, 48), torch::nn::Tanh(),
                              torch::nn::Linear(48, 48), torch::nn::Tanh(),
                              torch::nn::Linear(48, 2));
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Spirals(kPointsPerArm, 21).map(torch::data::transforms::Stack<>()), kBatchSize);

  double accuracy = 0.0, epoch_loss = 0.0;
  int epoch = 0, short_epochs = 0;
  while (accuracy < kTargetAccuracy && epoch < kMaxEpochs) {
    double loss_sum = 0.0;
    int64_t correct = 0, seen = 0;
    for (auto& batch : *loader) {
      auto points = batch.data.to(device);
      auto labels = batch.target.to(device);
      auto logits = model->forward(points);
      auto loss = torch::nn::functional::cross_entropy(logits, labels);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();

      loss_sum += loss.item<double>() * points.size(0);
      correct += logits.argmax(1).eq(labels).sum().item<int64_t>();
      seen += points.size(0);
      if (loss.item<double>() < kGoodBatchLoss) {
        ++short_epochs;
        break;
      }
    }
    accuracy = static_cast<double>(correct) / seen;
    epoch_loss = loss_sum / seen;
    ++epoch;
    std::printf("epoch %2d  loss %.4f  accuracy %.4f  (%ld samples)\n", epoch, epoch_loss, accuracy,
                static_cast<long>(seen));
  }

  double weight_sum = 0.0;
  for (const auto& p : model->parameters())
    weight_sum += p.sum().item<double>();
  std::printf("final: epochs=%d short_epochs=%d accuracy=%.6f loss=%.6f weight_sum=%.6f\n", epoch,
              short_epochs, accuracy, epoch_loss, weight_sum);
  return 0;
}
