#pragma once
// Declarations with several declarators (`T a, b = f();`, members `T a_, b_;`) share one
// written type: a rule that retypes one of them must not retype the others with it.
// Not part of the library's interface.

#include "analyses/RuleSupport.h"

namespace accel {

// Every declarator declared together with D (D included, in source order).
std::vector<const clang::DeclaratorDecl*> declaratorGroup(MigrationContext& Ctx,
                                                          const clang::DeclaratorDecl* D);

// Gives the declarators of a group new types (an empty string keeps a declarator's type):
// one replacement of the shared type when every declarator gets the same one, otherwise the
// declaration is split into one declaration per declarator, in the same order. Returns
// false (C unchanged) when the declarators differ in their own parts (`T a, *b`) or the
// text is not in the file.
bool retypeGroup(MigrationContext& Ctx, Change& C,
                 const std::vector<const clang::DeclaratorDecl*>& Group,
                 const std::vector<std::string>& NewTypes);

} // namespace accel
