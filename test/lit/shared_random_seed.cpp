// accelerate-shared-random-seed: engines (and srand) seeded from values that differ between
// processes and used to order, split or make the data get process 0's seed on every process
// (`<accelerator>.shared_seed(seed)`); engines used only per sample, constant seeds and
// default seeds stay; a seed the collective cannot reach equally often on every process
// (before main, under a per-process condition) and an engine handed where the tool cannot
// follow get a warning at the seed.
// RUN: %check-rule
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

void consume(std::mt19937& engine);

// The file list shuffled once in the dataset's constructor: a local engine and a member.
class Files {
 public:
  Files(std::vector<std::string> files) : files_(std::move(files)), rng_(std::random_device{}()) {
    // CHECK: rng_(accelerate::Accelerator::current().shared_seed(std::random_device{}()))
    std::random_device rd;
    std::mt19937 gen(rd());
    // CHECK: std::mt19937 gen(accelerate::Accelerator::current().shared_seed(rd()));
    std::shuffle(files_.begin(), files_.end(), gen);
    std::shuffle(files_.begin(), files_.end(), rng_);
  }
  // Per-sample noise in get(): its engine keeps its own seed on every process.
  float get(size_t index) {
    std::normal_distribution<float> noise(0.f, 1.f);
    return static_cast<float>(index) + noise(jitter_);
  }

 private:
  std::vector<std::string> files_;
  std::mt19937 rng_;
  std::mt19937 jitter_{static_cast<unsigned>(std::time(nullptr))};
  // CHECK: std::mt19937 jitter_{static_cast<unsigned>(std::time(nullptr))};
};

// Made before main: no Accelerator exists yet, so the seed cannot be shared there.
std::mt19937 global_engine(std::random_device{}());
// DIAG: shared_random_seed.cpp:[[@LINE-1]]:28: warning: global_engine decides the data order, but its seed cannot be shared here: it runs before main {{.*}} [accelerate-shared-random-seed]
std::vector<int> global_order() {
  std::vector<int> v{1, 2, 3};
  std::shuffle(v.begin(), v.end(), global_engine);
  return v;
}

int main(int argc, char** argv) {
  Files files({"a", "b", "c"});
  // Copied (as map() copies a data set): the implicit copy of jitter_ decides nothing.
  Files copy = files;
  // srand(time(0)) with a hand-written split from rand(): the data.
  std::srand(std::time(nullptr));
  // CHECK: std::srand(accelerator.shared_seed(std::time(nullptr)));
  std::vector<int> train, val;
  for (int i = 0; i < 10; ++i)
    (std::rand() % 5 == 0 ? val : train).push_back(i);
  // A temporary engine given to std::shuffle, and synthetic data drawn once.
  std::shuffle(train.begin(), train.end(), std::mt19937(std::random_device{}()));
  // CHECK: std::shuffle(train.begin(), train.end(), std::mt19937(accelerator.shared_seed(std::random_device{}())));
  std::default_random_engine maker(static_cast<unsigned>(std::time(nullptr)));
  // CHECK: std::default_random_engine maker(accelerator.shared_seed(static_cast<unsigned>(std::time(nullptr))));
  std::uniform_real_distribution<double> value(0.0, 1.0);
  std::vector<double> xs;
  for (int i = 0; i < 4; ++i)
    xs.push_back(value(maker));
  // Constant and default seeds are the same on every process already.
  std::mt19937 fixed(42);
  // CHECK: std::mt19937 fixed(42);
  std::mt19937 plain;
  std::shuffle(train.begin(), train.end(), fixed);
  std::shuffle(val.begin(), val.end(), plain);
  // Handed to a function the tool cannot see into.
  std::mt19937 handed(std::random_device{}());
  // DIAG: shared_random_seed.cpp:[[@LINE-1]]:23: warning: handed is seeded differently on every process and used where the tool cannot see what it decides (line [[@LINE+2]]); {{.*}} [accelerate-shared-random-seed]
  // CHECK: std::mt19937 handed(std::random_device{}());
  consume(handed);
  // Only on one process: the collective would not be reached by the others.
  if (std::time(nullptr) % 2 == 0) {
    std::mt19937 only_main(std::random_device{}());
    // DIAG: shared_random_seed.cpp:[[@LINE-1]]:28: warning: only_main decides the data order, but its seed cannot be shared here: it runs under a condition that can differ between processes {{.*}} [accelerate-shared-random-seed]
    std::shuffle(val.begin(), val.end(), only_main);
  }
  // A random_device as the engine itself: there is no seed to share.
  std::random_device device;
  std::shuffle(val.begin(), val.end(), device);
  // DIAG: shared_random_seed.cpp:[[@LINE-1]]:40: warning: a std::random_device used as the engine {{.*}} [accelerate-shared-random-seed]
  return static_cast<int>(xs.size()) + argc;
}
