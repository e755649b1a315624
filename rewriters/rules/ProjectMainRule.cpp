// accelerate-project-main: a main() that constructs no Accelerator, in a program whose
// other files reach it through accelerate::Accelerator::current() (which throws until main
// has constructed one), is migrated again with main() constructing it.

#include "analyses/RuleSupport.h"

#include <deque>
#include <set>

namespace accel {

const RuleInfo ProjectMainInfo = {
    "accelerate-project-main", "main() constructs the Accelerator other files reach",
    "code in other files of the program reaches the Accelerator through "
    "accelerate::Accelerator::current(), which throws unless main() constructed one first"};

namespace {

// The program's files as a graph: a file leads to the project headers it includes (a
// source's list covers its headers' includes too) and to the sources that define the
// functions it calls without defining them.
class ProgramGraph {
 public:
  explicit ProgramGraph(const std::vector<ProjectFile>& Files) : Files(Files) {
    for (std::size_t I = 0; I < Files.size(); ++I) {
      if (Files[I].Header)
        HeaderByPath[Files[I].Real] = I;
      else if (Files[I].Parsed)
        for (const std::string& F : Files[I].DefinedFunctions)
          DefinedIn[F].push_back(I);
    }
  }

  // A file reachable from Start whose migrated code calls current() ("" when none).
  std::string userReachableFrom(std::size_t Start) const {
    std::set<std::size_t> Seen = {Start};
    std::deque<std::size_t> Todo = {Start};
    auto Visit = [&](std::size_t Next) {
      if (Seen.insert(Next).second)
        Todo.push_back(Next);
    };
    while (!Todo.empty()) {
      const ProjectFile& U = Files[Todo.front()];
      Todo.pop_front();
      if (U.Parsed && U.UsesCurrent)
        return U.Rel;
      if (!U.Header)
        for (const std::string& Inc : U.IncludedFiles) {
          auto It = HeaderByPath.find(Inc);
          if (It != HeaderByPath.end())
            Visit(It->second);
        }
      for (const std::string& F : U.ExternalCalls) {
        auto It = DefinedIn.find(F);
        if (It != DefinedIn.end())
          for (std::size_t D : It->second)
            Visit(D);
      }
    }
    return "";
  }

 private:
  const std::vector<ProjectFile>& Files;
  std::map<std::string, std::size_t> HeaderByPath;
  std::map<std::string, std::vector<std::size_t>> DefinedIn;
};

} // namespace

void runProjectMain(ProjectContext& Ctx, const RuleInfo& Rule) {
  ProgramGraph G(Ctx.files());
  for (std::size_t I = 0; I < Ctx.files().size(); ++I) {
    const ProjectFile& F = Ctx.files()[I];
    if (F.Header || !F.Parsed || !F.DefinesMain || F.MainConstructsAccelerator)
      continue;
    std::string User = G.userReachableFrom(I);
    if (User.empty())
      continue;
    if (!F.AcceleratorForced) {
      Ctx.migrateWithAccelerator(I, "main() constructs the Accelerator: it reaches " + User +
                                        ", which uses accelerate::Accelerator::current()");
      continue;
    }
    // Migrated with the Accelerator forced in, and still none (its rules refused an edit).
    Ctx.warn(Rule, F.Rel,
             "main() constructs no accelerate::Accelerator, but " + User +
                 " uses accelerate::Accelerator::current(), which throws without one: add "
                 "`accelerate::Accelerator accelerator;` as the first statement of main()");
  }
}

// The rule's entry in the project rule table (RegisterRule.h).
static const RegisterProjectRule ProjectMainRuleEntry({
    ProjectMainInfo,
    runProjectMain,
    /*Rank=*/10,
});

} // namespace accel
