#include "Report.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>

#include <set>

namespace accel {

unsigned FileReport::totalRewrites() const {
  unsigned N = 0;
  for (const auto& [Id, Count] : Rewrites)
    N += Count;
  return N;
}

static std::string seconds(double S) { return llvm::formatv("{0:f1} s", S).str(); }

// Table cells must not break the row.
static std::string cell(llvm::StringRef S) {
  std::string Out;
  for (char C : S.take_until([](char C) { return C == '\n'; }))
    Out += C == '|' ? std::string("\\|") : std::string(1, C);
  return Out;
}

// The summary lines above the table.
static std::string renderHeader(const ProjectReport& R) {
  unsigned Migrated = 0, Unchanged = 0, Failed = 0, Total = 0;
  for (const FileReport& F : R.Files) {
    Migrated += F.Status == "migrated";
    Unchanged += F.Status == "unchanged";
    Failed += F.Status == "failed";
    Total += F.totalRewrites();
  }
  std::string S = "# accel-migrate report (" + R.Mode + ")\n\n";
  S += "- in-root: " + R.InRoot + "\n";
  if (!R.OutRoot.empty())
    S += "- out-root: " + R.OutRoot + "\n";
  S += "- build dir: " + R.BuildDir + "\n";
  S += llvm::formatv("- {0} files: {1} migrated, {2} unchanged, {3} failed; {4} rewrites; "
                     "{5} other files copied; {6} with -j {7}\n\n",
                     R.Files.size(), Migrated, Unchanged, Failed, Total, R.Copied,
                     seconds(R.WallSeconds), R.Jobs)
           .str();
  return S;
}

// One row per file, one column per rule that rewrote something, and a total row.
static std::string renderFiles(const ProjectReport& R) {
  std::set<std::string> Rules;
  for (const FileReport& F : R.Files)
    for (const auto& [Id, N] : F.Rewrites)
      Rules.insert(Id);
  std::string S = "| File | Kind | Status | Rewrites |";
  std::string Rule = "|------|------|--------|---------:|";
  for (const std::string& Id : Rules) {
    llvm::StringRef Short(Id);
    Short.consume_front("accelerate-");  // the columns stay narrow
    S += " " + Short.str() + " |";
    Rule += "---:|";
  }
  S += " Warnings | Time |\n" + Rule + "---------:|-----:|\n";
  std::map<std::string, unsigned> PerRule;
  unsigned Warnings = 0, Total = 0;
  for (const FileReport& F : R.Files) {
    S += "| " + cell(F.Path) + " | " + F.Kind + " | " + F.Status + " | " +
         std::to_string(F.totalRewrites()) + " |";
    for (const std::string& Id : Rules) {
      auto It = F.Rewrites.find(Id);
      unsigned N = It == F.Rewrites.end() ? 0 : It->second;
      PerRule[Id] += N;
      S += " " + (N ? std::to_string(N) : std::string("-")) + " |";
    }
    Warnings += F.Warnings.size();
    Total += F.totalRewrites();
    S += " " + std::to_string(F.Warnings.size()) + " | " + seconds(F.Seconds) + " |\n";
  }
  S += "| **total** | | | " + std::to_string(Total) + " |";
  for (const std::string& Id : Rules)
    S += " " + std::to_string(PerRule[Id]) + " |";
  return S + " " + std::to_string(Warnings) + " | |\n";
}

static std::string renderCMake(const ProjectReport& R) {
  if (R.CMake.empty())
    return "";
  std::string S = "\n| CMake file | Status | find_package(Accelerate) added | "
                  "Accelerate::accelerate linked to |\n|------|--------|------|------|\n";
  for (const CMakeReport& C : R.CMake) {
    std::string Targets;
    for (const std::string& T : C.LinkedTargets)
      Targets += (Targets.empty() ? "" : ", ") + T;
    S += "| " + cell(C.Path) + " | " + (C.Changed ? "migrated" : "unchanged") + " | " +
         (C.FindPackageAdded ? "yes" : "no") + " | " + cell(Targets) + " |\n";
  }
  return S;
}

static std::string renderNotes(const ProjectReport& R) {
  std::string S;
  if (!R.Warnings.empty()) {
    S += "\nWarnings:\n";
    for (const std::string& W : R.Warnings)
      S += "- " + W + "\n";
  }
  bool Notes = false;
  for (const FileReport& F : R.Files) {
    std::string Line;
    if (F.Status == "failed")
      Line = "not migrated (copied unchanged): " + F.Error;
    else if (!F.ParsedWith.empty())
      Line = "migrated as part of " + F.ParsedWith + " (which includes it)";
    if (!F.Note.empty())
      Line += (Line.empty() ? "" : "; ") + F.Note;
    if (Line.empty())
      continue;
    if (!Notes)
      S += "\nNotes:\n";
    Notes = true;
    S += "- " + F.Path + ": " + Line + "\n";
  }
  return S;
}

std::string renderTable(const ProjectReport& R) {
  return renderHeader(R) + renderFiles(R) + renderCMake(R) + renderNotes(R);
}

std::string renderJson(const ProjectReport& R) {
  llvm::json::Array Files;
  std::map<std::string, unsigned> PerRule;
  unsigned Migrated = 0, Unchanged = 0, Failed = 0, Total = 0, Warnings = 0;
  for (const FileReport& F : R.Files) {
    llvm::json::Object Rewrites;
    for (const auto& [Id, N] : F.Rewrites) {
      Rewrites[Id] = N;
      PerRule[Id] += N;
    }
    llvm::json::Array Warn;
    for (const ReportWarning& W : F.Warnings)
      Warn.push_back(llvm::json::Object{
          {"line", W.Line}, {"column", W.Column}, {"rule", W.RuleId}, {"message", W.Message}});
    Migrated += F.Status == "migrated";
    Unchanged += F.Status == "unchanged";
    Failed += F.Status == "failed";
    Total += F.totalRewrites();
    Warnings += F.Warnings.size();
    llvm::json::Object O{{"path", F.Path},
                         {"kind", F.Kind},
                         {"status", F.Status},
                         {"rewrites", std::move(Rewrites)},
                         {"total_rewrites", F.totalRewrites()},
                         {"warnings", std::move(Warn)},
                         {"seconds", F.Seconds}};
    O["parsed_with"] = F.ParsedWith.empty() ? llvm::json::Value(nullptr)
                                            : llvm::json::Value(F.ParsedWith);
    O["note"] = F.Note.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(F.Note);
    O["error"] = F.Error.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(F.Error);
    Files.push_back(std::move(O));
  }
  llvm::json::Array CMake;
  for (const CMakeReport& C : R.CMake) {
    llvm::json::Array Targets;
    for (const std::string& T : C.LinkedTargets)
      Targets.push_back(T);
    CMake.push_back(llvm::json::Object{{"path", C.Path},
                                       {"status", C.Changed ? "migrated" : "unchanged"},
                                       {"find_package_added", C.FindPackageAdded},
                                       {"linked_targets", std::move(Targets)}});
  }
  llvm::json::Object Rules;
  for (const auto& [Id, N] : PerRule)
    Rules[Id] = N;
  llvm::json::Object Root{
      {"schema_version", 1},
      {"tool", "accel-migrate"},
      {"mode", R.Mode},
      {"in_root", R.InRoot},
      {"out_root", R.OutRoot.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(R.OutRoot)},
      {"build_dir", R.BuildDir},
      {"jobs", R.Jobs},
      {"wall_seconds", R.WallSeconds},
      {"files", std::move(Files)},
      {"cmake", std::move(CMake)},
      {"copied_files", R.Copied},
      {"warnings", llvm::json::Array(R.Warnings)},
      {"totals", llvm::json::Object{{"files", R.Files.size()},
                                    {"migrated", Migrated},
                                    {"unchanged", Unchanged},
                                    {"failed", Failed},
                                    {"rewrites", Total},
                                    {"warnings", Warnings},
                                    {"per_rule", std::move(Rules)}}}};
  return llvm::formatv("{0:2}", llvm::json::Value(std::move(Root))).str() + "\n";
}

}  // namespace accel
