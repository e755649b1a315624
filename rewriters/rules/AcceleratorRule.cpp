// accelerate-accelerator: `accelerate::Accelerator accelerator;` as the first statement of
// main, when some rewrite in main names it (or project mode says code in other files
// needs it). Code outside main uses accelerate::Accelerator::current(), so no signature
// changes. Objects that exist before main (namespace-scope devices, static objects'
// device members, globals to prepare) are set here, right after the Accelerator.

#include "analyses/RuleSupport.h"

#include <llvm/Support/Path.h>

#include <algorithm>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo AcceleratorInfo = {
    "accelerate-accelerator", "declare the Accelerator at the start of main",
    "one accelerate::Accelerator per process sets up the process group and the device; "
    "code outside main reaches it through accelerate::Accelerator::current()",
    /*RunsWithoutLibTorch=*/true};

// A call to backward() in the program's own headers that this file includes, or nullptr.
// File mode only (project mode knows which files main reaches, Project.cpp). Such a header,
// migrated (file mode migrates each file alone), reaches the Accelerator
// through current(), which throws unless main() constructed one first: main() here must,
// even when nothing in this file itself needs it (issue 29: a main() that only calls a
// classifier's compile()/fit() defined in a header aborted at start once migrated).
const CallExpr* headerTraining(MigrationContext& Ctx) {
  auto Backward = cxxMemberCallExpr(callee(cxxMethodDecl(ast_matchers::hasName("backward"))),
                                    unless(isInTemplateInstantiation()))
                      .bind("c");
  for (const Decl* D : programHeaderDecls(Ctx))
    for (const auto& M : match(decl(forEachDescendant(Backward)), *D, Ctx.AST))
      return M.getNodeAs<CallExpr>("c");
  return nullptr;
}

void runAccelerator(MigrationContext& Ctx, const RuleInfo& Info) {
  const AcceleratorRequests& Asked = Ctx.need<AcceleratorRequests>();
  AcceleratorDecision& Decided = Ctx.provide<AcceleratorDecision>();
  Decided.UsesRuntime = Asked.Runtime; // a file without main too (a header, a library)
  const FunctionDecl* Main = Ctx.MainFn;
  if (!Main)
    return;
  const auto* Body = dyn_cast_or_null<CompoundStmt>(Main->getBody());
  if (!Body)
    return;
  // A second run over migrated code must not declare a second Accelerator.
  const VarDecl* Existing = existingAccelerator(Body);
  Decided.MainHasAccelerator = Existing != nullptr;
  bool NeedGlobals = !Asked.DeferredGlobals.empty() || !Asked.MainPrologue.empty();
  // Also when only other functions of the file use it (through current()): main must
  // have constructed it before they run.
  bool NeedDecl =
      !Existing && (Asked.Local || NeedGlobals || Ctx.ForceAccelerator || Asked.Runtime);
  const CallExpr* HeaderTrains =
      Existing || NeedDecl || Ctx.ProjectMode ? nullptr : headerTraining(Ctx);
  NeedDecl = NeedDecl || HeaderTrains;
  if (!NeedDecl && !NeedGlobals)
    return;
  if (HeaderTrains)
    Ctx.note(Body->getLBracLoc(), Info.Id,
             "main() constructs the Accelerator although this file needs none itself: the "
             "program's header " +
                 llvm::sys::path::filename(Ctx.SM.getFilename(HeaderTrains->getBeginLoc())).str() +
                 " trains (backward() at line " +
                 std::to_string(Ctx.SM.getExpansionLineNumber(HeaderTrains->getBeginLoc())) +
                 "); migrated, it reaches the Accelerator through "
                 "accelerate::Accelerator::current()");
  MigrationContext::Match Matched(Ctx, Existing ? Existing->getBeginLoc() : Body->getLBracLoc());
  std::string Name = Existing ? Existing->getName().str() : "accelerator";
  SourceLocation At;
  std::string Indent;
  if (Existing) {
    At = Existing->getEndLoc();
    Indent = Ctx.indentOf(Existing->getBeginLoc());
  } else {
    At = Body->getLBracLoc();
    Indent = Body->body_empty() ? "  " : Ctx.indentOf(Body->body_front()->getBeginLoc());
  }
  std::string Text;
  if (NeedDecl)
    Text += "\n" + Indent + "accelerate::Accelerator " + Name + ";";
  // Objects that exist before main (namespace-scope devices, static objects' members,
  // globals to prepare) were initialised before the Accelerator existed: set them here,
  // in one place, in this order.
  std::vector<const VarDecl*> Globals(Asked.DeferredGlobals.begin(), Asked.DeferredGlobals.end());
  std::sort(Globals.begin(), Globals.end(), [&Ctx](const VarDecl* A, const VarDecl* B) {
    return Ctx.SM.isBeforeInTranslationUnit(A->getLocation(), B->getLocation());
  });
  for (const VarDecl* G : Globals)
    Text += "\n" + Indent + Ctx.nameFromMain(G) + " = " + Name +
            (isDeviceTypeEnum(G->getType()) ? ".device().type();" : ".device();");
  for (std::string Line : Asked.MainPrologue) {
    for (size_t P = Line.find("{acc}"); P != std::string::npos; P = Line.find("{acc}"))
      Line.replace(P, 5, Name);
    Text += "\n" + Indent + Line;
  }
  Decided.UsesRuntime = true;
  Change C(Info.Id, At);
  if (Existing) {
    // After the declaration's semicolon.
    SourceLocation Semi = nextTokenLoc(Ctx, At, tok::semi);
    if (Semi.isInvalid())
      return;
    C.insertAfter(Semi, Text);
  } else {
    C.insertAfter(At, Text);
  }
  if (Ctx.commit(C) && NeedDecl)
    Decided.MainHasAccelerator = true;
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule AcceleratorRuleEntry({
    AcceleratorInfo,
    runAccelerator,
    /*Needs=*/{AnalysisId::AcceleratorRequests},
    /*Provides=*/{AnalysisId::AcceleratorDecision},
    /*Rank=*/180,
});

} // namespace accel
