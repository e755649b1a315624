#include "Project.h"

#include "CMakeMigration.h"
#include "CheckOutput.h"
#include "Migrator.h"
#include "Options.h"
#include "Output.h"
#include "Report.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/ThreadPool.h>
#include <llvm/Support/Threading.h>
#include <llvm/Support/raw_ostream.h>

#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;
using clang::tooling::CompilationDatabase;
using clang::tooling::CompileCommand;

namespace accel {
namespace {

std::string absolute(llvm::StringRef P, llvm::StringRef Base = "") {
  llvm::SmallString<256> S(P);
  if (!path::is_absolute(S)) {
    if (Base.empty()) {
      fs::make_absolute(S);
    } else {
      llvm::SmallString<256> B(Base);
      path::append(B, S);
      S = B;
    }
  }
  path::remove_dots(S, /*remove_dot_dot=*/true);
  return S.str().str();
}

// The real path (symlinks resolved); for a path that does not exist yet, the real path of
// its nearest existing ancestor plus the rest, so that an out-root reached through a link
// is still recognised inside the in-root.
std::string canonical(llvm::StringRef P) {
  std::string Abs = absolute(P);
  llvm::StringRef Existing = Abs;
  while (!Existing.empty() && !fs::exists(Existing))
    Existing = path::parent_path(Existing);
  llvm::SmallString<256> Real;
  if (Existing.empty() || fs::real_path(Existing, Real))
    return Abs;
  llvm::StringRef Rest = llvm::StringRef(Abs).drop_front(Existing.size());
  if (!Rest.empty())  // appending "" would add a trailing separator
    path::append(Real, Rest);
  return Real.str().str();
}

bool isUnder(llvm::StringRef P, llvm::StringRef Root) {
  return P == Root || (P.starts_with(Root) && P.size() > Root.size() && P[Root.size()] == '/');
}

std::string relative(llvm::StringRef P, llvm::StringRef Root) {
  return P == Root ? "." : P.drop_front(Root.size() + 1).str();
}

bool isHeaderName(llvm::StringRef P) {
  llvm::StringRef Ext = path::extension(P);
  return Ext == ".h" || Ext == ".hh" || Ext == ".hpp" || Ext == ".hxx";
}

// One compile command per file: a source built for several targets has several entries,
// and ClangTool would parse (and migrate) it once per entry. A header has no entry: it is
// parsed with the command of a source that includes it, the source's name replaced by the
// header's.
class ProjectCommands : public CompilationDatabase {
 public:
  ProjectCommands(const CompilationDatabase& Base, std::map<std::string, std::string> SourceOf)
      : Base(Base), SourceOf(std::move(SourceOf)) {}

  std::vector<CompileCommand> getCompileCommands(llvm::StringRef File) const override {
    auto It = SourceOf.find(File.str());
    if (It == SourceOf.end()) {
      std::vector<CompileCommand> All = Base.getCompileCommands(File);
      if (All.size() > 1)
        All.resize(1);
      return All;
    }
    std::vector<CompileCommand> Out;
    for (CompileCommand C : Base.getCompileCommands(It->second)) {
      std::string Source = absolute(C.Filename, C.Directory);
      bool Replaced = false;
      for (size_t I = 1; I < C.CommandLine.size(); ++I) {
        llvm::StringRef A = C.CommandLine[I];
        if (!A.starts_with("-") && absolute(A, C.Directory) == Source &&
            !(I > 0 && C.CommandLine[I - 1] == "-o")) {
          C.CommandLine[I] = File.str();
          Replaced = true;
        }
      }
      if (!Replaced)
        C.CommandLine.push_back(File.str());
      C.Filename = File.str();
      C.Heuristic = "flags of " + It->second;
      Out.push_back(std::move(C));
      break;  // one command is enough
    }
    return Out;
  }
  std::vector<std::string> getAllFiles() const override { return Base.getAllFiles(); }

