#pragma once
// File mode: `accel-migrate FILE... [-o OUT | -i | --diff | --dry-run | --check]` migrates
// each file given on the command line (docs/accel-migrate.md).

namespace accel {

struct Options;

// Returns the exit code: 0 all files migrated (check: no findings), 1 some file not
// migrated (check: findings), 3 (check) some file could not be checked.
int runFiles(const Options& Opts);

}  // namespace accel
