#pragma once
// What the rules share while migrating one translation unit: the AST (restricted to the
// main file), the edit sink, the facts earlier rules found (which variables are prepared
// models, loaders, device variables) and how code at a place reaches the Accelerator.

#include "accel/rewriters/engine/Analyses.h"
#include "accel/rewriters/engine/Edits.h"
#include "accel/rewriters/engine/Rule.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ParentMapContext.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/SmallVector.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace accel {

struct IncludeSite {
  clang::SourceLocation HashLoc; // the '#'
  clang::SourceLocation EndLoc;  // end of the directive's line
  std::string Name;              // as written between <> or ""
};

// The first `accelerate::Accelerator` variable declared inside S (a statement walk: no
// matcher, which would depend on the AST's traversal scope).
const clang::VarDecl* existingAccelerator(const clang::Stmt* S);

class MigrationContext {
 public:
  // Target: the file whose text is migrated (the main file, or a header migrated as part
  // of a translation unit that includes it).
  MigrationContext(clang::ASTContext& AST, EditSink& Sink, std::vector<IncludeSite> Includes,
                   clang::FileID Target);

  clang::ASTContext& AST;
  clang::SourceManager& SM;
  EditSink& Sink;
  const std::vector<IncludeSite> Includes;
  const clang::FileID Target;
  const clang::FunctionDecl* MainFn = nullptr; // `main` defined in this file, if any

  // Inputs from the driver.
  // The Accelerator's name in main: the one main already declares, else the one the
  // migration declares.
  std::string AcceleratorName = "accelerator";
  // Project mode: main must construct the Accelerator although nothing in it uses it
  // (code in other files reaches it through current()).
  bool ForceAccelerator = false;
  // --keep-batch-norm: torch::nn::BatchNorm* stay (per-process statistics).
  bool KeepBatchNorm = false;
  bool ProjectMode = false; // UnitOptions::ProjectMode

  // --- analyses (Analyses.h): read with need<T>(), written with provide<T>() -----------
  // The running rule must declare T in the rule table (needs, or provides for both); a
  // rule that does not is a programming error and stops the process with its name. Outside
  // any rule (the driver, after the rules ran) analyses can be read.
  template <typename T> const T& need() const {
    checkAccess(T::Id, /*Write=*/false);
    return std::get<T>(Results);
  }
  template <typename T> T& provide() {
    checkAccess(T::Id, /*Write=*/true);
    return std::get<T>(Results);
  }
  // Set by the engine around each rule's run.
  void setRunningRule(const RuleEntry* Rule) { Running = Rule; }

  // An idiom the running rule recognised at Loc: from here to the end of the Match's
  // scope the rule must commit a change or warn (a NOLINT'd one counts), or say that it
  // settled the case without an edit of its own (settled(): the code needs nothing, or a
  // later rule writes the edit). A match that ends in nothing is never
  // silent: the user gets "<summary>: recognised here but not rewritten" with the rule id,
  // and with ACCEL_MIGRATE_AUDIT=1 (the lit tests set it) the tool stops with an internal
  // error instead, so every such path is found and given its own reason.
  class Match {
   public:
    Match(MigrationContext& Ctx, clang::SourceLocation Loc);
    ~Match();
    Match(const Match&) = delete;
    Match& operator=(const Match&) = delete;
    void settled() { Done = true; }

   private:
    MigrationContext& Ctx;
    clang::SourceLocation Loc;
    unsigned Before;
    bool Done = false;
  };

