// A small training program with checkpoints, started on 1..3 processes by
// checkpoint_test.cpp (test/support's harness) and by the launcher's restart tests.
//
//   checkpoint_worker train --out PREFIX [--project DIR] [--epochs 4] [--save-every 3]
//                     [--stop-after K] [--kill-at K --kill-rank R] [--kill-in-save K]
//                     [--total-limit L] [--batch 4] [--dir-saves] [--load DIR]
//   checkpoint_worker errors DIR
//
// train: MLP with dropout (random numbers per process), AdamW + StepLR, gradient
// accumulation 2, a shuffled prepared loader, TrainingProgress registered. It resumes from
// the project's latest checkpoint when there is one; it saves after every save-every-th
// step that synchronised. PREFIX.params gets the final parameters (process 0, %a), and
// PREFIX.order<rank> one line per step: "<step> <epoch> <ids of the batch>" (appended, so
// a resumed run continues the file). --stop-after K exits after step K's save;
// --kill-at K SIGKILLs rank R after step K in the first attempt; --kill-in-save K SIGKILLs
// process 0 while it writes the checkpoint of step K; --load DIR only loads DIR (the
// integrity tests' reader) and prints "loaded DIR at step S epoch E".
// errors: each misuse gives its CheckpointError; prints "OK <case>" per case.
#include <accelerate/accelerate.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using accelerate::Accelerator;
using accelerate::AcceleratorOptions;

namespace {

// 40 items; the target's last column is the item's index (to record the loader's order).
struct Items : torch::data::datasets::Dataset<Items> {
  torch::data::Example<> get(size_t i) override {
    auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(100 + i));
    auto x = torch::randn({6}, gen, torch::TensorOptions().dtype(torch::kFloat));
    auto y = torch::cat({x.narrow(0, 0, 2).sin(), torch::tensor({static_cast<float>(i)})});
    return {x, y};
  }
  c10::optional<size_t> size() const override { return 40; }
};

struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 16));
    drop = register_module("drop", torch::nn::Dropout(0.3));
    fc2 = register_module("fc2", torch::nn::Linear(16, 2));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::tanh(drop(fc1(x)))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Net);

// Registered last: kills process 0 in the middle of writing a chosen checkpoint.
struct KillSwitch {
  bool armed = false;
  void save(torch::serialize::OutputArchive& a) const {
    if (armed) {
      std::cout << "killing process 0 while it writes a checkpoint" << std::endl;
      ::raise(SIGKILL);
    }
    a.write("alive", c10::IValue(true));
  }
  void load(torch::serialize::InputArchive&) {}
};

std::map<std::string, std::string> parse(int argc, char** argv, int first) {
  std::map<std::string, std::string> a{{"epochs", "4"},      {"save-every", "3"}, {"stop-after", "-1"},
                                       {"kill-at", "-1"},    {"kill-rank", "1"},  {"kill-in-save", "-1"},
                                       {"total-limit", "0"}, {"batch", "4"},      {"project", ""},
                                       {"out", ""},          {"dir-saves", "0"},  {"load", ""}};
  for (int i = first; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--dir-saves") {
      a["dir-saves"] = "1";
      continue;
    }
    if (k.rfind("--", 0) != 0 || !a.count(k.substr(2)) || i + 1 >= argc) {
      std::cerr << "checkpoint_worker: bad argument " << k << "\n";
      std::exit(2);
    }
    a[k.substr(2)] = argv[++i];
  }
  return a;
}

std::string ids_of(const torch::Tensor& target) {
  std::ostringstream os;
  auto ids = target.select(1, 2).to(torch::kLong);
  for (int64_t i = 0; i < ids.size(0); ++i) os << (i ? "," : "") << ids[i].item<int64_t>();
  return os.str();
}

void write_params(const std::string& path, Net& model) {
  std::ofstream out(path);
  for (auto& p : model->named_parameters()) {
    auto flat = p.value().detach().reshape({-1});
    out << p.key();
    for (int64_t i = 0; i < flat.numel(); ++i) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), " %a", flat[i].item<float>());
      out << buf;
    }
    out << "\n";
  }
}

