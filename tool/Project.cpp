#include "Project.h"

#include "Options.h"
#include "ProjectCommands.h"
#include "ProjectOutput.h"
#include "ProjectPaths.h"
#include "ProjectResults.h"
#include "ProjectRules.h"
#include "accel/rewriters/engine/LLVMCompat.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Threading.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;
using clang::tooling::CompilationDatabase;

namespace accel {
namespace {

std::string plural(unsigned N, llvm::StringRef One, llvm::StringRef Many) {
  return std::to_string(N) + " " + (N == 1 ? One : Many).str();
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
  bool collectSources();
  void migrateAll(std::vector<ProjectUnit*> Work, const CompilationDatabase& DB,
                  bool ForceAccelerator = false);
  ProjectContext runProjectRules(const CompilationDatabase& DB);
  ProjectContext migrateProgram();
  double elapsed() const;
  std::string timeLeft() const;
  int reportCheck(unsigned Failed, unsigned Findings);
  int writeAll(unsigned Failed, const std::vector<std::string>& Others);
  void collectHeaders();
  void walkInRoot(std::vector<std::string>& Others, std::vector<std::string>& CMakeFiles);
  void migrateCMake(const std::vector<std::string>& CMakeFiles, const ProjectContext& Rules);

  const Options& Opts;
  const std::chrono::steady_clock::time_point Start = std::chrono::steady_clock::now();
  MigrateSettings Settings;
  ProjectResults Project;
  unsigned Jobs = 1;
  std::mutex Lock; // progress output and counters
  unsigned Done = 0, Total = 0;
  unsigned IOErrors = 0;
};

bool ProjectRun::checkDirectories() {
  if (!fs::is_directory(Opts.InRoot)) {
    projectError("--in-root " + Opts.InRoot + " is not a directory");
    return false;
  }
  std::string& InRoot = Project.InRoot;
  std::string& OutRoot = Project.OutRoot;
  InRoot = canonical(Opts.InRoot);
  Project.BuildDir = canonical(Opts.BuildPath);
  if (Opts.OutRoot.empty())
    return true;
  OutRoot = canonical(Opts.OutRoot);
  if (isUnder(OutRoot, InRoot)) {
    projectError("--out-root " + Opts.OutRoot + (OutRoot == InRoot ? " is" : " lies inside") +
                 " the --in-root " + Opts.InRoot +
                 ": choose a directory outside it (the input is never modified)");
    return false;
  }
  if (isUnder(InRoot, OutRoot)) {
    projectError("--out-root " + Opts.OutRoot + " contains the --in-root " + Opts.InRoot +
                 ": choose a directory outside it");
    return false;
  }
  if (fs::exists(OutRoot)) {
    if (!fs::is_directory(OutRoot)) {
      projectError("--out-root " + Opts.OutRoot + " exists and is not a directory");
      return false;
    }
    std::error_code EC;
    fs::directory_iterator It(OutRoot, EC);
    if (!EC && It != fs::directory_iterator() && !Opts.Force) {
      projectError("--out-root " + Opts.OutRoot +
                   " is not empty: choose a new or empty directory, or pass --force to write "
                   "into it (files of the same name are replaced; nothing is deleted)");
      return false;
    }
  }
  return true;
}

bool ProjectRun::collectSources() {
  std::set<std::string> Seen;
  for (const std::string& F : Opts.DB->getAllFiles()) {
    ProjectUnit U;
    U.DbPath = F;
    U.Real = canonical(F);
    if (!isUnder(U.Real, Project.InRoot) || isUnder(U.Real, Project.BuildDir) ||
        (!Project.OutRoot.empty() && isUnder(U.Real, Project.OutRoot)) ||
        !Seen.insert(U.Real).second)
      continue;
    U.Rel = relative(U.Real, Project.InRoot);
    U.Missing = !fs::exists(U.Real);
    Project.Sources.push_back(std::move(U));
  }
  std::sort(Project.Sources.begin(), Project.Sources.end(),
            [](const ProjectUnit& A, const ProjectUnit& B) { return A.Rel < B.Rel; });
  if (Project.Sources.empty()) {
    projectError("no translation unit of " + Opts.BuildPath + "/compile_commands.json lies under " +
                 Opts.InRoot);
    return false;
  }
  return true;
}

void ProjectRun::migrateAll(std::vector<ProjectUnit*> Work, const CompilationDatabase& DB,
                            bool ForceAccelerator) {
  accel::ThreadPool Pool(llvm::hardware_concurrency(Jobs));
  for (ProjectUnit* U : Work) {
    Pool.async([this, U, &DB, ForceAccelerator] {
      if (U->Missing) {
        U->Result.Path = U->Real;
        U->Result.CompilerErrors = "error: no such file: " + U->Real + "\n";
      } else {
        // A header is migrated as part of the translation unit of a source that includes
        // it: one that is not self-contained compiles only there.
        MigrateSettings S = Settings;
        S.Target = U->Header ? U->Real : "";
        S.ForceAccelerator = ForceAccelerator;
        S.ProjectMode = true;
        std::string Note = U->Result.Note;
        U->Result = migrateFile(DB, U->DbPath, S);
        if (ForceAccelerator && U->Result.Parsed)
          U->Result.Note =
              Note + (Note.empty() || U->Result.Note.empty() ? "" : "; ") + U->Result.Note;
      }
      const FileResult& R = U->Result;
      std::lock_guard<std::mutex> G(Lock);
      ++Done;
      std::string What;
      if (!R.Parsed)
        What = "FAILED, does not compile (copied unchanged)";
      else if (Opts.Check)
        What = plural(unacknowledged(R.Diagnostics), "finding", "findings");
      else if (R.changed())
        What = plural(rewrites(R), "rewrite", "rewrites");
      else
        What = "nothing to migrate";
      unsigned Warn = 0;
      for (const auto& F : R.Findings)
        Warn += !F.Acknowledged && !F.IsNote;
      if (R.Parsed && !Opts.Check && Warn)
        What += ", " + plural(Warn, "warning", "warnings");
      if (!R.Parsed)
        llvm::errs() << R.CompilerErrors;
      else if (!Opts.Check && !Opts.Quiet)
        for (const auto& F : R.Findings)
          if (!F.Acknowledged)
            llvm::errs() << U->Real << ":" << F.Line << ":" << F.Column
                         << (F.IsNote ? ": note: " : ": warning: ") << F.Message << " [" << F.RuleId
                         << "]\n";
      if (!Opts.Quiet || !R.Parsed)
        llvm::errs() << "[" << Done << "/" << Total << "] " << U->Rel
                     << (U->Header ? " (header)" : "") << ": " << What << " ("
                     << llvm::formatv("{0:f1}", R.Seconds) << " s)" << timeLeft() << "\n";
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
  for (const ProjectUnit& S : Project.Sources)
    SourcePaths.insert(S.Real);
  std::map<std::string, const ProjectUnit*> Owner;
  for (bool WantParsed : {true, false}) {
    for (const ProjectUnit& S : Project.Sources) {
      if (S.Result.Parsed != WantParsed)
        continue;
      for (const std::string& Inc : S.Result.IncludedFiles) {
        if (Inc.empty()) // a file without a real path (a virtual buffer)
          continue;
        std::string Real = canonical(Inc);
        if (!isUnder(Real, Project.InRoot) || isUnder(Real, Project.BuildDir) ||
            (!Project.OutRoot.empty() && isUnder(Real, Project.OutRoot)) ||
            SourcePaths.count(Real) || !isHeaderName(Real))
          continue;
        Owner.emplace(Real, &S);
      }
    }
  }
  for (const auto& [Real, S] : Owner) {
    ProjectUnit H;
    H.Real = Real;
    H.Rel = relative(Real, Project.InRoot);
    H.Header = true;
    H.DbPath = S->DbPath;
    H.ParsedWith = S->Rel;
    Project.Headers.push_back(std::move(H));
  }
}

// The project rules (rewriters' ProjectRule.h) over every file's facts. A request to
// migrate a main() again with the Accelerator is carried out and the rules run once more
// on the new facts (a rule only asks that once per file; then it warns instead).
ProjectContext ProjectRun::runProjectRules(const CompilationDatabase& DB) {
  for (;;) {
    ProjectContext Ctx = projectContext(Project, *Opts.DB);
    for (const ProjectRuleEntry& R : projectRuleTable())
      R.Run(Ctx, R.Info);
    std::vector<ProjectUnit*> Work;
    for (const auto& [Index, Reason] : Ctx.acceleratorRequests()) {
      ProjectUnit& U = projectUnitAt(Project, Index);
      if (U.AcceleratorForced)
        continue;
      U.AcceleratorForced = true;
      U.Result.Note = Reason;
      Work.push_back(&U);
    }
    if (Work.empty())
      return Ctx;
    Total += Work.size();
    migrateAll(Work, DB, /*ForceAccelerator=*/true);
  }
}

void ProjectRun::walkInRoot(std::vector<std::string>& Others,
                            std::vector<std::string>& CMakeFiles) {
  std::set<std::string> Migrated;
  for (const ProjectUnit& U : Project.Sources)
    Migrated.insert(U.Real);
  for (const ProjectUnit& U : Project.Headers)
    Migrated.insert(U.Real);
  std::error_code EC;
  for (fs::recursive_directory_iterator It(Project.InRoot, EC, /*follow_symlinks=*/false), End;
       It != End && !EC; It.increment(EC)) {
    std::string P = It->path();
    fs::file_type T = It->type();
    if (T == fs::file_type::directory_file) {
      // The build directory (and any other CMake build tree) is not part of the sources.
      llvm::SmallString<256> Cache(P);
      path::append(Cache, "CMakeCache.txt");
      if (canonical(P) == Project.BuildDir ||
          (!Project.OutRoot.empty() && canonical(P) == Project.OutRoot) || fs::exists(Cache))
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
    projectError("cannot read " + Project.InRoot + ": " + EC.message());
    ++IOErrors;
  }
  std::sort(Others.begin(), Others.end());
  std::sort(CMakeFiles.begin(), CMakeFiles.end());
}

void ProjectRun::migrateCMake(const std::vector<std::string>& CMakeFiles,
                              const ProjectContext& Rules) {
  CMakeProjectInput In;
  for (const std::string& F : CMakeFiles) {
    auto Buf = llvm::MemoryBuffer::getFile(F);
    In.Files.push_back({relative(F, Project.InRoot), Buf ? (*Buf)->getBuffer().str() : ""});
    if (!Buf) {
      projectError("cannot read " + F + ": " + Buf.getError().message());
      ++IOErrors;
    }
  }
  In.Targets = Rules.targetsToLink();
  In.Hint = acceleratePackageHint(Opts);
  CMakeProjectResult R = migrateCMakeProject(In);
  for (size_t I = 0; I < CMakeFiles.size(); ++I) {
    ProjectCMakeFile C;
    C.Real = CMakeFiles[I];
    C.Rel = In.Files[I].Rel;
    C.M = std::move(R.Files[I]);
    Project.CMake.push_back(std::move(C));
  }
  // What the CMake files keep from accelerate-project-link's requests.
  for (const std::string& W : R.Warnings) {
    llvm::errs() << "accel-migrate: warning: " << W << " [" << ProjectLinkInfo.Id << "]\n";
    Project.Warnings.push_back(W + " [" + ProjectLinkInfo.Id + "]");
  }
}

// Migrates the sources, then the project headers they include, then applies the project
// rules' requests.
ProjectContext ProjectRun::migrateProgram() {
  Settings = settingsFrom(Opts); // Opts outlives the run: its rule filter is captured
  Jobs = llvm::hardware_concurrency(Opts.Jobs).compute_thread_count();
  if (!Opts.Quiet)
    llvm::errs() << "accel-migrate: " << plural(Project.Sources.size(), "source", "sources")
                 << " under " << Project.InRoot << " (-j " << Jobs << ")\n";
  ProjectCommands DB(*Opts.DB);
  for (std::vector<ProjectUnit>* List : {&Project.Sources, &Project.Headers}) {
    if (List == &Project.Headers)
      collectHeaders();
    std::vector<ProjectUnit*> Work;
    for (ProjectUnit& U : *List)
      Work.push_back(&U);
    Total += Work.size();
    if (!Work.empty())
      migrateAll(Work, DB);
  }
  ProjectContext Rules = runProjectRules(DB);
  for (const ProjectFinding& F : Rules.findings()) {
    std::string W = F.File + ": " + F.Message + " [" + F.Rule->Id + "]";
    llvm::errs() << "accel-migrate: warning: " << W << "\n";
    Project.Warnings.push_back(W);
  }
  return Rules;
}

double ProjectRun::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
}

// "; about N s left" after a progress line while files remain: the wall time so far per file
// done (the first file's PCH build included, so early estimates run high) times the files
// left. Headers are counted once they are queued, after the sources.
std::string ProjectRun::timeLeft() const {
  if (Done == 0 || Done >= Total)
    return "";
  const double Left = elapsed() / Done * (Total - Done);
  return llvm::formatv("; about {0:f0} s left", Left).str();
}

int ProjectRun::reportCheck(unsigned Failed, unsigned Findings) {
  printCheck(Project);
  if (!Opts.ExportFixes.empty() && !exportCheckFixes(Project, Opts))
    return 3;
  if (!Opts.Quiet)
    llvm::errs() << renderTable(buildReport(Project, Opts, Jobs, elapsed()))
                 << "accel-migrate: " << plural(Findings, "finding", "findings") << " in "
                 << plural(Project.Sources.size() + Project.Headers.size() + Project.CMake.size(),
                           "file", "files")
                 << (Failed ? ", " + std::to_string(Failed) + " not checked" : "")
                 << (Findings ? "; run with --out-root to apply them" : "") << "\n";
  return Failed ? 3 : Findings ? 1 : 0;
}

int ProjectRun::writeAll(unsigned Failed, const std::vector<std::string>& Others) {
  if (!Opts.DryRun)
    IOErrors += writeOutRoot(Project, Others);
  ProjectReport Report = buildReport(Project, Opts, Jobs, elapsed());
  Report.Copied = Opts.DryRun ? 0 : Others.size();
  std::string Table = renderTable(Report);
  if (!Opts.DryRun)
    IOErrors += writeReportFiles(Project.OutRoot, Report, Table);
  if (!Opts.Quiet)
    llvm::outs() << Table;
  if (Failed)
    projectError(plural(Failed, "file was", "files were") +
                 " not migrated (copied unchanged; see the errors above)");
  if (IOErrors)
    projectError(plural(IOErrors, "file could not be written", "files could not be written"));
  if (!Opts.DryRun && !Opts.Quiet)
    llvm::errs() << "accel-migrate: wrote " << Project.OutRoot << " (report: " << Project.OutRoot
                 << "/accel-migrate-report.md, .json)\n";
  return Failed || IOErrors ? 1 : 0;
}

int ProjectRun::run() {
  if (!checkDirectories() || !collectSources())
    return 2;
  ProjectContext Rules = migrateProgram();
  std::vector<std::string> Others, CMakeFiles;
  walkInRoot(Others, CMakeFiles);
  migrateCMake(CMakeFiles, Rules);

  unsigned Failed = 0, Findings = 0;
  for (const std::vector<ProjectUnit>* List : {&Project.Sources, &Project.Headers})
    for (const ProjectUnit& U : *List) {
      Failed += !U.Result.Parsed;
      Findings += U.Result.Parsed ? unacknowledged(U.Result.Diagnostics) : 0;
    }
  for (const ProjectCMakeFile& C : Project.CMake)
    Findings += C.M.Edits.size();
  return Opts.Check ? reportCheck(Failed, Findings) : writeAll(Failed, Others);
}

} // namespace

int runProject(const Options& Opts) { return ProjectRun(Opts).run(); }

} // namespace accel
