#pragma once
// One clang-tidy check per accel-migrate rule id: `accelerate-backward` reports (and
// fixes) exactly what `accel-migrate --check` reports under [accelerate-backward].

#include "UnitRun.h"

#include <clang-tidy/ClangTidyCheck.h>

#include <memory>
#include <string>

namespace accel::tidy {

class MigrationCheck : public clang::tidy::ClangTidyCheck {
 public:
  MigrationCheck(llvm::StringRef Name, clang::tidy::ClangTidyContext* Context)
      : ClangTidyCheck(Name, Context), RuleId(Name.str()) {}

  bool isLanguageVersionSupported(const clang::LangOptions& LO) const override {
    return LO.CPlusPlus;
  }
  void registerPPCallbacks(const clang::SourceManager& SM, clang::Preprocessor* PP,
                           clang::Preprocessor* ModuleExpanderPP) override;
  void registerMatchers(clang::ast_matchers::MatchFinder* Finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& Result) override;
  void onEndOfTranslationUnit() override;

 private:
  std::string RuleId;
  std::shared_ptr<UnitRun> Run;
  clang::SourceManager* SM = nullptr;
};

} // namespace accel::tidy
