// accelerate-model-tools: `accelerate merge-weights` and `accelerate estimate-memory`, with
// Hugging Face Accelerate's command names and flags (docs/fsdp.md, "Offline tools"). The
// launcher runs this program, which links the runtime to read saved models.
#include <accelerate/checkpoint/checkpoint.h>
#include <accelerate/fsdp/model_file.h>
#include <accelerate/log/logging.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "base/cli_args.h"

namespace {

namespace fs = std::filesystem;
using accelerate::launcher::Arity;
using accelerate::launcher::FlagSpec;
using accelerate::launcher::ParsedArgs;
using accelerate::launcher::UsageError;

const char* kMergeUsage =
    "usage: accelerate merge-weights CHECKPOINT OUTPUT_DIR [--remove_checkpoint_dir] [--unsafe_serialization]\n\n"
    "Puts a SHARDED_STATE_DICT model back together into one file that torch::load(model, path)\n"
    "reads in any program. CHECKPOINT is a directory save_model() wrote (fsdp_metadata.pt and\n"
    "shard_<rank>.pt), a checkpoint save_state() wrote (each sharded model_<i>.pt), or one\n"
    "metadata file. OUTPUT_DIR gets model.pt (save_model) or model_<i>.pt (save_state); an\n"
    "existing file there is not overwritten.\n"
    "  --remove_checkpoint_dir  remove a save_model directory once its merged file is written\n"
    "                           and read back (a save_state checkpoint is never removed)\n"
    "  --unsafe_serialization   accepted; the output is always a LibTorch archive\n";

const char* kEstimateUsage =
    "usage: accelerate estimate-memory MODEL_FILE [--dtypes float32 float16 ...] [--num_processes N]\n\n"
    "Memory a model needs to train with Adam, from a saved model (save_model(), save(),\n"
    "torch::save(model), or sharded metadata), per dtype and per FSDP strategy on N processes\n"
    "(default 2). As the reference's estimate: weights, gradients and two Adam states, no\n"
    "activations.\n"
    "  --dtypes         float32, float16, bfloat16, int8, int4 or all (default: all)\n"
    "  --num_processes  processes the model is sharded over (default 2)\n";

// The metadata files of what `path` names, with the merged file each becomes.
std::vector<std::pair<std::string, std::string>> merge_inputs(const fs::path& in, const fs::path& out,
                                                              bool& model_dir) {
  std::vector<std::pair<std::string, std::string>> files;
  model_dir = fs::is_directory(in) && fs::is_regular_file(in / "fsdp_metadata.pt");
  if (model_dir) {
    files.emplace_back((in / "fsdp_metadata.pt").string(), (out / "model.pt").string());
  } else if (fs::is_directory(in)) {
    for (int i = 0; fs::is_regular_file(in / ("model_" + std::to_string(i) + ".pt")); ++i) {
      const std::string name = "model_" + std::to_string(i) + ".pt";
      files.emplace_back((in / name).string(), (out / name).string());
    }
  } else if (fs::is_regular_file(in)) {
    files.emplace_back(in.string(), (out / in.filename()).string());
  }
  if (files.empty()) {
    throw UsageError(in.string() + " is neither a save_model() directory (fsdp_metadata.pt), a save_state() " +
                     "checkpoint (model_0.pt) nor a metadata file");
  }
  return files;
}

int merge_weights(const ParsedArgs& a) {
  if (a.positional.size() != 2) throw UsageError("expected CHECKPOINT and OUTPUT_DIR");
  const fs::path in = a.positional[0], out = a.positional[1];
  bool model_dir = false;
  const auto files = merge_inputs(in, out, model_dir);
  if (a.has("remove_checkpoint_dir") && !model_dir) {
    throw UsageError(
        "--remove_checkpoint_dir removes only a save_model() directory: a save_state() checkpoint "
        "also holds the optimizer, loaders and random state");
  }
  for (const auto& [meta, merged] : files) {
    if (fs::exists(merged)) throw UsageError(merged + " exists: choose another OUTPUT_DIR (nothing was written)");
  }
  if (a.has("unsafe_serialization"))
    accelerate::get_logger("accelerate merge-weights").info("the output is a LibTorch archive");
  fs::create_directories(out);
  for (const auto& [meta, merged] : files) {
    const auto tensors = accelerate::read_model_file(meta);
    accelerate::write_model_file(tensors, merged);
    // Read back before anything is removed: the merged file must hold every tensor.
    const auto again = accelerate::read_model_file(merged);
    int64_t values = 0;
    for (const auto& t : tensors) values += t.value.numel();
    if (again.size() != tensors.size()) {
      throw accelerate::CheckpointError("accelerate: " + merged + " did not read back whole");
    }
    std::cout << "merged " << meta << " -> " << merged << " (" << tensors.size() << " tensors, " << values
              << " values)\n";
  }
  if (a.has("remove_checkpoint_dir")) {
    fs::remove_all(in);
    std::cout << "removed " << in.string() << "\n";
  }
  return 0;
}

struct Dtype {
  const char* name;
  double bytes;
};
const Dtype kDtypes[] = {{"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"int8", 1}, {"int4", 0.5}};

std::string size_text(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  std::ostringstream os;
  os << std::fixed << std::setprecision(u == 0 ? 0 : 2) << bytes << " " << units[u];
  return os.str();
}

std::vector<Dtype> chosen_dtypes(const ParsedArgs& a) {
  std::vector<std::string> names;
  if (a.values.count("dtypes")) names.push_back(a.values.at("dtypes"));
  names.insert(names.end(), a.positional.begin() + 1, a.positional.end());  // --dtypes a b c
  std::vector<Dtype> out;
  for (const auto& list : names) {
    std::stringstream in(list);
    for (std::string n; std::getline(in, n, ',');) {
      if (n == "all") return {std::begin(kDtypes), std::end(kDtypes)};
      auto it = std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const Dtype& d) { return n == d.name; });
      if (it == std::end(kDtypes))
        throw UsageError("--dtypes: '" + n + "' is not one of float32, float16, " + "bfloat16, int8, int4, all");
      out.push_back(*it);
    }
  }
  if (out.empty()) return {std::begin(kDtypes), std::end(kDtypes)};
  return out;
}

int estimate_memory(const ParsedArgs& a) {
  if (a.positional.empty()) throw UsageError("expected MODEL_FILE");
  const int n = a.values.count("num_processes")
                    ? accelerate::launcher::parse_int(a.values.at("num_processes"), "--num_processes")
                    : 2;
  if (n < 1) throw UsageError("--num_processes must be at least 1");
  const auto dtypes = chosen_dtypes(a);
  int64_t params = 0, largest = 0;
  std::string largest_name;
  for (const auto& t : accelerate::read_model_file(a.positional[0])) {
    if (t.is_buffer) continue;
    params += t.value.numel();
    if (t.value.numel() > largest) largest = t.value.numel(), largest_name = t.name;
  }
  std::cout << a.positional[0] << ": " << params << " parameters; largest tensor " << largest_name << " (" << largest
            << ")\nTraining with Adam = weights + gradients + 2 optimizer states; per process on " << n
            << " processes (FSDP: docs/fsdp.md). Activations not included.\n\n";
  std::cout << std::left << std::setw(10) << "dtype" << std::setw(14) << "largest" << std::setw(14) << "total"
            << std::setw(16) << "NO_SHARD/DDP" << std::setw(16) << "SHARD_GRAD_OP" << std::setw(22)
            << "FULL_SHARD 1 unit"
            << "FULL_SHARD per tensor\n";
  for (const auto& d : dtypes) {
    const double total = static_cast<double>(params) * d.bytes, big = static_cast<double>(largest) * d.bytes;
    // Whole weights + sharded rest; a gathered unit + every shard.
    std::cout << std::setw(10) << d.name << std::setw(14) << size_text(big) << std::setw(14) << size_text(total)
              << std::setw(16) << size_text(4 * total) << std::setw(16) << size_text(total + 3 * total / n)
              << std::setw(22) << size_text(total + 4 * total / n) << size_text(big + 4 * total / n) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::string command = args.empty() ? "" : args[0];
  const bool merge = command == "merge-weights";
  if (!merge && command != "estimate-memory") {
    std::cerr << "usage: accelerate-model-tools merge-weights|estimate-memory ... (run by accelerate)\n";
    return 2;
  }
  const std::vector<FlagSpec> specs = merge ? std::vector<FlagSpec>{{"help", Arity::kSwitch, 'h', ""},
                                                                    {"remove_checkpoint_dir", Arity::kSwitch, 0, ""},
                                                                    {"unsafe_serialization", Arity::kSwitch, 0, ""}}
                                            : std::vector<FlagSpec>{{"help", Arity::kSwitch, 'h', ""},
                                                                    {"dtypes", Arity::kValue, 0, ""},
                                                                    {"num_processes", Arity::kValue, 0, ""}};
  const std::string name = "accelerate " + command;
  try {
    const ParsedArgs parsed = accelerate::launcher::parse_args({args.begin() + 1, args.end()}, specs, false);
    if (parsed.has("help")) {
      std::cout << (merge ? kMergeUsage : kEstimateUsage);
      return 0;
    }
    return merge ? merge_weights(parsed) : estimate_memory(parsed);
  } catch (const UsageError& e) {
    accelerate::get_logger(name).error(e.what());
    std::cerr << (merge ? kMergeUsage : kEstimateUsage);
    return 2;
  } catch (const std::exception& e) {
    accelerate::get_logger(name).error(e.what());
    return 1;
  }
}
