// Saved models without their class (model_file.h): the offline tools' reader and writer.
#include <accelerate/checkpoint/checkpoint.h>
#include <accelerate/fsdp/model_file.h>

#include <filesystem>
#include <map>
#include <memory>

#include "fsdp/fsdp_state_dict.h"

namespace accelerate {

namespace {

namespace fs = std::filesystem;

// The shard files of SHARDED metadata, named as the Accelerator names them: beside
// `fsdp_metadata.pt` (save_model) `shard_<r>.pt`, beside `model_<i>.pt` (save_state)
// `model_<i>.shard_<r>.pt`.
detail::fsdp_state::ShardPath shard_files(const std::string& meta) {
  const fs::path p(meta);
  if (p.filename() == "fsdp_metadata.pt") {
    const fs::path dir = p.parent_path();
    return [dir](int64_t r) { return (dir / ("shard_" + std::to_string(r) + ".pt")).string(); };
  }
  const std::string stem = (p.parent_path() / p.stem()).string();
  return [stem](int64_t r) { return stem + ".shard_" + std::to_string(r) + ".pt"; };
}

// A FULL archive, recursively: each key is a tensor (parameter first, then buffer: which
// one LibTorch's reader accepts tells them apart) or a nested archive (a submodule).
void read_nested(torch::serialize::InputArchive& archive, const std::string& prefix, std::vector<ModelTensor>& out) {
  for (const auto& key : archive.keys()) {
    torch::Tensor t;
    if (archive.try_read(key, t, /*is_buffer=*/false)) {
      out.push_back({prefix + key, t, false});
    } else if (archive.try_read(key, t, /*is_buffer=*/true)) {
      out.push_back({prefix + key, t, true});
    } else {
      torch::serialize::InputArchive nested;
      if (archive.try_read(key, nested)) read_nested(nested, prefix + key + ".", out);
    }
  }
}

// One node per submodule, as Module::save nests them: own parameters, own buffers, then
// children, each in the order the tensors came.
struct Node {
  std::vector<const ModelTensor*> params, buffers;
  std::vector<std::pair<std::string, std::unique_ptr<Node>>> children;

  Node& child(const std::string& name) {
    for (auto& [n, c] : children) {
      if (n == name) return *c;
    }
    children.emplace_back(name, std::make_unique<Node>());
    return *children.back().second;
  }
};

void write_node(const Node& node, torch::serialize::OutputArchive& archive) {
  auto leaf = [](const ModelTensor* t) { return t->name.substr(t->name.rfind('.') + 1); };
  for (const auto* t : node.params) archive.write(leaf(t), t->value);
  for (const auto* t : node.buffers) archive.write(leaf(t), t->value, /*is_buffer=*/true);
  for (const auto& [name, child] : node.children) {
    torch::serialize::OutputArchive nested(archive.compilation_unit());
    write_node(*child, nested);
    archive.write(name, nested);
  }
}

}  // namespace

std::vector<ModelTensor> read_model_file(const std::string& path) {
  if (!fs::is_regular_file(path)) throw CheckpointError("accelerate: no model file '" + path + "'");
  if (detail::fsdp_state::is_sharded_metadata(path)) {
    std::vector<ModelTensor> out;
    for (auto& t : detail::fsdp_state::read_sharded_values(path, shard_files(path))) {
      out.push_back({t.name, t.value, t.is_buffer});
    }
    return out;
  }
  torch::serialize::InputArchive archive;
  detail::fsdp_state::load_archive(archive, path);
  std::vector<ModelTensor> out;
  read_nested(archive, "", out);
  if (out.empty()) throw CheckpointError("accelerate: '" + path + "' holds no tensors: not a saved model");
  return out;
}

void write_model_file(const std::vector<ModelTensor>& tensors, const std::string& path) {
  Node root;
  for (const auto& t : tensors) {
    Node* node = &root;
    size_t start = 0;
    for (size_t dot = t.name.find('.'); dot != std::string::npos; dot = t.name.find('.', start)) {
      node = &node->child(t.name.substr(start, dot - start));
      start = dot + 1;
    }
    (t.is_buffer ? node->buffers : node->params).push_back(&t);
  }
  torch::serialize::OutputArchive archive;
  write_node(root, archive);
  detail::fsdp_state::save_atomically(archive, path);
}

}  // namespace accelerate
