#!/usr/bin/env bash
# The corpus through the installed accel-migrate, in one invocation over all files:
# - every valid program compiles (-fsyntax-only) against the real LibTorch headers, as
#   written: a corpus input that is not a valid program would prove nothing;
# - every valid program migrates (exit 0) and is changed; unsafe_* programs keep their code
#   but carry an `// accel-migrate(<rule-id>)` comment where the tool refused;
# - migrating every migrated file again changes nothing (the output is a fixed point);
# - every migrated file compiles (-fsyntax-only) against the INSTALLED runtime headers;
# - the invalid program is refused: non-zero exit, no output, an existing output untouched.
#   migrate_corpus.sh PREFIX CORPUS_DIR WORK "TORCH_INCLUDE_DIRS" [CXX]
# CXX (default g++) compiles the checks; CMake passes the tool's own LLVM's clang++, whose
# precompiled <torch/torch.h> is loaded lazily: 3.3 s a check against g++'s 10 s with its
# 568 MB PCH (results/2026-11-28-corpus-clang.txt). GCC still compiles users' programs in
# the install tests, the project test and the README's main job.
set -uo pipefail
prefix=$1; corpus=$2; work=$3; torch_includes=$4; cxx=${5:-g++}
tool=$prefix/bin/accel-migrate
rm -rf "$work"; mkdir -p "$work/src"
cp "$corpus"/*.cpp "$work/src/"
fail=0
n=$(ls "$work"/src/*.cpp | wc -l)
echo "migrating $n corpus programs"
# Two tool processes, one per core, each over half of the files (parsing dominates).
files=("$work"/src/*.cpp); half=$(( (${#files[@]} + 1) / 2 ))
"$tool" -i "${files[@]:0:$half}" > "$work/migrate-1.log" 2>&1 & p1=$!
"$tool" -i "${files[@]:$half}" > "$work/migrate-2.log" 2>&1 & p2=$!
wait $p1; rc1=$?; wait $p2; rc2=$?
cat "$work/migrate-1.log" "$work/migrate-2.log" > "$work/migrate.log"
grep -E "rewrites|warning:" "$work/migrate.log" | grep -v "^ " | sed 's|.*/||' | head -80
for rc in $rc1 $rc2; do
  [ $rc -eq 0 ] || { echo "FAIL: accel-migrate exited $rc"; tail -30 "$work/migrate.log"; fail=1; }
done

# The tool's output is a fixed point: migrating every migrated file again (one run per
# core, as above) exits 0 and changes nothing.
mkdir -p "$work/again"
for f in "$work"/src/*.cpp; do cp "$f" "$work/again/"; done
again=("$work"/again/*.cpp)
"$tool" -i "${again[@]:0:$half}" > "$work/again-1.log" 2>&1 & p1=$!
"$tool" -i "${again[@]:$half}" > "$work/again-2.log" 2>&1 & p2=$!
wait $p1; rc1=$?; wait $p2; rc2=$?
for rc in $rc1 $rc2; do
  [ $rc -eq 0 ] || { echo "FAIL: accel-migrate on its own output exited $rc"; cat "$work"/again-*.log | tail -30; fail=1; }
done
for f in "${again[@]}"; do
  cmp -s "$f" "$work/src/$(basename "$f")" || {
    echo "FAIL $(basename "$f"): migrating the output again changes it"
    diff -u "$work/src/$(basename "$f")" "$f" | head -30; fail=1; }
done
[ $fail -eq 0 ] && echo "ok   every migrated program migrates to itself"

flags=(-std=c++17 -fsyntax-only -w -I"$prefix/include")
for d in $torch_includes; do [ "$d" = /usr/include ] || flags+=(-isystem "$d"); done  # -isystem /usr/include breaks #include_next
# Every corpus file starts with #include <torch/torch.h>: one precompiled header of it,
# force-included, spares each check most of the parse of LibTorch's headers. g++ falls back
# to the header itself when the PCH does not apply; clang refuses an unusable PCH (then the
# check fails and says so), and instantiates LibTorch's templates once, in the PCH.
printf '#include <torch/torch.h>\n' > "$work/torch_pch.h"
pch_flags=(); for f in "${flags[@]}"; do [ "$f" = -fsyntax-only ] || pch_flags+=("$f"); done
case $("$cxx" --version 2>/dev/null | head -1) in
  *clang*) pch_out=$work/torch_pch.h.pch; pch_flags+=(-fpch-instantiate-templates); use_pch=(-include-pch "$pch_out") ;;
  *) pch_out=$work/torch_pch.h.gch; use_pch=(-include "$work/torch_pch.h") ;;
esac
if "$cxx" "${pch_flags[@]}" -x c++-header "$work/torch_pch.h" -o "$pch_out" > "$work/pch.log" 2>&1; then
  flags+=("${use_pch[@]}")
else
  echo "(no precompiled header: $(head -3 "$work/pch.log"))"
fi
echo "compile checks with $cxx"
check_one() {  # file -> prints a verdict line
  local f=$1 base; base=$(basename "$f")
  case $f in
    "$work"/orig/*)
      if ! "$cxx" "${flags[@]}" "$f" > "$f.compile.log" 2>&1; then
        echo "FAIL $base: the corpus program itself does not compile"; head -15 "$f.compile.log"; return 1
      fi
      echo "ok   $base compiles as written"; return 0 ;;
  esac
  case $base in
    unsafe_*)
      grep -q "// accel-migrate(accelerate-" "$f" || { echo "FAIL $base: no accel-migrate(<rule-id>) comment"; return 1; } ;;
    *)
      cmp -s "$f" "$f.orig" 2>/dev/null && { echo "FAIL $base: not changed"; return 1; }
      grep -q "accelerate::Accelerator" "$f" || { echo "FAIL $base: no Accelerator"; return 1; } ;;
  esac
  if ! "$cxx" "${flags[@]}" "$f" > "$f.compile.log" 2>&1; then
    echo "FAIL $base: migrated output does not compile"; head -15 "$f.compile.log"; return 1
  fi
  echo "ok   $base"
}
run_check() { check_one "$1" > "$1.verdict" 2>&1; echo $? > "$1.status"; }
mkdir -p "$work/orig"; cp "$corpus"/*.cpp "$work/orig/"
checked=("$work"/orig/*.cpp "$work"/src/*.cpp)
for f in "${checked[@]}"; do  # two compile checks at a time
  run_check "$f" &
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
done
wait
for f in "${checked[@]}"; do
  cat "$f.verdict"
  [ "$(cat "$f.status")" = 0 ] || fail=1
done

invalid=$corpus/invalid/does_not_compile.cpp
if [ -f "$invalid" ]; then
  "$tool" "$invalid" -o "$work/invalid_out.cpp" > "$work/invalid.log" 2>&1 && { echo "FAIL: invalid file migrated"; fail=1; }
  [ -e "$work/invalid_out.cpp" ] && { echo "FAIL: output written for an invalid file"; fail=1; }
  echo keep > "$work/existing.cpp"
  "$tool" "$invalid" -o "$work/existing.cpp" > /dev/null 2>&1
  [ "$(cat "$work/existing.cpp")" = keep ] || { echo "FAIL: existing output overwritten"; fail=1; }
  grep -q "not migrated" "$work/invalid.log" || { echo "FAIL: no 'not migrated' message"; fail=1; }
  [ $fail -eq 0 ] && echo "ok   invalid/does_not_compile.cpp refused, nothing written"
fi
if [ $fail -eq 0 ]; then echo "PASSED corpus: $n programs migrated and compiled"; else echo "FAILED corpus"; fi
exit $fail
