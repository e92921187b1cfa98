#include "training/data/instruct.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <random>
#include <utility>
#include <vector>

#include "training/data/records.h"
#include "training/data/stories.h"

namespace trainscope::training {
namespace {

// The substitution table, declared once: plain word -> pirate word.
constexpr std::array<std::pair<std::string_view, std::string_view>, 22> kPirateWords = {{
    {"hello", "ahoy"},  {"hi", "ahoy"},      {"my", "me"},          {"you", "ye"},
    {"your", "yer"},    {"friend", "matey"}, {"friends", "mateys"}, {"is", "be"},
    {"are", "be"},      {"the", "th'"},      {"yes", "aye"},        {"money", "doubloons"},
    {"boy", "lad"},     {"girl", "lass"},    {"stop", "avast"},     {"and", "an'"},
    {"of", "o'"},       {"to", "t'"},        {"old", "ol'"},        {"looking", "lookin'"},
    {"going", "goin'"}, {"food", "grub"},
}};

constexpr std::array<std::string_view, 8> kWho = {
    "my friend", "the old captain", "your brother", "the girl",
    "the boy",   "my crew",         "the cook",     "hello, my friend, the sailor"};
constexpr std::array<std::string_view, 8> kDoes = {
    "is looking for", "found", "is going to find", "hid", "lost", "wants", "is counting", "shared"};
constexpr std::array<std::string_view, 8> kWhat = {
    "the money",  "the map",        "my food",         "the old key",
    "your boots", "the gold coins", "the ship's bell", "a bottle of rum"};
constexpr std::array<std::string_view, 6> kWhere = {"on the island",   "in the cabin",
                                                    "near the harbor", "under the deck",
                                                    "by the sea",      "at the tavern"};
constexpr std::array<std::string_view, 5> kWhen = {"today", "at dawn", "before the storm",
                                                   "every night", "and yes, it is true"};

std::string capitalised(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// Every sentence of the grammar is one combination c in [0, kCombinations):
// one digit per slot, kWhen's varying fastest.
constexpr int64_t kCombinations =
    static_cast<int64_t>(kWho.size() * kDoes.size() * kWhat.size() * kWhere.size() * kWhen.size());
static_assert(kCombinations == kInstructTrainPairs + kInstructValidPairs);
// Validation reserves one combination in each block of this many consecutive
// ones: an exact 1 in 16, spread over every who, does and what.
constexpr int64_t kBlock = kCombinations / kInstructValidPairs;
static_assert(kBlock * kInstructValidPairs == kCombinations);

// splitmix64's finaliser: neighbouring blocks get unrelated reserved slots.
uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The validation combination of block b, chosen by a hash of (seed, b).
int64_t reserved(uint64_t seed, int64_t block) {
  const uint64_t h = mix(mix(seed + 0x6a09e667f3bcc909ull) ^ static_cast<uint64_t>(block));
  return block * kBlock + static_cast<int64_t>(h % kBlock);
}

// Pair `index`'s combination, drawn with `rng`: a validation pair (index at
// or above kValidationStoryBase) among the reserved combinations, a training
// pair among the others, so no sentence is in both splits.
int64_t combination(uint64_t seed, int64_t index, std::mt19937_64& rng) {
  if (index >= kValidationStoryBase) {
    return reserved(seed, std::uniform_int_distribution<int64_t>(0, kInstructValidPairs - 1)(rng));
  }
  const int64_t j = std::uniform_int_distribution<int64_t>(0, kInstructTrainPairs - 1)(rng);
  const int64_t block = j / (kBlock - 1), k = j % (kBlock - 1);
  const int64_t skip = reserved(seed, block) - block * kBlock;  // the slot training must miss
  return block * kBlock + (k < skip ? k : k + 1);
}

template <std::size_t N>
std::string_view digit(int64_t* c, const std::array<std::string_view, N>& words) {
  const std::string_view word = words[static_cast<std::size_t>(*c % static_cast<int64_t>(N))];
  *c /= static_cast<int64_t>(N);
  return word;
}

std::string sentence_of(int64_t c) {
  const std::string_view when = digit(&c, kWhen), where = digit(&c, kWhere),
                         what = digit(&c, kWhat), does = digit(&c, kDoes), who = digit(&c, kWho);
  return fmt::format("{} {} {} {} {}.", capitalised(std::string(who)), does, what, where, when);
}

std::string_view pirate_word(std::string_view lower) {
  for (const auto& [plain, pirate] : kPirateWords) {
    if (plain == lower) return pirate;
  }
  return {};
}

}  // namespace

std::string to_pirate(std::string_view sentence) {
  std::string out;
  std::size_t i = 0;
  while (i < sentence.size()) {
    if (!std::isalpha(static_cast<unsigned char>(sentence[i]))) {
      out += sentence[i++];
      continue;
    }
    std::size_t j = i;
    while (j < sentence.size() && std::isalpha(static_cast<unsigned char>(sentence[j]))) ++j;
    const std::string_view word = sentence.substr(i, j - i);
    std::string lower(word);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string_view pirate = pirate_word(lower);
    if (pirate.empty()) {
      out += word;
    } else if (std::isupper(static_cast<unsigned char>(word[0]))) {
      out += capitalised(std::string(pirate));
    } else {
      out += pirate;
    }
    i = j;
  }
  return out + " Arr!";
}

PiratePair pirate_pair(uint64_t seed, int64_t index) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(index) ^ 0x1f2e3d4cull);
  const std::string sentence = sentence_of(combination(seed, index, rng));
  return {sentence, to_pirate(sentence)};
}

void generate_instruction(uint64_t seed, int64_t index, std::string* out) {
  const PiratePair pair = pirate_pair(seed, index);
  const std::vector<ChatMessage> chat = {{"user", std::string(kPiratePrompt) + pair.sentence},
                                         {"assistant", pair.pirate}};
  out->clear();
  render_chat(chat, out);
}

}  // namespace trainscope::training
