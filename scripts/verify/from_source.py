"""`accelerate verify train.cpp [ARGS...]`: the original program's source alone.

verify then makes its own two programs from it, under WORK/source (docs/verify.md, "From the
source alone"): the traced original (`accel-migrate --trace-only`, linked against
Accelerate::trace: LibTorch and the trace, no runtime) and the migrated program
(`accel-migrate`, linked against Accelerate::accelerate), each a CMake project built against
the installed package; the migration's messages become --notes. A program of several files
is not handled here (migrate it in project mode, build both, pass the executables).
"""
import glob
import os
import shlex
import shutil
import subprocess

SUFFIXES = (".cpp", ".cc", ".cxx", ".C")


class BuildError(Exception):
    """A step of making the two programs failed; the message names it and its log."""


def is_source(path):
    return path.endswith(SUFFIXES) and os.path.isfile(path)


def find_prefix(explicit, here):
    """The installed Accelerate prefix: --prefix, else the one this script is installed in
    (PREFIX/libexec/accelerate/verify.py). A build tree has no package: then --prefix."""
    candidates = [explicit] if explicit else [os.path.dirname(os.path.dirname(here))]
    for prefix in candidates:
        if glob.glob(os.path.join(prefix, "lib*", "cmake", "Accelerate", "AccelerateConfig.cmake")) or \
                glob.glob(os.path.join(prefix, "lib", "*", "cmake", "Accelerate", "AccelerateConfig.cmake")):
            return os.path.abspath(prefix)
    where = explicit or "beside this verify (not installed: a build tree)"
    raise BuildError(f"verifying a source file needs an installed Accelerate package (its CMake config); none "
                     f"found {'in ' + where if explicit else where}: pass --prefix PREFIX of `cmake --install`")


def _step(cmd, log, what, cwd=None):
    with open(log, "w") as f:
        f.write("+ " + " ".join(map(shlex.quote, cmd)) + "\n")
        f.flush()
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd).returncode
        except OSError as e:
            raise BuildError(f"{what}: cannot run {cmd[0]}: {e}")
    if rc != 0:
        tail = "".join(open(log, errors="replace").readlines()[-12:])
        raise BuildError(f"{what} failed (exit {rc}); its log {log} ends:\n{tail}")


def _cmake_project(d, name, file, include, target):
    with open(os.path.join(d, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.22)\n"
                f"project(verify_{name} CXX)\n"
                "find_package(Accelerate REQUIRED CONFIG)\n"
                f"add_executable(program {file})\n"
                # The source's own folder, for the headers beside it (the migration writes
                # only the source: its headers are used as they are).
                f"target_include_directories(program PRIVATE \"{include}\")\n"
                f"target_link_libraries(program PRIVATE {target})\n")


def build(source, work, prefix, progress=print):
    """(migrated executable, traced original, the migration's messages), made under
    WORK/source."""
    source = os.path.abspath(source)
    tool = os.path.join(prefix, "bin", "accel-migrate")
    if not os.access(tool, os.X_OK):
        tool = shutil.which("accel-migrate") or tool
    root = os.path.join(work, "source")
    made = {}
    for kind, flags, target in (("traced", ["--trace-only"], "Accelerate::trace"),
                                ("migrated", [], "Accelerate::accelerate")):
        d = os.path.join(root, kind)
        os.makedirs(d)
        name = os.path.basename(source)
        progress(f"verify: [source] {kind}: accel-migrate {' '.join(flags + [name])}, cmake --build", flush=True)
        _step([tool] + flags + [source, "-o", os.path.join(d, name)], os.path.join(root, f"{kind}.migrate.log"),
              f"accel-migrate {' '.join(flags)} {source}".replace("  ", " "))
        _cmake_project(d, kind, name, os.path.dirname(source), target)
        b = os.path.join(d, "build")
        configure = ["cmake", "-S", d, "-B", b, "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}"]
        configure += ["-G", "Ninja"] if shutil.which("ninja") else []
        configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
        _step(configure, os.path.join(root, f"{kind}.configure.log"), f"configuring the {kind} program")
        _step(["cmake", "--build", b], os.path.join(root, f"{kind}.build.log"), f"building the {kind} program")
        made[kind] = os.path.join(b, "program")
    return made["migrated"], made["traced"], os.path.join(root, "migrated.migrate.log")