int train(const std::map<std::string, std::string>& a) {
  auto project = accelerate::ProjectConfiguration().automatic_checkpoint_naming(true);
  if (!a.at("project").empty()) project.project_dir(a.at("project"));
  if (std::stoll(a.at("total-limit")) > 0) project.total_limit(std::stoll(a.at("total-limit")));
  Accelerator acc(AcceleratorOptions().gradient_accumulation_steps(2).project_config(project));
  acc.set_seed(7, /*device_specific=*/true);  // dropout differs per process: each one's generator matters
  Net model;
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(0.01).weight_decay(0.01));
  torch::optim::StepLR sched(opt, 3, 0.7);
  acc.prepare(model, opt, sched);
  auto loader = acc.prepare_data_loader(Items().map(torch::data::transforms::Stack<>()),
                                        torch::data::DataLoaderOptions().batch_size(std::stoul(a.at("batch"))));
  accelerate::TrainingProgress progress;
  KillSwitch kill_switch;
  acc.register_for_checkpointing(progress, &kill_switch);
  if (!a.at("load").empty()) {
    acc.load_state(a.at("load"));
    acc.print("loaded ", a.at("load"), " at step ", progress.step, " epoch ", progress.epoch);
    return 0;
  }
  if (auto latest = acc.latest_checkpoint()) {
    acc.load_state(*latest);
    acc.print("resumed from ", *latest, " at step ", progress.step, " epoch ", progress.epoch, " accelerator step ",
              acc.step(), " lr ", opt.param_groups()[0].options().get_lr());
  }
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const bool first_attempt = attempt == nullptr || std::string(attempt) == "0";
  const int64_t epochs = std::stoll(a.at("epochs")), save_every = std::stoll(a.at("save-every"));
  const int64_t stop_after = std::stoll(a.at("stop-after")), kill_at = std::stoll(a.at("kill-at"));
  const int64_t kill_in_save = std::stoll(a.at("kill-in-save"));
  std::ofstream order(a.at("out") + ".order" + std::to_string(acc.process_index()), std::ios::app);
  for (int64_t epoch = progress.epoch; epoch < epochs; ++epoch) {
    for (auto& batch : *loader) {
      auto guard = acc.accumulate(model);
      auto loss = torch::mse_loss(model->forward(batch.data), batch.target.narrow(1, 0, 2));
      acc.backward(loss);
      ++progress.step;
      order << progress.step << ' ' << epoch << ' ' << ids_of(batch.target) << std::endl;
      if (acc.sync_gradients()) {
        opt.step();
        sched.step();
        opt.zero_grad();
        if (progress.step % save_every == 0) {
          if (std::getenv("CKPT_DEBUG"))
            acc.print("save at ", progress.step, " lr ", opt.param_groups()[0].options().get_lr());
          kill_switch.armed = progress.step == kill_in_save && first_attempt && acc.is_main_process();
          if (a.at("dir-saves") == "1") {
            acc.save_state(a.at("out") + ".dir" + std::to_string(progress.step));
          } else {
            acc.save_state();
          }
          if (progress.step == stop_after) return 0;
        }
      }
      if (progress.step == kill_at && first_attempt && acc.process_index() == std::stoll(a.at("kill-rank"))) {
        std::cout << "killing process " << acc.process_index() << " at step " << progress.step << std::endl;
        ::raise(SIGKILL);
      }
    }
    progress.epoch = epoch + 1;
  }
  if (acc.is_main_process()) write_params(a.at("out") + ".params", model);
  acc.print("done: ", progress.step, " steps, accelerator step ", acc.step(), ", lr ",
            opt.param_groups()[0].options().get_lr());
  return 0;
}

// Expects `call` to throw a CheckpointError whose message contains `expected`.
template <typename F>
bool expect_error(const std::string& name, const std::string& expected, F&& call) {
  try {
    call();
  } catch (const accelerate::CheckpointError& e) {
    const bool ok = std::string(e.what()).find(expected) != std::string::npos;
    std::cout << (ok ? "OK " : "FAIL ") << name << ": " << e.what() << std::endl;
    return ok;
  }
  std::cout << "FAIL " << name << ": no CheckpointError (expected one saying '" << expected << "')" << std::endl;
  return false;
}

int errors(const std::string& dir) {
  Accelerator acc;
  torch::nn::Linear model(3, 2);
  torch::optim::SGD opt(model->parameters(), 0.1);
  acc.prepare(model, opt);
  bool ok = true;
  ok &= expect_error("missing", "does not exist", [&] { acc.load_state(dir + "/nowhere"); });
  const std::string foreign = dir + "/foreign";
  if (acc.is_main_process()) {
    fs::create_directories(foreign);
    std::ofstream(foreign + "/notes.txt") << "mine";
  }
  acc.wait_for_everyone();
  ok &= expect_error("foreign", "checkpoint_manifest.txt is missing", [&] { acc.load_state(foreign); });
  ok &= expect_error("overwrite", "refusing to replace it", [&] { acc.save_state(foreign); });
  std::ifstream kept(foreign + "/notes.txt");
  std::string text;
  kept >> text;
  if (text != "mine") ok = false, std::cout << "FAIL overwrite: notes.txt was changed" << std::endl;
  ok &= expect_error("no project", "--project_dir", [&] { acc.save_state(); });

  const std::string good = dir + "/good";
  acc.save_state(good);
  acc.save_state(good);  // replaces the complete checkpoint
  acc.load_state(good);
  {
    Accelerator second;  // the same process group, its own prepared objects
    torch::nn::Linear wide(3, 3);
    torch::optim::SGD wide_opt(wide->parameters(), 0.1);
    second.prepare(wide, wide_opt);
    ok &=
        expect_error("shape", "weight was saved as [2, 3] Float but is [3, 3] Float", [&] { second.load_state(good); });
  }
  torch::nn::Linear other(4, 2);
  acc.prepare(other);  // now two models, one optimizer
  ok &= expect_error("count", "holds 1 models, this run prepared 2", [&] { acc.load_state(good); });
  const std::string two = dir + "/two";
  acc.save_state(two);
  if (acc.is_main_process()) {  // truncate a file after the fact
    fs::resize_file(two + "/model_1.pt", 10);
  }
  acc.wait_for_everyone();
  ok &= expect_error("truncated", "the manifest says", [&] { acc.load_state(two); });
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: checkpoint_worker train --out PREFIX [...] | errors DIR\n";
    return 2;
  }
  const std::string mode = argv[1];
  try {
    if (mode == "train") return train(parse(argc, argv, 2));
    if (mode == "errors" && argc > 2) return errors(argv[2]);
  } catch (const std::exception& e) {
    std::cout << "ERROR: " << e.what() << std::endl;
    return 3;
  }
  std::cerr << "checkpoint_worker: unknown mode " << mode << "\n";
  return 2;
}
