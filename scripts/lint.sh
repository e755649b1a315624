#!/usr/bin/env bash
# The project's own style checks (docs/dev/style.md), run by the test command:
#   format  clang-format-16 --dry-run -Werror on the project's C++ (the .clang-format files;
#           programs written in users' styles are left as they are: examples/, test/corpus,
#           test/fidelity, test/lit, test/e2e/project/app)
#   tidy    clang-tidy-16 with the root .clang-tidy (bugprone-branch-clone,
#           readability-function-size at 80 lines) on every translation unit of the
#           product (runtime/, tool/, rewriters/, tidy/) in BUILD/compile_commands.json
#           (a unity unit whole, as it is compiled)
#   scripts/lint.sh BUILD_DIR [format|tidy]...      (both by default)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/lint.sh BUILD_DIR [format|tidy]...}; shift
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(format tidy)
failed=0

format() {
  local cf; cf=$(command -v clang-format-16) || { echo "lint: clang-format-16 is not installed (scripts/bootstrap.sh)"; return 1; }
  local files; mapfile -t files < <(git ls-files -- 'tool/*.cpp' 'tool/*.h' \
    'rewriters/*.cpp' 'rewriters/*.h' 'tidy/*.cpp' 'tidy/*.h' 'runtime/*.cpp' 'runtime/*.h' 'launcher/*.cpp' 'launcher/*.h' \
    'test/unit/*.cpp' 'test/unit/*.h' 'test/support/*.cpp' 'test/support/*.h' \
    'test/launcher/*.cpp' 'test/verify/*.cpp' 'test/e2e/*.cpp' 'bench/*.cpp' 'fuzz/*.cpp' ':!test/e2e/project/*' 2>/dev/null)
  # One clang-format for every file (a process per file costs more than the formatting).
  local bad=0 f
  while read -r f; do
    echo "lint: $f is not formatted (run: $cf -i $f)"; bad=1
  done < <("$cf" --dry-run "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u)
  echo "lint: format: ${#files[@]} files, $([ $bad -eq 0 ] && echo clean || echo 'NOT clean')"
  return $bad
}

tidy() {
  local db=$build/compile_commands.json tmp out
  [ -f "$db" ] || { echo "lint: $db is missing (configure the build first)"; return 1; }
  command -v clang-tidy-16 > /dev/null || { echo "lint: clang-tidy-16 is not installed"; return 1; }
  tmp=$(mktemp -d); out=$tmp/tidy.log
  # GCC's precompiled header (-include cmake_pch.hxx next to a .gch) means nothing to clang:
  # dropped, the sources include LibTorch themselves. clang's (`-Xclang -include-pch`, the
  # build's own clang 16) is kept: clang-tidy loads LibTorch's declarations instead of parsing
  # them, about a third less CPU for a runtime unit (results/2026-11-30-d12-clang-vs-gcc);
  # tidy_cached.py makes its cache key without it.
  /usr/bin/python3 - "$db" "$tmp/compile_commands.json" "$PWD" <<'PY'
import json, os, re, shlex, sys
db, out, root = sys.argv[1:]


def product(path):
    return any(path.startswith(f"{root}/{d}/") for d in ("runtime", "launcher", "tool", "rewriters", "tidy"))


def units(entries):
    # A unity unit (runtime/, rewriters/ and tool/ are unity builds) is checked whole, as it is
    # compiled: its sources are included files to clang-tidy, and the header filter
    # (.clang-tidy) names their folders, so their findings are reported as a lone file's are.
    # Both checks look at one function at a time, so grouping changes no finding; it parses
    # LibTorch's and clang's headers once per unit instead of once per source (138 parses ->
    # ~50; issue 46: the lint's CPU was a third of a cold run's tail).
    for e in entries:
        if "/Unity/unity_" in e["file"]:
            srcs = re.findall(r'^#include "([^"]+)"', open(e["file"]).read(), re.M)
            if any(product(src) for src in srcs):
                yield e
        elif product(e["file"]):
            yield e


keep = []
for e in units(json.load(open(db))):
    args = shlex.split(e["command"]) if "command" in e else e["arguments"]
    new, skip = [], 0
    for i, a in enumerate(args):
        if skip:
            skip -= 1
            continue
        if a == "-include" and i + 1 < len(args) and "cmake_pch" in args[i + 1]:
            skip = 1
            continue
        # A clang PCH not built yet (a configured tree): LibTorch is parsed instead.
        if a == "-Xclang" and args[i + 1:i + 3] == ["-include-pch", "-Xclang"] and i + 3 < len(args) \
                and not os.path.exists(args[i + 3]):
            skip = 3
            continue
        if a != "-Winvalid-pch":
            new.append(a)
    e.pop("arguments", None)
    e["command"] = shlex.join(new)
    keep.append(e)
json.dump(keep, open(out, "w"))
print(f"lint: tidy: {len(keep)} translation units")
PY
  # Unchanged units are not analysed again: their findings come from a cache outside the clone,
  # keyed by the preprocessed unit, its flags, .clang-tidy and clang-tidy's version
  # (scripts/ci/tidy_cached.py says why each); ACCEL_TIDY_CACHE moves it.
  local cache=${ACCEL_TIDY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/accelerate/clang-tidy}
  python3 scripts/ci/tidy_cached.py --db "$tmp" --root "$PWD" --jobs "$(nproc)" --cache "$cache" \
    --clang-tidy "$(command -v clang-tidy-16)" --clang "$(command -v clang++-16)" > "$out" 2>&1 \
    || { cat "$out"; echo "lint: tidy: clang-tidy failed on a unit (above)"; rm -rf "$tmp"; return 1; }
  grep '^tidy_cached:' "$out" | sed 's/^tidy_cached/lint: tidy/'
  local n; n=$(grep -cE ': (warning|error): ' "$out")
  if [ "$n" -gt 0 ]; then
    grep -E ': (warning|error): ' "$out" | sort -u
    echo "lint: tidy: $n findings (fix them, or NOLINT with a reason)"
    rm -rf "$tmp"; return 1
  fi
  echo "lint: tidy: clean"
  rm -rf "$tmp"
}

for s in "${steps[@]}"; do
  t0=$SECONDS
  "$s" || failed=1
  echo "lint: $s took $((SECONDS - t0)) s"
done
exit $failed
