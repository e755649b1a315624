#include "PchCache.h"

#include <clang/Basic/Version.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Support/xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

using namespace clang;

namespace accel {

namespace {

constexpr const char* kHeaderText = "#include <torch/torch.h>\n";
constexpr size_t kMaxCachedPchs = 8; // ~100 MB each; older ones are removed (see pruneCache)

// One PCH build at a time per process: project mode's threads that need the same PCH wait
// for the first build instead of building it again. Builds in other processes are safe
// through the write-then-rename below.
std::mutex& buildMutex() {
  static std::mutex M;
  return M;
}

// The same between processes (two files migrated at once, a build system's -j, a test
// harness): the second waits for the first's build and reuses it instead of building its
// own (each build costs 15-45 s of CPU; e2e.fidelity's first two migrations both built
// one). A lock not taken in time (a stuck process) is ignored: builds stay safe through
// the write-then-rename, only the work is repeated.
class BuildLock {
 public:
  explicit BuildLock(const std::string& Path) {
    if (llvm::sys::fs::openFileForWrite(Path, FD, llvm::sys::fs::CD_OpenAlways,
                                        llvm::sys::fs::OF_None)) {
      FD = -1;
      return;
    }
    Locked = !llvm::sys::fs::tryLockFile(FD, std::chrono::minutes(5));
  }
  ~BuildLock() {
    if (Locked)
      llvm::sys::fs::unlockFile(FD);
    if (FD >= 0)
      llvm::sys::Process::SafelyCloseFileDescriptor(FD);
  }
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;

