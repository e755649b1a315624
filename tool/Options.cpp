#include "Options.h"

#include "BakedPaths.h"

#include <accel/rewriters/engine/Rule.h>

#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CommonOptionsParser.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/GlobPattern.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace cl = llvm::cl;

namespace accel {
namespace {

// The command line as llvm::cl options (registered while a Flags object lives).
struct Flags {
  cl::OptionCategory Cat{"accel-migrate options"};
  cl::list<std::string> Files{cl::Positional, cl::desc("<source files>"), cl::cat(Cat)};
  cl::opt<std::string> Output{"o", cl::desc("Write the migrated file here (one input file)"),
                              cl::value_desc("file"), cl::cat(Cat)};
  cl::opt<bool> InPlace{"i", cl::desc("Rewrite the files in place, keeping FILE.orig"),
                        cl::cat(Cat)};
  cl::opt<bool> DryRun{"dry-run", cl::desc("Report what would change; write nothing"),
                       cl::cat(Cat)};
  cl::opt<bool> Diff{"diff", cl::desc("Print a unified diff of the changes; write nothing"),
                     cl::cat(Cat)};
  cl::opt<std::string> BuildPath{"p", cl::desc("Build directory holding compile_commands.json"),
                                 cl::value_desc("dir"), cl::cat(Cat)};
  cl::opt<bool> KeepStd{
      "keep-std",
      cl::desc("Never change the -std the flags ask for (by default a file asking for C++20 "
               "or later that does not parse so is parsed as C++17; with clang 16, which "
               "cannot parse LibTorch 1.13's headers as C++20, C++17 is tried first)"),
      cl::cat(Cat)};
  cl::opt<bool> Check{
      "check",
      cl::desc("Report what would change as clang-tidy style warnings with fix-its; write "
               "nothing. Exit 1 when there are findings, 0 when the code is migrated"),
      cl::cat(Cat)};
  cl::opt<std::string> ExportFixes{
      "export-fixes",
      cl::desc("With --check: write the fixes as YAML for clang-apply-replacements"),
      cl::value_desc("file.yaml"), cl::cat(Cat)};
  cl::opt<std::string> InRoot{"in-root",
                              cl::desc("Project mode: migrate every translation unit of -p's "
                                       "compile_commands.json under this directory"),
                              cl::value_desc("dir"), cl::cat(Cat)};
  cl::opt<std::string> OutRoot{"out-root",
                               cl::desc("Project mode: write the migrated copy of --in-root here"),
                               cl::value_desc("dir"), cl::cat(Cat)};
  cl::opt<unsigned> Jobs{
      "j", cl::desc("Project mode: files migrated in parallel (default: one per core)"),
      cl::value_desc("N"), cl::init(0), cl::cat(Cat)};
  cl::opt<bool> Force{"force",
                      cl::desc("Project mode: write into an --out-root that is not empty (files "
                               "of the same name are replaced; nothing is deleted)"),
                      cl::cat(Cat)};
  cl::opt<std::string> AcceleratePrefix{
      "accelerate-prefix",
      cl::desc("Project mode: the Accelerate install prefix written as HINTS into the "
               "find_package(Accelerate) calls added to CMakeLists.txt (default: the prefix "
               "this tool is installed in, when the package is there; 'none': no HINTS)"),
      cl::value_desc("dir"), cl::cat(Cat)};
  cl::opt<bool> NoPch{"no-pch",
                      cl::desc("Do not use or build the precompiled LibTorch header cache"),
                      cl::cat(Cat)};
  cl::opt<std::string> CacheDir{
      "cache-dir",
      cl::desc("Where precompiled headers are cached (default $ACCEL_MIGRATE_CACHE_DIR, "
               "else $XDG_CACHE_HOME/accel-migrate or ~/.cache/accel-migrate)"),
      cl::value_desc("dir"), cl::cat(Cat)};
  cl::opt<bool> KeepBatchNorm{
      "keep-batch-norm",
      cl::desc("Keep torch::nn::BatchNorm1d/2d/3d, which normalise with the statistics of each "
               "process's share of the batch, instead of accelerate::nn::SyncBatchNorm"),
      cl::cat(Cat)};
  cl::opt<bool> TraceOnly{
      "trace-only",
      cl::desc("Write only the step trace's calls into the ORIGINAL program (after each "
               "optimizer step, the loss at each backward call; accelerate/trace.h) and change "
               "nothing else: the reference `accelerate verify --original` compares the "
               "migrated program with"),
      cl::cat(Cat)};
  // As clang-tidy's: added to every compile command (of `--`, of -p's database, or the
  // defaults), after or before its own arguments.
  cl::list<std::string> ExtraArg{
      "extra-arg", cl::desc("Additional argument to append to the compiler command line"),
      cl::cat(Cat)};
  cl::list<std::string> ExtraArgBefore{
      "extra-arg-before", cl::desc("Additional argument to prepend to the compiler command line"),
      cl::cat(Cat)};
  cl::opt<std::string> Checks{
      "checks",
      cl::desc("With --check: report only these rules, as clang-tidy's glob list "
               "('-*,accelerate-backward,accelerate-prepare*'; later globs win). Rules depend on "
               "each other, so a migration always applies them all"),
      cl::value_desc("globs"), cl::cat(Cat)};
  cl::opt<cl::boolOrDefault> UseColor{
      "use-color",
      cl::desc("Colour --check's diagnostics (default: when standard output is a terminal)"),
      cl::cat(Cat)};
  cl::opt<bool> ListRules{"list-rules", cl::desc("List the rule ids and exit"), cl::cat(Cat)};
  cl::opt<bool> RuleTable{"rule-table",
                          cl::desc("Print the rule table (running order, the analyses each "
                                   "rule needs and provides) as Markdown and exit"),
                          cl::cat(Cat)};
  cl::opt<bool> Quiet{"quiet", cl::desc("Only diagnostics and errors; no summary"), cl::cat(Cat)};

