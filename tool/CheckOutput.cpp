#include "CheckOutput.h"

#include "Output.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticIDs.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Tooling/Core/Diagnostic.h>
#include <clang/Tooling/DiagnosticsYaml.h>
#include <llvm/Support/YAMLTraits.h>
#include <llvm/Support/raw_ostream.h>

#include <set>
#include <tuple>

using namespace clang;

namespace accel {

std::string renderDiagnostics(SourceManager& SM, const LangOptions& LO,
                              const std::vector<MigrationDiagnostic>& Diags, FileID File,
                              bool Colors) {
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  IntrusiveRefCntPtr<DiagnosticOptions> Opts = new DiagnosticOptions();
  Opts->ShowColors = Colors;
  OS.enable_colors(Colors); // a string stream has none unless told (the text is printed later)
  TextDiagnosticPrinter Printer(OS, Opts.get());
  DiagnosticsEngine DE(new DiagnosticIDs(), Opts, &Printer, /*ShouldOwnClient=*/false);
  DE.setSourceManager(&SM);
  Printer.BeginSourceFile(LO, nullptr);
  unsigned WarnID = DE.getCustomDiagID(DiagnosticsEngine::Warning, "%0 [%1]");
  unsigned NoteID = DE.getCustomDiagID(DiagnosticsEngine::Note, "%0");
  unsigned RuleNoteID = DE.getCustomDiagID(DiagnosticsEngine::Note, "%0 [%1]");
  FileID Main = File.isValid() ? File : SM.getMainFileID();
  for (const auto& D : Diags) {
    if (D.Acknowledged)
      continue;
    SourceLocation Loc = SM.getComposedLoc(Main, D.Offset);
    if (D.IsNote) {
      // A note of its own, not one attached to a warning: clang drops a note that follows
      // nothing (or an ignored diagnostic) unless told that the last one was shown.
      DE.setLastDiagnosticIgnored(false);
      DE.Report(Loc, RuleNoteID) << D.Message << D.RuleId;
      continue;
    }
    {
      DiagnosticBuilder B = DE.Report(Loc, WarnID);
      B << D.Message << D.RuleId;
      for (const Edit& E : D.Fixes) {
        SourceLocation S = SM.getComposedLoc(Main, E.Offset);
        if (E.Length == 0)
          B << FixItHint::CreateInsertion(S, E.Text);
        else
          B << FixItHint::CreateReplacement(
              CharSourceRange::getCharRange(S, S.getLocWithOffset(E.Length)), E.Text);
      }
    }
    if (!D.Note.empty())
      DE.Report(Loc, NoteID) << D.Note;
  }
  Printer.EndSourceFile();
  OS.flush();
  return Out;
}

llvm::Error exportFixes(const std::string& YamlPath, const std::vector<FileDiagnostics>& Files,
                        const std::string& BuildDirectory) {
  tooling::TranslationUnitDiagnostics TUD;
  TUD.MainSourceFile = Files.size() == 1 ? Files[0].Path : "";
  std::set<std::tuple<std::string, unsigned, unsigned, std::string>> Seen;
  for (const auto& F : Files) {
    for (const auto& D : F.Diags) {
      if (D.Acknowledged || D.IsNote) // a note has no fix
        continue;
      tooling::DiagnosticMessage Msg;
      Msg.Message = D.Message;
      Msg.FilePath = F.Path;
      Msg.FileOffset = D.Offset;
      for (const Edit& E : D.Fixes) {
        if (!Seen.insert({F.Path, E.Offset, E.Length, E.Text}).second)
          continue; // the same edit from another translation unit: merged
        tooling::Replacement R(F.Path, E.Offset, E.Length, E.Text);
        if (auto Err = Msg.Fix[F.Path].add(R))
          return Err;
      }
      tooling::Diagnostic Out(D.RuleId, Msg, {}, tooling::Diagnostic::Warning, BuildDirectory);
      if (!D.Note.empty()) {
        tooling::DiagnosticMessage N;
        N.Message = D.Note;
        N.FilePath = F.Path;
        N.FileOffset = D.Offset;
        Out.Notes.push_back(N);
      }
      TUD.Diagnostics.push_back(std::move(Out));
    }
  }
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  llvm::yaml::Output YAML(OS);
  YAML << TUD;
  OS.flush();
  return writeFileAtomically(YamlPath, Text);
}

} // namespace accel