 private:
  int FD = -1;
  bool Locked = false;
};

bool isDashX(llvm::StringRef A) { return A.starts_with("-x"); }

void pruneCache(const std::string& Dir) {
  std::error_code EC;
  std::vector<std::pair<llvm::sys::TimePoint<>, std::string>> Pchs;
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC; It.increment(EC)) {
    llvm::StringRef Name = llvm::sys::path::filename(It->path());
    if (!Name.starts_with("torch-") || !Name.ends_with(".pch"))
      continue;
    llvm::sys::fs::file_status St;
    if (!llvm::sys::fs::status(It->path(), St))
      Pchs.push_back({St.getLastModificationTime(), It->path()});
  }
  if (Pchs.size() <= kMaxCachedPchs)
    return;
  std::sort(Pchs.begin(), Pchs.end());
  // A PCH used in the last hour may belong to a run in progress (a project whose targets
  // have more flag sets than the cache keeps): removing it would make that run rebuild it.
  auto Recent = std::chrono::system_clock::now() - std::chrono::hours(1);
  for (size_t I = 0; I + kMaxCachedPchs < Pchs.size(); ++I)
    if (Pchs[I].first < Recent) {
      llvm::sys::fs::remove(Pchs[I].second);
      llvm::sys::fs::remove(Pchs[I].second + ".lock");
      llvm::sys::fs::remove(Pchs[I].second + ".inputs");
    }
}

// The files a make-style dependency file names (after the target), absolute.
std::vector<std::string> readDepFile(const std::string& Path, const std::string& WorkingDir) {
  std::vector<std::string> Files;
  auto Buf = llvm::MemoryBuffer::getFile(Path);
  if (!Buf)
    return Files;
  llvm::StringRef Text = (*Buf)->getBuffer();
  std::string Word;
  bool Target = true;
  auto Flush = [&]() {
    if (Word.empty())
      return;
    if (Target) {
      Target = !llvm::StringRef(Word).ends_with(":"); // the target ends at its colon
    } else {
      llvm::SmallString<256> Abs(Word);
      llvm::sys::fs::make_absolute(WorkingDir, Abs);
      llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
      Files.push_back(Abs.str().str());
    }
    Word.clear();
  };
  for (size_t I = 0; I < Text.size(); ++I) {
    char C = Text[I];
    if (C == '\\' && I + 1 < Text.size() && (Text[I + 1] == '\n' || Text[I + 1] == '\r')) {
      Flush(); // a continued line
      ++I;
    } else if (C == '\\' && I + 1 < Text.size() && Text[I + 1] == ' ') {
      Word += ' '; // an escaped space inside a path
      ++I;
    } else if (C == ' ' || C == '\t' || C == '\n' || C == '\r') {
      Flush();
    } else {
      Word += C;
    }
  }
  Flush();
  return Files;
}

bool buildPch(const std::vector<std::string>& Flags, const std::string& WorkingDir,
              const std::string& Dir, const std::string& Key, const std::string& Pch,
              std::string& Error, std::vector<std::string>* Inputs = nullptr) {
  if (std::error_code EC = llvm::sys::fs::create_directories(Dir)) {
    Error = "cannot create " + Dir + ": " + EC.message();
    return false;
  }
  std::string Header = Dir + "/torch-" + Key + ".h";
  {
    std::error_code EC;
    llvm::raw_fd_ostream OS(Header, EC);
    if (EC) {
      Error = "cannot write " + Header + ": " + EC.message();
      return false;
    }
    OS << kHeaderText;
  }
  llvm::SmallString<256> Tmp;
  int FD = -1;
  if (std::error_code EC =
          llvm::sys::fs::createUniqueFile(Dir + "/torch-" + Key + "-%%%%%%.tmp", FD, Tmp)) {
    Error = "cannot create a temporary file in " + Dir + ": " + EC.message();
    return false;
  }
  llvm::sys::Process::SafelyCloseFileDescriptor(FD);

  std::vector<std::string> Args;
  for (size_t I = 0; I < Flags.size(); ++I) {
    if (Flags[I] == "-x") {
      ++I;
      continue;
    }
    if (isDashX(Flags[I]))
      continue;
    Args.push_back(Flags[I]);
  }
  // The files the PCH holds (a make-style dependency file), for reuse under other include
  // directories (compatibleVariant).
  std::string DepFile = Tmp.str().str() + ".d";
  Args.insert(Args.end(),
              {"-MD", "-MF", DepFile, "-x", "c++-header", Header, "-o", Tmp.str().str()});

  IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS(llvm::vfs::createPhysicalFileSystem().release());
  FS->setCurrentWorkingDirectory(WorkingDir);
  IntrusiveRefCntPtr<FileManager> Files(new FileManager(FileSystemOptions(), FS));
  std::string Diags;
  llvm::raw_string_ostream OS(Diags);
  IntrusiveRefCntPtr<DiagnosticOptions> Opts = new DiagnosticOptions();
  TextDiagnosticPrinter Printer(OS, Opts.get());
  tooling::ToolInvocation Inv(Args, std::make_unique<GeneratePCHAction>(), Files.get());
  Inv.setDiagnosticConsumer(&Printer);
  bool OK = Inv.run();
  OS.flush();
  uint64_t Size = 0;
  if (!OK || llvm::sys::fs::file_size(Tmp, Size) || Size == 0) {
    llvm::sys::fs::remove(Tmp);
    llvm::sys::fs::remove(DepFile);
    Error = "building the LibTorch PCH failed: " + Diags.substr(0, 2000);
    return false;
  }
  if (Inputs)
    *Inputs = readDepFile(DepFile, WorkingDir);
  llvm::sys::fs::remove(DepFile);
  if (std::error_code EC = llvm::sys::fs::rename(Tmp, Pch)) {
    llvm::sys::fs::remove(Tmp);
    Error = "cannot move the PCH into " + Pch + ": " + EC.message();
    return false;
  }
  pruneCache(Dir);
  return true;
}

} // namespace

const char* describe(PchUse U) {
  switch (U) {
  case PchUse::Off:
    return "PCH cache off";
  case PchUse::NotEligible:
    return "no PCH";
  case PchUse::Built:
    return "LibTorch PCH built";
  case PchUse::Reused:
    return "LibTorch PCH reused";
  }
  return "";
}

std::string defaultCacheDir() {
  if (auto Dir = llvm::sys::Process::GetEnv("ACCEL_MIGRATE_CACHE_DIR"))
    return *Dir;
  if (auto Xdg = llvm::sys::Process::GetEnv("XDG_CACHE_HOME"); Xdg && !Xdg->empty())
    return *Xdg + "/accel-migrate";
  if (auto Home = llvm::sys::Process::GetEnv("HOME"); Home && !Home->empty())
    return *Home + "/.cache/accel-migrate";
  return "";
}

