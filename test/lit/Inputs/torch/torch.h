#pragma once
// Stub of LibTorch's C++ frontend for the lit tests: the real type names, namespaces and
// call shapes accel-migrate recognises, nothing else, so that a test parses in
// milliseconds instead of 7-8 s for the real <torch/torch.h>.
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <memory>
#include <string>
#include <vector>

namespace c10 {
enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
struct Device {
  Device(DeviceType type, int8_t index = -1) : type_(type), index_(index) {}
  Device(const std::string& spec);
  DeviceType type() const { return type_; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  DeviceType type_;
  int8_t index_;
};
// What Tensor::item() without a type returns (c10::Scalar), printable.
class Scalar {
 public:
  double toDouble() const;
};
inline std::ostream& operator<<(std::ostream& os, const Scalar&) { return os; }
enum class ScalarType : int8_t { Float, Double, Long };
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kLong = ScalarType::Long;
struct TensorOptions {
  TensorOptions() = default;
  TensorOptions(Device d) {}
  TensorOptions(DeviceType t) {}
  TensorOptions(ScalarType s) {}
  TensorOptions device(Device d) const { return *this; }
  TensorOptions dtype(ScalarType s) const { return *this; }
};
template <typename T>
struct optional {
  optional() = default;
  optional(T v) : v_(v) {}
  T value() const { return v_; }
  T v_{};
};
constexpr struct nullopt_t {} nullopt{};
struct NoGradGuard {};
struct InferenceMode {};
}  // namespace c10

namespace at {
using namespace c10;
class Tensor {
 public:
  Tensor() = default;
  Tensor to(TensorOptions options, bool non_blocking = false) const;
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false) const;
  Tensor to(ScalarType dtype, bool non_blocking = false) const;
  Tensor cuda() const;
  Tensor cpu() const;
  void backward(const Tensor& gradient = {}, c10::optional<bool> retain_graph = {},
                bool create_graph = false) const;
  template <typename T>
  T item() const;
  c10::Scalar item() const;
  Tensor sum() const;
  Tensor sum(int64_t dim) const;
  Tensor& operator+=(const Tensor& o);
  Tensor mean() const;
  Tensor eq(const Tensor& other) const;
  Tensor argmax(int64_t dim) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor& copy_(const Tensor& src);
  Tensor view(std::vector<int64_t> sizes) const;
  Tensor detach() const;
  bool defined() const;
  int64_t size(int64_t dim) const;
  Device device() const;
  Tensor operator+(const Tensor& o) const;
  Tensor operator/(double d) const;
  Tensor operator==(const Tensor& o) const;
};
Tensor randn(std::vector<int64_t> sizes, TensorOptions options = {});
Tensor ones(std::vector<int64_t> sizes, TensorOptions options = {});
Tensor zeros(std::vector<int64_t> sizes, TensorOptions options = {});
Tensor relu(const Tensor& x);
Tensor stack(std::vector<Tensor> tensors, int64_t dim = 0);
Tensor cat(std::vector<Tensor> tensors, int64_t dim = 0);
Tensor randperm(int64_t n);
Tensor randn_like(const Tensor& self);
Tensor bernoulli(const Tensor& self);
Tensor rand(std::vector<int64_t> sizes, TensorOptions options = {});
Tensor dropout(const Tensor& input, double p, bool train);
namespace Reduction {
enum Reduction { None, Mean, Sum };
}
Tensor nll_loss(const Tensor& self, const Tensor& target, const Tensor& weight = {},
                int64_t reduction = Reduction::Mean);
Tensor cross_entropy_loss(const Tensor& self, const Tensor& target);
Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction = Reduction::Mean);
}  // namespace at

#define TORCH_CHECK(cond, ...) \
  do {                         \
    if (!(cond)) throw 1;      \
  } while (0)
#define AT_ASSERT(cond) TORCH_CHECK(cond, "")

namespace torch {
using namespace at;
constexpr int64_t kSum = at::Reduction::Sum;
constexpr int64_t kMean = at::Reduction::Mean;
using Dtype = c10::ScalarType;
namespace cuda {
bool is_available();
int64_t device_count();
}  // namespace cuda
namespace autograd {
using Variable = at::Tensor;
using variable_list = std::vector<Variable>;
void backward(const variable_list& tensors, const variable_list& grad_tensors = {},
              c10::optional<bool> retain_graph = {}, bool create_graph = false,
              const variable_list& inputs = {});
}
namespace nn {
class Module {
 public:
  virtual ~Module() = default;
  virtual void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false);
  virtual void to(torch::Dtype dtype, bool non_blocking = false);
  virtual void to(torch::Device device, bool non_blocking = false);
  std::vector<Tensor> parameters(bool recurse = true) const;
  void train(bool on = true);
  void eval();
  bool is_training() const;
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m) { return m; }
  template <typename H>
  H register_module(std::string name, H holder) { return holder; }
};
template <typename Contained>
class ModuleHolder {
 public:
  ModuleHolder() : impl_(std::make_shared<Contained>()) {}
  ModuleHolder(std::nullptr_t) {}
  template <typename A, typename... Rest>
  ModuleHolder(A&& a, Rest&&... rest)
      : impl_(std::make_shared<Contained>(static_cast<A&&>(a), static_cast<Rest&&>(rest)...)) {}
  Contained* operator->() const { return impl_.get(); }
  Contained& operator*() const { return *impl_; }
  const std::shared_ptr<Contained>& ptr() const { return impl_; }
  Contained* get() const { return impl_.get(); }
  template <typename... Args>
  Tensor operator()(Args&&... args) { return impl_->forward(static_cast<Args&&>(args)...); }
 private:
  std::shared_ptr<Contained> impl_;
};
#define TORCH_MODULE(Name)                                          \
  class Name : public torch::nn::ModuleHolder<Name##Impl> {         \
   public:                                                          \
    using torch::nn::ModuleHolder<Name##Impl>::ModuleHolder;        \
  }
