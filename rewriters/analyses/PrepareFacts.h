#pragma once
// What accelerate-prepare (rules/PrepareRule.cpp) asks about the code before it decides
// where prepare calls go: which objects are wanted (models with evidence of training,
// optimizers, schedulers) and which the program prepares already, which statements make,
// load, use or train an object, and whether a member holds an object after construction.
// Only the AST is read here; the rule decides and writes every edit and warning (the
// comments in PrepareFacts.cpp say why each answer is what it is). Not part of the
// library's interface.

#include "analyses/RuleSupport.h"

#include <llvm/ADT/SmallPtrSet.h>

#include <utility>
#include <vector>

namespace accel {

class PrepareFacts {
 public:
  explicit PrepareFacts(MigrationContext& Ctx);

  // The objects prepared in each
  // block (locals in the block that declares them, globals in main's body), blocks in the
  // order their first object is met.
  struct BlockObjects {
    const clang::CompoundStmt* Block;
    std::vector<const clang::VarDecl*> Vars;
  };
  std::vector<BlockObjects> objectsByBlock() const;
  // The classes of this file (not modules) with wanted members the program does not prepare
  // yet (Fields), and those of them null after every constructor (Later).
  struct ClassMembers {
    const clang::CXXRecordDecl* Class;
    std::vector<const clang::FieldDecl*> Fields, Later;
  };
  std::vector<ClassMembers> membersByClass() const;

  // Where the objects Ready of Block are prepared: after each statement, the objects whose
  // prepare call follows it (PrepareFacts.cpp says how the points are chosen). Makes: each
  // statement that makes one of them and the object, in order (the rule warns where such a
  // statement also trains).
  using PreparePoints =
      std::vector<std::pair<const clang::Stmt*, std::vector<const clang::VarDecl*>>>;
  PreparePoints
  preparePoints(const clang::CompoundStmt* Block, const std::vector<const clang::VarDecl*>& Ready,
                std::vector<std::pair<const clang::Stmt*, const clang::VarDecl*>>& Makes) const;

  // A model, optimizer or scheduler the rule prepares (a model only with evidence).
  bool wanted(const clang::ValueDecl* D) const;
  // Passed to accelerator.prepare(...) by the program already (a second run).
  bool alreadyPrepared(const clang::ValueDecl* D) const { return Already.count(D) > 0; }

  // Statements: S declares or (re)assigns V; S loads a file into V; S names V; S trains.
  bool defines(const clang::Stmt* S, const clang::VarDecl* V) const;
  static bool loadsInto(const clang::Stmt* S, const clang::VarDecl* V);
  static bool refersTo(const clang::Stmt* S, const clang::VarDecl* V);
  bool trains(const clang::Stmt* S, int Depth = 0) const;
  // The last statement of Block that declares or (re)assigns one of Vars (nullptr: none).
  const clang::Stmt* lastDefinition(const clang::CompoundStmt* Block,
                                    const std::vector<const clang::VarDecl*>& Vars) const;
  static bool isNullInit(const clang::Expr* E);
  bool assignsTo(const clang::Stmt* S, const clang::ValueDecl* V, int Depth = 0) const;
  bool assignedIn(const clang::CompoundStmt* Block, const clang::ValueDecl* V) const;
  // F is assigned on every path through S.
  bool definitelyAssigns(const clang::Stmt* S, const clang::ValueDecl* F) const;

  // Members: F holds an object at the end of Ctor (nullptr: the implicit constructor), or
  // of some constructor of RD; RD's user constructors with a body in this file.
  bool existsAfter(const clang::CXXConstructorDecl* Ctor, const clang::FieldDecl* F) const;
  bool existsAfterSomeConstructor(const clang::CXXRecordDecl* RD, const clang::FieldDecl* F) const;
  std::vector<const clang::CXXConstructorDecl*> constructors(const clang::CXXRecordDecl* RD) const;

  // A `new torch::Device(...)` made from device constants only.
  static bool isConstantDevice(const clang::CXXConstructExpr* Init);

 private:
  void collectEvidence();
  void collectAlreadyPrepared();
  static bool nullable(const clang::FieldDecl* F);
  static bool nullInit(const clang::FieldDecl* F, const clang::Expr* Init);

  MigrationContext& Ctx;
  llvm::SmallPtrSet<const clang::ValueDecl*, 8> Evidence, Already;
};

} // namespace accel
