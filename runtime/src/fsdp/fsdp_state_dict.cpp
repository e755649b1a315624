// Model state under FSDP: FULL and SHARDED (see fsdp_state_dict.h).
#include "fsdp/fsdp_state_dict.h"

#include "fsdp/param_access.h"

#include <accelerate/checkpoint/checkpoint.h>

#include <unistd.h>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

namespace accelerate {
namespace detail {
namespace fsdp_state {
namespace {

constexpr const char* kFormatKey = "accelerate_fsdp_format";
constexpr const char* kFormat = "sharded-1";

[[noreturn]] void fail(const std::string& what) { throw CheckpointError("accelerate: " + what); }

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string shape_text(c10::IntArrayRef sizes) {
  std::ostringstream os;
  os << sizes;
  return os.str();
}

}  // namespace

void save_atomically(torch::serialize::OutputArchive& archive, const std::string& path) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    archive.save_to(tmp);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    fail("cannot write '" + path + "': " + e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("cannot move '" + tmp + "' to '" + path + "'");
  }
}

void load_archive(torch::serialize::InputArchive& archive, const std::string& path) {
  try {
    archive.load_from(path, torch::Device(torch::kCPU));
  } catch (const std::exception& e) {
    fail("cannot read '" + path + "': " + e.what());
  }
}

namespace {

// A unit as saved: its parameters by name, in flat order.
struct SavedUnit {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int64_t> offsets, numels;
  int64_t shard_numel = 0;
};

// Where a parameter's values go: a current unit, or a plain tensor.
struct Target {
  FlatParam* unit = nullptr;
  size_t index = 0;
  torch::Tensor tensor;  // plain parameter or buffer
};

std::map<std::string, Target> targets_of(torch::nn::Module& model, const ShardedModel* sharded) {
  std::map<std::string, Target> out;
  for (auto& p : model.named_parameters(/*recurse=*/true)) out[p.key()].tensor = p.value();
  for (auto& b : model.named_buffers(/*recurse=*/true)) out[b.key()].tensor = b.value();
  if (sharded) {
    for (const auto& unit : sharded->units()) {
      for (size_t i = 0; i < unit->param_names().size(); ++i) out[unit->param_names()[i]] = Target{unit.get(), i, {}};
    }
  }
  return out;
}

void deliver(const Target& target, int64_t start, const torch::Tensor& values) {
  torch::NoGradGuard no_grad;
  if (target.unit) {
    target.unit->load_range(values, target.unit->offset(target.index) + start);
    return;
  }
  param_access::Pause pause;
  target.tensor.view({-1}).narrow(0, start, values.numel()).copy_(values.reshape({-1}));
}

// One unit per sharded unit, or the model's trainable parameters as one unit held by one process.
std::vector<SavedUnit> layout_of(const torch::nn::Module& model, const ShardedModel* sharded) {
  std::vector<SavedUnit> units;
  if (sharded) {
    for (const auto& u : sharded->units()) {
      SavedUnit s;
      s.names = u->param_names();
      for (size_t i = 0; i < u->params().size(); ++i) {
        s.shapes.push_back(u->params()[i].sizes().vec());
        s.offsets.push_back(u->offset(i));
        s.numels.push_back(u->params()[i].numel());
      }
      s.shard_numel = u->shard_numel();
      units.push_back(std::move(s));
    }
    return units;
  }
  SavedUnit s;
  int64_t offset = 0;
  std::set<const void*> seen;
  for (auto& p : model.named_parameters(/*recurse=*/true)) {
    if (!p.value().requires_grad() || !seen.insert(p.value().unsafeGetTensorImpl()).second) continue;
    s.names.push_back(p.key());
    s.shapes.push_back(p.value().sizes().vec());
    s.offsets.push_back(offset);
    s.numels.push_back(p.value().numel());
    offset += p.value().numel();
  }
  s.shard_numel = offset;
  if (!s.names.empty()) units.push_back(std::move(s));
  return units;
}

}  // namespace

std::map<const void*, torch::Tensor> gather_full(const ShardedModel& model, bool main) {
  std::map<const void*, torch::Tensor> full;
  for (const auto& unit : model.units()) {
    const torch::Tensor flat = unit->gather_master();  // collective
    if (!main) continue;
    for (size_t i = 0; i < unit->params().size(); ++i) {
      const auto& p = unit->params()[i];
      full[p.unsafeGetTensorImpl()] = flat.narrow(0, unit->offset(i), p.numel())
                                          .view(p.sizes())
                                          .to(torch::kCPU, unit->shard().scalar_type())
                                          .clone();
    }
  }
  return full;
}

void write_full(const torch::nn::Module& model, const std::map<const void*, torch::Tensor>& full,
                torch::serialize::OutputArchive& archive) {
  auto value = [&](const torch::Tensor& t) {
    auto it = full.find(t.unsafeGetTensorImpl());
    return it == full.end() ? t : it->second;
  };
  // As Module::save: own parameters, own buffers, then each serializable child nested.
  for (const auto& p : model.named_parameters(/*recurse=*/false)) archive.write(p.key(), value(p.value()));
  for (const auto& b : model.named_buffers(/*recurse=*/false)) archive.write(b.key(), value(b.value()), true);
  for (const auto& child : model.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::OutputArchive nested(archive.compilation_unit());
    write_full(*child.value(), full, nested);
    archive.write(child.key(), nested);
  }
}

namespace {

void read_values(torch::nn::Module& model, torch::serialize::InputArchive& archive, const std::string& prefix,
                 const std::string& where, std::map<std::string, torch::Tensor>& out) {
  auto read = [&](const std::string& key, const torch::Tensor& current, bool buffer) {
    torch::Tensor saved;
    if (!archive.try_read(key, saved, buffer)) {
      fail(where + " has no " + (buffer ? "buffer '" : "parameter '") + prefix + key +
           "' (saved from a different model?)");
    }
    if (saved.sizes() != current.sizes()) {
      fail(where + ": '" + prefix + key + "' has shape " + shape_text(saved.sizes()) + " in the file and " +
           shape_text(current.sizes()) + " in the model (saved from a different model?)");
    }
    out[prefix + key] = saved;
  };
  for (auto& p : model.named_parameters(/*recurse=*/false)) read(p.key(), p.value(), false);
  for (auto& b : model.named_buffers(/*recurse=*/false)) read(b.key(), b.value(), true);
  for (auto& child : model.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::InputArchive nested;
    if (!archive.try_read(child.key(), nested)) {
      fail(where + " has no submodule '" + prefix + child.key() + "' (saved from a different model?)");
    }
    read_values(*child.value(), nested, prefix + child.key() + ".", where, out);
  }
}

}  // namespace

void read_full(torch::nn::Module& model, const ShardedModel* sharded, torch::serialize::InputArchive& archive,
               const std::string& where) {
  std::map<std::string, torch::Tensor> values;
  read_values(model, archive, "", where, values);
  const auto targets = targets_of(model, sharded);
  for (const auto& [name, target] : targets) {
    auto it = values.find(name);
    if (it != values.end()) deliver(target, 0, it->second);
  }
}

void write_sharded(const torch::nn::Module& model, const ShardedModel* sharded, int64_t rank, int64_t world,
                   const std::string& meta, const ShardPath& shard) {
  CommScope scope;
  param_access::Pause pause;
  const auto units = layout_of(model, sharded);
  const int64_t saved_world = sharded ? world : 1;
  if (rank == 0) {
    torch::serialize::OutputArchive a;
    a.write(kFormatKey, c10::IValue(std::string(kFormat)));
    a.write("num_processes", c10::IValue(saved_world));
    a.write("num_units", c10::IValue(static_cast<int64_t>(units.size())));
    for (size_t k = 0; k < units.size(); ++k) {
      const std::string u = "unit_" + std::to_string(k) + "_";
      a.write(u + "params", c10::IValue(join(units[k].names, "\n")));
      a.write(u + "shard_numel", c10::IValue(units[k].shard_numel));
      std::vector<int64_t> shapes;
      for (const auto& s : units[k].shapes) {
        shapes.push_back(static_cast<int64_t>(s.size()));
        shapes.insert(shapes.end(), s.begin(), s.end());
      }
      a.write(u + "shapes", torch::tensor(shapes, torch::kInt64));
    }
    // What is not sharded (buffers, frozen parameters): identical on every process.
    std::set<std::string> in_units;
    for (const auto& u : units) in_units.insert(u.names.begin(), u.names.end());
    std::vector<std::string> names;
    auto add = [&](const std::string& name, const torch::Tensor& t) {
      if (in_units.count(name)) return;
      a.write("replicated_" + std::to_string(names.size()), t.detach().cpu());
      names.push_back(name);
    };
    for (const auto& p : model.named_parameters(/*recurse=*/true)) add(p.key(), p.value());
    const size_t frozen = names.size();
    for (const auto& b : model.named_buffers(/*recurse=*/true)) add(b.key(), b.value());
    a.write("replicated_names", c10::IValue(join(names, "\n")));
    // Which of them are buffers (the rest are frozen parameters): an offline tool rewriting
    // the model as Module::save does marks them as such (model_file.h).
    const std::vector<std::string> buffer_names(names.begin() + static_cast<std::ptrdiff_t>(frozen), names.end());
    a.write("replicated_buffers", c10::IValue(join(buffer_names, "\n")));
    save_atomically(a, meta);
  }
  if (rank >= saved_world) return;
  torch::serialize::OutputArchive a;
  for (size_t k = 0; k < units.size(); ++k) {
    torch::Tensor values;
    if (sharded) {
      const auto& unit = sharded->units()[k];
      values = unit->shard().narrow(0, 0, unit->local_valid()).to(torch::kCPU, unit->shard().scalar_type()).clone();
    } else {
      std::vector<torch::Tensor> parts;
      std::set<const void*> seen;
      for (const auto& p : model.parameters(/*recurse=*/true)) {
        if (p.requires_grad() && seen.insert(p.unsafeGetTensorImpl()).second)
          parts.push_back(p.detach().reshape({-1}).cpu());
      }
      values = torch::cat(parts);
    }
    a.write("unit_" + std::to_string(k), values);
  }
  save_atomically(a, shard(rank));
}

bool is_sharded_metadata(const std::string& path) {
  torch::serialize::InputArchive a;
  load_archive(a, path);
  return is_sharded_metadata(a);
}

bool is_sharded_metadata(torch::serialize::InputArchive& a) {
  c10::IValue format;
  return a.try_read(kFormatKey, format) && format.isString() && format.toStringRef() == kFormat;
}

namespace {

std::vector<SavedUnit> read_layout(torch::serialize::InputArchive& a, const std::string& meta) {
  c10::IValue v;
  a.read("num_units", v);
  std::vector<SavedUnit> units(static_cast<size_t>(v.toInt()));
  for (size_t k = 0; k < units.size(); ++k) {
    const std::string u = "unit_" + std::to_string(k) + "_";
    a.read(u + "params", v);
    units[k].names = split_lines(v.toStringRef());
    a.read(u + "shard_numel", v);
    units[k].shard_numel = v.toInt();
    torch::Tensor shapes;
    a.read(u + "shapes", shapes);
    const auto s = shapes.to(torch::kInt64).contiguous();
    const int64_t* d = s.data_ptr<int64_t>();
    int64_t at = 0, offset = 0;
    for (size_t i = 0; i < units[k].names.size(); ++i) {
      if (at >= s.numel()) fail(meta + ": truncated shapes of unit " + std::to_string(k));
      const int64_t dims = d[at++];
      std::vector<int64_t> shape(d + at, d + at + dims);
      at += dims;
      int64_t n = 1;
      for (int64_t x : shape) n *= x;
      units[k].shapes.push_back(shape);
      units[k].offsets.push_back(offset);
      units[k].numels.push_back(n);
      offset += n;
    }
  }
  return units;
}

// Every saved parameter must exist here with its shape, and every parameter here that the
// file shards must be in it: otherwise the file belongs to a different model.
void check_match(const std::vector<SavedUnit>& units, const std::map<std::string, Target>& targets,
                 const std::map<std::string, torch::Tensor>& replicated, const std::string& meta) {
  std::vector<std::string> problems;
  std::set<std::string> saved;
  for (const auto& u : units) {
    for (size_t i = 0; i < u.names.size(); ++i) {
      saved.insert(u.names[i]);
      auto it = targets.find(u.names[i]);
      if (it == targets.end()) {
        problems.push_back("'" + u.names[i] + "' is in the file but not in the model");
        continue;
      }
      const auto& t = it->second;
      const auto sizes = t.unit ? t.unit->params()[t.index].sizes() : t.tensor.sizes();
      if (sizes.vec() != u.shapes[i]) {
        problems.push_back("'" + u.names[i] + "' has shape " + shape_text(u.shapes[i]) + " in the file and " +
                           shape_text(sizes) + " in the model");
      }
    }
  }
  for (const auto& [name, t] : targets) {
    if (!saved.count(name) && !replicated.count(name))
      problems.push_back("'" + name + "' is in the model but not in the file");
  }
  if (problems.empty()) return;
  if (problems.size() > 6) {
    const size_t more = problems.size() - 5;
    problems.resize(5);
    problems.push_back("and " + std::to_string(more) + " more");
  }
  fail("the sharded state dict " + meta +
       " does not fit this model (saved from a different model?): " + join(problems, "; "));
}

// Reads the metadata at `meta` into `a`: the saved number of processes and the units.
std::pair<int64_t, std::vector<SavedUnit>> open_metadata(torch::serialize::InputArchive& a, const std::string& meta) {
  load_archive(a, meta);
  c10::IValue v;
  if (!a.try_read(kFormatKey, v) || !v.isString() || v.toStringRef() != kFormat) {
    fail("'" + meta + "' is not the metadata of a sharded state dict written by accelerator.save_model");
  }
  a.read("num_processes", v);
  return {v.toInt(), read_layout(a, meta)};
}

// Calls fn(r, k, values) for each saved process r's file (in rank order, one file open at a
// time) and each unit k: the flat values that process held of the unit.
void for_each_saved_shard(int64_t saved_world, size_t units, const ShardPath& shard,
                          const std::function<void(int64_t, size_t, const torch::Tensor&)>& fn) {
  for (int64_t r = 0; r < saved_world; ++r) {
    torch::serialize::InputArchive part;
    load_archive(part, shard(r));
    for (size_t k = 0; k < units; ++k) {
      torch::Tensor values;
      part.read("unit_" + std::to_string(k), values);
      fn(r, k, values);
    }
  }
}

}  // namespace

void read_sharded(torch::nn::Module& model, const ShardedModel* sharded, const std::string& meta,
                  const ShardPath& shard) {
  CommScope scope;
  torch::serialize::InputArchive a;
  c10::IValue v;
  // Not a structured binding: the lambda below captures `units`, which C++17 allows only for
  // a variable (clang: "captured structured bindings are a C++20 extension").
  const auto saved = open_metadata(a, meta);
  const int64_t saved_world = saved.first;
  const auto& units = saved.second;
  a.read("replicated_names", v);
  std::map<std::string, torch::Tensor> replicated;
  const auto names = split_lines(v.toStringRef());
  for (size_t j = 0; j < names.size(); ++j) {
    torch::Tensor t;
    a.read("replicated_" + std::to_string(j), t);
    replicated[names[j]] = t;
  }
  const auto targets = targets_of(model, sharded);
  check_match(units, targets, replicated, meta);
  for (const auto& [name, t] : replicated) {
    auto it = targets.find(name);
    if (it != targets.end()) deliver(it->second, 0, t);
  }
  // One saved process's file at a time: each process takes what overlaps its own shards.
  for_each_saved_shard(saved_world, units.size(), shard, [&](int64_t r, size_t k, const torch::Tensor& values) {
    const int64_t base = r * units[k].shard_numel;
    for (size_t j = 0; j < units[k].names.size(); ++j) {
      const int64_t lo = std::max(units[k].offsets[j], base);
      const int64_t hi = std::min(units[k].offsets[j] + units[k].numels[j], base + values.numel());
      if (lo >= hi) continue;
      deliver(targets.at(units[k].names[j]), lo - units[k].offsets[j], values.narrow(0, lo - base, hi - lo));
    }
  });
}

SavedTensors read_sharded_values(const std::string& meta, const ShardPath& shard) {
  torch::serialize::InputArchive a;
  c10::IValue v;
  const auto [saved_world, units] = open_metadata(a, meta);
  SavedTensors out;
  // Each unit's flat parameter, put back together from the processes' files in rank order.
  std::vector<std::vector<torch::Tensor>> parts(units.size());
  for_each_saved_shard(saved_world, units.size(), shard,
                       [&](int64_t /*r*/, size_t k, const torch::Tensor& values) { parts[k].push_back(values); });
  for (size_t k = 0; k < units.size(); ++k) {
    const torch::Tensor flat = torch::cat(parts[k]);
    const auto& u = units[k];
    const int64_t total = u.names.empty() ? 0 : u.offsets.back() + u.numels.back();
    if (flat.numel() < total) fail("the shards of '" + meta + "' hold fewer values than its unit " + std::to_string(k));
    for (size_t j = 0; j < u.names.size(); ++j) {
      out.push_back({u.names[j], flat.narrow(0, u.offsets[j], u.numels[j]).reshape(u.shapes[j]).clone(), false});
    }
  }
  a.read("replicated_names", v);
  const auto names = split_lines(v.toStringRef());
  std::set<std::string> buffers;
  if (a.try_read("replicated_buffers", v)) {
    const auto b = split_lines(v.toStringRef());
    buffers.insert(b.begin(), b.end());
  } else if (!names.empty()) {
    fail("'" + meta + "' was written before sharded state dicts recorded which tensors are buffers: save it again");
  }
  for (size_t j = 0; j < names.size(); ++j) {
    torch::Tensor t;
    a.read("replicated_" + std::to_string(j), t);
    out.push_back({names[j], t, buffers.count(names[j]) != 0});
  }
  return out;
}

}  // namespace fsdp_state
}  // namespace detail
}  // namespace accelerate
