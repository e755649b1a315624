#pragma once
// --check and --export-fixes: findings printed the way clang-tidy prints them (location,
// source line, caret, fix-it) and written in the YAML that clang-apply-replacements reads.

#include <accel/rewriters/engine/Migration.h>

#include <llvm/Support/Error.h>

#include <string>
#include <vector>

#include <clang/Basic/SourceLocation.h>

namespace clang {
class SourceManager;
class LangOptions;
} // namespace clang

namespace accel {

// Renders the unacknowledged diagnostics with clang's own text printer (colours with
// `Colors`, --use-color). Offsets are in File (invalid: the main file).
std::string renderDiagnostics(clang::SourceManager& SM, const clang::LangOptions& LO,
                              const std::vector<MigrationDiagnostic>& Diags,
                              clang::FileID File = clang::FileID(), bool Colors = false);

struct FileDiagnostics {
  std::string Path; // absolute
  std::vector<MigrationDiagnostic> Diags;
};

// Writes one clang-tidy style YAML document for all files. A replacement that several
// files report identically (a shared header) is written once.
llvm::Error exportFixes(const std::string& YamlPath, const std::vector<FileDiagnostics>& Files,
                        const std::string& BuildDirectory);

} // namespace accel
