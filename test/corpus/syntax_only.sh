#!/bin/sh
# Compile launcher for the corpus: runs the compile command it is given with -fsyntax-only
# (the compiler still reports every error and writes the depfile) and then creates the
# empty object file the build expects. About 4 s per file instead of 17 s with codegen and
# debug info, and the objects are never linked anyway.
out=""
prev=""
for arg in "$@"; do
  if [ "$prev" = "-o" ]; then
    out="$arg"
  fi
  prev="$arg"
done
"$@" -fsyntax-only || exit $?
if [ -n "$out" ]; then
  : > "$out"
fi
