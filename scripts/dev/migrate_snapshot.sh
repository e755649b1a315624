#!/usr/bin/env bash
# Records what a built accel-migrate does on every program it is tested on, so that a change
# meant to move code without changing behaviour (issue 49: the rewriters' rooms) is checked
# byte for byte: take a snapshot before, one after, and diff them.
#
#   scripts/dev/migrate_snapshot.sh BUILD DEST [TOOL]  # e.g. build-wt /tmp/snap-before
#   diff -r /tmp/snap-before /tmp/snap-after         # must print nothing
#
# For every input it keeps the migrated file, the tool's stdout+stderr (notes, warnings, the
# summary) and exit code, and the same for --check; plus --list-rules and --rule-table.
# Inputs: the lit rule tests (against the stub LibTorch headers, as %check-rule runs them),
# the e2e corpus, the fidelity programs and the examples (against the real LibTorch headers
# the tool was built with). Only the run time and whether the PCH was built or reused are
# masked in the logs: they differ from run to run. Paths in the logs are the same in every
# snapshot: the tool always writes into BUILD/migrate-snapshot.work (moved to DEST at the
# end), and BUILD itself is written "BUILD", so that a second build folder (another commit
# built beside the first) gives a comparable snapshot. TOOL (default BUILD/tool/accel-migrate):
# a binary built there and kept aside, so that one commit's tool is recorded while the next
# commit builds. The lit suite's own outputs (several flags per test, project mode) are
# checked by the lit suite itself. SNAPSHOT_GROUPS (default "lit corpus fidelity examples")
# records only some of the inputs, for a quick look (a whole snapshot takes 5-15 minutes on a
# shared 2-core machine); compare such a snapshot group by group (diff -r A/lit B/lit).
set -uo pipefail
SNAPSHOT_GROUPS=${SNAPSHOT_GROUPS:-lit corpus fidelity examples}
build=$(cd "$1" && pwd); dest=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
source_tool=${3:-$build/tool/accel-migrate}
[ -x "$source_tool" ] || { echo "migrate_snapshot: no $source_tool" >&2; exit 2; }
# A copy beside the built tool (it finds the runtime headers relative to itself), so that
# the build can go on while the snapshot runs.
tool=$build/tool/accel-migrate.snapshot
cp "$source_tool" "$tool"
[ -e "$dest" ] && { echo "migrate_snapshot: $dest exists; give a new folder" >&2; exit 2; }
work=$build/migrate-snapshot.work
rm -rf "$work"; mkdir -p "$work"
export ACCEL_MIGRATE_CACHE_DIR=$build/pch-cache ACCEL_MIGRATE_AUDIT=1 ROOT=$root TOOL=$tool WORK=$work
cd "$root" || exit 2

# One input: GROUP FILE [tool flags...]. Writes WORK/GROUP/FILE.{cpp,log,rc,check.log,check.rc}.
one() {
  local group=$1 file=$2; shift 2
  local out=$WORK/$group/$file
  mkdir -p "$(dirname "$out")"
  "$TOOL" "$ROOT/$file" -o "$out.cpp" "$@" > "$out.log" 2>&1; echo $? > "$out.rc"
  "$TOOL" --check "$ROOT/$file" "$@" > "$out.check.log" 2>&1; echo $? > "$out.check.rc"
}
export -f one

# One line per input, fields separated by tabs: GROUP FILE [tool flags...].
{
  # The lit inputs, with the flags %check-rule gives them.
  for f in test/lit/*.cpp test/lit/Inputs/*.cpp; do
    printf 'lit\t%s\t--\t-isystem\t%s\n' "$f" "$root/test/lit/Inputs"
  done
  for f in test/corpus/*.cpp; do printf 'corpus\t%s\n' "$f"; done
  # A fidelity program's own headers sit beside it (found as written) or in its include/.
  # Only that -I is added: the PCH cache keys on the flags, and each new set of flags would
  # build a LibTorch PCH of its own (15 s of CPU).
  find test/fidelity -name '*.cpp' | sort | while IFS= read -r f; do
    prog=${f#test/fidelity/}; prog=${prog%%/*}
    if [ -d "test/fidelity/$prog/include" ]; then
      printf 'fidelity\t%s\t--extra-arg=-I%s\n' "$f" "$root/test/fidelity/$prog/include"
    else
      printf 'fidelity\t%s\n' "$f"
    fi
  done
  for f in examples/*/main.cpp; do printf 'examples\t%s\n' "$f"; done
} | grep -E "^(${SNAPSHOT_GROUPS// /|})"$'\t' | nice -n 10 xargs -P 2 -d '\n' -n 1 bash -c 'IFS=$'"'"'\t'"'"' read -ra a <<< "$1"; one "${a[@]}"' _

"$tool" --list-rules > "$work/list-rules.txt" 2>&1
"$tool" --rule-table > "$work/rule-table.md" 2>&1
# Mask what differs between two runs of the same tool: the time, the PCH's state, and the
# build folder (a snapshot may come from a second build of another commit).
find "$work" -name '*.log' -print0 | xargs -0 sed -i -E \
  -e 's/\[[0-9]+\.[0-9]+ s(, [a-zA-Z ]*PCH[a-z ]*)?\]/[TIME]/g' \
  -e '/building the precompiled LibTorch header/d' -e "s|$build/|BUILD/|g"
mv "$work" "$dest"
rm -f "$tool"
echo "migrate_snapshot: $(find "$dest" -name '*.rc' ! -name '*.check.rc' | wc -l) inputs -> $dest"
