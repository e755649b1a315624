// The pieces of a checkpoint (see checkpoint_pieces.h).
#include "checkpoint/checkpoint_pieces.h"

#include <accelerate/checkpoint/checkpoint.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include <mutex>
#include <sstream>

namespace accelerate {

void TrainingProgress::save(torch::serialize::OutputArchive& archive) const {
  archive.write("epoch", c10::IValue(epoch));
  archive.write("step", c10::IValue(step));
}

void TrainingProgress::load(torch::serialize::InputArchive& archive) {
  c10::IValue v;
  archive.read("epoch", v);
  epoch = v.toInt();
  archive.read("step", v);
  step = v.toInt();
}

namespace detail {
namespace ckpt {
namespace {

std::string shape(const torch::Tensor& t) {
  std::ostringstream os;
  os << t.sizes() << ' ' << t.scalar_type();
  return os.str();
}

int64_t read_int(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue v;
  archive.read(key, v);
  return v.toInt();
}

// LibTorch keeps a scheduler's position in a protected member and offers no accessor; a
// pointer to it taken through a derived class reaches it on any scheduler.
struct SchedulerAccess : torch::optim::LRScheduler {
  static unsigned torch::optim::LRScheduler::*step_count() { return &SchedulerAccess::step_count_; }
};

torch::Tensor state_of(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_state_of(at::Generator generator, const torch::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

int64_t cuda_devices() { return torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0; }

}  // namespace

std::string model_file(size_t i) { return "model_" + std::to_string(i) + ".pt"; }
std::string optimizer_file(size_t i) { return "optimizer_" + std::to_string(i) + ".pt"; }
std::string scheduler_file(size_t i) { return "scheduler_" + std::to_string(i) + ".pt"; }
std::string object_file(size_t i) { return "custom_checkpoint_" + std::to_string(i) + ".pt"; }
std::string process_file(int64_t rank) { return "process_" + std::to_string(rank) + ".pt"; }

uint64_t write_archive(torch::serialize::OutputArchive& archive, const fs::path& path) {
  // Written through CheckedFile, not save_to(path): every write and the flush are checked
  // here, and a failed one is reported after LibTorch finishes (see CheckedFile::write).
  CheckedFile out(path);
  uint64_t size = 0;
  std::string serializer_error;
  try {
    archive.save_to([&](const void* data, size_t n) {
      size += n;
      return out.write(data, n);
    });
  } catch (const std::exception& e) {
    serializer_error = e.what();
  }
  out.finish(serializer_error);  // a failed write is named first, with its errno
  return size;
}

void read_archive(torch::serialize::InputArchive& archive, const fs::path& path, const torch::Device& device) {
  try {
    archive.load_from(path.string(), device);
  } catch (const std::exception& e) {
    fail_checkpoint("load_state: cannot read '" + path.string() + "': " + e.what());
  }
}

void load_module(torch::nn::Module& module, torch::serialize::InputArchive& archive, const std::string& where) {
  torch::NoGradGuard no_grad;
  auto load = [&](const std::string& name, torch::Tensor& target, bool is_buffer) {
    if (!target.defined()) return;
    torch::Tensor saved;
    if (!archive.try_read(name, saved, is_buffer) || !saved.defined()) {
      fail_checkpoint("load_state: " + where + name +
                      " is not in the checkpoint: the prepared model differs from the saved one");
    }
    if (saved.sizes() != target.sizes() || saved.scalar_type() != target.scalar_type()) {
      fail_checkpoint("load_state: " + where + name + " was saved as " + shape(saved) + " but is " + shape(target) +
                      " in the prepared model");
    }
    // A copy, not torch::load's set_(): set_ gives a parameter a new gradient accumulator,
    // which drops the hooks of the gradient synchronisation installed by prepare().
    target.copy_(saved);
  };
  for (auto& p : module.named_parameters(/*recurse=*/false)) load(p.key(), p.value(), false);
  for (auto& b : module.named_buffers(/*recurse=*/false)) load(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    torch::serialize::InputArchive nested;
    if (!archive.try_read(child.key(), nested)) {
      fail_checkpoint("load_state: " + where + child.key() +
                      " is not in the checkpoint: the prepared model differs from the saved one");
    }
    load_module(*child.value(), nested, where + child.key() + ".");
  }
}

void save_scheduler(torch::optim::LRScheduler& scheduler, torch::serialize::OutputArchive& archive) {
  archive.write("step_count", c10::IValue(static_cast<int64_t>(scheduler.*SchedulerAccess::step_count())));
}

void load_scheduler(torch::optim::LRScheduler& scheduler, torch::serialize::InputArchive& archive) {
  scheduler.*SchedulerAccess::step_count() = static_cast<unsigned>(read_int(archive, "step_count"));
}

ProcessRecord capture_process(int64_t rank, int64_t num_processes, int64_t step,
                              const std::vector<std::shared_ptr<LoaderPosition>>& loaders, bool split_batches) {
  ProcessRecord r;
  r.rank = rank;
  r.num_processes = num_processes;
  r.step = step;
  r.cpu_rng = state_of(at::detail::getDefaultCPUGenerator());
  for (int64_t d = 0; d < cuda_devices(); ++d) {
    r.cuda_rng.push_back(
        state_of(at::globalContext().defaultGenerator(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d)))));
  }
  for (const auto& p : loaders) {
    LoaderRecord l;
    l.epoch = p->resume ? p->resume->epoch : p->resume_epoch();  // loaded but not begun yet
    l.batches = p->resume ? p->resume->skip : p->resume_batches();
    l.seed = p->resume && p->resume->seed ? p->resume->seed : p->seed;
    // Only an epoch in progress needs its order; a finished one's next order is drawn anew.
    if (l.batches > 0) l.order = p->resume ? p->resume->order : p->order;
    l.num_processes = p->num_processes;
    l.split_batches = split_batches;
    r.loaders.push_back(l);
  }
  return r;
}

void save_process(const ProcessRecord& r, torch::serialize::OutputArchive& a) {
  a.write("rank", c10::IValue(r.rank));
  a.write("num_processes", c10::IValue(r.num_processes));
  a.write("step", c10::IValue(r.step));
  a.write("rng_cpu", r.cpu_rng, /*is_buffer=*/true);
  a.write("rng_cuda_count", c10::IValue(static_cast<int64_t>(r.cuda_rng.size())));
  for (size_t d = 0; d < r.cuda_rng.size(); ++d) a.write("rng_cuda_" + std::to_string(d), r.cuda_rng[d], true);
  a.write("loader_count", c10::IValue(static_cast<int64_t>(r.loaders.size())));
  for (size_t i = 0; i < r.loaders.size(); ++i) {
    const LoaderRecord& l = r.loaders[i];
    const std::string k = "loader_" + std::to_string(i) + "_";
    a.write(k + "epoch", c10::IValue(static_cast<int64_t>(l.epoch)));
    a.write(k + "batches", c10::IValue(static_cast<int64_t>(l.batches)));
    a.write(k + "has_seed", c10::IValue(l.seed.has_value()));
    a.write(k + "seed", c10::IValue(static_cast<int64_t>(l.seed.value_or(0))));  // the bits survive
    a.write(k + "num_processes", c10::IValue(l.num_processes));
    a.write(k + "split_batches", c10::IValue(l.split_batches));
    if (!l.order.empty()) a.write(k + "order", torch::tensor(l.order, torch::kInt64), /*is_buffer=*/true);
  }
}

ProcessRecord load_process(torch::serialize::InputArchive& a) {
  ProcessRecord r;
  r.rank = read_int(a, "rank");
  r.num_processes = read_int(a, "num_processes");
  r.step = read_int(a, "step");
  a.read("rng_cpu", r.cpu_rng, true);
  const int64_t cuda = read_int(a, "rng_cuda_count");
  for (int64_t d = 0; d < cuda; ++d) {
    torch::Tensor t;
    a.read("rng_cuda_" + std::to_string(d), t, true);
    r.cuda_rng.push_back(t);
  }
  const int64_t loaders = read_int(a, "loader_count");
  for (int64_t i = 0; i < loaders; ++i) {
    const std::string k = "loader_" + std::to_string(i) + "_";
    LoaderRecord l;
    l.epoch = static_cast<uint64_t>(read_int(a, k + "epoch"));
    l.batches = static_cast<uint64_t>(read_int(a, k + "batches"));
    c10::IValue has_seed;
    a.read(k + "has_seed", has_seed);
    if (has_seed.toBool()) l.seed = static_cast<uint64_t>(read_int(a, k + "seed"));
    l.num_processes = read_int(a, k + "num_processes");
    c10::IValue split;
    a.read(k + "split_batches", split);
    l.split_batches = split.toBool();
    // Absent in checkpoints of samplers that do not draw from the generator (and in older ones).
    torch::Tensor order;
    if (a.try_read(k + "order", order, /*is_buffer=*/true)) {
      const torch::Tensor o = order.to(torch::kInt64).contiguous();
      l.order.assign(o.data_ptr<int64_t>(), o.data_ptr<int64_t>() + o.numel());
    }
    r.loaders.push_back(l);
  }
  return r;
}

void restore_generators(const ProcessRecord& r) {
  set_state_of(at::detail::getDefaultCPUGenerator(), r.cpu_rng.cpu());
  const int64_t devices = std::min<int64_t>(cuda_devices(), static_cast<int64_t>(r.cuda_rng.size()));
  for (int64_t d = 0; d < devices; ++d) {
    set_state_of(at::globalContext().defaultGenerator(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d))),
                 r.cuda_rng[static_cast<size_t>(d)].cpu());
  }
}

LoaderPosition::Resume resume_point(const LoaderRecord& l, int64_t num_processes, size_t index) {
  LoaderPosition::Resume r;
  r.epoch = l.epoch;
  r.seed = l.seed;
  r.order = l.order;  // a global order: valid for any number of processes
  r.skip = l.batches;
  if (l.batches == 0 || l.split_batches || l.num_processes == num_processes) return r;
  // Without split_batches process p's k-th batch is global batch k * P + p: after k batches
  // each, k * P global batches are done, which P' processes resume at k * P / P' each.
  const uint64_t global = l.batches * static_cast<uint64_t>(l.num_processes);
  if (global % static_cast<uint64_t>(num_processes) != 0) {
    fail_checkpoint("load_state: data loader " + std::to_string(index) + " was saved " + std::to_string(l.batches) +
                    " batches into epoch " + std::to_string(l.epoch) + " on " + std::to_string(l.num_processes) +
                    " processes (" + std::to_string(global) +
                    " global batches), which is not a whole number of batches "
                    "for each of " +
                    std::to_string(num_processes) +
                    " processes, so the epoch cannot be resumed at the "
                    "same place; resume with a number of processes that divides " +
                    std::to_string(global) + ", or from a checkpoint taken at the end of an epoch");
  }
  r.skip = global / static_cast<uint64_t>(num_processes);
  return r;
}

}  // namespace ckpt
}  // namespace detail
}  // namespace accelerate