bool pchEligible(llvm::StringRef Text) {
  llvm::StringRef GuardName; // an #ifndef waiting for its #define
  bool InBlockComment = false;
  while (!Text.empty()) {
    auto [Line, Rest] = Text.split('\n');
    Text = Rest;
    llvm::StringRef L = Line.trim();
    if (InBlockComment) {
      size_t End = L.find("*/");
      if (End == llvm::StringRef::npos)
        continue;
      InBlockComment = false;
      L = L.drop_front(End + 2).trim();
    }
    while (L.starts_with("/*")) {
      size_t End = L.find("*/", 2);
      if (End == llvm::StringRef::npos) {
        InBlockComment = true;
        L = "";
        break;
      }
      L = L.drop_front(End + 2).trim();
    }
    if (L.empty() || L.starts_with("//"))
      continue;
    if (!L.consume_front("#"))
      return false; // code before the LibTorch include
    L = L.ltrim();
    if (L.consume_front("include")) {
      L = L.ltrim();
      if (L.starts_with("<torch/torch.h>"))
        return true;
      if (!L.starts_with("<"))
        return false; // a project header could define macros LibTorch sees
      continue;
    }
    if (L.starts_with("pragma once"))
      continue;
    if (L.consume_front("ifndef")) {
      GuardName = L.trim();
      continue;
    }
    if (L.consume_front("define") && !GuardName.empty() && L.trim() == GuardName) {
      GuardName = "";
      continue;
    }
    return false; // #define, #if, ...: anything that could change what LibTorch means
  }
  return false;
}

bool isPchLoadFailure(llvm::StringRef Errors, llvm::StringRef PchPath) {
  return (!PchPath.empty() && Errors.contains(PchPath)) || Errors.contains("precompiled header") ||
         Errors.contains("PCH file") || Errors.contains("AST file");
}

namespace {

// The file's compile arguments that the PCH is built with: all but the file itself,
// -fsyntax-only and the language (-x c++ for a source, -x c++-header for a header: the PCH
// is always built as a C++ header and serves both, so a project's sources and headers
// share one).
std::vector<std::string> pchFlags(const tooling::CommandLineArguments& In, llvm::StringRef File,
                                  llvm::StringRef Abs, const std::string& WorkingDir) {
  std::vector<std::string> Flags;
  for (size_t I = 0; I < In.size(); ++I) {
    const std::string& A = In[I];
    if (A == "-x") {
      ++I;
      continue;
    }
    if (isDashX(A))
      continue;
    llvm::SmallString<256> AbsArg(A);
    if (!A.empty() && A[0] != '-' && !llvm::sys::path::is_absolute(AbsArg))
      llvm::sys::fs::make_absolute(WorkingDir, AbsArg);
    if (A == File || AbsArg == Abs || A == "-fsyntax-only")
      continue;
    Flags.push_back(A);
  }
  return Flags;
}

// Whether argument A (after Prev) may name a path relative to the working directory: a plain
// argument (a value of the option before it, or an input) that is not absolute, or a path
// option with a relative value joined to it (-Iinclude, --sysroot=x). -D/-U values and
// option names are not paths. Unknown values count as paths: a false "yes" costs only a PCH
// of its own.
bool mayNameRelativePath(llvm::StringRef A, llvm::StringRef Prev) {
  if (Prev == "-D" || Prev == "-U" || A.starts_with("-D") || A.starts_with("-U"))
    return false;
  if (!A.starts_with("-"))
    return !llvm::sys::path::is_absolute(A);
  for (llvm::StringRef Opt :
       {"-I", "-iquote", "-isystem", "-idirafter", "-include", "-imacros", "-iprefix",
        "-iwithprefix", "-isysroot", "--sysroot=", "-resource-dir=", "-F", "-B"}) {
    if (A.size() > Opt.size() && A.starts_with(Opt)) {
      llvm::StringRef Value = A.drop_front(Opt.size());
      if (Value.starts_with("-"))
        return false; // another option that starts alike (-include-pch): its value is next
      return !llvm::sys::path::is_absolute(Value.starts_with("=") ? Value.drop_front() : Value);
    }
  }
  return false;
}

// The compiler (a command's first word) as the key sees it. clang's driver looks in the
// compiler's folder for configuration files (*.cfg) and beside it for a GCC installation
// (<folder>/../lib/gcc and its kin), C++ headers (<folder>/../include/c++,
// <folder>/../include/<triple>/c++) and, without -resource-dir, its own headers. Where none
// of those applies the folder changes nothing a PCH holds and only the name counts, so the
// tool's default commands, which start with <the tool's folder>/clang-tool, share PCHs between
// its build tree and an installed copy (lit's and e2e.corpus's differed in nothing else).
std::string compilerForKey(llvm::StringRef Compiler, bool HasResourceDir) {
  llvm::StringRef Folder = llvm::sys::path::parent_path(Compiler);
  if (Folder.empty() || !HasResourceDir)
    return Compiler.str();
  for (const char* Beside : {"../lib/gcc", "../lib/gcc-cross", "../lib32/gcc", "../lib64/gcc",
                             "../libx32/gcc", "../include/c++"})
    if (llvm::sys::fs::exists(Folder + "/" + Beside))
      return Compiler.str();
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(Folder, EC), End; It != End && !EC; It.increment(EC))
    if (llvm::StringRef(It->path()).ends_with(".cfg"))
      return Compiler.str();
  if (EC)
    return Compiler.str(); // unreadable: it might hold anything
  llvm::SmallString<256> Include(Folder);
  llvm::sys::path::append(Include, "..", "include");
  for (llvm::sys::fs::directory_iterator It(Include, EC), End; It != End && !EC; It.increment(EC))
    if (llvm::sys::fs::exists(It->path() + "/c++"))
      return Compiler.str(); // <folder>/../include/<triple>/c++
  return llvm::sys::path::filename(Compiler).str();
}

