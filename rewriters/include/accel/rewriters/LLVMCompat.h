#pragma once
// The one place that knows LLVM/Clang versions apart (16 on Debian 12, 19 on Debian 13).
// Nothing else in tool/, rewriters/ or tidy/ tests LLVM_VERSION_MAJOR: it uses what is here.

#include <clang/Basic/SourceLocation.h>
#include <clang/Lex/PPCallbacks.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/ThreadPool.h>

namespace accel {

// llvm::ThreadPool became an interface with DefaultThreadPool as its usual implementation
// in LLVM 19.
#if LLVM_VERSION_MAJOR >= 19
using ThreadPool = llvm::DefaultThreadPool;
#else
using ThreadPool = llvm::ThreadPool;
#endif

// PPCallbacks::InclusionDirective gained a `bool ModuleImported` parameter in clang 18:
// subclasses override onInclusion, which has the same shape on every version.
class InclusionCallbacks : public clang::PPCallbacks {
 public:
#if LLVM_VERSION_MAJOR >= 18
  void InclusionDirective(clang::SourceLocation HashLoc, const clang::Token&, llvm::StringRef FileName,
                          bool, clang::CharSourceRange FilenameRange, clang::OptionalFileEntryRef File,
                          llvm::StringRef, llvm::StringRef, const clang::Module*, bool,
                          clang::SrcMgr::CharacteristicKind) final {
    onInclusion(HashLoc, FileName, FilenameRange, File);
  }
#else
  void InclusionDirective(clang::SourceLocation HashLoc, const clang::Token&, llvm::StringRef FileName,
                          bool, clang::CharSourceRange FilenameRange, clang::OptionalFileEntryRef File,
                          llvm::StringRef, llvm::StringRef, const clang::Module*,
                          clang::SrcMgr::CharacteristicKind) final {
    onInclusion(HashLoc, FileName, FilenameRange, File);
  }
#endif

 protected:
  virtual void onInclusion(clang::SourceLocation HashLoc, llvm::StringRef FileName,
                           clang::CharSourceRange FilenameRange, clang::OptionalFileEntryRef File) = 0;
};

}  // namespace accel
