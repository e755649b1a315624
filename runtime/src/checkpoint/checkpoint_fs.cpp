// Checkpoint directories that appear whole or not at all (see checkpoint_fs.h).
#include "checkpoint/checkpoint_fs.h"

#include <accelerate/core/error.h>  // CheckpointError

#include <fcntl.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

namespace accelerate {
namespace detail {
namespace ckpt {

void fail_checkpoint(const std::string& what) { throw CheckpointError("accelerate: " + what); }

namespace {

const char* const kNotOurs = "the manifest is damaged or was not written by accelerate";

// The manifest's lines that hold one whole number (format_manifest writes each once).
bool is_count_key(const std::string& key) {
  static const std::set<std::string> counts = {"num_processes", "step",   "models",  "optimizers",
                                               "schedulers",    "scaler", "objects", "loaders"};
  return counts.count(key) != 0;
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

void sync_fd_of(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail_checkpoint("cannot open " + quoted(path) + " to flush it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL): their renames are ordered anyway.
  if (rc != 0 && !(err == EINVAL && (flags & O_DIRECTORY))) {
    fail_checkpoint("cannot flush " + quoted(path) + " to disk: " + std::strerror(err));
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
    fail_checkpoint("cannot rename " + quoted(from) + " to " + quoted(to) + ": " + std::strerror(errno));
  }
}

// Swaps two directories in one step where the file system can (Linux renameat2).
bool exchange(const fs::path& a, const fs::path& b) {
#if defined(RENAME_EXCHANGE)
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
    fail_checkpoint("cannot exchange " + quoted(a) + " and " + quoted(b) + ": " + std::strerror(errno));
  }
#endif
  (void)a;
  (void)b;
  return false;
}

}  // namespace

void sync_file(const fs::path& path) { sync_fd_of(path, O_RDONLY); }
void sync_dir(const fs::path& dir) { sync_fd_of(dir, O_RDONLY | O_DIRECTORY); }

std::string hash_hex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, hash);
  return buf;
}

uint64_t content_hash(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_checkpoint("cannot open " + quoted(file) + " to check it: " + std::strerror(errno));
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::vector<char> block(1 << 20);
  ssize_t n = 0;
  while ((n = ::read(fd, block.data(), block.size())) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail_checkpoint("cannot read " + quoted(file) + ": " + std::strerror(err));
    }
    XXH3_64bits_update(state.get(), block.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return XXH3_64bits_digest(state.get());
}

CheckedFile::CheckedFile(const fs::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_with(errno, "cannot create");
}

CheckedFile::~CheckedFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t CheckedFile::write(const void* data, size_t n) noexcept {
  static const char zeros[4096] = {};
  size_t done = 0;
  while (error_ == 0 && done < n) {
    // A null buffer asks for padding (zeros) in the zip writer's callback convention.
    const char* from = data ? static_cast<const char*>(data) + done : zeros;
    const size_t want = data ? n - done : std::min(n - done, sizeof(zeros));
    const ssize_t w = ::write(fd_, from, want);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) error_ = w < 0 ? errno : EIO;
    if (w > 0) done += static_cast<size_t>(w);
  }
  return n;
}

void CheckedFile::finish(const std::string& fallback) {
  if (error_ != 0) fail_with(error_, "cannot write");
  if (!fallback.empty()) fail_checkpoint("save_state: cannot write " + quoted(path_) + ": " + fallback);
  if (::fsync(fd_) != 0) fail_with(errno, "cannot flush to disk");
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail_with(errno, "cannot close");
}

void CheckedFile::fail_with(int err, const std::string& what) const {
  std::string detail = std::strerror(err);
  struct statvfs st {};
  if ((err == ENOSPC || err == EDQUOT) && ::statvfs(path_.parent_path().c_str(), &st) == 0) {
    detail += " (" + std::to_string(static_cast<uint64_t>(st.f_bavail) * st.f_frsize) +
              " bytes free on the file system that holds it)";
  }
  fail_checkpoint("save_state: " + what + " " + quoted(path_) + ": " + detail);
}

void write_manifest(const fs::path& dir, const Manifest& m) {
  std::ostringstream os;
  os << kManifestHeader << ' ' << kFormatVersion << '\n'
     << "num_processes " << m.num_processes << '\n'
     << "step " << m.step << '\n'
     << "models " << m.models << '\n'
     << "optimizers " << m.optimizers << '\n'
     << "schedulers " << m.schedulers << '\n'
     << "scaler " << (m.scaler ? 1 : 0) << '\n'
     << "objects " << m.objects << '\n'
     << "loaders " << m.loaders << '\n'
     << "hash " << kHashName << '\n';
  for (const auto& f : m.files) os << "file " << f.size << ' ' << hash_hex(f.hash.value_or(0)) << ' ' << f.name << '\n';
  // The manifest's own hash, last: a manifest cut short or changed is refused, not half read.
  const std::string body = os.str();
  const std::string text = body + "end " + hash_hex(XXH3_64bits(body.data(), body.size())) + '\n';
  CheckedFile out(dir / kManifestName);
  out.write(text.data(), text.size());
  out.finish();
}

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void check_directory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) fail_checkpoint("load_state: checkpoint directory " + quoted(dir) + " does not exist");
  if (!fs::is_directory(dir, ec))
    fail_checkpoint("load_state: " + quoted(dir) + " is not a directory (save_state writes a directory)");
  if (!fs::is_regular_file(dir / kManifestName, ec)) {
    fail_checkpoint("load_state: " + quoted(dir) + " is not a complete checkpoint: " + kManifestName +
                    " is missing (it is written last, so either the save was interrupted or the directory was "
                    "not written by save_state)");
  }
}

