#pragma once
// Project mode: `accel-migrate -p BUILD --in-root SRC --out-root OUT [-j N]` migrates every
// translation unit of BUILD/compile_commands.json under SRC and the project headers they
// include (each once), copies everything else, migrates the CMakeLists.txt files and
// writes a report. With --check or --dry-run it reports and writes nothing.
// docs/accel-migrate.md, "Project mode", is the user-facing description.

namespace accel {

struct Options;

// Returns the exit code: 0 all files migrated (check: no findings), 1 some file not
// migrated (check: findings), 2 bad command line or directories, 3 (check) some file could
// not be checked.
int runProject(const Options& Opts);

} // namespace accel
