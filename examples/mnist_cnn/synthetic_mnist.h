// Writes MNIST-format IDX files (same names, magic numbers and sizes as the real set, so
// torch::data::datasets::MNIST reads them unchanged) holding synthetic digits: each class
// is a fixed stroke pattern, partly erased and covered in noise.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace synthetic_mnist {

// torch::data::datasets::MNIST insists on the real set's sizes.
constexpr int64_t kTrainCount = 60000;
constexpr int64_t kTestCount = 10000;
constexpr int64_t kSide = 28;

inline void write_be32(std::ofstream& out, uint32_t value) {
  const unsigned char bytes[4] = {
      static_cast<unsigned char>(value >> 24), static_cast<unsigned char>(value >> 16),
      static_cast<unsigned char>(value >> 8), static_cast<unsigned char>(value)};
  out.write(reinterpret_cast<const char*>(bytes), 4);
}

// Written under a temporary name and renamed, so a concurrent reader never sees half a file.
inline void write_idx(const std::filesystem::path& path, uint32_t magic,
                      const std::vector<uint32_t>& dims, const torch::Tensor& bytes) {
  const auto tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) {
      throw std::runtime_error("cannot write " + tmp);
    }
    write_be32(out, magic);
    for (auto d : dims) {
      write_be32(out, d);
    }
    auto contiguous = bytes.contiguous();
    out.write(reinterpret_cast<const char*>(contiguous.data_ptr<uint8_t>()),
              contiguous.numel());
    if (!out) {
      throw std::runtime_error("short write to " + tmp);
    }
  }
  std::filesystem::rename(tmp, path);
}

inline void write_split(const std::filesystem::path& dir, const std::string& prefix,
                        int64_t count, const torch::Tensor& templates,
                        torch::Generator& gen) {
  auto labels = torch::randint(10, {count}, gen, torch::kLong);
  auto images = templates.index_select(0, labels);  // [count, 28, 28] in [0, 1]
  // Strokes drop out and noise covers them, so that the classes are not trivially apart.
  auto keep = (torch::rand({count, kSide, kSide}, gen) > 0.35).to(torch::kFloat);
  images = images * keep * 0.6 + torch::rand({count, kSide, kSide}, gen) * 0.7;
  auto pixels = (images.clamp(0, 1) * 255).to(torch::kUInt8);
  write_idx(dir / (prefix + "-images-idx3-ubyte"), 2051,
            {static_cast<uint32_t>(count), kSide, kSide}, pixels);
  write_idx(dir / (prefix + "-labels-idx1-ubyte"), 2049, {static_cast<uint32_t>(count)},
            labels.to(torch::kUInt8));
}

// Creates the four files in `dir` unless they are all there already. Uses its own
// generator: whether the files existed must not change the program's random stream.
inline void ensure(const std::filesystem::path& dir) {
  const char* names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
  bool complete = true;
  for (auto name : names) {
    complete = complete && std::filesystem::exists(dir / name);
  }
  if (complete) {
    return;
  }
  std::filesystem::create_directories(dir);
  auto gen = at::detail::createCPUGenerator(20240611);
  // Ten random blobs of strokes, one per class, smoothed so they look like pen marks.
  auto templates = (torch::rand({10, 1, kSide, kSide}, gen) > 0.82).to(torch::kFloat);
  templates = torch::max_pool2d(templates, 3, 1, 1).squeeze(1);
  templates.slice(1, 0, 3).zero_();
  templates.slice(1, kSide - 3, kSide).zero_();
  write_split(dir, "train", kTrainCount, templates, gen);
  write_split(dir, "t10k", kTestCount, templates, gen);
  std::printf("Generated synthetic MNIST-format data in %s\n", dir.string().c_str());
}

}  // namespace synthetic_mnist
