#include "Migrator.h"

#include "CheckOutput.h"
#include "CompileFlags.h"

#include <accel/rewriters/Migration.h>

#include <clang/AST/ASTConsumer.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>

using namespace clang;

namespace accel {
namespace {

class MigrateConsumer : public ASTConsumer {
 public:
  MigrateConsumer(CompilerInstance& CI, FileResult& R, std::vector<IncludeSite>& Includes)
      : CI(CI), R(R), Includes(Includes) {}

  void HandleTranslationUnit(ASTContext& AST) override {
    // A translation unit with errors has holes in its AST: rules would see half the code
    // (and Transformer-style tools silently do nothing). Refuse instead.
    if (CI.getDiagnostics().hasErrorOccurred())
      return;
    UnitResult U = migrateUnit(AST, Includes);
    R.Original = std::move(U.Original);
    R.Migrated = std::move(U.Migrated);
    R.Findings = std::move(U.Findings);
    R.Rewrites = std::move(U.Rewrites);
    R.Diagnostics = std::move(U.Diagnostics);
    R.Rendered = renderDiagnostics(AST.getSourceManager(), AST.getLangOpts(), R.Diagnostics);
    R.Parsed = true;
  }

 private:
  CompilerInstance& CI;
  FileResult& R;
  std::vector<IncludeSite>& Includes;
};

class MigrateAction : public ASTFrontendAction {
 public:
  explicit MigrateAction(FileResult& R) : R(R) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance& CI, StringRef) override {
    CI.getPreprocessor().addPPCallbacks(
        std::make_unique<IncludeCollector>(CI.getSourceManager(), Includes, &R.IncludedFiles));
    return std::make_unique<MigrateConsumer>(CI, R, Includes);
  }

 private:
  FileResult& R;
  std::vector<IncludeSite> Includes;
};

class MigrateActionFactory : public tooling::FrontendActionFactory {
 public:
  explicit MigrateActionFactory(FileResult& R) : R(R) {}
  std::unique_ptr<FrontendAction> create() override { return std::make_unique<MigrateAction>(R); }

 private:
  FileResult& R;
};

// One parse with the given standard policy; compiler diagnostics are kept, not printed.
bool runOnce(const tooling::CompilationDatabase& DB, const std::string& Path,
             std::shared_ptr<FlagState> State, FileResult& R) {
  tooling::ClangTool Tool(DB, {Path});
  Tool.appendArgumentsAdjuster(makeFlagsAdjuster(State));
  std::string Diags;
  llvm::raw_string_ostream OS(Diags);
  IntrusiveRefCntPtr<DiagnosticOptions> Opts = new DiagnosticOptions();
  TextDiagnosticPrinter Printer(OS, Opts.get());
  Tool.setDiagnosticConsumer(&Printer);
  Tool.setPrintErrorMessage(false);
  MigrateActionFactory Factory(R);
  int RC = Tool.run(&Factory);
  OS.flush();
  R.CompilerErrors = Diags;
  return RC == 0 && R.Parsed;
}

}  // namespace

FileResult migrateFile(const tooling::CompilationDatabase& DB, const std::string& Path,
                       const MigrateSettings& Settings) {
  auto Start = std::chrono::steady_clock::now();
  FileResult R;
  R.Path = Path;
  auto State = std::make_shared<FlagState>();
  State->ForceCxx17 = Settings.ForceCxx17;
  bool OK = runOnce(DB, Path, State, R);
  if (State->Downgraded) {
    if (OK) {
      R.Note = "parsed as C++17 although the flags ask for -std=" + State->RequestedStd +
               " (LibTorch's headers do not parse as C++20 with clang 16); the output is "
               "plain C++17 and builds with either";
    } else {
      // The file itself may need C++20: try again with the standard it asked for.
      FileResult Again;
      Again.Path = Path;
      auto Keep = std::make_shared<FlagState>();
      Keep->ForceCxx17 = false;
      bool OK2 = runOnce(DB, Path, Keep, Again);
      Again.Note = "did not parse as C++17; parsed with -std=" + State->RequestedStd +
                   " as the flags ask";
      R = std::move(Again);
      OK = OK2;
    }
  }
  R.Seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  (void)OK;
  return R;
}

}  // namespace accel