// The cache key: clang's version, the flags and the header. The working directory is part of
// it only when a flag may name a path relative to it: with absolute paths alone the PCH is
// the same from any directory, so runs of one program's files from different directories
// (a test harness's work folders, a user's shell) share one instead of building one each.
std::string pchKey(const std::vector<std::string>& Flags, const std::string& WorkingDir) {
  std::string Text = std::string(getClangFullVersion()) + "\n";
  bool Relative = false;
  bool HasResourceDir =
      llvm::any_of(Flags, [](llvm::StringRef A) { return A.starts_with("-resource-dir"); });
  for (size_t I = 0; I < Flags.size(); ++I) {
    // Flags[0] is the compiler's name (found on PATH, not in the working directory).
    if (I > 0)
      Relative |= mayNameRelativePath(Flags[I], Flags[I - 1]);
    Text += (I == 0 ? compilerForKey(Flags[I], HasResourceDir) : Flags[I]) + "\n";
  }
  if (Relative)
    Text += "cwd " + WorkingDir + "\n";
  Text += kHeaderText;
  return llvm::utohexstr(llvm::xxHash64(Text), /*LowerCase=*/true);
}

// An explicit include directory of a command line: its option and its absolute path.
struct IncludeDir {
  std::string Opt;
  std::string Path;
  bool operator==(const IncludeDir& O) const { return Opt == O.Opt && Path == O.Path; }
};

// Flags without their absolute include directories (Rest) and those directories (Dirs), in
// order. A relative directory stays in Rest: it is part of the key as written.
void splitIncludeDirs(const std::vector<std::string>& Flags, std::vector<std::string>& Rest,
                      std::vector<IncludeDir>& Dirs) {
  for (size_t I = 0; I < Flags.size(); ++I) {
    llvm::StringRef A = Flags[I];
    std::optional<IncludeDir> D;
    for (llvm::StringRef Opt : {"-I", "-iquote", "-isystem", "-idirafter"}) {
      if (A == Opt && I + 1 < Flags.size() && llvm::sys::path::is_absolute(Flags[I + 1]))
        D = IncludeDir{Opt.str(), Flags[++I]};
      else if (A.size() > Opt.size() && A.starts_with(Opt) &&
               llvm::sys::path::is_absolute(A.drop_front(Opt.size())))
        D = IncludeDir{Opt.str(), A.drop_front(Opt.size()).str()};
      if (D)
        break;
    }
    if (!D) {
      Rest.push_back(Flags[I]);
      continue;
    }
    llvm::SmallString<256> Clean(D->Path);
    llvm::sys::path::remove_dots(Clean, /*remove_dot_dot=*/true);
    D->Path = Clean.str().str();
    while (D->Path.size() > 1 && D->Path.back() == '/')
      D->Path.pop_back();
    Dirs.push_back(*D);
  }
}

// What a PCH was built from, kept beside it (<pch>.inputs): the key of its flags without
// the include directories, those flags (read by people only: they say why two commands did
// not share a PCH), those directories, and the files it holds.
struct PchVariant {
  std::string Family;
  std::vector<std::string> Flags;
  std::vector<IncludeDir> Dirs;
  std::vector<std::string> Inputs;
};

