#include "Migrator.h"

#include "CheckOutput.h"
#include "CompileFlags.h"
#include "Options.h"
#include "PchCache.h"
#include "ProgramTemplates.h"

#include <accel/rewriters/engine/LLVMCompat.h>
#include <accel/rewriters/engine/Migration.h>

#include <clang/AST/ASTConsumer.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>

using namespace clang;

namespace accel {
namespace {

class MigrateConsumer : public ASTConsumer {
 public:
  MigrateConsumer(CompilerInstance& CI, FileResult& R, std::vector<IncludeSite>& Includes,
                  const MigrateSettings& Settings)
      : CI(CI), R(R), Includes(Includes), Settings(Settings) {}

  void HandleTranslationUnit(ASTContext& AST) override {
    instantiateProgramTemplates(CI.getSema());
    // A translation unit with errors has holes in its AST: rules would see half the code
    // (and Transformer-style tools silently do nothing). Refuse instead.
    if (CI.getDiagnostics().hasErrorOccurred())
      return;
    UnitOptions Options;
    Options.ForceAccelerator = Settings.ForceAccelerator;
    Options.KeepBatchNorm = Settings.KeepBatchNorm;
    Options.TraceOnly = Settings.TraceOnly;
    Options.ProjectMode = Settings.ProjectMode;
    if (!Settings.Target.empty()) {
      SourceManager& SM = AST.getSourceManager();
      auto File = SM.getFileManager().getOptionalFileRef(Settings.Target);
      Options.Target = File ? SM.translateFile(*File) : FileID();
      if (Options.Target.isInvalid()) {
        R.CompilerErrors = "error: " + Settings.Target + " is not included by " + R.Path + "\n";
        return;
      }
    }
    UnitResult U = migrateUnit(AST, Includes, Options);
    R.DefinesMain = U.DefinesMain;
    R.MainConstructsAccelerator = U.MainConstructsAccelerator;
    R.UsesCurrent = U.UsesCurrent;
    R.DefinedFunctions = std::move(U.DefinedFunctions);
    R.ExternalCalls = std::move(U.ExternalCalls);
    R.Original = std::move(U.Original);
    R.Migrated = std::move(U.Migrated);
    R.Findings = std::move(U.Findings);
    R.Rewrites = std::move(U.Rewrites);
    R.Diagnostics = std::move(U.Diagnostics);
    if (Settings.RuleSelected)
      R.Diagnostics.erase(std::remove_if(R.Diagnostics.begin(), R.Diagnostics.end(),
                                         [&](const MigrationDiagnostic& D) {
                                           return !Settings.RuleSelected(D.RuleId);
                                         }),
                          R.Diagnostics.end());
    if (U.NoLibTorch)
      R.Note = "sees no LibTorch (no torch namespace after its includes): left as it is";
    // Only --check prints them; the source manager they need lives only until here.
    if (Settings.RenderDiagnostics)
      R.Rendered = renderDiagnostics(AST.getSourceManager(), AST.getLangOpts(), R.Diagnostics,
                                     Options.Target, Settings.ColorDiagnostics);
    R.Parsed = true;
  }

 private:
  CompilerInstance& CI;
  FileResult& R;
  std::vector<IncludeSite>& Includes;
  const MigrateSettings& Settings;
};

class MigrateAction : public ASTFrontendAction {
 public:
  MigrateAction(FileResult& R, const MigrateSettings& Settings) : R(R), Settings(Settings) {}
  // A prefix unit skips instantiating the template bodies the unit uses (ProgramTemplates.h).
  TranslationUnitKind getTranslationUnitKind() override { return TU_Prefix; }
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance& CI, StringRef) override {
    CI.getPreprocessor().addPPCallbacks(
        std::make_unique<IncludeCollector>(CI.getSourceManager(), Includes, &R.IncludedFiles));
    return std::make_unique<MigrateConsumer>(CI, R, Includes, Settings);
  }

 private:
  FileResult& R;
  const MigrateSettings& Settings;
  std::vector<IncludeSite> Includes;
};

class MigrateActionFactory : public tooling::FrontendActionFactory {
 public:
  MigrateActionFactory(FileResult& R, const MigrateSettings& Settings) : R(R), Settings(Settings) {}
  std::unique_ptr<FrontendAction> create() override {
    return std::make_unique<MigrateAction>(R, Settings);
  }

