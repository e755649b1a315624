#include "accel/rewriters/engine/RuleOrder.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace accel {

// Rules are registered from static objects, so the order they arrive in is the linker's:
// ties go by (rank, id), never by position.
static std::vector<std::size_t> rankOrder(const std::vector<RuleNode>& Rules) {
  std::vector<std::size_t> ByRank(Rules.size());
  for (std::size_t I = 0; I < Rules.size(); ++I)
    ByRank[I] = I;
  std::sort(ByRank.begin(), ByRank.end(), [&Rules](std::size_t L, std::size_t R) {
    return std::tie(Rules[L].Rank, Rules[L].Id) < std::tie(Rules[R].Rank, Rules[R].Id);
  });
  return ByRank;
}

RuleOrdering orderRules(const std::vector<RuleNode>& Rules) {
  RuleOrdering R;
  const std::size_t N = Rules.size();
  std::map<std::string, std::vector<std::size_t>> Providers;
  std::set<std::string> Ids;
  for (std::size_t I = 0; I < N; ++I) {
    if (!Ids.insert(Rules[I].Id).second) {
      R.Error = "rule table: the id " + Rules[I].Id + " appears twice";
      return R;
    }
    for (const std::string& A : Rules[I].Provides)
      Providers[A].push_back(I);
  }
  // Edges provider -> consumer; a rule that provides what it reads depends on itself only.
  std::vector<std::set<std::size_t>> After(N);
  for (std::size_t I = 0; I < N; ++I)
    for (const std::string& A : Rules[I].Needs) {
      auto It = Providers.find(A);
      if (It == Providers.end()) {
        R.Error = "rule table: " + Rules[I].Id + " needs the analysis '" + A +
                  "', which no rule provides";
        return R;
      }
      for (std::size_t P : It->second)
        if (P != I)
          After[I].insert(P);
    }
  const std::vector<std::size_t> ByRank = rankOrder(Rules);
  std::vector<bool> Done(N, false);
  while (R.Order.size() < N) {
    bool Progress = false;
    for (std::size_t I : ByRank) {
      if (Done[I] || !std::all_of(After[I].begin(), After[I].end(),
                                  [&Done](std::size_t P) { return Done[P]; }))
        continue;
      Done[I] = true;
      R.Order.push_back(I);
      Progress = true;
      break; // restart: the lowest-ranked free rule goes next
    }
    if (!Progress) {
      // Every waiting rule waits for another waiting one: walk back until a rule repeats;
      // the rules between the two visits are the cycle.
      std::size_t Cur = 0;
      while (Done[Cur])
        ++Cur;
      std::vector<std::size_t> Path;
      std::vector<bool> Seen(N, false);
      while (!Seen[Cur]) {
        Seen[Cur] = true;
        Path.push_back(Cur);
        for (std::size_t P : After[Cur])
          if (!Done[P]) {
            Cur = P;
            break;
          }
      }
      std::vector<std::size_t> Loop(std::find(Path.begin(), Path.end(), Cur), Path.end());
      std::string Cycle;
      for (std::size_t K = 0; K < Loop.size(); ++K)
        Cycle += (K ? ", " : "") + Rules[Loop[K]].Id + " needs what " +
                 Rules[Loop[(K + 1) % Loop.size()]].Id + " provides";
      R.Error = "rule table: a cycle: " + Cycle;
      R.Order.clear();
      return R;
    }
  }
  return R;
}

} // namespace accel
