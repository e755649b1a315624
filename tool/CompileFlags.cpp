#include "CompileFlags.h"

#include "BakedPaths.h"

#include <accel/rewriters/engine/LLVMCompat.h>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <string>
#include <vector>

namespace accel {

// LibTorch 1.13's headers do not parse as C++20 with clang 16 and libstdc++ 12 (incomplete
// c10::IValue in std::vector), although g++ accepts them: see docs/accel-migrate.md.
static bool isCxx20OrLater(llvm::StringRef Std) {
  return Std == "c++20" || Std == "c++2a" || Std == "gnu++20" || Std == "gnu++2a" ||
         Std == "c++23" || Std == "c++2b" || Std == "gnu++23" || Std == "gnu++2b" ||
         Std == "c++26" || Std == "c++2c" || Std == "gnu++26" || Std == "gnu++2c";
}

// The runtime headers the migrated code names (accelerate/accelerate.h). The tool's own
// prefix comes first (<bin>/../include): an installed tool must see the headers installed
// with it, not an older copy left at the build's configured CMAKE_INSTALL_PREFIX, which is
// baked in below for a tool run from its build tree.
static std::vector<std::string> runtimeIncludeDirs() {
  std::vector<std::string> Dirs;
  std::string Exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  if (!Exe.empty()) {
    llvm::SmallString<256> Own(llvm::sys::path::parent_path(llvm::sys::path::parent_path(Exe)));
    llvm::sys::path::append(Own, "include");
    llvm::SmallString<256> Probe(Own);
    llvm::sys::path::append(Probe, "accelerate", "accelerate.h");
    if (llvm::sys::fs::exists(Probe))
      Dirs.push_back(std::string(Own));
  }
  for (const char* const* D = baked::kRuntimeIncludeDirs; *D; ++D)
    if (Dirs.empty() || Dirs.front() != *D)
      Dirs.push_back(*D);
  return Dirs;
}

// How many arguments at In[I] use the build's own precompiled header, which is left out:
//  - GCC's CMake prelude (-include .../cmake_pch.hxx next to a .gch) is not a clang PCH and
//    only repeats the file's own includes;
//  - CMake's clang PCH (-Xclang -include-pch -Xclang .../cmake_pch.hxx.pch) may come from
//    another clang version, which this one refuses ("PCH file uses an older PCH format": the
//    Debian 13 build read the Debian 12 build's), and the tool loads its own LibTorch PCH
//    (PchCache.cpp). The `-Xclang -include -Xclang cmake_pch.hxx` CMake writes beside it
//    stays: the header's text includes what the PCH held. A PCH of another name stays too:
//    nothing says its headers are included by text anywhere else.
static size_t buildPchArgs(const clang::tooling::CommandLineArguments& In, size_t I) {
  auto At = [&](size_t K) {
    return I + K < In.size() ? llvm::StringRef(In[I + K]) : llvm::StringRef();
  };
  llvm::StringRef A = At(0);
  if (A == "-Winvalid-pch" || (A.starts_with("-include") && A.ends_with("cmake_pch.hxx")))
    return 1;
  if (A == "-include" && At(1).ends_with("cmake_pch.hxx"))
    return 2;
  if (A == "-include-pch" && At(1).ends_with("cmake_pch.hxx.pch"))
    return 2;
  if (A == "-Xclang" && At(1) == "-include-pch" && At(2) == "-Xclang" &&
      At(3).ends_with("cmake_pch.hxx.pch"))
    return 4;
  return 0;
}

clang::tooling::ArgumentsAdjuster makeFlagsAdjuster(std::shared_ptr<FlagState> State) {
  return [State](const clang::tooling::CommandLineArguments& In, llvm::StringRef File) {
    clang::tooling::CommandLineArguments Out;
    // A file whose extension the driver does not know (x.cpp.in, a backup) is C++ here.
    llvm::StringRef Ext = llvm::sys::path::extension(File);
    // Headers (trainer.h holding a Trainer class) are migrated as C++ headers.
    bool Header = Ext == ".h" || Ext == ".hh" || Ext == ".hpp" || Ext == ".hxx";
    bool KnownExt = Ext == ".cpp" || Ext == ".cc" || Ext == ".cxx" || Ext == ".C" ||
                    Ext == ".c++" || Ext == ".cp" || Ext == ".cu" || Ext == ".c";
    bool HasLang = false;
    for (const auto& A : In)
      if (A == "-x" || llvm::StringRef(A).starts_with("-x"))
        HasLang = true;
    bool HasStd = false, HasResourceDir = false;
    for (size_t I = 0; I < In.size(); ++I) {
      llvm::StringRef A = In[I];
      if (A.starts_with("-std=") || A.starts_with("--std=")) {
        HasStd = true;
        llvm::StringRef Std = A.substr(A.find('=') + 1);
        if (isCxx20OrLater(Std)) {
          State->RequestedStd = Std.str();
          if (State->ForceCxx17) {
            State->Downgraded = true;
            Out.push_back(Std.starts_with("gnu") ? "-std=gnu++17" : "-std=c++17");
          } else {
            Out.push_back("-std=" + clangStdSpelling(Std));
          }
          continue;
        }
      }
      if (size_t N = buildPchArgs(In, I)) {
        I += N - 1;
        continue;
      }
      if (A.starts_with("-resource-dir"))
        HasResourceDir = true;
      Out.push_back(In[I]);
      if (I == 0 && !KnownExt && !HasLang) {
        Out.push_back("-x");
        Out.push_back(Header ? "c++-header" : "c++");
      }
    }
    if (!HasStd)
      Out.push_back("-std=c++17");
    if (!HasResourceDir && baked::kResourceDir[0])
      Out.push_back(std::string("-resource-dir=") + baked::kResourceDir);
    for (const char* const* D = baked::kTorchIncludeDirs; *D; ++D) {
      Out.push_back("-idirafter");
      Out.push_back(*D);
    }
    for (const std::string& D : runtimeIncludeDirs()) {
      Out.push_back("-idirafter");
      Out.push_back(D);
    }
    Out.push_back("-w"); // the user's warnings are not ours to report
    return Out;
  };
}

} // namespace accel