 private:
  FileResult& R;
  const MigrateSettings& Settings;
};

// One parse with the given standard policy; compiler diagnostics are kept, not printed.
// Thread-safe: the tool gets its own file system whose working directory is private, so
// parsing never changes the process's working directory (project mode parses in threads).
bool runOnce(const tooling::CompilationDatabase& DB, const std::string& Path,
             std::shared_ptr<FlagState> State, std::shared_ptr<PchRequest> Pch,
             const MigrateSettings& Settings, FileResult& R) {
  tooling::ClangTool Tool(
      DB, {Path}, std::make_shared<PCHContainerOperations>(),
      IntrusiveRefCntPtr<llvm::vfs::FileSystem>(llvm::vfs::createPhysicalFileSystem().release()));
  Tool.appendArgumentsAdjuster(makeFlagsAdjuster(State));
  Tool.appendArgumentsAdjuster(makePchAdjuster(Pch));
  std::string Diags;
  llvm::raw_string_ostream OS(Diags);
  IntrusiveRefCntPtr<DiagnosticOptions> Opts = new DiagnosticOptions();
  TextDiagnosticPrinter Printer(OS, Opts.get());
  Tool.setDiagnosticConsumer(&Printer);
  Tool.setPrintErrorMessage(false);
  MigrateActionFactory Factory(R, Settings);
  int RC = Tool.run(&Factory);
  OS.flush();
  R.CompilerErrors = Diags;
  return RC == 0 && R.Parsed;
}

std::string workingDirOf(const tooling::CompilationDatabase& DB, const std::string& Path) {
  llvm::SmallString<256> Dir(".");
  auto Cmds = DB.getCompileCommands(Path);
  if (!Cmds.empty())
    Dir = Cmds.front().Directory;
  llvm::sys::fs::make_absolute(Dir);
  llvm::sys::path::remove_dots(Dir, /*remove_dot_dot=*/true);
  return Dir.str().str();
}

// One parse, through the PCH cache when it is on: a cached PCH that cannot be loaded is
// rebuilt once, and a file that does not parse with the PCH is parsed without it, so the
// cache never decides a result.
bool parse(const tooling::CompilationDatabase& DB, const std::string& Path,
           std::shared_ptr<FlagState> State, const MigrateSettings& Settings, FileResult& R) {
  auto Req = std::make_shared<PchRequest>();
  Req->CacheDir =
      Settings.UsePch ? (Settings.CacheDir.empty() ? defaultCacheDir() : Settings.CacheDir) : "";
  Req->WorkingDir = workingDirOf(DB, Path);
  Req->Announce = Settings.AnnouncePch;
  bool OK = runOnce(DB, Path, State, Req, Settings, R);
  R.Pch = describe(Req->Use);
  if (OK || Req->PchPath.empty())
    return OK;
  if (isPchLoadFailure(R.CompilerErrors, Req->PchPath)) {
    auto Again = std::make_shared<PchRequest>(*Req);
    Again->ForceRebuild = true;
    Again->PchPath.clear();
    R = FileResult{};
    R.Path = Path;
    OK = runOnce(DB, Path, State, Again, Settings, R);
    R.Pch = std::string(describe(Again->Use)) + " (the cached one could not be loaded)";
    if (OK || Again->PchPath.empty())
      return OK;
  }
  auto Without = std::make_shared<PchRequest>();
  Without->WorkingDir = Req->WorkingDir;
  R = FileResult{};
  R.Path = Path;
  OK = runOnce(DB, Path, State, Without, Settings, R);
  R.Pch = "parsed without the PCH";
  return OK;
}

} // namespace

FileResult migrateFile(const tooling::CompilationDatabase& DB, const std::string& Path,
                       const MigrateSettings& Settings) {
  auto Start = std::chrono::steady_clock::now();
  // With --keep-std the standard is never changed; otherwise this clang's preferred order
  // (LLVMCompat.h), and the other one when the first parse fails.
  const bool Cxx17First = Settings.ForceCxx17 && !kParseRequestedStdFirst;
  FileResult R;
  R.Path = Path;
  auto State = std::make_shared<FlagState>();
  State->ForceCxx17 = Cxx17First;
  bool OK = parse(DB, Path, State, Settings, R);
  const std::string Requested = State->RequestedStd;
  if (OK && State->Downgraded) {
    R.Note = "parsed as C++17 although the flags ask for -std=" + Requested +
             " (LibTorch 1.13's headers do not parse as C++20 with clang 16); the output is "
             "plain C++17 and builds with either" +
             (R.Note.empty() ? "" : "; " + R.Note);
  } else if (!OK && !Requested.empty() && Settings.ForceCxx17) {
    FileResult Again;
    Again.Path = Path;
    auto Other = std::make_shared<FlagState>();
    Other->ForceCxx17 = !Cxx17First;
    if (parse(DB, Path, Other, Settings, Again)) {
      Again.Note =
          (Cxx17First
               ? "did not parse as C++17; parsed with -std=" + Requested + " as the flags ask"
               : "did not parse with -std=" + Requested +
                     "; parsed as C++17 (the output is plain C++17 and builds with either)") +
          (Again.Note.empty() ? "" : "; " + Again.Note);
      R = std::move(Again);
      OK = true;
    } else if (Cxx17First) {
      R = std::move(Again); // the errors of the standard the flags ask for are the user's
    }
  }
  R.Seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  (void)OK;
  return R;
}

MigrateSettings settingsFrom(const Options& Opts) {
  MigrateSettings S;
  S.ForceCxx17 = Opts.ForceCxx17;
  S.UsePch = Opts.UsePch;
  S.AnnouncePch = !Opts.Quiet;
  S.CacheDir = Opts.CacheDir;
  S.RenderDiagnostics = Opts.Check;
  S.ColorDiagnostics = Opts.UseColor;
  if (!Opts.Checks.empty())
    S.RuleSelected = [&Opts](llvm::StringRef Id) { return Opts.ruleSelected(Id); };
  S.KeepBatchNorm = Opts.KeepBatchNorm;
  S.TraceOnly = Opts.TraceOnly; // project mode refuses --trace-only (Options.cpp)
  return S;
}

} // namespace accel
