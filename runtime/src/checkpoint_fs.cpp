// Checkpoint directories that appear whole or not at all (see checkpoint_fs.h).
#include "checkpoint_fs.h"

#include <accelerate/checkpoint.h>

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace accelerate {
namespace detail {
namespace ckpt {
namespace {

[[noreturn]] void fail(const std::string& what) { throw CheckpointError("accelerate: " + what); }

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

void sync_fd_of(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail("cannot open " + quoted(path) + " to flush it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL): their renames are ordered anyway.
  if (rc != 0 && !(err == EINVAL && (flags & O_DIRECTORY))) {
    fail("cannot flush " + quoted(path) + " to disk: " + std::strerror(err));
  }
}

// Every entry of `root` (none when it does not exist).
std::vector<fs::path> entries(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path());
  return out;
}

void rename_or_fail(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    fail("cannot rename " + quoted(from) + " to " + quoted(to) + ": " + std::strerror(errno));
  }
}

// Swaps two directories in one step where the file system can (Linux renameat2).
bool exchange(const fs::path& a, const fs::path& b) {
#if defined(RENAME_EXCHANGE)
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
    fail("cannot exchange " + quoted(a) + " and " + quoted(b) + ": " + std::strerror(errno));
  }
#endif
  (void)a;
  (void)b;
  return false;
}

}  // namespace

void sync_file(const fs::path& path) { sync_fd_of(path, O_RDONLY); }
void sync_dir(const fs::path& dir) { sync_fd_of(dir, O_RDONLY | O_DIRECTORY); }

void write_manifest(const fs::path& dir, const Manifest& m) {
  std::ostringstream os;
  os << kManifestHeader << ' ' << m.format << '\n'
     << "num_processes " << m.num_processes << '\n'
     << "step " << m.step << '\n'
     << "models " << m.models << '\n'
     << "optimizers " << m.optimizers << '\n'
     << "schedulers " << m.schedulers << '\n'
     << "scaler " << (m.scaler ? 1 : 0) << '\n'
     << "objects " << m.objects << '\n'
     << "loaders " << m.loaders << '\n';
  for (const auto& [name, size] : m.files) os << "file " << size << ' ' << name << '\n';
  const fs::path path = dir / kManifestName;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << os.str();
    out.flush();
    if (!out) fail("cannot write " + quoted(path));
  }
  sync_file(path);
}

Manifest read_manifest(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) fail("load_state: checkpoint directory " + quoted(dir) + " does not exist");
  if (!fs::is_directory(dir, ec))
    fail("load_state: " + quoted(dir) + " is not a directory (save_state writes a directory)");
  const fs::path path = dir / kManifestName;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail("load_state: " + quoted(dir) + " is not a complete checkpoint: " + kManifestName +
         " is missing (it is written last, so either the save was interrupted or the directory was "
         "not written by save_state)");
  }
  std::string header;
  std::getline(in, header);
  const std::string expect = std::string(kManifestHeader) + ' ';
  if (header.rfind(expect, 0) != 0) fail("load_state: " + quoted(path) + " is not a checkpoint manifest");
  Manifest m;
  m.format = std::atoi(header.c_str() + expect.size());
  if (m.format != kFormatVersion) {
    fail("load_state: " + quoted(dir) + " has checkpoint format " + std::to_string(m.format) +
         "; this libaccelerate reads format " + std::to_string(kFormatVersion));
  }
  std::string key;
  while (in >> key) {
    if (key == "file") {
      uint64_t size = 0;
      std::string name;
      in >> size;
      in.get();
      std::getline(in, name);
      m.files.emplace_back(name, size);
      continue;
    }
    int64_t value = 0;
    in >> value;
    if (key == "num_processes")
      m.num_processes = value;
    else if (key == "step")
      m.step = value;
    else if (key == "models")
      m.models = value;
    else if (key == "optimizers")
      m.optimizers = value;
    else if (key == "schedulers")
      m.schedulers = value;
    else if (key == "scaler")
      m.scaler = value != 0;
    else if (key == "objects")
      m.objects = value;
    else if (key == "loaders")
      m.loaders = value;
  }
  for (const auto& [name, size] : m.files) {
    const fs::path file = dir / name;
    if (!fs::is_regular_file(file, ec)) fail("load_state: checkpoint " + quoted(dir) + " lacks " + name);
    const auto actual = fs::file_size(file, ec);
    if (ec || actual != size) {
      fail("load_state: " + quoted(file) + " has " + std::to_string(actual) + " bytes, the manifest says " +
           std::to_string(size) + ": the checkpoint was changed after it was written");
    }
  }
  return m;
}

bool is_complete(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kManifestName, ec);
}

fs::path staging_dir(const fs::path& target) {
  return target.parent_path() / ("." + target.filename().string() + ".incomplete");
}

fs::path previous_dir(const fs::path& target) {
  return target.parent_path() / ("." + target.filename().string() + ".previous");
}

fs::path make_staging_dir(const fs::path& target) {
  const fs::path staging = staging_dir(target);
  std::error_code ec;
  fs::remove_all(staging, ec);
  if (ec) fail("save_state: cannot remove the leftover " + quoted(staging) + ": " + ec.message());
  fs::create_directories(staging, ec);
  if (ec) fail("save_state: cannot create " + quoted(staging) + ": " + ec.message());
  return staging;
}

void commit(const fs::path& staging, const fs::path& target) {
  std::error_code ec;
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (fs::exists(target, ec)) {
    if (is_complete(target)) {
      if (exchange(staging, target)) {
        sync_dir(parent);
        remove_checkpoint(staging);  // now holds the replaced checkpoint
        return;
      }
      // No atomic exchange here: keep the old one aside until the new one is in place
      // (load_state falls back to it if we stop in between).
      const fs::path previous = previous_dir(target);
      fs::remove_all(previous, ec);
      rename_or_fail(target, previous);
      rename_or_fail(staging, target);
      sync_dir(parent);
      fs::remove_all(previous, ec);
      return;
    }
    if (!fs::is_directory(target, ec) || !fs::is_empty(target, ec)) {
      fail("save_state: " + quoted(target) + " exists and is not a checkpoint written by save_state (no " +
           kManifestName + "): refusing to replace it; choose another directory or remove it");
    }
    fs::remove(target, ec);
  }
  rename_or_fail(staging, target);
  sync_dir(parent);
}

void remove_checkpoint(const fs::path& dir) {
  const fs::path doomed = dir.parent_path() / ("." + dir.filename().string() + ".deleting");
  std::error_code ec;
  fs::remove_all(doomed, ec);
  rename_or_fail(dir, doomed);
  fs::remove_all(doomed, ec);
  if (ec) fail("cannot delete " + quoted(doomed) + ": " + ec.message());
}

std::optional<int64_t> checkpoint_number(const std::string& name) {
  static const std::string prefix = "checkpoint_";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 18) {
    return std::nullopt;
  }
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return std::stoll(digits);
}

std::vector<std::pair<int64_t, fs::path>> numbered_checkpoints(const fs::path& root) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  for (const auto& p : entries(root)) {
    if (!fs::is_directory(p, ec)) continue;
    if (auto n = checkpoint_number(p.filename().string())) out.emplace_back(*n, p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ckpt
}  // namespace detail
}  // namespace accelerate