  // --- helpers -----------------------------------------------------------------------
  // Whether Loc is written in the target file (the name is historical: usually the main
  // file).
  bool inMainFile(clang::SourceLocation Loc) const;
  // How code at S, written by the change C, reaches the Accelerator: `accelerator` where
  // main's local Accelerator is in scope (main's body, lexically after it, not in a lambda
  // or local class), current() (below) elsewhere. Records the need.
  std::string accel(const clang::DynTypedNode& Node, Change& C);
  template <typename T> std::string accel(const T* Node, Change& C) {
    return accel(clang::DynTypedNode::create(*Node), C);
  }
  // `accelerate::Accelerator::current()`, written by C: the one place that writes the call,
  // so C records it (Change::CallsCurrent), from which the driver knows that the migrated
  // file reaches the Accelerator so (UnitResult::UsesCurrent).
  static std::string current(Change& C);
  // The device for code at Node, written by C: `<accel>.device()`, or, in code that runs
  // before main (see runsBeforeMain), `(accelerate::Accelerator::exists() ? ... :
  // torch::Device(kCPU))` which is safe during static initialisation.
  std::string deviceExpr(const clang::DynTypedNode& Node, Change& C);
  static std::string deviceBeforeMain(Change& C); // the expression safe before main
  // Whether code at Node runs during static initialisation, before main can have
  // constructed the Accelerator: initialisers of namespace-scope variables and static data
  // members, and default member initialisers, constructor initialisers and constructor
  // bodies of classes that have such an instance (directly or as a member). If so, *Var is
  // the namespace-scope variable whose initialiser holds Node (nullptr for class code).
  bool runsBeforeMain(const clang::DynTypedNode& Node, const clang::VarDecl** Var = nullptr);
  template <typename T> bool runsBeforeMain(const T* Node, const clang::VarDecl** Var = nullptr) {
    return runsBeforeMain(clang::DynTypedNode::create(*Node), Var);
  }
  // Variables with static storage (namespace scope or static members, in any user file of
  // the unit) whose object contains an object of class RD, with the member path to it:
  // {"options", ""}, {"config", ".train"}.
  struct StaticInstance {
    const clang::VarDecl* Var;
    std::string Path;      // member accesses from Var to the RD object
    bool Reachable = true; // no private member on the way: main can name it
  };
  std::vector<StaticInstance> staticInstances(const clang::CXXRecordDecl* RD);
  // How main (in this file) names a variable with static storage: its qualified name
  // without anonymous or inline namespaces; "" when main cannot name it (private member).
  std::string nameFromMain(const clang::VarDecl* V) const;
  // The function or lambda whose body contains Node (nullptr at namespace scope).
  const clang::FunctionDecl* enclosingFunction(const clang::DynTypedNode& Node,
                                               bool* InLambda = nullptr) const;
  clang::DynTypedNodeList parents(const clang::DynTypedNode& Node) const;
  // The parent as the code is written: implicit casts, temporaries, cleanups and implicit
  // constructor or conversion calls are passed through (clang's
  // TK_IgnoreUnlessSpelledInSource ascent). Null node at the top.
  clang::DynTypedNode writtenParent(const clang::DynTypedNode& Node) const;
  template <typename P, typename T> const P* writtenParentAs(const T* Node) const {
    return writtenParent(clang::DynTypedNode::create(*Node)).template get<P>();
  }
  // The first parent clang records, as a P (nullptr when it is something else).
  template <typename P, typename T> const P* parentAs(const T* Node) const {
    auto Ps = parents(clang::DynTypedNode::create(*Node));
    return Ps.empty() ? nullptr : Ps[0].template get<P>();
  }

