#pragma once
// What project mode writes: the out-root tree, --check's findings, --export-fixes' YAML
// and the report. Errors go to stderr as they happen, each prefixed like every other
// message of the tool; functions that write files return how many could not be written.

#include "ProjectResults.h"
#include "Report.h"

#include <llvm/ADT/Twine.h>

#include <string>
#include <vector>

namespace accel {

struct Options;

void projectError(const llvm::Twine& Msg); // "accel-migrate: Msg" on stderr

// Migrated files where they changed, everything else byte for byte (links as links).
// Others: the in-root's other files, absolute. Returns the number of failures.
unsigned writeOutRoot(const ProjectResults& Project, const std::vector<std::string>& Others);

// Every finding as clang-tidy prints it, CMakeLists.txt edits included, on stdout.
void printCheck(const ProjectResults& Project);
// Writes Opts.ExportFixes; false (after saying why) when it cannot.
bool exportCheckFixes(const ProjectResults& Project, const Options& Opts);

ProjectReport buildReport(const ProjectResults& Project, const Options& Opts, unsigned Jobs,
                          double Wall);
// OUT/accel-migrate-report.md (Table) and .json; returns the number of failures.
unsigned writeReportFiles(const std::string& OutRoot, const ProjectReport& Report,
                          const std::string& Table);

} // namespace accel