int parse_format(const std::string& text, const fs::path& path) {
  const std::string expect = std::string(kManifestHeader) + ' ';
  if (text.rfind(expect, 0) != 0) fail_checkpoint("load_state: " + quoted(path) + " is not a checkpoint manifest");
  const int format = std::atoi(text.c_str() + expect.size());
  if (format < kOldestFormat || format > kFormatVersion) {
    fail_checkpoint("load_state: " + quoted(path.parent_path()) + " has checkpoint format " + std::to_string(format) +
                    "; this libaccelerate reads formats " + std::to_string(kOldestFormat) + " to " +
                    std::to_string(kFormatVersion));
  }
  return format;
}

// The manifest without its "end <hash>" line, once that hash matches.
std::string verified_body(const std::string& text, const fs::path& path) {
  const size_t at = text.rfind("end ", text.size() >= 4 ? text.size() - 4 : 0);
  const bool whole = at != std::string::npos && (at == 0 || text[at - 1] == '\n') && text.back() == '\n';
  const std::string body = whole ? text.substr(0, at) : text;
  const std::string want = whole ? text.substr(at + 4, text.size() - at - 5) : "";
  if (!whole || want != hash_hex(XXH3_64bits(body.data(), body.size()))) {
    fail_checkpoint("load_state: checkpoint " + quoted(path.parent_path()) + ": " + kManifestName +
                    (whole ? " was changed after it was written (its own hash does not match)"
                           : " is cut short (no closing hash line): the checkpoint is damaged"));
  }
  return body;
}

