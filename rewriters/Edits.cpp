#include "accel/rewriters/Edits.h"

#include <clang/Lex/Lexer.h>

#include <algorithm>
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

EditSink::EditSink(SourceManager& SM, const LangOptions& LO)
    : SM(SM), LO(LO), Main(SM.getMainFileID()) {}

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

bool EditSink::commit(const Change& C) {
  Accepted A{C.RuleId, C.Where, {}};
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
  Changes.push_back(std::move(A));
  return true;
}

void EditSink::addFinding(SourceLocation Loc, StringRef RuleId, StringRef Msg) {
  SourceLocation L = SM.getExpansionLoc(Loc);
  Finding F{RuleId.str(), Msg.str(), SM.getSpellingLineNumber(L), SM.getSpellingColumnNumber(L)};
  for (const auto& G : Findings)
    if (G.RuleId == F.RuleId && G.Line == F.Line && G.Column == F.Column && G.Message == F.Message)
      return;
  Findings.push_back(std::move(F));
}

void EditSink::warn(SourceLocation Loc, StringRef RuleId, StringRef Message, bool Comment) {
  addFinding(Loc, RuleId, Message);
  if (!Comment)
    return;
  SourceLocation L = SM.getExpansionLoc(Loc);
  if (SM.getFileID(L) != Main)
    return;
  StringRef Buf = SM.getBufferData(Main);
  unsigned Off = SM.getFileOffset(L);
  unsigned LineStart = Off;
  while (LineStart > 0 && Buf[LineStart - 1] != '\n')
    --LineStart;
  unsigned IndentEnd = LineStart;
  while (IndentEnd < Buf.size() && (Buf[IndentEnd] == ' ' || Buf[IndentEnd] == '\t'))
    ++IndentEnd;
  std::string Tag = "// accel-migrate(" + RuleId.str() + ")";
  // Already commented (a previous run): keep the output stable.
  if (LineStart > 0) {
    unsigned PrevStart = LineStart - 1;
    while (PrevStart > 0 && Buf[PrevStart - 1] != '\n')
      --PrevStart;
    if (Buf.slice(PrevStart, LineStart).contains(Tag))
      return;
  }
  for (const auto& A : Changes)
    for (const auto& E : A.Edits)
      if (E.Offset == LineStart && E.Length == 0 && StringRef(E.Text).contains(Tag))
        return;
  std::string Text =
      Buf.slice(LineStart, IndentEnd).str() + Tag + ": " + Message.str() + "\n";
  Changes.push_back({RuleId.str() + "#comment", L, {{LineStart, 0, Text}}});
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
  for (const auto& A : Changes) {
    bool Conflict = false;
    for (const auto& E : A.Edits) {
      for (const auto& K : Kept) {
        unsigned B1 = E.Offset, E1 = E.Offset + E.Length;
        unsigned B2 = K.E.Offset, E2 = K.E.Offset + K.E.Length;
        bool Overlap = (E.Length && K.E.Length) ? (B1 < E2 && B2 < E1)
                       : E.Length              ? (B2 > B1 && B2 < E1)
                       : K.E.Length            ? (B1 > B2 && B1 < E2)
                                               : false;
        if (Overlap) {
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
      continue;  // an identical-range duplicate; the first one won
    Out.append(Buf.data() + Pos, P.E.Offset - Pos);
    Out += P.E.Text;
    Pos = P.E.Offset + P.E.Length;
  }
  Out.append(Buf.data() + Pos, Buf.size() - Pos);
  sortFindings(Findings);
  return Out;
}

}  // namespace accel
