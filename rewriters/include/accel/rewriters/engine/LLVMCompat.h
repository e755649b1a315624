#pragma once
// The one place that knows LLVM/Clang versions apart (16 on Debian 12, 19 on Debian 13).
// Nothing else in tool/, rewriters/ or tidy/ tests LLVM_VERSION_MAJOR: it uses what is here.

#include <clang/Basic/SourceLocation.h>
#include <clang/Lex/PPCallbacks.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/ThreadPool.h>

#include <string>

namespace accel {

// llvm::ThreadPool became an interface with DefaultThreadPool as its usual implementation
// in LLVM 19.
#if LLVM_VERSION_MAJOR >= 19
using ThreadPool = llvm::DefaultThreadPool;
#else
using ThreadPool = llvm::ThreadPool;
#endif

// Which -std to try first for a file whose flags ask for C++20 or later. Clang 16 with
// libstdc++ 12 cannot parse LibTorch 1.13's headers as C++20 (incomplete c10::IValue in
// std::vector), so it parses such files as C++17 first; clang 19 parses LibTorch 2.x's
// headers in the standard the flags ask for, which it tries first. Either falls back to the
// other when the first parse fails.
inline constexpr bool kParseRequestedStdFirst = LLVM_VERSION_MAJOR >= 19;

// The spelling of a -std value this clang accepts: clang 16 knows c++2b/gnu++2b but not the
// final names c++23/gnu++23 that newer CMake writes ("invalid value 'gnu++23'").
inline std::string clangStdSpelling(llvm::StringRef Std) {
#if LLVM_VERSION_MAJOR < 17 // clang 17 accepts the final names
  if (Std.ends_with("++23"))
    return (Std.drop_back(2) + "2b").str();
  if (Std.ends_with("++26"))
    return (Std.drop_back(2) + "2c").str();
#endif
  return Std.str();
}

// PPCallbacks::InclusionDirective gained a `bool ModuleImported` parameter in clang 18:
// subclasses override onInclusion, which has the same shape on every version.
class InclusionCallbacks : public clang::PPCallbacks {
 public:
#if LLVM_VERSION_MAJOR >= 18
  void InclusionDirective(clang::SourceLocation HashLoc, const clang::Token&,
                          llvm::StringRef FileName, bool, clang::CharSourceRange FilenameRange,
                          clang::OptionalFileEntryRef File, llvm::StringRef, llvm::StringRef,
                          const clang::Module*, bool, clang::SrcMgr::CharacteristicKind) final {
    onInclusion(HashLoc, FileName, FilenameRange, File);
  }
#else
  void InclusionDirective(clang::SourceLocation HashLoc, const clang::Token&,
                          llvm::StringRef FileName, bool, clang::CharSourceRange FilenameRange,
                          clang::OptionalFileEntryRef File, llvm::StringRef, llvm::StringRef,
                          const clang::Module*, clang::SrcMgr::CharacteristicKind) final {
    onInclusion(HashLoc, FileName, FilenameRange, File);
  }
#endif

 protected:
  virtual void onInclusion(clang::SourceLocation HashLoc, llvm::StringRef FileName,
                           clang::CharSourceRange FilenameRange,
                           clang::OptionalFileEntryRef File) = 0;
};

} // namespace accel
