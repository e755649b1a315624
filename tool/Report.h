#pragma once
// Project mode's migration report: one row per migrated file and per CMakeLists.txt, as a
// Markdown table (printed, and written as OUT/accel-migrate-report.md) and as JSON
// (OUT/accel-migrate-report.json; the schema is in docs/accel-migrate.md, "Project mode").

#include <map>
#include <string>
#include <vector>

namespace accel {

struct ReportWarning {
  unsigned Line = 0, Column = 0;
  std::string RuleId, Message;
};

struct FileReport {
  std::string Path;                         // relative to the in-root
  std::string Kind;                         // "source" or "header"
  std::string Status;                       // "migrated", "unchanged" or "failed"
  std::map<std::string, unsigned> Rewrites; // per rule id
  std::vector<ReportWarning> Warnings;      // code left alone (unacknowledged findings)
  std::string ParsedWith;                   // headers: the source whose flags were used
  std::string Note;                         // e.g. the language standard used
  std::string Error;                        // failed: the first compiler error
  double Seconds = 0;
  unsigned totalRewrites() const;
};

struct CMakeReport {
  std::string Path; // relative to the in-root
  bool Changed = false;
  bool FindPackageAdded = false;
  std::vector<std::string> LinkedTargets;
};

struct ProjectReport {
  std::string Mode;                      // "migrate", "check" or "dry-run"
  std::string InRoot, OutRoot, BuildDir; // absolute; OutRoot "" without one
  unsigned Jobs = 0;
  double WallSeconds = 0;
  std::vector<FileReport> Files; // sources in order, then headers
  std::vector<CMakeReport> CMake;
  unsigned Copied = 0;               // other files copied as they are
  std::vector<std::string> Warnings; // about the project as a whole
};

std::string renderTable(const ProjectReport& R); // Markdown
std::string renderJson(const ProjectReport& R);

} // namespace accel
