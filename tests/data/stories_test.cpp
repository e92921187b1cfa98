#include "training/data/stories.h"

#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "training/data/records.h"

namespace trainscope::training {
namespace {

TEST(StoriesTest, PureFunctionOfSeedAndIndex) {
  std::string a, b, c;
  generate_story(42, 7, &a);
  generate_story(42, 7, &b);
  generate_story(43, 7, &c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_GT(a.size(), 150u);
  EXPECT_EQ(find_invalid_utf8(a), -1);
  EXPECT_EQ(a.find('{'), std::string::npos) << "unexpanded placeholder in: " << a;
}

TEST(StoriesTest, VariedStoriesAndVocabulary) {
  std::set<std::string> stories;
  std::set<std::string> words;
  int with_dialogue = 0;
  std::string s;
  for (int i = 0; i < 500; ++i) {
    generate_story(1, i, &s);
    stories.insert(s);
    if (s.find('"') != std::string::npos) ++with_dialogue;
    std::istringstream in(s);
    for (std::string w; in >> w;) words.insert(w);
  }
  EXPECT_EQ(stories.size(), 500u);
  EXPECT_GT(words.size(), 300u);
  EXPECT_GT(with_dialogue, 350);
}

TEST(StoriesTest, ValidationIndicesAreDisjoint) {
  std::string train, valid;
  generate_story(5, 0, &train);
  generate_story(5, kValidationStoryBase, &valid);
  EXPECT_NE(train, valid);
}

}  // namespace
}  // namespace trainscope::training
