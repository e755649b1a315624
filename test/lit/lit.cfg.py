# lit configuration for accel-migrate's rule tests (see test/lit/README.md).
import os

import lit.formats

config.name = "accel-migrate"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".cpp", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.accel_obj_root

inputs = os.path.join(config.test_source_root, "Inputs")
# Every single-file migration (`FILE -o OUT`) is followed by a second run over OUT, which
# must exit 0 and change nothing (Inputs/fixpoint.sh): the tool's output re-parses and is
# a fixed point, for every rule test, at the cost of one more parse of a small file.
config.substitutions.append(
    ("%accel-migrate", "bash " + os.path.join(os.path.dirname(__file__), "Inputs", "fixpoint.sh")
     + " " + config.accel_migrate))
# The tool's binary itself (pch_cache.test runs copies of it from other folders).
config.substitutions.append(("%tool-binary", config.accel_migrate))
# Flags for programs that include the stub LibTorch headers (and the stub runtime header,
# so that migrated output parses again).
config.substitutions.append(("%stub-flags", "-isystem " + inputs))
config.substitutions.append(("%inputs", inputs))
config.substitutions.append(("%accel-src", config.accel_src_root))
# Compiles a rewriters source for syntax only, as rewriters/CMakeLists.txt builds it (the
# test adds -I for the rule headers).
config.substitutions.append(
    ("%rewriters-syntax", config.cxx + " -std=c++17 -fsyntax-only -fno-exceptions "
     "-D__STDC_CONSTANT_MACROS -D__STDC_FORMAT_MACROS -D__STDC_LIMIT_MACROS "
     + " ".join("-isystem " + d for d in dict.fromkeys(config.llvm_include_dirs.split(";")) if d)))
# A whole rule test in one RUN line (Inputs/check_rule.sh): migrate, re-migrate, FileCheck
# the output and the warnings. Before %s and %t, which lit substitutes after these.
config.substitutions.append(
    ("%check-rule", "bash " + os.path.join(inputs, "check_rule.sh") + " " + config.accel_migrate
     + " %s %t " + inputs))
config.substitutions.append(("%docs", os.path.join(config.test_source_root, "..", "..", "docs")))
# The migrated file still holds the test's own CHECK/RUN comments: drop them before
# FileCheck reads it, so that a pattern never matches its own comment.
config.substitutions.append(
    ("%strip", "grep -v -E '^[[:space:]]*// (RUN|CHECK|DIAG|REQUIRES)[A-Z-]*:'"))
config.substitutions.append(
    ("%runtime-includes", " ".join("-I" + d for d in config.accel_runtime_includes)))
config.substitutions.append(("%real-torch-include", config.real_torch_include))

config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])

# The PCH cache of the tests lives in the build tree, never in the user's ~/.cache. The tests
# of stub headers keep one of their own (dozens of small PCHs); the tests that parse the real
# LibTorch pass the tree's one cache (ACCEL_PCH_CACHE_DIR) as %tree-pch-cache, where the e2e
# tests' installed tool finds the PCHs of the same flags (tool/PchCache.cpp, compilerForKey).
config.environment["ACCEL_MIGRATE_CACHE_DIR"] = os.path.join(config.accel_obj_root, "pch-cache")
config.substitutions.append(("%tree-pch-cache", config.accel_pch_cache_dir))

# Which -std a file asking for C++20 is parsed with first (rewriters/.../LLVMCompat.h):
# clang 16 tries C++17 first, clang 19 the standard the flags ask for. Tests pick their
# FileCheck prefix with %std-first.
config.substitutions.append(("%std-first", "CXX17FIRST" if config.llvm_major < 19 else "ASKEDFIRST"))
config.available_features.add("llvm-%d" % config.llvm_major)

if config.real_torch_include:
    config.available_features.add("real-torch")
    # Tests of idioms that exist only in LibTorch 2.x headers (torch::mps, LRScheduler's
    # protected members, autocast by device type).
    torch_major = getattr(config, "torch_version", "").split(".")[0]
    if torch_major.isdigit() and int(torch_major) >= 2:
        config.available_features.add("real-torch-2")

# The clang-tidy module's tests run only when it was built (ACCEL_BUILD_TIDY_MODULE).
if config.accel_tidy_module and config.clang_tidy:
    config.available_features.add("tidy-module")
    config.substitutions.append(("%tidy-module", config.accel_tidy_module))
    config.substitutions.append(("%clang-tidy", config.clang_tidy))
# A rule that recognised its idiom and ended without an edit or a warning stops the tool
# with an internal error here (users get a generic warning instead): see
# MigrationContext::Match.
config.environment["ACCEL_MIGRATE_AUDIT"] = "1"
