#pragma once
// A cache of precompiled LibTorch headers. Parsing <torch/torch.h> is most of the cost of
// migrating a file (7-8 s cold); loading a PCH of it takes a fraction of that. A PCH is
// only valid for the compiler and flags it was built with, so the cache key is a hash of
// clang's version, every flag of the final command line (the input file left out; of the
// compiler, its folder only where clang's driver would find something in or beside it:
// compilerForKey in PchCache.cpp) and the working directory where a flag may name a path
// relative to it. A command whose flags differ
// only in absolute include directories reuses a PCH of the others when it would find each
// file the PCH holds in the same place (the files are kept beside it, <pch>.inputs; see
// compatibleVariant in PchCache.cpp): a project's targets with their own include
// directories, or one program compiled from two trees, share one PCH. Clang itself checks,
// when loading, that no header it holds has changed since; a PCH that fails to load is
// rebuilt once for the command's own flags, and a file that still does not parse with it is
// parsed without it.

#include <clang/Tooling/ArgumentsAdjusters.h>

#include <memory>
#include <mutex>
#include <string>

namespace accel {

// What happened to one file's parse (for the summary line and the tests).
enum class PchUse { Off, NotEligible, Built, Reused };
const char* describe(PchUse U);

struct PchRequest {
  std::string CacheDir;   // resolved directory ("" = cache disabled)
  std::string WorkingDir; // the compile command's directory
  PchUse Use = PchUse::Off;
  std::string PchPath;       // set when the adjuster added -include-pch
  std::string Error;         // why building failed, if it did
  bool ForceRebuild = false; // the previous attempt could not load the cached file
  bool Announce = false; // print a line before building (a first run is otherwise silent for ~15 s)
};

// The default cache directory: $ACCEL_MIGRATE_CACHE_DIR, else $XDG_CACHE_HOME/accel-migrate,
// else $HOME/.cache/accel-migrate ("" when none can be determined).
std::string defaultCacheDir();

// True when the file's own text starts (after comments, blank lines, include guards,
// `#pragma once` and `#include <...>` of other headers) with `#include <torch/torch.h>`:
// only then is putting the PCH in front of it the same program.
bool pchEligible(llvm::StringRef FileText);

// An adjuster to run last: for an eligible file, builds the PCH for the final flags when
// the cache has none (or ForceRebuild), then adds `-include-pch <file>`.
clang::tooling::ArgumentsAdjuster makePchAdjuster(std::shared_ptr<PchRequest> Req);

// Whether compiler output says the PCH itself could not be used (stale, corrupt, other
// compiler), as opposed to an error in the user's code.
bool isPchLoadFailure(llvm::StringRef CompilerErrors, llvm::StringRef PchPath);

} // namespace accel