void parse_line(const std::string& key, std::istringstream& in, Manifest& m, const fs::path& path) {
  if (key == "file") {
    ManifestFile f;
    in >> f.size;
    if (m.format >= 2) {
      std::string hex;
      in >> hex;
      f.hash = std::strtoull(hex.c_str(), nullptr, 16);
    }
    in.get();
    std::getline(in, f.name);
    if (f.name.empty()) fail_checkpoint("load_state: " + quoted(path) + " lists a file without a name");
    // Checked against the directory, so a name must stay inside it: an absolute path or a
    // ".." would have the size and hash check read (and report on) any file of the machine.
    const fs::path name(f.name);
    if (name.is_absolute() || std::any_of(name.begin(), name.end(), [](const fs::path& c) { return c == ".."; })) {
      fail_checkpoint("load_state: " + quoted(path) + " lists " + quoted(name) +
                      ", a file outside the checkpoint: " + kNotOurs);
    }
    m.files.push_back(f);
    return;
  }
  if (key == "hash") {
    std::string name;
    in >> name;
    if (name != kHashName)
      fail_checkpoint("load_state: " + quoted(path) + " uses hash '" + name + "', not " + kHashName);
    return;
  }
  // The counts: a manifest's own hash covers them, so a value out of range comes from a
  // manifest written by hand or by something else; refused here rather than met later as
  // "processes 0..-1" or a count mismatch (fuzz/, docs/dev/fuzzing.md). Other keys are
  // skipped, so that a later format's additions do not fail this reader.
  if (!is_count_key(key)) return;
  int64_t value = 0;
  std::string rest;
  if (!(in >> value) || (in >> rest)) {
    fail_checkpoint("load_state: " + quoted(path) + ": the line '" + key +
                    " ...' does not hold one whole number: " + kNotOurs);
  }
  const int64_t least = key == "num_processes" ? 1 : 0;
  if (value < least) {
    fail_checkpoint("load_state: " + quoted(path) + " says " + key + " " + std::to_string(value) + ", expected " +
                    std::to_string(least) + " or more: " + kNotOurs);
  }
  if (key == "scaler" && value > 1) {  // a flag: the writer says 0 or 1
    fail_checkpoint("load_state: " + quoted(path) + " says scaler " + std::to_string(value) +
                    ", expected 0 or 1: " + kNotOurs);
  }
  if (key == "num_processes") m.num_processes = value;
  if (key == "step") m.step = value;
  if (key == "models") m.models = value;
  if (key == "optimizers") m.optimizers = value;
  if (key == "schedulers") m.schedulers = value;
  if (key == "scaler") m.scaler = value != 0;
  if (key == "objects") m.objects = value;
  if (key == "loaders") m.loaders = value;
}

void check_file(const fs::path& dir, const ManifestFile& f) {
  const fs::path file = dir / f.name;
  const std::string where = "load_state: checkpoint " + quoted(dir) + ": ";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) fail_checkpoint(where + f.name + " is missing");
  const auto actual = fs::file_size(file, ec);
  if (ec || actual != f.size) {
    fail_checkpoint(where + quoted(file) + " has " + std::to_string(actual) + " bytes, the manifest says " +
                    std::to_string(f.size) + ": the file was cut short or changed after the checkpoint was written");
  }
  if (!f.hash) return;
  const uint64_t hash = content_hash(file);
  if (hash != *f.hash) {
    fail_checkpoint(where + quoted(file) + " is corrupt: its content hash (" + kHashName + ") is " + hash_hex(hash) +
                    ", the manifest says " + hash_hex(*f.hash) +
                    ": the file changed after the checkpoint was written (a disk or copy error, or an edit)");
  }
}

}  // namespace

Manifest parse_manifest(const std::string& text, const fs::path& path) {
  Manifest m;
  m.format = parse_format(text, path);
  std::istringstream lines(m.format >= 2 ? verified_body(text, path) : text);
  std::string line;
  std::getline(lines, line);  // the header
  // The writer says each count once and lists each file once: a second one would silently
  // win (a count) or be checked twice and loaded once (a file), so it is refused.
  std::set<std::string> said;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string key;
    if (!(in >> key)) continue;
    const size_t files_before = m.files.size();
    parse_line(key, in, m, path);
    const std::string what = m.files.size() > files_before ? "file " + m.files.back().name : key;
    if ((key == "file" || is_count_key(key)) && !said.insert(what).second) {
      fail_checkpoint("load_state: " + quoted(path) + " says '" + what + "' twice: " + kNotOurs);
    }
  }
  return m;
}

Manifest read_manifest(const fs::path& dir) {
  check_directory(dir);
  const fs::path path = dir / kManifestName;
  Manifest m = parse_manifest(read_text(path), path);
  for (const auto& f : m.files) check_file(dir, f);
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
  if (ec) fail_checkpoint("save_state: cannot remove the leftover " + quoted(staging) + ": " + ec.message());
  fs::create_directories(staging, ec);
  if (ec) fail_checkpoint("save_state: cannot create " + quoted(staging) + ": " + ec.message());
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
      fail_checkpoint("save_state: " + quoted(target) + " exists and is not a checkpoint written by save_state (no " +
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
  if (ec) fail_checkpoint("cannot delete " + quoted(doomed) + ": " + ec.message());
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
