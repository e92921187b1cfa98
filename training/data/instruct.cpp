#include "training/data/instruct.h"

#include <array>
#include <cctype>
#include <random>
#include <utility>
#include <vector>

#include "training/data/records.h"

namespace trainscope::training {
namespace {

// The substitution table, declared once: plain word -> pirate word.
constexpr std::array<std::pair<std::string_view, std::string_view>, 22> kPirateWords = {{
    {"hello", "ahoy"},       {"hi", "ahoy"},         {"my", "me"},
    {"you", "ye"},           {"your", "yer"},        {"friend", "matey"},
    {"friends", "mateys"},   {"is", "be"},           {"are", "be"},
    {"the", "th'"},          {"yes", "aye"},         {"money", "doubloons"},
    {"boy", "lad"},          {"girl", "lass"},       {"stop", "avast"},
    {"and", "an'"},          {"of", "o'"},           {"to", "t'"},
    {"old", "ol'"},          {"looking", "lookin'"}, {"going", "goin'"},
    {"food", "grub"},
}};

template <std::size_t N>
std::string_view pick(std::mt19937_64& rng, const std::array<std::string_view, N>& words) {
  return words[std::uniform_int_distribution<std::size_t>(0, N - 1)(rng)];
}

constexpr std::array<std::string_view, 8> kWho = {
    "my friend", "the old captain", "your brother", "the girl", "the boy", "my crew",
    "the cook", "hello, my friend, the sailor"};
constexpr std::array<std::string_view, 8> kDoes = {
    "is looking for", "found", "is going to find", "hid", "lost", "wants", "is counting",
    "shared"};
constexpr std::array<std::string_view, 8> kWhat = {
    "the money", "the map", "my food", "the old key", "your boots", "the gold coins",
    "the ship's bell", "a bottle of rum"};
constexpr std::array<std::string_view, 6> kWhere = {
    "on the island", "in the cabin", "near the harbor", "under the deck", "by the sea",
    "at the tavern"};
constexpr std::array<std::string_view, 5> kWhen = {
    "today", "at dawn", "before the storm", "every night", "and yes, it is true"};

std::string capitalised(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
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
  std::string sentence = capitalised(std::string(pick(rng, kWho))) + " " +
                         std::string(pick(rng, kDoes)) + " " + std::string(pick(rng, kWhat)) +
                         " " + std::string(pick(rng, kWhere)) + " " +
                         std::string(pick(rng, kWhen)) + ".";
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
