#include "ProjectOutput.h"

#include "CheckOutput.h"
#include "Options.h"
#include "Output.h"
#include "ProjectPaths.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <unistd.h>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace accel {

void projectError(const llvm::Twine& Msg) { llvm::errs() << "accel-migrate: " << Msg << "\n"; }

unsigned writeOutRoot(const ProjectResults& Project, const std::vector<std::string>& Others) {
  const std::string& OutRoot = Project.OutRoot;
  unsigned IOErrors = 0;
  auto Dest = [&](const std::string& Rel) {
    llvm::SmallString<256> D(OutRoot);
    path::append(D, Rel);
    return D.str().str();
  };
  auto Fail = [&](const llvm::Twine& Msg) {
    projectError(Msg);
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
    return IOErrors;
  }
  for (const std::vector<ProjectUnit>* List : {&Project.Sources, &Project.Headers})
    for (const ProjectUnit& U : *List) {
      if (U.Missing)
        continue;
      if (U.Result.changed())
        Write(U.Real, Dest(U.Rel), U.Result.Migrated);
      else
        Copy(U.Real, Dest(U.Rel)); // unchanged or not migrated: byte for byte
    }
  for (const ProjectCMakeFile& C : Project.CMake) {
    if (C.M.changed())
      Write(C.Real, Dest(C.Rel), C.M.Migrated);
    else
      Copy(C.Real, Dest(C.Rel));
  }
  for (const std::string& P : Others) {
    std::string To = Dest(relative(P, Project.InRoot));
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
    } // sockets, fifos, devices: not sources
  }
  return IOErrors;
}

void printCheck(const ProjectResults& Project) {
  for (const std::vector<ProjectUnit>* List : {&Project.Sources, &Project.Headers})
    for (const ProjectUnit& U : *List)
      llvm::outs() << U.Result.Rendered;
  for (const ProjectCMakeFile& C : Project.CMake) {
    for (const CMakeEdit& E : C.M.Edits) {
      llvm::StringRef Text(C.M.Original);
      size_t B = Text.rfind('\n', E.Offset); // before the offset
      B = B == llvm::StringRef::npos ? 0 : B + 1;
      llvm::StringRef Line = Text.slice(B, Text.find('\n', B));
      llvm::outs() << C.Real << ":" << E.Line << ":" << E.Column << ": warning: " << E.Message
                   << " [accelerate-cmake]\n"
                   << Line << "\n"
                   << std::string(E.Column - 1, ' ') << "^\n"
                   << std::string(E.Column - 1, ' ') << llvm::StringRef(E.Text).ltrim("\n").str()
                   << "\n";
    }
  }
}

bool exportCheckFixes(const ProjectResults& Project, const Options& Opts) {
  std::vector<FileDiagnostics> Files;
  for (const std::vector<ProjectUnit>* List : {&Project.Sources, &Project.Headers})
    for (const ProjectUnit& U : *List)
      if (U.Result.Parsed)
        Files.push_back({U.Real, U.Result.Diagnostics});
  for (const ProjectCMakeFile& C : Project.CMake) {
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
    projectError("cannot write " + Opts.ExportFixes + ": " + llvm::toString(std::move(E)));
    return false;
  }
  return true;
}

static std::string firstError(llvm::StringRef Errors) {
  llvm::StringRef Rest = Errors;
  while (!Rest.empty()) {
    auto [Line, Tail] = Rest.split('\n');
    if (Line.contains("error:"))
      return Line.trim().str();
    Rest = Tail;
  }
  return Errors.empty() ? "it does not compile" : Errors.split('\n').first.trim().str();
}

ProjectReport buildReport(const ProjectResults& Project, const Options& Opts, unsigned Jobs,
                          double Wall) {
  ProjectReport R;
  R.Mode = Opts.Check ? "check" : Opts.DryRun ? "dry-run" : "migrate";
  R.InRoot = Project.InRoot;
  R.OutRoot = Opts.Check || Opts.DryRun ? "" : Project.OutRoot;
  R.BuildDir = Project.BuildDir;
  R.Jobs = Jobs;
  R.WallSeconds = Wall;
  for (const std::vector<ProjectUnit>* List : {&Project.Sources, &Project.Headers})
    for (const ProjectUnit& U : *List) {
      FileReport F;
      F.Path = U.Rel;
      F.Kind = U.Header ? "header" : "source";
      // Check and dry-run say what a migration would do.
      F.Status = !U.Result.Parsed ? "failed" : U.Result.changed() ? "migrated" : "unchanged";
      F.Rewrites = U.Result.Rewrites;
      F.Note = U.Result.Note;
      for (const auto& W : U.Result.Findings)
        if (W.IsNote) // the report's notes, not its warnings: nothing to do
          F.Note += (F.Note.empty() ? "" : "; ") + ("line " + std::to_string(W.Line) + ": ") +
                    W.Message + " [" + W.RuleId + "]";
        else if (!W.Acknowledged)
          F.Warnings.push_back({W.Line, W.Column, W.RuleId, W.Message});
      F.ParsedWith = U.ParsedWith;
      if (!U.Result.Parsed)
        F.Error = firstError(U.Result.CompilerErrors);
      F.Seconds = U.Result.Seconds;
      R.Files.push_back(std::move(F));
    }
  for (const ProjectCMakeFile& C : Project.CMake)
    R.CMake.push_back({C.Rel, C.M.changed(), C.M.FindPackageAdded, C.M.LinkedTargets});
  R.Warnings = Project.Warnings;
  return R;
}

unsigned writeReportFiles(const std::string& OutRoot, const ProjectReport& Report,
                          const std::string& Table) {
  unsigned IOErrors = 0;
  for (auto [Name, Text] : {std::pair<const char*, std::string>{"accel-migrate-report.md", Table},
                            {"accel-migrate-report.json", renderJson(Report)}}) {
    llvm::SmallString<256> P(OutRoot);
    path::append(P, Name);
    if (auto E = writeFileAtomically(P.str().str(), Text)) {
      projectError(llvm::toString(std::move(E)));
      ++IOErrors;
    }
  }
  return IOErrors;
}

} // namespace accel