 private:
  const CompilationDatabase& Base;
  std::map<std::string, std::string> SourceOf;  // header -> the source's database path
};

struct Unit {
  std::string DbPath;  // as the compilation database knows it (sources)
  std::string Real;    // canonical path
  std::string Rel;     // relative to the in-root
  bool Header = false;
  std::string ParsedWith;  // headers: Rel of the source whose command is used
  FileResult Result;
  bool Missing = false;
};

std::string firstError(llvm::StringRef Errors) {
  llvm::StringRef Rest = Errors;
  while (!Rest.empty()) {
    auto [Line, Tail] = Rest.split('\n');
    if (Line.contains("error:"))
      return Line.trim().str();
    Rest = Tail;
  }
  return Errors.empty() ? "it does not compile" : Errors.split('\n').first.trim().str();
}

std::string plural(unsigned N, llvm::StringRef One, llvm::StringRef Many) {
  return std::to_string(N) + " " + (N == 1 ? One : Many).str();
}

unsigned unacknowledged(const FileResult& R) {
  unsigned N = 0;
  for (const auto& D : R.Diagnostics)
    N += !D.Acknowledged;
  return N;
}

unsigned rewrites(const FileResult& R) {
  unsigned N = 0;
  for (const auto& [Id, C] : R.Rewrites)
    N += C;
  return N;
}

class ProjectRun {
 public:
  explicit ProjectRun(const Options& Opts) : Opts(Opts) {}
  int run();

 private:
  bool checkDirectories();
  void keepIfNoLibTorch(FileResult& R) const;
  void checkAcceleratorConstructed();
  bool collectSources();
  void migrateAll(std::vector<Unit*> Work, const CompilationDatabase& DB);
  void collectHeaders();
  void walkInRoot(std::vector<std::string>& Others, std::vector<std::string>& CMakeFiles);
  void migrateCMake(const std::vector<std::string>& CMakeFiles);
  bool writeOut(const std::vector<std::string>& Others);
  void printCheck();
  bool exportCheckFixes();
  ProjectReport buildReport(double Wall);
  void error(const llvm::Twine& Msg) { llvm::errs() << "accel-migrate: " << Msg << "\n"; }

