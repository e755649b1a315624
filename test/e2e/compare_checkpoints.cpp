// Compares two torch::save archives tensor by tensor (recursing into sub-archives, as
// Module::save nests sub-modules). Exit 0 when every tensor of A exists in B with the same
// shape and |a-b| <= atol + rtol*|b|, 1 when one differs, 3 when A holds no tensor at all;
// prints the largest difference either way.
//   compare_checkpoints A.pt B.pt [atol] [rtol]
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Result {
  int64_t tensors = 0;
  int64_t failures = 0;
  double max_abs_diff = 0;
  std::string worst;
};

void compare(torch::serialize::InputArchive& a, torch::serialize::InputArchive& b, const std::string& prefix,
             double atol, double rtol, Result& r) {
  // LibTorch keys optimizer state by the parameter's address ("state.0x55..." in 1.13,
  // "state.94585335248352" in 2.x) in hash order, which differs between runs and cannot be
  // paired without parsing param_groups: those entries are skipped (the parameters
  // themselves are compared in the model file).
  for (const auto& key : a.keys()) {
    const bool address =
        key.rfind("0x", 0) == 0 || (key.size() >= 9 && key.find_first_not_of("0123456789") == std::string::npos);
    if (address) continue;
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    const std::string& key_b = key;
    torch::Tensor ta, tb;
    if (a.try_read(key, ta) || a.try_read(key, ta, /*is_buffer=*/true)) {
      if (!(b.try_read(key_b, tb) || b.try_read(key_b, tb, true))) {
        std::printf("missing in B: %s\n", name.c_str());
        ++r.failures;
        continue;
      }
      ++r.tensors;
      if (ta.sizes() != tb.sizes()) {
        std::printf("shape differs: %s\n", name.c_str());
        ++r.failures;
        continue;
      }
      auto fa = ta.to(torch::kDouble), fb = tb.to(torch::kDouble);
      const double diff = ta.numel() ? (fa - fb).abs().max().item<double>() : 0.0;
      if (diff > r.max_abs_diff) {
        r.max_abs_diff = diff;
        r.worst = name;
      }
      if (!torch::allclose(fa, fb, rtol, atol)) {
        std::printf("differs: %s (max |a-b| = %.3g)\n", name.c_str(), diff);
        ++r.failures;
      }
      continue;
    }
    torch::serialize::InputArchive sa, sb;
    if (a.try_read(key, sa)) {
      if (!b.try_read(key_b, sb)) {
        std::printf("missing in B: %s/\n", name.c_str());
        ++r.failures;
        continue;
      }
      compare(sa, sb, name, atol, rtol, r);
    }
    // Other IValues (optimizer step counters, options) are not compared.
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s A.pt B.pt [atol] [rtol]\n", argv[0]);
    return 2;
  }
  const double atol = argc > 3 ? std::atof(argv[3]) : 1e-5;
  const double rtol = argc > 4 ? std::atof(argv[4]) : 1e-4;
  torch::serialize::InputArchive a, b;
  a.load_from(argv[1]);
  b.load_from(argv[2]);
  Result r;
  compare(a, b, "", atol, rtol, r);
  std::printf("compared %lld tensors: %lld differ; max |a-b| = %.3g (%s)\n", static_cast<long long>(r.tensors),
              static_cast<long long>(r.failures), r.max_abs_diff, r.worst.c_str());
  if (r.failures != 0) return 1;
  return r.tensors > 0 ? 0 : 3;  // 3: nothing comparable (e.g. an optimizer's IValue state)
}