struct LinearImpl : Module {
  LinearImpl(int64_t in, int64_t out) {}
  Tensor forward(const Tensor& x);
};
TORCH_MODULE(Linear);
struct SequentialImpl : Module {
  SequentialImpl() = default;
  template <typename... M>
  SequentialImpl(M&&... modules) {}
  Tensor forward(const Tensor& x);
};
TORCH_MODULE(Sequential);
struct ReLUImpl : Module {
  Tensor forward(const Tensor& x);
};
TORCH_MODULE(ReLU);
struct CrossEntropyLossImpl : Module {
  Tensor forward(const Tensor& x, const Tensor& y);
};
TORCH_MODULE(CrossEntropyLoss);
struct MSELossOptions {
  MSELossOptions& reduction(int64_t r) { return *this; }
};
struct MSELossImpl : Module {
  explicit MSELossImpl(const MSELossOptions& options = {}) {}
  Tensor forward(const Tensor& x, const Tensor& y);
};
TORCH_MODULE(MSELoss);
struct DropoutOptions {
  DropoutOptions(double p = 0.5) {}
};
struct DropoutImpl : Module {
  explicit DropoutImpl(DropoutOptions options = {}) {}
  Tensor forward(const Tensor& x);
};
TORCH_MODULE(Dropout);
struct Dropout2dImpl : Module {
  explicit Dropout2dImpl(DropoutOptions options = {}) {}
  Tensor forward(const Tensor& x);
};
TORCH_MODULE(Dropout2d);
struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) {}
  BatchNormOptions& momentum(double m) { return *this; }
};
using BatchNorm2dOptions = BatchNormOptions;
struct BatchNorm1dImpl : Module {
  explicit BatchNorm1dImpl(const BatchNormOptions& options) {}
  Tensor forward(const Tensor& x);
};
TORCH_MODULE(BatchNorm1d);
struct BatchNorm2dImpl : Module {
  explicit BatchNorm2dImpl(const BatchNormOptions& options) {}
  Tensor forward(const Tensor& x);
};
TORCH_MODULE(BatchNorm2d);
struct BatchNorm3dImpl : Module {
  explicit BatchNorm3dImpl(const BatchNormOptions& options) {}
  Tensor forward(const Tensor& x);
};
TORCH_MODULE(BatchNorm3d);
namespace functional {
inline Tensor nll_loss(const Tensor& x, const Tensor& y) { return at::nll_loss(x, y); }
struct DropoutFuncOptions {
  DropoutFuncOptions& p(double p) { return *this; }
  DropoutFuncOptions& training(bool t) { return *this; }
};
inline Tensor dropout(Tensor input, const DropoutFuncOptions& options = {}) { return input; }
}
namespace utils {
double clip_grad_norm_(std::vector<Tensor> parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
void clip_grad_value_(std::vector<Tensor> parameters, double clip_value);
}  // namespace utils
}  // namespace nn
namespace optim {
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  void zero_grad();
  virtual Tensor step();
};
struct SGDOptions {
  SGDOptions(double lr) {}
  SGDOptions& momentum(double m) { return *this; }
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options) {}
};
struct AdamOptions {
  AdamOptions(double lr = 1e-3) {}
};
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = {}) {}
};
class LRScheduler {
 public:
  LRScheduler(Optimizer& optimizer) {}
  virtual ~LRScheduler() = default;
  void step();
};
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, unsigned step_size, double gamma = 0.1) : LRScheduler(optimizer) {}
};
}  // namespace optim
namespace data {
template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  Data data;
  Target target;
};
namespace samplers {
struct RandomSampler {};
struct SequentialSampler {};
}  // namespace samplers
namespace transforms {
template <typename T = Example<>>
struct Stack {};
}  // namespace transforms
namespace datasets {
template <typename Self, typename Batch = std::vector<Example<>>>
class BatchDataset {
 public:
  virtual ~BatchDataset() = default;
  virtual c10::optional<size_t> size() const = 0;
};
template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  virtual SingleExample get(size_t index) = 0;
};
class MNIST {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);
  template <typename T>
  MNIST map(T transform) const { return *this; }
  c10::optional<size_t> size() const;
};
}  // namespace datasets
struct DataLoaderOptions {
  DataLoaderOptions(size_t batch_size = 1) {}
  DataLoaderOptions& batch_size(size_t b) { return *this; }
  DataLoaderOptions& workers(size_t w) { return *this; }
};
template <typename Dataset, typename Sampler>
class StatelessDataLoader {
 public:
  std::vector<Example<>>::iterator begin();
  std::vector<Example<>>::iterator end();
};
template <typename Sampler = samplers::RandomSampler, typename Dataset>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                        DataLoaderOptions options) {
  return nullptr;
}
template <typename Sampler = samplers::RandomSampler, typename Dataset>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                        size_t batch_size) {
  return nullptr;
}
}  // namespace data
namespace serialize {
class OutputArchive {
 public:
  void write(const std::string& key, const Tensor& t);
  void save_to(const std::string& filename);
};
class InputArchive {
 public:
  void load_from(const std::string& filename);
};
}  // namespace serialize
template <typename T>
void save(const T& value, const std::string& path);
template <typename T>
void load(T& value, const std::string& path);
}  // namespace torch