void writeVariant(const std::string& Pch, const PchVariant& V) {
  std::string Text = "family " + V.Family + "\n";
  for (const std::string& F : V.Flags)
    Text += "flag " + F + "\n";
  for (const IncludeDir& D : V.Dirs)
    Text += "dir " + D.Opt + " " + D.Path + "\n";
  for (const std::string& F : V.Inputs)
    Text += "input " + F + "\n";
  std::string Tmp = Pch + ".inputs.tmp";
  std::error_code EC;
  {
    llvm::raw_fd_ostream OS(Tmp, EC);
    if (EC)
      return; // without it the PCH serves exactly its own flags only
    OS << Text;
  }
  if (llvm::sys::fs::rename(Tmp, Pch + ".inputs"))
    llvm::sys::fs::remove(Tmp);
}

std::optional<PchVariant> readVariant(const std::string& Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path);
  if (!Buf)
    return std::nullopt;
  PchVariant V;
  llvm::SmallVector<llvm::StringRef, 0> Lines;
  (*Buf)->getBuffer().split(Lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef L : Lines) {
    auto [Kind, Rest] = L.split(' ');
    if (Kind == "family")
      V.Family = Rest.str();
    else if (Kind == "input")
      V.Inputs.push_back(Rest.str());
    else if (Kind == "dir") {
      auto [Opt, Dir] = Rest.split(' ');
      V.Dirs.push_back({Opt.str(), Dir.str()});
    }
  }
  if (V.Family.empty() || V.Inputs.empty())
    return std::nullopt;
  return V;
}

bool isUnder(llvm::StringRef File, llvm::StringRef Dir) {
  return File.size() > Dir.size() && File.starts_with(Dir) &&
         (Dir.ends_with("/") || File[Dir.size()] == '/');
}

// Whether directory Dir holds a file by a name under which one of the PCH's files could be
// looked up: each trailing part of a file's path ("torch/torch.h", "torch.h", ...) is such a
// name. Conservative: any match counts, whatever the directory's place in the search order.
bool mayShadow(const std::string& Dir, const std::vector<std::string>& Inputs) {
  std::set<std::string> Entries;
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC; It.increment(EC))
    Entries.insert(llvm::sys::path::filename(It->path()).str());
  if (EC)
    return llvm::sys::fs::exists(Dir); // unreadable: it might hold anything
  for (llvm::StringRef Tail : Inputs) {
    for (size_t Slash = Tail.find('/'); Slash != llvm::StringRef::npos; Slash = Tail.find('/')) {
      Tail = Tail.drop_front(Slash + 1);
      if (Entries.count(Tail.substr(0, Tail.find('/')).str()) &&
          llvm::sys::fs::exists(Dir + "/" + Tail.str()))
        return true;
    }
  }
  return false;
}

// Whether a command with include directories Dirs finds every file of the PCH V where V's
// build found it: the directories V's files came from are in Dirs with the same options; the
// directories both commands have come in the same order (so among them the first to hold a
// name is the same); and no directory only Dirs has holds a file by a name under which one
// of V's files could be found (mayShadow). A directory only V's build had supplied no file,
// so leaving it out changes nothing. Then the PCH is what this command would build. Not
// covered: a header that LibTorch only tests for with __has_include and that exists in none
// of the directories V's build searched, but in one of Dirs.
bool compatibleVariant(const PchVariant& V, const std::vector<IncludeDir>& Dirs) {
  std::vector<IncludeDir> Common; // in V's order
  for (const IncludeDir& D : V.Dirs)
    if (llvm::is_contained(Dirs, D) && !llvm::is_contained(Common, D))
      Common.push_back(D);
  for (const IncludeDir& D : V.Dirs)
    if (!llvm::is_contained(Common, D) &&
        llvm::any_of(V.Inputs, [&](const std::string& F) { return isUnder(F, D.Path); }))
      return false; // a directory V's files came from is missing (or has another option)
  size_t Next = 0;
  for (const IncludeDir& D : Dirs) {
    if (!llvm::is_contained(Common, D)) {
      if (mayShadow(D.Path, V.Inputs))
        return false;
    } else if (Next < Common.size() && D == Common[Next]) {
      ++Next;
    }
  }
  return Next == Common.size(); // else the shared directories come in another order
}

