#pragma once
// Text edits of one file (the main file, or a header of the unit), grouped into
// all-or-nothing changes, plus the findings (warnings) the rules report. Rules never touch
// a buffer directly: a change whose range lies in a macro expansion (and does not map to
// the file as a whole) or outside that file is refused here, once, for every rule.

#include <clang/Basic/LangOptions.h>
#include <clang/Basic/SourceLocation.h>
#include <clang/Basic/SourceManager.h>
#include <llvm/ADT/StringRef.h>

#include <map>
#include <string>
#include <vector>

namespace accel {

struct Edit {
  unsigned Offset = 0;
  unsigned Length = 0;
  std::string Text;
};

// One rewrite by one rule: applied completely or not at all.
class Change {
 public:
  Change(std::string RuleId, clang::SourceLocation Where)
      : RuleId(std::move(RuleId)), Where(Where) {}
  // Replaces the tokens from Range.getBegin() to the end of the token at Range.getEnd().
  void replace(clang::SourceRange TokenRange, std::string Text);
  void replace(clang::CharSourceRange Range, std::string Text);
  void insertBefore(clang::SourceLocation TokenLoc, std::string Text);
  void insertAfter(clang::SourceLocation TokenLoc, std::string Text); // after that token
  bool empty() const { return Parts.empty(); }

  struct Part {
    clang::CharSourceRange Range;
    std::string Text;
    enum Kind { Replace, InsertBefore, InsertAfter } K;
  };
  std::string RuleId;
  clang::SourceLocation Where;
  std::vector<Part> Parts;
  // The change's code calls accelerate::Accelerator::current() (set where the rules write
  // that call: MigrationContext::current). The driver learns from the changes apply() kept
  // whether the migrated file reaches the Accelerator so, never from the text, which
  // comments and strings can hold too.
  bool CallsCurrent = false;
};

struct Finding {
  std::string RuleId;
  std::string Message;
  unsigned Line = 0, Column = 0;
  unsigned Offset = 0;       // in the main file (expansion location)
  bool Acknowledged = false; // its `// accel-migrate(<id>)` comment is already there
  // A note (EditSink::note): something the user should know that needs no change, so it
  // is printed as `note:` but never counted as a warning or a --check finding.
  bool IsNote = false;
};

// A change that apply() kept, as offsets into the main file. Comment insertions that
// belong to a warning carry the warning's id with "#comment" appended.
struct AppliedChange {
  std::string RuleId;
  unsigned Offset = 0; // of Change::Where (expansion location)
  std::vector<Edit> Edits;
  bool CallsCurrent = false; // Change::CallsCurrent
  bool isComment() const;
  std::string baseRuleId() const;
};

// True when a `NOLINT`, `NOLINT(<checks>)` on Line, or `NOLINTNEXTLINE[(<checks>)]` on the
// line before, names RuleId (globs such as `accelerate-*` and `*` work as in clang-tidy).
bool isSuppressedByNolint(llvm::StringRef Buffer, unsigned Offset, llvm::StringRef RuleId);

class EditSink {
 public:
  // Target: the file edited (default: the main file).
  EditSink(clang::SourceManager& SM, const clang::LangOptions& LO,
           clang::FileID Target = clang::FileID());

  // Accepts the change when every part maps to the main file outside macro bodies;
  // otherwise records a warning at Change::Where and returns false.
  bool commit(const Change& C);
  // A warning for code left as it was; with Comment, a `// accel-migrate(<id>): ...`
  // line is written above the statement at Loc (once: not when already there).
  void warn(clang::SourceLocation Loc, llvm::StringRef RuleId, llvm::StringRef Message,
            bool Comment = true);
  // A note at Loc: reported with the rule id like a warning, but the code needs no change,
  // so no comment is written and migrated code still checks clean.
  void note(clang::SourceLocation Loc, llvm::StringRef RuleId, llvm::StringRef Message);

  // The file after applying all accepted changes; changes that overlap an earlier one
  // are dropped (whole) and reported.
  std::string apply();

  const std::vector<Finding>& findings() const { return Findings; }
  // After apply(): the changes it kept, in the order they were committed.
  const std::vector<AppliedChange>& applied() const { return Applied; }
  const std::map<std::string, unsigned>& rewritesPerRule() const { return Counts; }
  unsigned rewriteCount() const;
  // Changes committed (accepted, refused or NOLINT'd) and warnings given so far: a rule
  // that matched an idiom compares it before and after (MigrationContext::Match).
  unsigned outcomes() const { return Outcomes; }
  clang::FileID mainFile() const { return Main; }
  clang::SourceManager& sourceManager() const { return SM; }
  const clang::LangOptions& langOptions() const { return LO; }

 private:
  struct Accepted {
    std::string RuleId;
    clang::SourceLocation Where;
    std::vector<Edit> Edits;
    bool CallsCurrent = false;
  };

  bool toEdit(const Change::Part& P, Edit& Out) const;
  bool suppressed(clang::SourceLocation Loc, llvm::StringRef RuleId) const;
  unsigned mainOffset(clang::SourceLocation Loc) const;
  void addFinding(clang::SourceLocation Loc, llvm::StringRef RuleId, llvm::StringRef Msg,
                  bool IsNote = false);

  clang::SourceManager& SM;
  const clang::LangOptions& LO;
  clang::FileID Main;
  std::vector<Accepted> Changes;
  std::vector<Finding> Findings;
  std::vector<AppliedChange> Applied;
  std::map<std::string, unsigned> Counts;
  unsigned Outcomes = 0;
};

} // namespace accel
