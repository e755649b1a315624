// Blob classifier: four Gaussian blobs in 16 dimensions, a small MLP trained with SGD.
// Written like my other experiments: a Keras-style Classifier class that owns everything,
// compile() builds the network and the optimizer, fit() trains and keeps a loss history.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <vector>

static const int64_t kClasses = 4;
static const int64_t kFeatures = 16;
static const int64_t kSamples = 640;  // 20 batches of 32

class Blobs : public torch::data::datasets::Dataset<Blobs> {
public:
    explicit Blobs(uint64_t seed) {
        auto gen = at::detail::createCPUGenerator(seed);
        auto centres = 0.6 * torch::randn({kClasses, kFeatures}, gen);
        labels = torch::arange(kSamples, torch::kLong) % kClasses;
        points = centres.index_select(0, labels) + torch::randn({kSamples, kFeatures}, gen);
    }
    torch::data::Example<> get(size_t index) override { return {points[index], labels[index]}; }
    torch::optional<size_t> size() const override { return kSamples; }

private:
    torch::Tensor points, labels;
};

struct Net : torch::nn::Module {
    Net(int64_t inputs, int64_t hidden, int64_t outputs) {
        fc1 = register_module("fc1", torch::nn::Linear(inputs, hidden));
        fc2 = register_module("fc2", torch::nn::Linear(hidden, outputs));
    }
    torch::Tensor forward(torch::Tensor x) {
        return fc2->forward(torch::relu(fc1->forward(x)));
    }
    torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

class Classifier {
public:
    torch::Device *device;
    Net *model{};
    torch::optim::SGD *optimizer{};
    std::vector<double> lossHistory;

    Classifier() {
        device = new torch::Device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
    }

    void compile(int64_t hiddenSize, double learningRate) {
        model = new Net(kFeatures, hiddenSize, kClasses);
        (*model).to(*device);
        optimizer = new torch::optim::SGD(
                (*model).parameters(),
                torch::optim::SGDOptions(learningRate).momentum(0.9));
    }

    void fit(int64_t batchSize, size_t numEpochs) {
        auto dataset = Blobs(11).map(torch::data::transforms::Stack<>());
        auto numSamples = dataset.size().value();
        auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
                std::move(dataset), batchSize);
        for (size_t epoch = 1; epoch <= numEpochs; ++epoch) {
            (*model).train();
            double runningLoss = 0.0;
            for (auto& batch : *loader) {
                auto data = batch.data.to(*device);
                auto target = batch.target.to(*device);
                auto output = (*model).forward(data);
                auto loss = torch::nn::functional::cross_entropy(output, target);
                runningLoss += loss.item<double>() * data.size(0);
                (*optimizer).zero_grad();
                loss.backward();
                (*optimizer).step();
            }
            lossHistory.push_back(runningLoss / numSamples);
            std::printf("Epoch [%zu/%zu], Loss: %.6f\n", epoch, numEpochs, lossHistory.back());
        }
    }

    double checksum() const {
        double sum = 0.0;
        for (const auto& p : (*model).parameters())
            sum += p.abs().sum().item<double>();
        return sum;
    }
};

int main() {
    torch::manual_seed(3);
    Classifier classifier;
    classifier.compile(32, 0.02);
    classifier.fit(32, 4);
    std::printf("final: loss=%.8f checksum=%.8f\n", classifier.lossHistory.back(), classifier.checksum());
    return 0;
}