// A PCH in the cache built from the same flags but other include directories that this
// command would find its files through the same way; "" when there is none. Projects whose
// targets differ only in their own include directories, and the same program compiled from
// two trees, share one PCH instead of building one each (15-45 s of CPU each).
std::string findVariant(const std::string& CacheDir, const std::string& Family,
                        const std::vector<IncludeDir>& Dirs) {
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(CacheDir, EC), End; It != End && !EC;
       It.increment(EC)) {
    llvm::StringRef Path = It->path();
    if (!Path.ends_with(".pch.inputs"))
      continue;
    std::string Pch = Path.drop_back(strlen(".inputs")).str();
    std::optional<PchVariant> V = readVariant(Path.str());
    if (V && V->Family == Family && llvm::sys::fs::exists(Pch) && compatibleVariant(*V, Dirs))
      return Pch;
  }
  return "";
}

} // namespace

tooling::ArgumentsAdjuster makePchAdjuster(std::shared_ptr<PchRequest> Req) {
  return [Req](const tooling::CommandLineArguments& In, llvm::StringRef File) {
    if (Req->CacheDir.empty()) {
      Req->Use = PchUse::Off;
      return In;
    }
    llvm::SmallString<256> Abs(File);
    if (!llvm::sys::path::is_absolute(Abs))
      llvm::sys::fs::make_absolute(Req->WorkingDir, Abs);
    auto Buf = llvm::MemoryBuffer::getFile(Abs);
    if (!Buf || !pchEligible((*Buf)->getBuffer())) {
      Req->Use = PchUse::NotEligible;
      return In;
    }
    std::vector<std::string> Flags = pchFlags(In, File, Abs, Req->WorkingDir);
    std::string Key = pchKey(Flags, Req->WorkingDir);
    PchVariant Variant;
    splitIncludeDirs(Flags, Variant.Flags, Variant.Dirs);
    Variant.Family = pchKey(Variant.Flags, Req->WorkingDir);
    std::string Pch = Req->CacheDir + "/torch-" + Key + ".pch";
    {
      std::lock_guard<std::mutex> Lock(buildMutex());
      llvm::sys::fs::create_directories(Req->CacheDir);
      // One build per family at a time too: a process that needs a PCH of the same flags but
      // other include directories waits for a build in progress and may then reuse it (in
      // e2e.fidelity two projects' migrations built both at once). Only on a miss: a command
      // whose own PCH is cached never waits for a family member's build. Always family
      // first, then this command's own PCH, so two processes never wait for each other.
      std::optional<BuildLock> Family;
      if (Req->ForceRebuild || !llvm::sys::fs::exists(Pch))
        Family.emplace(Req->CacheDir + "/torch-" + Variant.Family + ".family.lock");
      BuildLock Other(Pch + ".lock");
      // After a failed load (ForceRebuild) only this command's own PCH is built and used.
      if (!Req->ForceRebuild && !llvm::sys::fs::exists(Pch))
        if (std::string Found = findVariant(Req->CacheDir, Variant.Family, Variant.Dirs);
            !Found.empty())
          Pch = Found;
      if (Req->ForceRebuild || !llvm::sys::fs::exists(Pch)) {
        if (Req->Announce)
          llvm::errs()
              << "accel-migrate: building the precompiled LibTorch header for these flags in "
              << Req->CacheDir << " (once; about 15 s) ...\n";
        if (!buildPch(Flags, Req->WorkingDir, Req->CacheDir, Key, Pch, Req->Error,
                      &Variant.Inputs)) {
          Req->Use = PchUse::NotEligible;
          return In;
        }
        writeVariant(Pch, Variant);
        Req->Use = PchUse::Built;
      } else {
        Req->Use = PchUse::Reused;
        // Least recently used goes first when the cache is pruned.
        int FD;
        if (!llvm::sys::fs::openFileForWrite(Pch, FD, llvm::sys::fs::CD_OpenExisting,
                                             llvm::sys::fs::OF_Append)) {
          llvm::sys::fs::setLastAccessAndModificationTime(FD, std::chrono::system_clock::now());
          llvm::sys::Process::SafelyCloseFileDescriptor(FD);
        }
      }
    }
    Req->PchPath = Pch;
    tooling::CommandLineArguments Out = In;
    Out.push_back("-include-pch");
    Out.push_back(Pch);
    return Out;
  };
}

} // namespace accel
