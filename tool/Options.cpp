#include "Options.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

namespace cl = llvm::cl;

namespace accel {

bool parseOptions(int argc, const char** argv, Options& Opts, int& ExitCode) {
  cl::OptionCategory Cat("accel-migrate options");
  cl::list<std::string> Files(cl::Positional, cl::desc("<source files>"), cl::cat(Cat));
  cl::opt<std::string> Output("o", cl::desc("Write the migrated file here (one input file)"),
                              cl::value_desc("file"), cl::cat(Cat));
  cl::opt<bool> InPlace("i", cl::desc("Rewrite the files in place, keeping FILE.orig"),
                        cl::cat(Cat));
  cl::opt<bool> DryRun("dry-run", cl::desc("Report what would change; write nothing"),
                       cl::cat(Cat));
  cl::opt<bool> Diff("diff", cl::desc("Print a unified diff of the changes; write nothing"),
                     cl::cat(Cat));
  cl::opt<std::string> BuildPath(
      "p", cl::desc("Build directory holding compile_commands.json"), cl::value_desc("dir"),
      cl::cat(Cat));
  cl::opt<bool> KeepStd(
      "keep-std",
      cl::desc("Parse with the -std the flags ask for (by default C++20 and later are parsed "
               "as C++17, which LibTorch's headers need with clang 16)"),
      cl::cat(Cat));
  cl::opt<bool> ListRules("list-rules", cl::desc("List the rule ids and exit"), cl::cat(Cat));
  cl::opt<bool> Quiet("quiet", cl::desc("Only diagnostics and errors; no summary"),
                      cl::cat(Cat));

  // Everything after `--` is compiler flags for every file.
  std::string Err;
  int Argc = argc;
  auto Fixed = clang::tooling::FixedCompilationDatabase::loadFromCommandLine(Argc, argv, Err);
  if (!Err.empty()) {
    llvm::errs() << "accel-migrate: " << Err << "\n";
    ExitCode = 2;
    return false;
  }
  cl::HideUnrelatedOptions(Cat);
  cl::SetVersionPrinter([](llvm::raw_ostream& OS) { OS << "accel-migrate (Accelerate for LibTorch)\n"; });
  if (!cl::ParseCommandLineOptions(
          Argc, argv,
          "accel-migrate: rewrites single-device LibTorch programs to use Accelerate.\n\n"
          "  accel-migrate train.cpp -o train_dist.cpp\n"
          "  accel-migrate -i a.cpp b.cpp -- -Iinclude -DFOO\n"
          "  accel-migrate -p build/ --diff src/train.cpp\n",
          &llvm::errs())) {
    ExitCode = 2;
    return false;
  }
  Opts.Files.assign(Files.begin(), Files.end());
  Opts.Output = Output;
  Opts.InPlace = InPlace;
  Opts.DryRun = DryRun;
  Opts.Diff = Diff;
  Opts.ForceCxx17 = !KeepStd;
  Opts.ListRules = ListRules;
  Opts.Quiet = Quiet;
  Opts.BuildPath = BuildPath;
  if (Opts.ListRules)
    return true;

  auto Usage = [&](const char* Msg) {
    llvm::errs() << "accel-migrate: " << Msg << " (see --help)\n";
    ExitCode = 2;
    return false;
  };
  if (Opts.Files.empty())
    return Usage("no input files");
  if (!Opts.Output.empty() && Opts.Files.size() != 1)
    return Usage("-o takes exactly one input file; use -i for several");
  if (!Opts.Output.empty() && Opts.InPlace)
    return Usage("-o and -i exclude each other");
  if (Opts.Files.size() > 1 && Opts.Output.empty() && !Opts.InPlace && !Opts.DryRun && !Opts.Diff)
    return Usage("several input files need -i, --dry-run or --diff");
  if (Fixed && !Opts.BuildPath.empty())
    return Usage("give either -p or `-- <flags>`, not both");

  if (Fixed) {
    Opts.DB = std::move(Fixed);
  } else if (!Opts.BuildPath.empty()) {
    Opts.DB = clang::tooling::CompilationDatabase::loadFromDirectory(Opts.BuildPath, Err);
    if (!Opts.DB) {
      llvm::errs() << "accel-migrate: cannot load " << Opts.BuildPath
                   << "/compile_commands.json: " << Err << "\n";
      ExitCode = 2;
      return false;
    }
  } else {
    // No flags: the baked-in defaults (C++17, LibTorch's headers) are added per file.
    Opts.DB = std::make_unique<clang::tooling::FixedCompilationDatabase>(
        ".", std::vector<std::string>{});
  }
  return true;
}

}  // namespace accel
