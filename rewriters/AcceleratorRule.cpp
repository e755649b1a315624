// accelerate-accelerator: `accelerate::Accelerator accelerator;` as the first statement of
// main, when some rewrite in main names it. Code outside main uses
// accelerate::Accelerator::current(), so no signature changes. Device variables at
// namespace scope (initialised before main, when no Accelerator exists yet) are set here,
// right after the Accelerator is created.

#include "RuleSupport.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo AcceleratorInfo = {
    "accelerate-accelerator", "declare the Accelerator at the start of main",
    "one accelerate::Accelerator per process sets up the process group and the device; "
    "code outside main reaches it through accelerate::Accelerator::current()"};

void runAccelerator(MigrationContext& Ctx, const RuleInfo& Info) {
  const FunctionDecl* Main = Ctx.MainFn;
  if (!Main)
    return;
  const auto* Body = dyn_cast_or_null<CompoundStmt>(Main->getBody());
  if (!Body)
    return;
  // A second run over migrated code must not declare a second Accelerator.
  const VarDecl* Existing = existingAccelerator(Body);
  bool NeedGlobals = !Ctx.DeferredGlobals.empty();
  bool NeedDecl = !Existing && (Ctx.NeedsLocalAccelerator || NeedGlobals);
  if (!NeedDecl && !NeedGlobals)
    return;
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
  if (NeedGlobals) {
    Ctx.NeedsRuntime = true;
    // Namespace-scope devices were initialised before the Accelerator existed.
    for (const VarDecl* G : Ctx.DeferredGlobals)
      Text += "\n" + Indent + G->getQualifiedNameAsString() + " = " + Name + ".device();";
  }
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
  Ctx.commit(C);
}

}  // namespace accel