  const Options& Opts;
  MigrateSettings Settings;
  std::string InRoot, OutRoot, BuildDir;
  unsigned Jobs = 1;
  std::vector<Unit> Sources;
  std::vector<Unit> Headers;
  struct CMakeFile {
    std::string Real, Rel;
    CMakeMigration M;
  };
  std::vector<CMakeFile> CMake;
  std::mutex Lock;  // progress output and counters
  unsigned Done = 0, Total = 0;
  unsigned IOErrors = 0;
  std::vector<std::string> ProjectWarnings;
};

// The CMake migration links Accelerate only to targets that link LibTorch, and a program
// without LibTorch has nothing to distribute: a file that includes no LibTorch header is
// left as it is (the rules would otherwise add an Accelerator for its console output).
void ProjectRun::keepIfNoLibTorch(FileResult& R) const {
  if (!R.changed())
    return;
  for (const std::string& Inc : R.IncludedFiles) {
    llvm::StringRef P(Inc);
    if (!P.empty() && !isUnder(P, InRoot) &&
        (P.contains("/torch/") || P.contains("/ATen/") || P.contains("/c10/")))
      return;
  }
  R.Migrated = R.Original;
  R.Rewrites.clear();
  R.Findings.clear();
  R.Diagnostics.clear();
  R.Rendered.clear();
  R.Note += (R.Note.empty() ? "" : "; ") +
            std::string("includes no LibTorch header: left as it is");
}

// Migrated code outside main reaches the Accelerator through Accelerator::current(), which
// throws unless main() constructed one; the rules add it only to a main that uses it. A
// source defining main() that constructs none while it or a project header it includes
// uses current() gets a warning.
static bool constructsAccelerator(llvm::StringRef Text) {
  // `accelerate::Accelerator accelerator;`, `... acc(options);`, `... acc{...}`
  const llvm::StringRef Type = "accelerate::Accelerator ";
  for (size_t At = Text.find(Type); At != llvm::StringRef::npos; At = Text.find(Type, At + 1)) {
    llvm::StringRef Rest = Text.substr(At + Type.size()).ltrim();
    size_t Name = 0;
    while (Name < Rest.size() && (llvm::isAlnum(Rest[Name]) || Rest[Name] == '_'))
      ++Name;
    llvm::StringRef After = Rest.substr(Name).ltrim();
    if (Name > 0 && !After.empty() && llvm::StringRef(";({").contains(After[0]))
      return true;
  }
  return false;
}

static llvm::StringRef textOf(const FileResult& R) {
  return R.Parsed ? llvm::StringRef(R.Migrated) : llvm::StringRef();
}

void ProjectRun::checkAcceleratorConstructed() {
  std::map<std::string, const Unit*> HeaderByPath;
  for (const Unit& H : Headers)
    HeaderByPath[H.Real] = &H;
  for (const Unit& S : Sources) {
    llvm::StringRef Text = textOf(S.Result);
    if (!Text.contains(" main(") || constructsAccelerator(Text))
      continue;
    std::string User = Text.contains("Accelerator::current()") ? S.Rel : "";
    for (const std::string& Inc : S.Result.IncludedFiles) {
      auto It = HeaderByPath.find(canonical(Inc));
      if (User.empty() && It != HeaderByPath.end() &&
          textOf(It->second->Result).contains("Accelerator::current()"))
        User = It->second->Rel;
    }
    if (!User.empty())
      ProjectWarnings.push_back(
          S.Rel + ": main() constructs no accelerate::Accelerator, but " + User +
          " uses accelerate::Accelerator::current(), which throws without one: add "
          "`accelerate::Accelerator accelerator;` as the first statement of main()");
  }
}

bool ProjectRun::checkDirectories() {
  if (!fs::is_directory(Opts.InRoot)) {
    error("--in-root " + Opts.InRoot + " is not a directory");
    return false;
  }
  InRoot = canonical(Opts.InRoot);
  BuildDir = canonical(Opts.BuildPath);
  if (Opts.OutRoot.empty())
    return true;
  OutRoot = canonical(Opts.OutRoot);
  if (isUnder(OutRoot, InRoot)) {
    error("--out-root " + Opts.OutRoot + (OutRoot == InRoot ? " is" : " lies inside") +
          " the --in-root " + Opts.InRoot +
          ": choose a directory outside it (the input is never modified)");
    return false;
  }
  if (isUnder(InRoot, OutRoot)) {
    error("--out-root " + Opts.OutRoot + " contains the --in-root " + Opts.InRoot +
          ": choose a directory outside it");
    return false;
  }
  if (fs::exists(OutRoot)) {
    if (!fs::is_directory(OutRoot)) {
      error("--out-root " + Opts.OutRoot + " exists and is not a directory");
      return false;
    }
    std::error_code EC;
    fs::directory_iterator It(OutRoot, EC);
    if (!EC && It != fs::directory_iterator() && !Opts.Force) {
      error("--out-root " + Opts.OutRoot +
            " is not empty: choose a new or empty directory, or pass --force to write into "
            "it (files of the same name are replaced; nothing is deleted)");
      return false;
    }
  }
  return true;
}

bool ProjectRun::collectSources() {
  std::set<std::string> Seen;
  for (const std::string& F : Opts.DB->getAllFiles()) {
    Unit U;
    U.DbPath = F;
    U.Real = canonical(F);
    if (!isUnder(U.Real, InRoot) || isUnder(U.Real, BuildDir) ||
        (!OutRoot.empty() && isUnder(U.Real, OutRoot)) || !Seen.insert(U.Real).second)
      continue;
    U.Rel = relative(U.Real, InRoot);
    U.Missing = !fs::exists(U.Real);
    Sources.push_back(std::move(U));
  }
  std::sort(Sources.begin(), Sources.end(),
            [](const Unit& A, const Unit& B) { return A.Rel < B.Rel; });
  if (Sources.empty()) {
    error("no translation unit of " + Opts.BuildPath + "/compile_commands.json lies under " +
          Opts.InRoot);
    return false;
  }
  return true;
}

void ProjectRun::migrateAll(std::vector<Unit*> Work, const CompilationDatabase& DB) {
  llvm::ThreadPool Pool(llvm::hardware_concurrency(Jobs));
  for (Unit* U : Work) {
    Pool.async([this, U, &DB] {
      if (U->Missing) {
        U->Result.Path = U->Real;
        U->Result.CompilerErrors = "error: no such file: " + U->Real + "\n";
      } else {
        U->Result = migrateFile(DB, U->Header ? U->Real : U->DbPath, Settings);
        keepIfNoLibTorch(U->Result);
      }
      const FileResult& R = U->Result;
      std::lock_guard<std::mutex> G(Lock);
      ++Done;
      std::string What;
      if (!R.Parsed)
        What = "FAILED, does not compile (copied unchanged)";
      else if (Opts.Check)
        What = plural(unacknowledged(R), "finding", "findings");
      else if (R.changed())
        What = plural(rewrites(R), "rewrite", "rewrites");
      else
        What = "nothing to migrate";
      unsigned Warn = 0;
      for (const auto& F : R.Findings)
        Warn += !F.Acknowledged;
      if (R.Parsed && !Opts.Check && Warn)
        What += ", " + plural(Warn, "warning", "warnings");
      if (!R.Parsed)
        llvm::errs() << R.CompilerErrors;
      else if (!Opts.Check && !Opts.Quiet)
        for (const auto& F : R.Findings)
          if (!F.Acknowledged)
            llvm::errs() << U->Real << ":" << F.Line << ":" << F.Column
                         << ": warning: " << F.Message << " [" << F.RuleId << "]\n";
      if (!Opts.Quiet || !R.Parsed)
        llvm::errs() << "[" << Done << "/" << Total << "] " << U->Rel
                     << (U->Header ? " (header)" : "") << ": " << What << " ("
                     << llvm::formatv("{0:f1}", R.Seconds) << " s)\n";
      if (!R.Note.empty() && !Opts.Quiet)
        llvm::errs() << "accel-migrate: note: " << U->Rel << ": " << R.Note << "\n";
    });
  }
  Pool.wait();
}

// Headers under the in-root that some source includes, each with the first source (in
// path order, parsed ones first) that includes it: the result does not depend on -j.
void ProjectRun::collectHeaders() {
  std::set<std::string> SourcePaths;
  for (const Unit& S : Sources)
    SourcePaths.insert(S.Real);
  std::map<std::string, const Unit*> Owner;
  for (bool WantParsed : {true, false}) {
    for (const Unit& S : Sources) {
      if (S.Result.Parsed != WantParsed)
        continue;
      for (const std::string& Inc : S.Result.IncludedFiles) {
        if (Inc.empty())  // a file without a real path (a virtual buffer)
          continue;
        std::string Real = canonical(Inc);
        if (!isUnder(Real, InRoot) || isUnder(Real, BuildDir) ||
            (!OutRoot.empty() && isUnder(Real, OutRoot)) || SourcePaths.count(Real) ||
            !isHeaderName(Real))
          continue;
        Owner.emplace(Real, &S);
      }
    }
  }
  for (const auto& [Real, S] : Owner) {
    Unit H;
    H.Real = Real;
    H.Rel = relative(Real, InRoot);
    H.Header = true;
    H.DbPath = S->DbPath;
    H.ParsedWith = S->Rel;
    Headers.push_back(std::move(H));
  }
}

void ProjectRun::walkInRoot(std::vector<std::string>& Others,
                            std::vector<std::string>& CMakeFiles) {
  std::set<std::string> Migrated;
  for (const Unit& U : Sources)
    Migrated.insert(U.Real);
  for (const Unit& U : Headers)
    Migrated.insert(U.Real);
  std::error_code EC;
  for (fs::recursive_directory_iterator It(InRoot, EC, /*follow_symlinks=*/false), End;
       It != End && !EC; It.increment(EC)) {
    std::string P = It->path();
    fs::file_type T = It->type();
    if (T == fs::file_type::directory_file) {
      // The build directory (and any other CMake build tree) is not part of the sources.
      llvm::SmallString<256> Cache(P);
      path::append(Cache, "CMakeCache.txt");
      if (canonical(P) == BuildDir || (!OutRoot.empty() && canonical(P) == OutRoot) ||
          fs::exists(Cache))
        It.no_push();
      continue;
    }
    if (Migrated.count(P))
      continue;
    if (T == fs::file_type::regular_file && path::filename(P) == "CMakeLists.txt")
      CMakeFiles.push_back(P);
    else
      Others.push_back(P);
  }
  if (EC) {
    error("cannot read " + InRoot + ": " + EC.message());
    ++IOErrors;
  }
  std::sort(Others.begin(), Others.end());
  std::sort(CMakeFiles.begin(), CMakeFiles.end());
}

void ProjectRun::migrateCMake(const std::vector<std::string>& CMakeFiles) {
  CMakeProjectFacts Facts;
  std::vector<std::string> Texts;
  for (const std::string& F : CMakeFiles) {
    auto Buf = llvm::MemoryBuffer::getFile(F);
    Texts.push_back(Buf ? (*Buf)->getBuffer().str() : std::string());
    if (!Buf) {
      error("cannot read " + F + ": " + Buf.getError().message());
      ++IOErrors;
    }
    scanCMakeLists(Texts.back(), Facts);
  }
  std::set<std::string> Linked;
  for (size_t I = 0; I < CMakeFiles.size(); ++I) {
    CMakeFile C;
    C.Real = CMakeFiles[I];
    C.Rel = relative(C.Real, InRoot);
    C.M = migrateCMakeLists(Texts[I], C.Rel == "CMakeLists.txt", Facts, Linked);
    CMake.push_back(std::move(C));
  }
}

bool copyFile(const std::string& From, const std::string& To, std::string& Err) {
  if (auto EC = fs::copy_file(From, To)) {
    Err = "cannot copy " + From + " to " + To + ": " + EC.message();
    return false;
  }
  if (auto Perms = fs::getPermissions(From))
    fs::setPermissions(To, *Perms);
  return true;
}

bool ProjectRun::writeOut(const std::vector<std::string>& Others) {
  auto Dest = [&](const std::string& Rel) {
    llvm::SmallString<256> D(OutRoot);
    path::append(D, Rel);
    return D.str().str();
  };
  auto Fail = [&](const llvm::Twine& Msg) {
    error(Msg);
    ++IOErrors;
  };
  auto MakeParent = [&](const std::string& To) {
    if (auto EC = fs::create_directories(path::parent_path(To))) {
      Fail("cannot create " + path::parent_path(To) + ": " + EC.message());
      return false;
    }
    return true;
  };
  auto Write = [&](const std::string& From, const std::string& To, const std::string& Text) {
    if (!MakeParent(To))
      return;
    if (auto E = writeFileAtomically(To, Text)) {
      Fail(llvm::toString(std::move(E)));
      return;
    }
    if (auto Perms = fs::getPermissions(From))
      fs::setPermissions(To, *Perms);
  };
  auto Copy = [&](const std::string& From, const std::string& To) {
    std::string Err;
    if (MakeParent(To) && !copyFile(From, To, Err))
      Fail(Err);
  };
  if (auto EC = fs::create_directories(OutRoot)) {
    Fail("cannot create " + OutRoot + ": " + EC.message());
    return false;
  }
  for (std::vector<Unit>* List : {&Sources, &Headers})
    for (const Unit& U : *List) {
      if (U.Missing)
        continue;
      if (U.Result.changed())
        Write(U.Real, Dest(U.Rel), U.Result.Migrated);
      else
        Copy(U.Real, Dest(U.Rel));  // unchanged or not migrated: byte for byte
    }
  for (const CMakeFile& C : CMake) {
    if (C.M.changed())
      Write(C.Real, Dest(C.Rel), C.M.Migrated);
    else
      Copy(C.Real, Dest(C.Rel));
  }
  for (const std::string& P : Others) {
    std::string To = Dest(relative(P, InRoot));
    fs::file_status St;
    fs::status(P, St, /*follow=*/false);
    if (St.type() == fs::file_type::symlink_file) {
      char Target[4096];
      ssize_t N = ::readlink(P.c_str(), Target, sizeof Target - 1);
      if (N < 0 || !MakeParent(To)) {
        Fail("cannot read the link " + P);
        continue;
      }
      fs::remove(To);
      if (auto EC = fs::create_link(std::string(Target, N), To))
        Fail("cannot create the link " + To + ": " + EC.message());
    } else if (St.type() == fs::file_type::regular_file) {
      Copy(P, To);
    }  // sockets, fifos, devices: not sources
  }
  return IOErrors == 0;
}

void ProjectRun::printCheck() {
  for (const std::vector<Unit>* List : {&Sources, &Headers})
    for (const Unit& U : *List)
      llvm::outs() << U.Result.Rendered;
  for (const CMakeFile& C : CMake) {
    for (const CMakeEdit& E : C.M.Edits) {
      llvm::StringRef Text(C.M.Original);
      size_t B = Text.rfind('\n', E.Offset);  // before the offset
      B = B == llvm::StringRef::npos ? 0 : B + 1;
      llvm::StringRef Line = Text.slice(B, Text.find('\n', B));
      llvm::outs() << C.Real << ":" << E.Line << ":" << E.Column << ": warning: " << E.Message
                   << " [accelerate-cmake]\n"
                   << Line << "\n"
                   << std::string(E.Column - 1, ' ') << "^\n"
                   << std::string(E.Column - 1, ' ')
                   << llvm::StringRef(E.Text).ltrim("\n").str() << "\n";
    }
  }
}

bool ProjectRun::exportCheckFixes() {
  std::vector<FileDiagnostics> Files;
  for (const std::vector<Unit>* List : {&Sources, &Headers})
    for (const Unit& U : *List)
      if (U.Result.Parsed)
        Files.push_back({U.Real, U.Result.Diagnostics});
  for (const CMakeFile& C : CMake) {
    FileDiagnostics F{C.Real, {}};
    for (const CMakeEdit& E : C.M.Edits) {
      MigrationDiagnostic D;
      D.RuleId = "accelerate-cmake";
      D.Message = E.Message;
      D.Offset = E.Offset;
      D.Fixes.push_back({E.Offset, 0, E.Text});
      F.Diags.push_back(std::move(D));
    }
    if (!F.Diags.empty())
      Files.push_back(std::move(F));
  }
  llvm::SmallString<256> Cwd;
  fs::current_path(Cwd);
  if (auto E = exportFixes(Opts.ExportFixes, Files, Cwd.str().str())) {
    error("cannot write " + Opts.ExportFixes + ": " + llvm::toString(std::move(E)));
    return false;
  }
  return true;
}

ProjectReport ProjectRun::buildReport(double Wall) {
  ProjectReport R;
  R.Mode = Opts.Check ? "check" : Opts.DryRun ? "dry-run" : "migrate";
  R.InRoot = InRoot;
  R.OutRoot = Opts.Check || Opts.DryRun ? "" : OutRoot;
  R.BuildDir = BuildDir;
  R.Jobs = Jobs;
  R.WallSeconds = Wall;
  for (const std::vector<Unit>* List : {&Sources, &Headers})
    for (const Unit& U : *List) {
      FileReport F;
      F.Path = U.Rel;
      F.Kind = U.Header ? "header" : "source";
      // Check and dry-run say what a migration would do.
      F.Status = !U.Result.Parsed ? "failed" : U.Result.changed() ? "migrated" : "unchanged";
      F.Rewrites = U.Result.Rewrites;
      for (const auto& W : U.Result.Findings)
        if (!W.Acknowledged)
          F.Warnings.push_back({W.Line, W.Column, W.RuleId, W.Message});
      F.ParsedWith = U.ParsedWith;
      F.Note = U.Result.Note;
      if (!U.Result.Parsed)
        F.Error = firstError(U.Result.CompilerErrors);
      F.Seconds = U.Result.Seconds;
      R.Files.push_back(std::move(F));
    }
  for (const CMakeFile& C : CMake)
    R.CMake.push_back({C.Rel, C.M.changed(), C.M.FindPackageAdded, C.M.LinkedTargets});
  R.Warnings = ProjectWarnings;
  return R;
}

int ProjectRun::run() {
  auto Start = std::chrono::steady_clock::now();
  if (!checkDirectories() || !collectSources())
    return 2;
  Settings.ForceCxx17 = Opts.ForceCxx17;
  Settings.UsePch = Opts.UsePch;
  Settings.CacheDir = Opts.CacheDir;
  Jobs = llvm::hardware_concurrency(Opts.Jobs).compute_thread_count();
  if (!Opts.Quiet)
    llvm::errs() << "accel-migrate: " << plural(Sources.size(), "source", "sources")
                 << " under " << InRoot << " (-j " << Jobs << ")\n";

  Total = Sources.size();
  std::vector<Unit*> Work;
  for (Unit& U : Sources)
    Work.push_back(&U);
  ProjectCommands SourceDB(*Opts.DB, {});
  migrateAll(Work, SourceDB);

  collectHeaders();
  if (!Headers.empty()) {
    std::map<std::string, std::string> SourceOf;
    for (const Unit& H : Headers)
      SourceOf[H.Real] = H.DbPath;
    ProjectCommands DB(*Opts.DB, SourceOf);
    Total += Headers.size();
    Work.clear();
    for (Unit& U : Headers)
      Work.push_back(&U);
    migrateAll(Work, DB);
  }

  checkAcceleratorConstructed();
  for (const std::string& W : ProjectWarnings)
    llvm::errs() << "accel-migrate: warning: " << W << "\n";

  std::vector<std::string> Others, CMakeFiles;
  walkInRoot(Others, CMakeFiles);
  migrateCMake(CMakeFiles);

  unsigned Failed = 0, Findings = 0;
  for (const std::vector<Unit>* List : {&Sources, &Headers})
    for (const Unit& U : *List) {
      Failed += !U.Result.Parsed;
      Findings += U.Result.Parsed ? unacknowledged(U.Result) : 0;
    }
  for (const CMakeFile& C : CMake)
    Findings += C.M.Edits.size();

  double Wall;
  if (Opts.Check) {
    printCheck();
    if (!Opts.ExportFixes.empty() && !exportCheckFixes())
      return 3;
    Wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
    if (!Opts.Quiet)
      llvm::errs() << renderTable(buildReport(Wall)) << "accel-migrate: "
                   << plural(Findings, "finding", "findings") << " in "
                   << plural(Sources.size() + Headers.size() + CMake.size(), "file", "files")
                   << (Failed ? ", " + std::to_string(Failed) + " not checked" : "")
                   << (Findings ? "; run with --out-root to apply them" : "") << "\n";
    return Failed ? 3 : Findings ? 1 : 0;
  }
  if (!Opts.DryRun)
    writeOut(Others);
  Wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  ProjectReport Report = buildReport(Wall);
  Report.Copied = Opts.DryRun ? 0 : Others.size();
  std::string Table = renderTable(Report);
  if (!Opts.DryRun) {
    for (auto [Name, Text] : {std::pair<const char*, std::string>{"accel-migrate-report.md", Table},
                              {"accel-migrate-report.json", renderJson(Report)}}) {
      llvm::SmallString<256> P(OutRoot);
      path::append(P, Name);
      if (auto E = writeFileAtomically(P.str().str(), Text)) {
        error(llvm::toString(std::move(E)));
        ++IOErrors;
      }
    }
  }
  if (!Opts.Quiet)
    llvm::outs() << Table;
  if (Failed)
    error(plural(Failed, "file was", "files were") +
          " not migrated (copied unchanged; see the errors above)");
  if (IOErrors)
    error(plural(IOErrors, "file could not be written", "files could not be written"));
  if (!Opts.DryRun && !Opts.Quiet)
    llvm::errs() << "accel-migrate: wrote " << OutRoot << " (report: " << OutRoot
                 << "/accel-migrate-report.md, .json)\n";
  return Failed || IOErrors ? 1 : 0;
}

}  // namespace

int runProject(const Options& Opts) { return ProjectRun(Opts).run(); }

}  // namespace accel
