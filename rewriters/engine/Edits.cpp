#include "accel/rewriters/engine/Edits.h"

#include <clang/Lex/Lexer.h>

#include <algorithm>
#include <cctype>
#include <tuple>

using namespace clang;

namespace accel {

void Change::replace(SourceRange TokenRange, std::string Text) {
  Parts.push_back({CharSourceRange::getTokenRange(TokenRange), std::move(Text), Part::Replace});
}
void Change::replace(CharSourceRange Range, std::string Text) {
  Parts.push_back({Range, std::move(Text), Part::Replace});
}
void Change::insertBefore(SourceLocation TokenLoc, std::string Text) {
  Parts.push_back(
      {CharSourceRange::getTokenRange(TokenLoc, TokenLoc), std::move(Text), Part::InsertBefore});
}
void Change::insertAfter(SourceLocation TokenLoc, std::string Text) {
  Parts.push_back(
      {CharSourceRange::getTokenRange(TokenLoc, TokenLoc), std::move(Text), Part::InsertAfter});
}

EditSink::EditSink(SourceManager& SM, const LangOptions& LO, FileID Target)
    : SM(SM), LO(LO), Main(Target.isValid() ? Target : SM.getMainFileID()) {}

bool AppliedChange::isComment() const { return StringRef(RuleId).ends_with("#comment"); }
std::string AppliedChange::baseRuleId() const {
  return isComment() ? RuleId.substr(0, RuleId.size() - 8) : RuleId;
}

// clang-tidy's glob: `*` matches any run of characters; a leading `-` is not meaningful
// inside NOLINT and is taken literally.
static bool globMatches(StringRef Glob, StringRef Name) {
  if (Glob.empty())
    return Name.empty();
  if (Glob[0] == '*') {
    for (size_t I = 0; I <= Name.size(); ++I)
      if (globMatches(Glob.drop_front(), Name.drop_front(I)))
        return true;
    return false;
  }
  return !Name.empty() && Glob[0] == Name[0] && globMatches(Glob.drop_front(), Name.drop_front());
}

// Looks for Marker in Line and, when it is there, whether its check list names RuleId.
static bool lineSuppresses(StringRef Line, StringRef Marker, StringRef RuleId) {
  size_t Pos = 0;
  while ((Pos = Line.find(Marker, Pos)) != StringRef::npos) {
    StringRef Rest = Line.drop_front(Pos + Marker.size());
    Pos += Marker.size();
    // NOLINT must not be the start of NOLINTNEXTLINE / NOLINTBEGIN here.
    if (!Rest.empty() && (std::isalnum(static_cast<unsigned char>(Rest[0])) || Rest[0] == '_'))
      continue;
    if (!Rest.starts_with("("))
      return true; // bare NOLINT: every check
    StringRef List = Rest.drop_front().split(')').first;
    SmallVector<StringRef, 4> Globs;
    List.split(Globs, ',');
    for (StringRef G : Globs)
      if (globMatches(G.trim(), RuleId))
        return true;
  }
  return false;
}

bool isSuppressedByNolint(StringRef Buf, unsigned Offset, StringRef RuleId) {
  if (Offset > Buf.size())
    return false;
  size_t Begin = Buf.rfind('\n', Offset); // the last newline before Offset
  Begin = Begin == StringRef::npos ? 0 : Begin + 1;
  size_t End = Buf.find('\n', Offset);
  StringRef Line = Buf.slice(Begin, End == StringRef::npos ? Buf.size() : End);
  if (lineSuppresses(Line, "NOLINT", RuleId))
    return true;
  if (Begin == 0)
    return false;
  size_t PrevBegin = Buf.rfind('\n', Begin - 1); // before the newline ending that line
  PrevBegin = PrevBegin == StringRef::npos ? 0 : PrevBegin + 1;
  return lineSuppresses(Buf.slice(PrevBegin, Begin - 1), "NOLINTNEXTLINE", RuleId);
}

unsigned EditSink::mainOffset(SourceLocation Loc) const {
  SourceLocation L = SM.getExpansionLoc(Loc);
  return SM.getFileID(L) == Main ? SM.getFileOffset(L) : 0;
}

bool EditSink::suppressed(SourceLocation Loc, StringRef RuleId) const {
  SourceLocation L = SM.getExpansionLoc(Loc);
  if (L.isInvalid() || SM.getFileID(L) != Main)
    return false;
  return isSuppressedByNolint(SM.getBufferData(Main), SM.getFileOffset(L), RuleId);
}

bool EditSink::toEdit(const Change::Part& P, Edit& Out) const {
  // makeFileCharRange maps a range inside one macro argument back to the file and refuses
  // ranges that cross or lie inside macro bodies: exactly the edits that would break.
  CharSourceRange R = Lexer::makeFileCharRange(P.Range, SM, LO);
  if (R.isInvalid())
    return false;
  auto [BFile, BOff] = SM.getDecomposedLoc(R.getBegin());
  auto [EFile, EOff] = SM.getDecomposedLoc(R.getEnd());
  if (BFile != Main || EFile != Main || EOff < BOff)
    return false;
  switch (P.K) {
  case Change::Part::Replace:
    Out = {BOff, EOff - BOff, P.Text};
    break;
  case Change::Part::InsertBefore:
    Out = {BOff, 0, P.Text};
    break;
  case Change::Part::InsertAfter:
    Out = {EOff, 0, P.Text};
    break;
  }
  return true;
}

// Two edits touch the same text: ranges that intersect, or an insertion strictly inside the
// other's range (an insertion at either end of a replacement is well placed: before it, or
// after it).
static bool editsOverlap(const Edit& A, const Edit& B) {
  unsigned B1 = A.Offset, E1 = A.Offset + A.Length;
  unsigned B2 = B.Offset, E2 = B.Offset + B.Length;
  if (A.Length && B.Length)
    return B1 < E2 && B2 < E1;
  if (A.Length)
    return B2 > B1 && B2 < E1;
  if (B.Length)
    return B1 > B2 && B1 < E2;
  return false;
}

bool EditSink::commit(const Change& C) {
  if (!C.empty())
    ++Outcomes;
  // A NOLINT'd finding is neither rewritten nor reported, as clang-tidy would do.
  if (suppressed(C.Where, C.RuleId))
    return false;
  Accepted A{C.RuleId, C.Where, {}, C.CallsCurrent};
  for (const auto& P : C.Parts) {
    Edit E;
    if (!toEdit(P, E)) {
      addFinding(C.Where, C.RuleId,
                 "not rewritten: the code is inside a macro expansion; migrate it by hand");
      return false;
    }
    A.Edits.push_back(std::move(E));
  }
  if (A.Edits.empty())
    return false;
  // All or nothing holds inside a change too: apply() would keep both edits of a pair that
  // overlap and splice garbage, so the change is refused as overlaps between changes are.
  for (size_t I = 0; I < A.Edits.size(); ++I)
    for (size_t J = I + 1; J < A.Edits.size(); ++J)
      if (editsOverlap(A.Edits[I], A.Edits[J])) {
        addFinding(C.Where, C.RuleId,
                   "not rewritten: two edits of this rewrite overlap (a bug in the rule, please "
                   "report it); migrate it by hand");
        return false;
      }
  Changes.push_back(std::move(A));
  return true;
}

void EditSink::addFinding(SourceLocation Loc, StringRef RuleId, StringRef Msg, bool IsNote) {
  if (suppressed(Loc, RuleId))
    return;
  SourceLocation L = SM.getExpansionLoc(Loc);
  Finding F{RuleId.str(), Msg.str(), SM.getSpellingLineNumber(L), SM.getSpellingColumnNumber(L),
            mainOffset(Loc)};
  F.IsNote = IsNote;
  for (const auto& G : Findings)
    if (G.RuleId == F.RuleId && G.Line == F.Line && G.Column == F.Column && G.Message == F.Message)
      return;
  Findings.push_back(std::move(F));
}

void EditSink::warn(SourceLocation Loc, StringRef RuleId, StringRef Message, bool Comment) {
  ++Outcomes;
  if (suppressed(Loc, RuleId))
    return;
  addFinding(Loc, RuleId, Message);
  if (!Comment)
    return;
  SourceLocation L = SM.getExpansionLoc(Loc);
  if (SM.getFileID(L) != Main)
    return;
  StringRef Buf = SM.getBufferData(Main);
  const unsigned Line = SM.getExpansionLineNumber(L);
  auto LineOffset = [&](unsigned N) { return SM.getFileOffset(SM.translateLineCol(Main, N, 1)); };
  const unsigned LineStart = LineOffset(Line);
  std::string Tag = "// accel-migrate(" + RuleId.str() + ")";
  // Already commented (a previous run): keep the output stable.
  if (Line > 1) {
    if (Buf.slice(LineOffset(Line - 1), LineStart).contains(Tag)) {
      for (auto& F : Findings)
        if (F.RuleId == RuleId && F.Offset == mainOffset(Loc))
          F.Acknowledged = true;
      return;
    }
  }
  for (const auto& A : Changes)
    for (const auto& E : A.Edits)
      if (E.Offset == LineStart && E.Length == 0 && StringRef(E.Text).contains(Tag))
        return;
  std::string Text = Lexer::getIndentationForLine(L, SM).str() + Tag + ": " + Message.str() + "\n";
  Changes.push_back({RuleId.str() + "#comment", L, {{LineStart, 0, Text}}, false});
}

void EditSink::note(SourceLocation Loc, StringRef RuleId, StringRef Message) {
  ++Outcomes; // what the rule had to say about its match, as a warning would be
  addFinding(Loc, RuleId, Message, /*IsNote=*/true);
}

unsigned EditSink::rewriteCount() const {
  unsigned N = 0;
  for (const auto& [Id, C] : Counts)
    N += C;
  return N;
}

static void sortFindings(std::vector<Finding>& F) {
  std::stable_sort(F.begin(), F.end(), [](const Finding& A, const Finding& B) {
    return std::tie(A.Line, A.Column) < std::tie(B.Line, B.Column);
  });
}

std::string EditSink::apply() {
  struct Placed {
    Edit E;
    size_t Order;
  };
  std::vector<Placed> Kept;
  size_t Order = 0;
  Counts.clear();
  Applied.clear();
  for (const auto& A : Changes) {
    bool Conflict = false;
    for (const auto& E : A.Edits) {
      for (const auto& K : Kept) {
        if (editsOverlap(E, K.E)) {
          Conflict = true;
          break;
        }
      }
      if (Conflict)
        break;
    }
    if (Conflict) {
      addFinding(A.Where, A.RuleId,
                 "not rewritten: overlaps another rewrite of the same code; migrate it by hand");
      continue;
    }
    for (const auto& E : A.Edits)
      Kept.push_back({E, Order++});
    Applied.push_back({A.RuleId, mainOffset(A.Where), A.Edits, A.CallsCurrent});
    StringRef Id = A.RuleId;
    if (!Id.ends_with("#comment"))
      ++Counts[A.RuleId];
  }
  // Ascending offset; at one offset, insertions in the order they were made, before a
  // replacement that starts there.
  std::stable_sort(Kept.begin(), Kept.end(), [](const Placed& A, const Placed& B) {
    if (A.E.Offset != B.E.Offset)
      return A.E.Offset < B.E.Offset;
    if ((A.E.Length == 0) != (B.E.Length == 0))
      return A.E.Length == 0;
    return A.Order < B.Order;
  });
  StringRef Buf = SM.getBufferData(Main);
  std::string Out;
  Out.reserve(Buf.size() + 1024);
  unsigned Pos = 0;
  for (const auto& P : Kept) {
    if (P.E.Offset < Pos)
      continue; // an identical-range duplicate; the first one won
    Out.append(Buf.data() + Pos, P.E.Offset - Pos);
    Out += P.E.Text;
    Pos = P.E.Offset + P.E.Length;
  }
  Out.append(Buf.data() + Pos, Buf.size() - Pos);
  sortFindings(Findings);
  return Out;
}

} // namespace accel
