#pragma once
// The file-system side of checkpoints: a checkpoint directory appears whole or not at all.
// Files are written into a hidden sibling (".<name>.incomplete"), flushed to disk, listed in
// a manifest written last, and the directory is renamed into place; a checkpoint being
// replaced or deleted is first renamed out of the way. Nothing here knows LibTorch.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace accelerate {
namespace detail {
namespace ckpt {

namespace fs = std::filesystem;

// Throws CheckpointError("accelerate: " + what): every checkpoint failure a user sees.
[[noreturn]] void fail_checkpoint(const std::string& what);

// The marker of a complete checkpoint (written last, after every other file is on disk).
inline constexpr const char* kManifestName = "checkpoint_manifest.txt";
inline constexpr const char* kManifestHeader = "accelerate-libtorch checkpoint";
// Format 2 adds each file's content hash and the manifest's own (docs/checkpointing.md);
// format 1 (sizes only) is still read, with a note, so that runs saved before it resume.
inline constexpr int kFormatVersion = 2;
inline constexpr int kOldestFormat = 1;
inline constexpr const char* kHashName = "xxh3-64";

struct ManifestFile {
  std::string name;
  uint64_t size = 0;
  std::optional<uint64_t> hash;  // XXH3-64 of the contents; none in format 1
};

// What a checkpoint holds: counts of each kind (matched by position against what the
// loading run prepared) and every file with its size and content hash.
struct Manifest {
  int format = kFormatVersion;
  int64_t num_processes = 1;
  int64_t step = 0;
  int64_t models = 0, optimizers = 0, schedulers = 0, objects = 0, loaders = 0;
  bool scaler = false;
  std::vector<ManifestFile> files;
};

// Writes `dir`/kManifestName and flushes it. Throws CheckpointError.
void write_manifest(const fs::path& dir, const Manifest& manifest);
// Reads and checks the manifest (its own hash included) and that every file it lists is
// there with its size and content hash. Throws CheckpointError naming the checkpoint
// directory and the file that is missing, truncated or changed.
Manifest read_manifest(const fs::path& dir);
// The text of a manifest at `path` (named in messages) checked and read, without looking
// at the files it lists: read_manifest's first half, callable without a directory (fuzz/).
Manifest parse_manifest(const std::string& text, const fs::path& path);
bool is_complete(const fs::path& dir);

// XXH3-64 of a file's contents (read in blocks). Throws CheckpointError.
uint64_t content_hash(const fs::path& file);
std::string hash_hex(uint64_t hash);

// A file written with every error checked: a full disk is reported at the write that hit
// it, with the space left, instead of being lost in a buffer that is closed unchecked.
class CheckedFile {
 public:
  explicit CheckedFile(const fs::path& path);  // created or truncated; throws CheckpointError
  ~CheckedFile();
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;
  // Writes all `n` bytes, or keeps the first error for finish() and writes nothing more.
  // Always returns `n`: LibTorch's zip writer, told of a failed write, throws, and its
  // destructor then writes again and throws a second time (std::terminate, LibTorch 1.13).
  size_t write(const void* data, size_t n) noexcept;
  // Flushes to disk and closes; throws CheckpointError with the first error seen. `fallback`
  // explains a failure that came from elsewhere (the serializer) when no write failed.
  void finish(const std::string& fallback = "");
  const fs::path& path() const { return path_; }

 private:
  [[noreturn]] void fail_with(int err, const std::string& what) const;
  fs::path path_;
  int fd_ = -1;
  int error_ = 0;
};

// Flushes a file's or a directory's contents to disk (fsync). Throws CheckpointError.
void sync_file(const fs::path& path);
void sync_dir(const fs::path& dir);

// The hidden sibling a checkpoint is written into before it is renamed to `target`.
fs::path staging_dir(const fs::path& target);
// An empty staging directory for `target` (a leftover from an interrupted save is removed).
fs::path make_staging_dir(const fs::path& target);
// Renames the complete `staging` directory to `target` and flushes the parent. A `target`
// that is a complete checkpoint is replaced atomically (exchanged, then removed); an empty
// one is replaced; anything else is an error (nothing is overwritten).
void commit(const fs::path& staging, const fs::path& target);
// The copy of `target` kept while it is replaced on file systems without an atomic exchange.
fs::path previous_dir(const fs::path& target);
// Removes a checkpoint so that it never looks complete half-way: renamed away, then deleted.
void remove_checkpoint(const fs::path& dir);

// checkpoint_<n> directories under `root`, by increasing n (complete or not).
std::vector<std::pair<int64_t, fs::path>> numbered_checkpoints(const fs::path& root);
// The n of a "checkpoint_<n>" name, or nullopt.
std::optional<int64_t> checkpoint_number(const std::string& name);

}  // namespace ckpt
}  // namespace detail
}  // namespace accelerate
