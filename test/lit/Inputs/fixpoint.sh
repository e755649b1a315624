#!/usr/bin/env bash
# What %accel-migrate runs in the lit tests: accel-migrate with the test's arguments and,
# when that migrated one file to another (`FILE -o OUT`, exit 0), accel-migrate again on
# OUT with the same flags. The tool's output must parse again and be a fixed point: the
# second run exits 0 and changes nothing. Otherwise the test fails here, with the reason.
# Project mode, --check, --diff, --dry-run, -i and the PCH cache tests pass through as
# they are (their tests check idempotence their own way).
#   fixpoint.sh ACCEL_MIGRATE ARGS...
tool=$1; shift
"$tool" "$@"; rc=$?
[ $rc -eq 0 ] || exit $rc

inputs=(); out=""; opts=(); flags=(); dashdash=0; expect_value=""
for a in "$@"; do
  if [ $dashdash = 1 ]; then flags+=("$a"); continue; fi
  if [ -n "$expect_value" ]; then
    [ "$expect_value" = "-o" ] && out=$a || opts+=("$a")
    expect_value=""; continue
  fi
  case $a in
    --) dashdash=1 ;;
    -o) expect_value=-o ;;
    -p) opts+=("$a"); expect_value=opt ;;
    --check|--dry-run|--diff|-i|--in-root*|--out-root*|--cache-dir*|--no-pch|--list-rules|--rule-table|--export-fixes*)
      exit 0 ;;
    -*) opts+=("$a") ;;
    *) inputs+=("$a") ;;
  esac
done
[ ${#inputs[@]} = 1 ] && [ -n "$out" ] && [ -f "$out" ] || exit 0

base=${out##*/}
again="${out%/*}/fixpoint.${base}"
[ "$out" = "$base" ] && again="fixpoint.${base}"
args=("${opts[@]}" "$out" -o "$again")
[ $dashdash = 1 ] && args+=(-- "${flags[@]}")
if ! "$tool" "${args[@]}" > "$again.log" 2>&1; then
  echo "fixpoint.sh: accel-migrate does not accept its own output $out:" >&2
  cat "$again.log" >&2
  exit 1
fi
if ! cmp -s "$out" "$again"; then
  echo "fixpoint.sh: migrating $out again changes it (not a fixed point):" >&2
  diff -u "$out" "$again" >&2
  exit 1
fi
rm -f "$again" "$again.log"
exit 0
