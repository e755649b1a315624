// Retyping declarators that share a declaration (see DeclaratorGroups.h).

#include "analyses/DeclaratorGroups.h"

using namespace clang;

namespace accel {

std::vector<const DeclaratorDecl*> declaratorGroup(MigrationContext& Ctx, const DeclaratorDecl* D) {
  std::vector<const DeclaratorDecl*> Out;
  if (const auto* DS = Ctx.parentAs<DeclStmt>(D)) {
    for (const Decl* X : DS->decls())
      if (const auto* DD = dyn_cast<DeclaratorDecl>(X))
        Out.push_back(DD);
    return Out;
  }
  // Members and namespace-scope variables: the declarators that start where D starts.
  for (const Decl* X : D->getDeclContext()->decls())
    if (const auto* DD = dyn_cast<DeclaratorDecl>(X))
      if (DD->getBeginLoc() == D->getBeginLoc())
        Out.push_back(DD);
  if (Out.empty())
    Out.push_back(D);
  return Out;
}

static SourceRange typeRange(const DeclaratorDecl* D) {
  return D->getTypeSourceInfo() ? D->getTypeSourceInfo()->getTypeLoc().getSourceRange()
                                : SourceRange();
}

bool retypeGroup(MigrationContext& Ctx, Change& C, const std::vector<const DeclaratorDecl*>& Group,
                 const std::vector<std::string>& NewTypes) {
  SourceRange Shared = typeRange(Group.front());
  if (Shared.isInvalid())
    return false;
  for (const DeclaratorDecl* D : Group)
    if (typeRange(D) != Shared || D->getLocation().isMacroID())
      return false; // `T a, *b`: each declarator has parts of its own
  std::string Type = Ctx.text(Shared);
  if (Type.empty())
    return false;
  Change Tmp(C.RuleId, C.Where); // merged into C only when every part is found
  bool Same = llvm::all_of(NewTypes, [&](const std::string& T) { return T == NewTypes.front(); });
  if (Same) {
    if (!NewTypes.front().empty())
      C.replace(Shared, NewTypes.front());
    return true;
  }
  // `static const T a, b;`: the specifiers before the type go with every declaration.
  std::string Prefix;
  SourceLocation Begin = Group.front()->getBeginLoc();
  if (Begin != Shared.getBegin()) {
    CharSourceRange R = Lexer::makeFileCharRange(
        CharSourceRange::getCharRange(Begin, Shared.getBegin()), Ctx.SM, Ctx.AST.getLangOpts());
    if (R.isInvalid())
      return false;
    Prefix = Lexer::getSourceText(R, Ctx.SM, Ctx.AST.getLangOpts()).str();
  }
  std::string Indent = Ctx.indentOf(Begin);
  if (!NewTypes.front().empty())
    Tmp.replace(Shared, NewTypes.front());
  for (size_t K = 1; K < Group.size(); ++K) {
    SourceLocation Comma = nextTokenLoc(Ctx, Group[K - 1]->getEndLoc(), tok::comma);
    if (Comma.isInvalid())
      return false;
    const std::string& T = NewTypes[K].empty() ? Type : NewTypes[K];
    Tmp.replace(CharSourceRange::getCharRange(Comma, Group[K]->getLocation()),
                ";\n" + Indent + Prefix + T + " ");
  }
  C.Parts.insert(C.Parts.end(), Tmp.Parts.begin(), Tmp.Parts.end());
  return true;
}

} // namespace accel