  void copyTo(Options& Opts) const {
    Opts.Files.assign(Files.begin(), Files.end());
    Opts.Output = Output;
    Opts.InPlace = InPlace;
    Opts.DryRun = DryRun;
    Opts.Diff = Diff;
    Opts.ForceCxx17 = !KeepStd;
    Opts.ListRules = ListRules;
    Opts.Quiet = Quiet;
    Opts.BuildPath = BuildPath;
    Opts.Check = Check;
    Opts.ExportFixes = ExportFixes;
    Opts.InRoot = InRoot;
    Opts.OutRoot = OutRoot;
    Opts.Jobs = Jobs;
    Opts.Force = Force;
    Opts.UsePch = !NoPch;
    Opts.KeepBatchNorm = KeepBatchNorm;
    Opts.TraceOnly = TraceOnly;
    Opts.CacheDir = CacheDir;
    Opts.AcceleratePrefix = AcceleratePrefix;
    Opts.RuleTable = RuleTable;
    Opts.ExtraArgs.assign(ExtraArg.begin(), ExtraArg.end());
    Opts.ExtraArgsBefore.assign(ExtraArgBefore.begin(), ExtraArgBefore.end());
    Opts.Checks = Checks;
    Opts.UseColor = UseColor == cl::BOU_TRUE ||
                    (UseColor == cl::BOU_UNSET && llvm::sys::Process::StandardOutIsDisplayed());
  }
};

void printVersion(llvm::raw_ostream& OS) {
  OS << "accel-migrate " << baked::kVersion << " (Accelerate for LibTorch)\n"
     << "  built with LLVM/Clang " << baked::kLLVMVersion << " (clang resource dir "
     << baked::kResourceDir << ")\n"
     << "  LibTorch headers used when the flags name none: " << baked::kTorchVersion << " in";
  for (const char* const* D = baked::kTorchIncludeDirs; *D; ++D)
    OS << " " << *D;
  OS << "\n  Another LibTorch: pass its include directories after `--` or through -p's "
        "compile_commands.json; they win over these.\n"
        "  Another LLVM: rebuild with -DACCEL_LLVM_VERSIONS=<major> (16 and 19 are supported).\n";
}

// What is wrong with project mode's options, or nullptr.
const char* projectModeError(const Options& Opts) {
  if (Opts.BuildPath.empty())
    return "project mode needs -p BUILD_DIR (the compile_commands.json to migrate)";
  if (Opts.InRoot.empty())
    return "project mode needs --in-root";
  if (Opts.OutRoot.empty() && !Opts.Check && !Opts.DryRun)
    return "project mode needs --out-root (or --check / --dry-run)";
  if (Opts.InPlace || !Opts.Output.empty() || Opts.Diff)
    return "project mode writes --out-root; it excludes -o, -i and --diff";
  if (!Opts.Files.empty())
    return "project mode takes no file names (it migrates every translation unit under "
           "--in-root)";
  if (!Opts.OutRoot.empty() && (Opts.Check || Opts.DryRun))
    return "--check and --dry-run write nothing; they exclude --out-root";
  return nullptr;
}

// What is wrong with the combination of options, or nullptr.
const char* usageError(const Options& Opts) {
  if (Opts.TraceOnly && Opts.projectMode())
    return "--trace-only traces one file at a time (file mode): give the file that steps the "
           "optimizer, with -o";
  if (Opts.Force && Opts.OutRoot.empty())
    return "--force needs --out-root";
  if (!Opts.AcceleratePrefix.empty() && !Opts.projectMode())
    return "--accelerate-prefix is for project mode (it is written into CMakeLists.txt)";
  if (!Opts.ExportFixes.empty() && !Opts.Check)
    return "--export-fixes needs --check";
  if (Opts.Check && (Opts.InPlace || !Opts.Output.empty() || Opts.Diff))
    return "--check writes nothing; it excludes -o, -i and --diff";
  if (Opts.projectMode()) {
    if (const char* E = projectModeError(Opts))
      return E;
  } else if (Opts.Files.empty()) {
    return "no input files";
  }
  if (!Opts.Output.empty() && Opts.Files.size() != 1)
    return "-o takes exactly one input file; use -i for several";
  if (!Opts.Output.empty() && Opts.InPlace)
    return "-o and -i exclude each other";
  if (Opts.Files.size() > 1 && Opts.Output.empty() && !Opts.InPlace && !Opts.DryRun && !Opts.Diff &&
      !Opts.Check && !Opts.projectMode())
    return "several input files need -i, --dry-run or --diff";
  if (!Opts.Checks.empty() && !Opts.Check)
    return "--checks selects what --check reports; a migration applies every rule (they "
           "depend on each other), so --checks needs --check";
  return nullptr;
}

// The glob list of --checks: "[-]glob" items, comma-separated, the last match winning, as
// clang-tidy reads its own. Each glob must match some rule, else a typo selects nothing.
std::vector<std::pair<bool, llvm::GlobPattern>> checkGlobs(llvm::StringRef Checks,
                                                           std::string* Error) {
  std::vector<std::pair<bool, llvm::GlobPattern>> Out;
  llvm::SmallVector<llvm::StringRef, 8> Items;
  Checks.split(Items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef Item : Items) {
    Item = Item.trim();
    const bool Positive = !Item.consume_front("-");
    auto Pattern = llvm::GlobPattern::create(Item.trim());
    if (!Pattern) {
      if (Error)
        *Error = "--checks: '" + Item.str() + "': " + llvm::toString(Pattern.takeError());
      return {};
    }
    bool Any = false;
    for (const auto& I : allRuleInfos())
      Any = Any || Pattern->match(I.Id);
    if (!Any && Item.trim() != "*" && Error) {
      *Error = "--checks: '" + Item.trim().str() + "' matches no rule (accel-migrate --list-rules)";
      return {};
    }
    Out.emplace_back(Positive, std::move(*Pattern));
  }
  return Out;
}

// Whether DB has a command of its own for every file (not one guessed from a neighbour).
bool listsEveryFile(const clang::tooling::CompilationDatabase& DB,
                    const std::vector<std::string>& Files) {
  std::vector<std::string> Listed;
  for (const std::string& F : DB.getAllFiles()) {
    llvm::SmallString<256> Real;
    Listed.push_back(llvm::sys::fs::real_path(F, Real) ? F : Real.str().str());
  }
  for (const std::string& F : Files) {
    llvm::SmallString<256> Real;
    if (llvm::sys::fs::real_path(F, Real) ||
        std::find(Listed.begin(), Listed.end(), Real.str().str()) == Listed.end())
      return false;
  }
  return true;
}

// The compile_commands.json clang-tidy would find: in the first source's folder or one
// above it (and, as a CMake project keeps it, in a build/ folder beside them), used only
// when it lists every input file itself, so that a database of some other tree (the tool's
// own build folder above a test's sources) never lends its flags by guesswork.
std::unique_ptr<clang::tooling::CompilationDatabase> findDatabase(Options& Opts) {
  llvm::SmallString<256> Dir(Opts.Files.front());
  llvm::sys::fs::make_absolute(Dir);
  for (llvm::sys::path::remove_filename(Dir); !Dir.empty(); llvm::sys::path::remove_filename(Dir)) {
    for (const char* Sub : {"", "build"}) {
      llvm::SmallString<256> Candidate(Dir);
      llvm::sys::path::append(Candidate, Sub);
      llvm::SmallString<256> Json(Candidate);
      llvm::sys::path::append(Json, "compile_commands.json");
      if (!llvm::sys::fs::exists(Json))
        continue;
      std::string Err;
      auto DB = clang::tooling::CompilationDatabase::loadFromDirectory(Candidate, Err);
      if (DB && listsEveryFile(*DB, Opts.Files)) {
        Opts.FoundDatabase = Json.str().str();
        return DB;
      }
    }
    if (llvm::sys::path::parent_path(Dir) == Dir)
      break;
  }
  return nullptr;
}

// The compile commands: `-- <flags>` for every file, -p's database (with `--`'s flags
// appended to each of its commands), the database found above the first source, or none
// (the baked-in defaults, C++17 and LibTorch's headers, are then added per file).
bool loadDatabase(Options& Opts, std::unique_ptr<clang::tooling::CompilationDatabase> Fixed,
                  const std::vector<std::string>& FixedArgs) {
  if (Fixed && Opts.BuildPath.empty()) {
    Opts.DB = std::move(Fixed);
  } else if (Opts.BuildPath.empty()) {
    Opts.DB = Opts.projectMode() ? nullptr : findDatabase(Opts);
    if (Opts.DB && !Opts.Quiet)
      llvm::errs() << "accel-migrate: note: compile commands from " << Opts.FoundDatabase
                   << " (-p chooses another; `-- <flags>` gives them)\n";
    if (!Opts.DB)
      Opts.DB = std::make_unique<clang::tooling::FixedCompilationDatabase>(
          ".", std::vector<std::string>{});
  } else {
    std::string Err;
    Opts.DB = clang::tooling::CompilationDatabase::loadFromDirectory(Opts.BuildPath, Err);
    if (!Opts.DB) {
      llvm::errs() << "accel-migrate: cannot load " << Opts.BuildPath
                   << "/compile_commands.json: " << Err << "\n";
      return false;
    }
  }
  if (Fixed && !Opts.BuildPath.empty())
    Opts.ExtraArgs.insert(Opts.ExtraArgs.begin(), FixedArgs.begin(), FixedArgs.end());
  // --extra-arg / --extra-arg-before, as clang-tidy applies them (its CommonOptionsParser).
  if (!Opts.ExtraArgs.empty() || !Opts.ExtraArgsBefore.empty()) {
    using namespace clang::tooling;
    auto Adjusted = std::make_unique<ArgumentsAdjustingCompilations>(std::move(Opts.DB));
    Adjusted->appendArgumentsAdjuster(
        getInsertArgumentAdjuster(Opts.ExtraArgsBefore, ArgumentInsertPosition::BEGIN));
    Adjusted->appendArgumentsAdjuster(
        getInsertArgumentAdjuster(Opts.ExtraArgs, ArgumentInsertPosition::END));
    Opts.DB = std::move(Adjusted);
  }
  return true;
}

const char* const kOverview =
    "accel-migrate: rewrites single-device LibTorch programs to use Accelerate.\n\n"
    "  accel-migrate train.cpp -o train_dist.cpp\n"
    "  accel-migrate -i a.cpp b.cpp -- -Iinclude -DFOO\n"
    "  accel-migrate -p build/ --diff src/train.cpp\n"
    "  accel-migrate --check --export-fixes fixes.yaml src/*.cpp -- -Iinclude\n"
    "  accel-migrate -p build/ --in-root src/ --out-root src-dist/ -j 2\n\n"
    "Compile flags: `-- <flags>` for every file; -p DIR's compile_commands.json (with `--`'s\n"
    "flags appended); else a compile_commands.json in the first source's folder, a folder\n"
    "above it, or their build/ folder, when it lists every input; else C++17 and the\n"
    "LibTorch headers the tool was built with.\n\n"
    "Exit codes: 0 every file migrated (or nothing to do); 1 some file not migrated (it does\n"
    "not compile, or cannot be written); 2 a usage error. With --check: 0 no findings,\n"
    "1 findings, 2 a usage error, 3 some file could not be checked.\n";

} // namespace

bool Options::ruleSelected(llvm::StringRef Id) const {
  bool Selected = Checks.empty();
  for (const auto& [Positive, Pattern] : checkGlobs(Checks, nullptr))
    if (Pattern.match(Id))
      Selected = Positive;
  return Selected;
}

bool parseOptions(int argc, const char** argv, Options& Opts, int& ExitCode) {
  Flags F;
  ExitCode = 2;
  // Everything after `--` is compiler flags for every file.
  std::string Err;
  int Argc = argc;
  std::vector<std::string> FixedArgs; // what follows `--`, for -p's commands
  for (int I = 1; I < argc; ++I)
    if (llvm::StringRef(argv[I]) == "--") {
      FixedArgs.assign(argv + I + 1, argv + argc);
      break;
    }
  auto Fixed = clang::tooling::FixedCompilationDatabase::loadFromCommandLine(Argc, argv, Err);
  if (!Err.empty()) {
    llvm::errs() << "accel-migrate: " << Err << "\n";
    return false;
  }
  cl::HideUnrelatedOptions(F.Cat);
  cl::SetVersionPrinter(printVersion);
  if (!cl::ParseCommandLineOptions(Argc, argv, kOverview, &llvm::errs()))
    return false;
  F.copyTo(Opts);
  if (Opts.ListRules || Opts.RuleTable)
    return true;
  if (const char* E = usageError(Opts)) {
    llvm::errs() << "accel-migrate: " << E << " (see --help)\n";
    return false;
  }
  if (checkGlobs(Opts.Checks, &Err).empty() && !Err.empty()) {
    llvm::errs() << "accel-migrate: " << Err << "\n";
    return false;
  }
  return loadDatabase(Opts, std::move(Fixed), FixedArgs);
}

} // namespace accel
