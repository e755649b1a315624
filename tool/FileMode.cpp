#include "FileMode.h"

#include "CheckOutput.h"
#include "Migrator.h"
#include "Options.h"
#include "Output.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdio>
#include <optional>

namespace accel {
namespace {

void printFindings(const FileResult& R) {
  for (const auto& F : R.Findings)
    llvm::errs() << R.Path << ":" << F.Line << ":" << F.Column
                 << (F.IsNote ? ": note: " : ": warning: ") << F.Message << " [" << F.RuleId
                 << "]\n";
}

std::string plural(unsigned N, const char* One, const char* Many) {
  return std::to_string(N) + " " + (N == 1 ? One : Many);
}

// "2 warnings", or "2 warnings, 1 note" when the rules left notes (never counted as
// warnings: they ask for nothing).
std::string warningsAndNotes(const FileResult& R) {
  unsigned Notes = std::count_if(R.Findings.begin(), R.Findings.end(),
                                 [](const Finding& F) { return F.IsNote; });
  std::string S = plural(R.Findings.size() - Notes, "warning", "warnings");
  return Notes ? S + ", " + plural(Notes, "note", "notes") : S;
}

std::string summary(const FileResult& R) {
  unsigned Total = 0;
  std::string Per;
  for (const auto& [Id, N] : R.Rewrites) {
    Total += N;
    Per += (Per.empty() ? "" : ", ") + Id + " " + std::to_string(N);
  }
  std::string S = plural(Total, "rewrite", "rewrites");
  if (!Per.empty())
    S += " (" + Per + ")";
  return S + ", " + warningsAndNotes(R);
}

std::string seconds(double S) {
  char Time[32];
  std::snprintf(Time, sizeof Time, "%.2f s", S);
  return Time;
}

const char* const kNoMainNote =
    ": defines no main(): its migrated code reaches the Accelerator through "
    "accelerate::Accelerator::current(), which throws unless the program's main() "
    "constructed one first: make `accelerate::Accelerator accelerator;` the first statement "
    "of main() in the file that defines it (project mode, -p BUILD --in-root DIR, adds it "
    "there)\n";

class FileRun {
 public:
  explicit FileRun(const Options& Opts) : Opts(Opts) {}

  int run() {
    for (const std::string& Path : Opts.Files) {
      std::optional<FileResult> R = migrate(Path);
      if (!R)
        continue;
      if (Opts.Check)
        check(Path, *R);
      else
        output(Path, *R);
    }
    return Opts.Check ? finishCheck() : finish();
  }

 private:
  // The migrated file, or nothing (it was reported as not migrated).
  std::optional<FileResult> migrate(const std::string& Path) {
    if (!llvm::sys::fs::exists(Path))
      return notMigrated(Path, Path + ": no such file");
    FileResult R = migrateFile(*Opts.DB, Path, settingsFrom(Opts));
    if (!R.Parsed) {
      llvm::errs() << R.CompilerErrors;
      if (!R.Note.empty())
        llvm::errs() << "accel-migrate: note: " << Path << ": " << R.Note << "\n";
      llvm::errs() << "accel-migrate: not migrated: " << Path
                   << " (it does not compile; fix the errors above or pass the right flags "
                      "after `--` or with -p)\n";
      ++Failed;
      return std::nullopt;
    }
    if (!R.Note.empty())
      llvm::errs() << "accel-migrate: note: " << Path << ": " << R.Note << "\n";
    if (!R.DefinesMain && R.UsesCurrent)
      llvm::errs() << "accel-migrate: note: " << Path << kNoMainNote;
    return R;
  }

  std::nullopt_t notMigrated(const std::string& Path, const std::string& Why) {
    llvm::errs() << "accel-migrate: " << Why << "\n"
                 << "accel-migrate: not migrated: " << Path << "\n";
    ++Failed;
    return std::nullopt;
  }

  void check(const std::string& Path, const FileResult& R) {
    llvm::outs() << R.Rendered;
    unsigned N = unacknowledged(R.Diagnostics);
    CheckFindings += N;
    FilesWithFindings += N > 0;
    llvm::SmallString<256> Abs(Path);
    llvm::sys::fs::make_absolute(Abs);
    llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
    Exported.push_back({Abs.str().str(), R.Diagnostics});
    if (!Opts.Quiet)
      llvm::errs() << "accel-migrate: " << Path << ": " << plural(N, "finding", "findings") << " ["
                   << seconds(R.Seconds) << ", " << R.Pch << "]\n";
  }

  // Writes `Text` to `Dest`; false (reported) when it cannot.
  bool write(const std::string& Path, const std::string& Dest, const std::string& Text) {
    if (auto E = writeFileAtomically(Dest, Text)) {
      notMigrated(Path, llvm::toString(std::move(E)));
      return false;
    }
    return true;
  }

  void output(const std::string& Path, const FileResult& R) {
    printFindings(R);
    std::string Dest;
    if (Opts.Diff) {
      llvm::outs() << unifiedDiff(Path, R.Original, R.Migrated);
    } else if (Opts.DryRun) {
      // report only
    } else if (Opts.InPlace) {
      if (R.changed()) {
        if (!write(Path, Path + ".orig", R.Original) || !write(Path, Path, R.Migrated))
          return;
        Dest = Path + " (original in " + Path + ".orig)";
      }
    } else if (!Opts.Output.empty()) {
      if (!write(Path, Opts.Output, R.Migrated))
        return;
      Dest = Opts.Output;
    } else {
      llvm::outs() << R.Migrated;
    }
    R.changed() ? ++Migrated : ++Unchanged;
    if (!Opts.Quiet)
      llvm::errs() << "accel-migrate: " << Path << ": "
                   << (R.changed()
                           ? summary(R)
                           : "already migrated or nothing to migrate, " + warningsAndNotes(R))
                   << (Dest.empty() ? "" : " -> " + Dest) << " [" << seconds(R.Seconds) << ", "
                   << R.Pch << "]\n";
  }

  int finishCheck() {
    if (!Opts.ExportFixes.empty()) {
      llvm::SmallString<256> Cwd;
      llvm::sys::fs::current_path(Cwd);
      if (auto E = exportFixes(Opts.ExportFixes, Exported, Cwd.str().str())) {
        llvm::errs() << "accel-migrate: cannot write " << Opts.ExportFixes << ": "
                     << llvm::toString(std::move(E)) << "\n";
        return 3;
      }
    }
    if (!Opts.Quiet)
      llvm::errs() << "accel-migrate: " << plural(CheckFindings, "finding", "findings") << " in "
                   << FilesWithFindings << " of " << Opts.Files.size() << " files"
                   << (Failed ? ", " + std::to_string(Failed) + " not checked" : "")
                   << (CheckFindings ? "; run without --check to apply them" : "") << "\n";
    return Failed ? 3 : CheckFindings ? 1 : 0;
  }

  int finish() {
    if (!Opts.Quiet && Opts.Files.size() > 1)
      llvm::errs() << "accel-migrate: " << Opts.Files.size() << " files: " << Migrated
                   << " migrated, " << Unchanged << " unchanged, " << Failed << " not migrated\n";
    return Failed ? 1 : 0;
  }

  const Options& Opts;
  unsigned Migrated = 0, Unchanged = 0, Failed = 0;
  unsigned CheckFindings = 0, FilesWithFindings = 0;
  std::vector<FileDiagnostics> Exported;
};

} // namespace

int runFiles(const Options& Opts) { return FileRun(Opts).run(); }

} // namespace accel
