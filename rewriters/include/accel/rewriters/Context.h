#pragma once
// What the rules share while migrating one translation unit: the AST (restricted to the
// main file), the edit sink, the facts earlier rules found (which variables are prepared
// models, loaders, device variables) and how code at a place reaches the Accelerator.

#include "accel/rewriters/Analyses.h"
#include "accel/rewriters/Edits.h"
#include "accel/rewriters/Rule.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ParentMapContext.h>
#include <llvm/ADT/SmallPtrSet.h>

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
  // How code at S reaches the Accelerator: `accelerator` where main's local Accelerator is
  // in scope (main's body, lexically after it, not in a lambda or local class),
  // `accelerate::Accelerator::current()` elsewhere. Records the need.
  std::string accel(const clang::DynTypedNode& Node);
  template <typename T> std::string accel(const T* Node) {
    return accel(clang::DynTypedNode::create(*Node));
  }
  // The device for code at Node: `<accel>.device()`, or, in code that runs before main
  // (see runsBeforeMain), `(accelerate::Accelerator::exists() ? ... : torch::Device(kCPU))`
  // which is safe during static initialisation.
  std::string deviceExpr(const clang::DynTypedNode& Node);
  static std::string deviceBeforeMain(); // the expression safe before main
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
  // The block that declares the local variable V (the parent of its DeclStmt, which *DS
  // receives), or nullptr for a variable not declared directly in a block.
  const clang::CompoundStmt* declaringBlock(const clang::VarDecl* V,
                                            const clang::DeclStmt** DS = nullptr) const;
  template <typename T> const clang::Stmt* parentStmt(const T* Node) const {
    auto Ps = AST.getParents(*Node);
    return Ps.empty() ? nullptr : Ps[0].template get<clang::Stmt>();
  }
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
