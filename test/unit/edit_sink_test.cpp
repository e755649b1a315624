// EditSink's all-or-nothing promise (rewriters/include/accel/rewriters/engine/Edits.h), on a file held in memory: a
// change whose own edits overlap is refused with a finding and leaves the text as it was, as a change overlapping
// another change is; edits that touch without overlapping all apply. A change's facts (Change::CallsCurrent) reach
// applied() only with the change itself.
#include <accel/rewriters/engine/Edits.h>
#include <clang/Basic/LangOptions.h>
#include <clang/Basic/SourceManager.h>
#include <gtest/gtest.h>

#include <string>

namespace {

using clang::CharSourceRange;
using clang::SourceLocation;

constexpr const char* kText = "int a = 1;\nint b = 2;\n";

struct Sink {
  clang::SourceManagerForFile File{"input.cpp", kText};
  clang::LangOptions Lang;
  accel::EditSink Edits{File.get(), Lang};
  SourceLocation at(unsigned Offset) {
    clang::SourceManager& SM = File.get();
    return SM.getLocForStartOfFile(SM.getMainFileID()).getLocWithOffset(Offset);
  }
  CharSourceRange chars(unsigned Begin, unsigned End) { return CharSourceRange::getCharRange(at(Begin), at(End)); }
};

TEST(EditSink, OverlappingEditsOfOneChangeAreRefusedTogether) {
  Sink S;
  accel::Change C("accelerate-test", S.at(4));
  C.replace(S.chars(4, 9), "a = 3");  // "a = 1"
  C.replace(S.chars(8, 9), "4");      // its "1" again
  C.replace(S.chars(15, 16), "c");    // "b", apart from both: refused with them
  EXPECT_FALSE(S.Edits.commit(C));
  EXPECT_EQ(S.Edits.apply(), kText);
  ASSERT_EQ(S.Edits.findings().size(), 1u);
  EXPECT_EQ(S.Edits.findings()[0].RuleId, "accelerate-test");
  EXPECT_NE(S.Edits.findings()[0].Message.find("two edits of this rewrite overlap"), std::string::npos);
}

TEST(EditSink, EditsThatOnlyTouchAllApply) {
  Sink S;
  accel::Change C("accelerate-test", S.at(4));
  C.replace(S.chars(4, 5), "x");          // "a"
  C.replace(S.chars(5, 9), " = 7");       // right after it
  C.insertBefore(S.at(4), "/*before*/");  // at the start of the first replacement
  EXPECT_TRUE(S.Edits.commit(C));
  EXPECT_EQ(S.Edits.apply(), "int /*before*/x = 7;\nint b = 2;\n");
  EXPECT_TRUE(S.Edits.findings().empty());
}

TEST(EditSink, AChangeOverlappingAnEarlierOneIsRefused) {
  Sink S;
  accel::Change First("accelerate-first", S.at(4));
  First.replace(S.chars(4, 9), "a = 3");
  accel::Change Second("accelerate-second", S.at(8));
  Second.replace(S.chars(8, 9), "4");
  EXPECT_TRUE(S.Edits.commit(First));
  EXPECT_TRUE(S.Edits.commit(Second));  // refused when applied: the first committed wins
  EXPECT_EQ(S.Edits.apply(), "int a = 3;\nint b = 2;\n");
  ASSERT_EQ(S.Edits.findings().size(), 1u);
  EXPECT_EQ(S.Edits.findings()[0].RuleId, "accelerate-second");
}

// Whether the migrated file calls Accelerator::current() is read from the changes apply()
// kept (migrateUnit): a dropped change's call, or a warning's comment that names it, is none.
TEST(EditSink, OnlyKeptChangesCarryTheirCallsToCurrent) {
  Sink S;
  accel::Change Kept("accelerate-first", S.at(4));
  Kept.replace(S.chars(4, 9), "a = 3");
  accel::Change Dropped("accelerate-second", S.at(8));
  Dropped.replace(S.chars(8, 9), "accelerate::Accelerator::current().x()");
  Dropped.CallsCurrent = true;
  accel::Change Calls("accelerate-third", S.at(15));
  Calls.replace(S.chars(15, 16), "accelerate::Accelerator::current().b");
  Calls.CallsCurrent = true;
  EXPECT_TRUE(S.Edits.commit(Kept));
  EXPECT_TRUE(S.Edits.commit(Dropped));
  S.Edits.warn(S.at(11), "accelerate-fourth", "call accelerate::Accelerator::current()");
  S.Edits.apply();
  ASSERT_EQ(S.Edits.applied().size(), 2u);  // Kept and the warning's comment
  for (const accel::AppliedChange& C : S.Edits.applied()) EXPECT_FALSE(C.CallsCurrent) << C.RuleId;
  EXPECT_TRUE(S.Edits.commit(Calls));
  S.Edits.apply();
  ASSERT_EQ(S.Edits.applied().size(), 3u);
  EXPECT_EQ(S.Edits.applied()[2].RuleId, "accelerate-third");
  EXPECT_TRUE(S.Edits.applied()[2].CallsCurrent);
}

}  // namespace
