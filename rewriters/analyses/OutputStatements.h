#pragma once
// The finding half of accelerate-main-process (rules/MainProcessRule.cpp edits what this
// finds): which statements write output (files, images, directories, the console), which
// conditions hold only on the main process, the file a save or a load names, whether a
// stream's state is checked and whether a wait for everyone already separates a save from a
// later statement. Nothing here edits.
// Not part of the library's interface.

#include "analyses/RuleSupport.h"

#include <string>
#include <vector>

namespace accel {

// The bodies of an if (then and else), for, while or range-for statement; none otherwise.
std::vector<const clang::Stmt*> bodiesOf(const clang::Stmt* S);

// `std::cout` itself.
bool isCout(const clang::Stmt* S);

// A std::basic_ofstream, through a reference too.
bool isOfstreamType(clang::QualType T);

// A call that writes output: torch::save, printf/puts, fmt::print(ln), directory creation,
// image writes (imwrite, stbi_write_*, save_image) and OutputArchive::save_to.
bool isOutputCall(const clang::CallExpr* C);

// Whether a condition holds only on the main process: `is_main_process()`,
// `is_local_main_process()`, `process_index() == 0`, or a conjunction with one of them.
// Not under `!` or `||`, where the guarded code runs on other processes too.
bool onlyOnMainProcess(const clang::Expr* E);

// Whether S is in the then-branch of an `if` of the same function or lambda whose condition
// holds only on the main process (a lambda defined there may run anywhere).
bool underMainProcessTest(MigrationContext& Ctx, const clang::Stmt* S);

// The file a call writes (Save) or reads: its path argument as written, blanks removed
// ("" when the call is neither). Saves: torch::save, accelerator.save, save_to; reads:
// torch::load, load_from.
std::string filePathOf(MigrationContext& Ctx, const clang::CallExpr* Call, bool Save);

// Whether the program tests the state of stream V anywhere in its function (`!f`,
// `f.is_open()`, `if (f)`, ...): opened on the main process only, it would look like a
// failed open on the others.
bool streamStateChecked(const clang::VarDecl* V);

// Whether a wait_for_everyone() call lies between the save and the statement At.
bool waitsBetween(MigrationContext& Ctx, const clang::CallExpr* Save, const clang::Stmt* At);

} // namespace accel