  // --- walks up the parent chain -------------------------------------------------------
  // Which parents a walk follows.
  enum class Ascent {
    First,   // the first parent clang records (implicit nodes included): the usual case
    Written, // writtenParent: the code as written, implicit nodes passed through
    // The last parent that is a declaration, else the first: a default argument or member
    // initialiser is also a child of every use, and the declaration that owns it decides.
    OwningDecl,
    // Every parent, a level at a time; a declaration ends its branch (what lies above it is
    // another context). For expressions clang keeps under several parents.
    All,
  };
  // How many ancestors a walk visits unless its caller says otherwise. A walk that finds
  // nothing climbs to the translation unit, so the cap bounds the cost of a walk per node
  // on machine-written code (a sum of thousands of terms nests that deep) rather than
  // deciding anything: written code nests far less than this, and a walk that reaches the
  // cap answers as at the top (nothing found).
  static constexpr int MaxAncestorDepth = 512;
  // Calls Visit(Parent, Child) for the ancestors of Node, nearest first (Child: the node
  // the walk came up from, Node itself at first), until Visit returns a value (a
  // std::optional holding one), which the walk returns; std::nullopt at the top or after
  // MaxDepth levels.
  template <typename F>
  auto walkAncestors(const clang::DynTypedNode& Node, F Visit, Ascent How = Ascent::First,
                     int MaxDepth = MaxAncestorDepth) const -> decltype(Visit(Node, Node)) {
    llvm::SmallVector<clang::DynTypedNode, 1> Level{Node}, Next;
    for (int Depth = 0; Depth < MaxDepth && !Level.empty(); ++Depth) {
      Next.clear();
      for (const clang::DynTypedNode& Child : Level)
        for (const clang::DynTypedNode& P : ascend(Child, How)) {
          if (auto Result = Visit(P, Child))
            return Result;
          if (How != Ascent::All || !P.get<clang::Decl>())
            Next.push_back(P);
        }
      std::swap(Level, Next);
    }
    return std::nullopt;
  }
  // The nearest ancestor for which Stop(Parent, Child) holds; a null node if none does.
  template <typename F>
  clang::DynTypedNode findAncestor(const clang::DynTypedNode& Node, F Stop,
                                   Ascent How = Ascent::First,
                                   int MaxDepth = MaxAncestorDepth) const {
    auto Found = walkAncestors(
        Node,
        [&](const clang::DynTypedNode& P,
            const clang::DynTypedNode& Child) -> std::optional<clang::DynTypedNode> {
          if (Stop(P, Child))
            return P;
          return std::nullopt;
        },
        How, MaxDepth);
    return Found.value_or(clang::DynTypedNode());
  }
  // The first ancestor that is none of Skip (the implicit wrappers a caller looks through),
  // with *Child the node just below it; a null node at the top.
  template <typename... Skip>
  clang::DynTypedNode parentPast(const clang::DynTypedNode& Node,
                                 clang::DynTypedNode* Child = nullptr) const {
    return findAncestor(Node, [&](const clang::DynTypedNode& P, const clang::DynTypedNode& C) {
      if ((P.get<Skip>() || ...))
        return false;
      if (Child)
        *Child = C;
      return true;
    });
  }
  // The block that declares the local variable V (the parent of its DeclStmt, which *DS
  // receives), or nullptr for a variable not declared directly in a block.
  const clang::CompoundStmt* declaringBlock(const clang::VarDecl* V,
                                            const clang::DeclStmt** DS = nullptr) const;
  // The statement that directly sits in a CompoundStmt (or is a loop/if body) containing E.
  const clang::Stmt* enclosingStatement(const clang::Stmt* E,
                                        const clang::Stmt** Container = nullptr) const;
  // Source text of a token range, as written in the file ("" if it is not in the file).
  std::string text(clang::SourceRange TokenRange) const;
  // Indentation of the line that holds Loc.
  std::string indentOf(clang::SourceLocation Loc) const;
  // Records a rewrite; false when refused (macro expansion, overlap).
  bool commit(const Change& C) { return Sink.commit(C); }
  void warn(clang::SourceLocation Loc, const char* RuleId, llvm::StringRef Message,
            bool Comment = true) {
    Sink.warn(Loc, RuleId, Message, Comment);
  }
  // A note for code that needs no change (EditSink::note): never a comment, never a
  // --check finding.
  void note(clang::SourceLocation Loc, const char* RuleId, llvm::StringRef Message) {
    Sink.note(Loc, RuleId, Message);
  }

 private:
  void checkAccess(AnalysisId A, bool Write) const;
  // The parents of Node that a walk of kind How follows (walkAncestors).
  llvm::SmallVector<clang::DynTypedNode, 1> ascend(const clang::DynTypedNode& Node,
                                                   Ascent How) const;
  const RuleEntry* Running = nullptr;
  std::tuple<PreparedLoaders, PreparedObjects, ShardedBatches, ReducedMetrics, AcceleratorRequests,
             AcceleratorDecision>
      Results;
  void findMainScopes();
  void collectStaticObjects();
  // Where `AcceleratorName` may be used: main's body after the Accelerator's declaration,
  // minus the lambdas and local classes in it.
  clang::SourceLocation ScopeBegin, ScopeEnd;
  std::vector<clang::SourceRange> Hidden;
  bool StaticObjectsCollected = false;
  std::vector<const clang::VarDecl*> StaticVars; // namespace scope / static members
};

} // namespace accel
